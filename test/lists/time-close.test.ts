/**
 * Buckets close at a size: follows through `GraphService` fill a list's newest time bucket;
 * a writer that finds it full adds a boundary a lead ahead of its clock, once (a boundary already
 * ahead stops the next writers), rows at or past the boundary land in the new bucket, and the list
 * still pages as one ordered list.
 */
import { describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { BucketedListService } from '../../src/lists/list-service.js';
import { bucketFor, TIME_BUCKET_BASE } from '../../src/model/time-buckets.js';
import type { ListKey } from '../../src/model/types.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';

const CELEB = 1n;
const list: ListKey = { userId: CELEB, relation: 'follows', direction: 'in' };

async function world(o: { bucketRows: number; leadMs: number }) {
  const store = new MemoryGraphStore();
  // One clock for the service and the list engine: 1 ms per reading.
  let now = 1_800_000_000_000_000n;
  const clock = () => (now += 1000n);
  const lists = new BucketedListService({
    store,
    cursorSecret: 'time-close-secret-0123456789abcd',
    bucketThresholds: [1_000_000_000],
    layoutCacheTtlMs: 0,
    timeBucketRows: o.bucketRows,
    boundaryLeadMs: o.leadMs,
    clock,
  });
  const graph = new GraphService({ store, lists, maxFollowing: 100, clock, events: false });
  await graph.putUser({ id: CELEB, username: 'celeb' });
  return { store, lists, graph };
}

/** Every follower of the list, newest first, by walking pages of `limit`. */
async function walk(lists: BucketedListService, limit: number): Promise<bigint[]> {
  const ids: bigint[] = [];
  let cursor: string | null = null;
  do {
    const p = await lists.page(list, limit, cursor);
    ids.push(...p.items.map((i) => i.id));
    cursor = p.nextCursor;
  } while (cursor);
  return ids;
}

describe('time buckets close at a size', () => {
  it('a full newest bucket gets one boundary a lead ahead; rows past it land in the new bucket; pages stay one list', async () => {
    const { store, lists, graph } = await world({ bucketRows: 5, leadMs: 3 });
    const fans = Array.from({ length: 23 }, (_, i) => 100n + BigInt(i));
    for (const fan of fans) {
      await graph.putUser({ id: fan, username: `fan${fan}` });
      await graph.follow(fan, CELEB);
      // Closing runs in the background after the write: let it finish before the next follow.
      await new Promise((r) => setTimeout(r, 0));
    }
    const directory = await store.getDirectory(list);
    // 23 rows at 5 a bucket: boundaries at 5, 10, 15, 20 rows (each base the size when added).
    expect(directory.buckets.map((b) => ({ id: b.id, base: b.base }))).toEqual([
      { id: TIME_BUCKET_BASE + 3, base: 20 },
      { id: TIME_BUCKET_BASE + 2, base: 15 },
      { id: TIME_BUCKET_BASE + 1, base: 10 },
      { id: TIME_BUCKET_BASE, base: 5 },
      { id: 1, base: 0 },
    ]);
    // Every row is where the directory places it, and no bucket holds more than its size plus the
    // rows written during the lead (3 ms = one or two follows here).
    const perBucket = new Map<number, number>();
    for (const b of directory.buckets) {
      const rows = await store.listBucket(list, b.id, null, 1000);
      for (const r of rows) expect(bucketFor(directory, r.createdAt).id).toBe(b.id);
      perBucket.set(b.id, rows.length);
    }
    expect([...perBucket.values()].reduce((a, b) => a + b, 0)).toBe(23);
    expect(Math.max(...perBucket.values())).toBeLessThanOrEqual(5 + 3);
    expect(await walk(lists, 4)).toEqual([...fans].reverse());
    expect(await walk(lists, 50)).toEqual([...fans].reverse());
  });

  it('while a boundary is still ahead of the clock, no writer adds another', async () => {
    const { store, graph } = await world({ bucketRows: 2, leadMs: 60_000 });
    for (const fan of [201n, 202n, 203n, 204n, 205n, 206n]) {
      await graph.putUser({ id: fan, username: `fan${fan}` });
      await graph.follow(fan, CELEB);
      await new Promise((r) => setTimeout(r, 0));
    }
    const directory = await store.getDirectory(list);
    expect(directory.buckets.map((b) => b.id)).toEqual([TIME_BUCKET_BASE, 1]);
    // Everything so far is older than the boundary a minute ahead: all in the first bucket.
    expect((await store.listBucket(list, 1, null, 100)).length).toBe(6);
  });
});
