/**
 * Scans with more slices than buckets (issue #9, T4): with the layout pinned, every slice reads
 * only rows it returns (whole buckets), slices beyond the layout are empty, the slices still cover
 * the list exactly once, also across a growth; without the pin the layout-free rule is unchanged
 * (and reads whole buckets to keep a fraction of them, which is what the pin fixes).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BucketedListService, type ListReadStats } from '../../src/lists/list-service.js';
import { bucketCodeOf, bucketOf } from '../../src/model/buckets.js';
import { InvalidInputError } from '../../src/model/errors.js';
import type { ListEntry, ListKey } from '../../src/model/types.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';

const list: ListKey = { userId: 1n, relation: 'follows', direction: 'in' };
const MEMBERS = 4000;
const sort = (xs: bigint[]) => [...xs].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

const rows: ListEntry[] = Array.from({ length: MEMBERS }, (_, i) => ({
  createdAt: 1_796_000_000_000_000n + BigInt(i) * 1000n,
  otherId: 9000n + BigInt(i),
}));

/** One copy of the rows per layout (codes of different layouts never collide); layout = first. */
async function storeWith(layouts: number[]) {
  const store = new MemoryGraphStore();
  await store.writeEdges(
    [],
    layouts.flatMap((n) =>
      rows.map((entry) => ({
        list,
        bucketCodes: [bucketCodeOf(n, entry.otherId)],
        entry,
        op: 'put' as const,
      })),
    ),
    1n,
  );
  await store.putLayout(list, { buckets: layouts[0]!, growingTo: null, copiedThrough: 0 });
  return store;
}

function service(store: MemoryGraphStore, stats: ListReadStats[] = []) {
  return new BucketedListService({
    store,
    cursorSecret: 'cursor-secret-0123456789abcdef',
    bucketThresholds: [1e9],
    layoutCacheTtlMs: 0,
    onPage: (s) => stats.push(s),
  });
}

/** Each slice's ids and the rows it read. */
async function scanAll(store: MemoryGraphStore, slices: number, pinnedBuckets?: number) {
  const out: { ids: bigint[]; rowsRead: number }[] = [];
  for (let slice = 0; slice < slices; slice++) {
    const stats: ListReadStats[] = [];
    const ids: bigint[] = [];
    const svc = service(store, stats);
    for await (const b of svc.scanBatches(list, { slice, slices, batchSize: 300, pinnedBuckets }))
      ids.push(...b.ids);
    out.push({ ids, rowsRead: stats.reduce((n, s) => n + s.rowsRead, 0) });
  }
  return out;
}

describe('scan with more slices than buckets (pinned layout)', () => {
  it('64 slices over 8 buckets: each slice reads ≈ its own rows, 56 slices are empty, the list is covered once', async () => {
    const store = await storeWith([8]);
    const pinned = await scanAll(store, 64, 8);
    const perBucket = new Map<number, number>();
    for (const r of rows) {
      const b = bucketOf(r.otherId, 8);
      perBucket.set(b, (perBucket.get(b) ?? 0) + 1);
    }
    expect(sort(pinned.flatMap((s) => s.ids))).toEqual(sort(rows.map((r) => r.otherId)));
    expect(pinned.slice(8).map((s) => s.ids.length)).toEqual(Array(56).fill(0));
    // Rows read per slice = rows returned (no whole-bucket over-read); reading to the end of a
    // bucket costs at most one extra empty read, never a row.
    expect(pinned.map((s) => s.rowsRead)).toEqual(pinned.map((s) => s.ids.length));
    expect(sort(pinned.slice(0, 8).map((s) => BigInt(s.ids.length)))).toEqual(
      sort([...perBucket.values()].map(BigInt)),
    );

    // Unpinned, the same scan keeps ~1/8 of each bucket it reads: reads ≈ 8× what it returns.
    const free = await scanAll(store, 64);
    expect(sort(free.flatMap((s) => s.ids))).toEqual(sort(rows.map((r) => r.otherId)));
    const read = free.reduce((n, s) => n + s.rowsRead, 0);
    expect(read).toBeGreaterThan(6 * MEMBERS);
  });

  it('covers the list exactly once for any slice count and pinned layout, also when the layout grows mid-scan', async () => {
    const store = await storeWith([4, 16]);
    const seed = Date.now() ^ 0x5eed;
    console.log(`[scan-pinned] fast-check seed ${seed}`);
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 70 }),
        fc.constantFrom(1, 2, 4, 8),
        fc.integer({ min: 0, max: 5 }),
        async (slices, pin, growAfter) => {
          await store.putLayout(list, { buckets: 4, growingTo: null, copiedThrough: 0 });
          const ids: bigint[] = [];
          const open: { slice: number; cursor: string }[] = [];
          for (let slice = 0; slice < slices; slice++) {
            const p = await service(store).scan(list, slice, slices, 97, null, { pinnedBuckets: pin });
            ids.push(...p.ids);
            if (p.nextCursor) open.push({ slice, cursor: p.nextCursor });
          }
          let step = 0;
          for (const o of open) {
            let cursor: string | null = o.cursor;
            while (cursor) {
              if (step++ === growAfter)
                await store.putLayout(list, { buckets: 16, growingTo: null, copiedThrough: 0 });
              const p = await service(store).scan(list, o.slice, slices, 97, cursor, { pinnedBuckets: pin });
              ids.push(...p.ids);
              cursor = p.nextCursor;
            }
          }
          expect(sort(ids)).toEqual(sort(rows.map((r) => r.otherId)));
        },
      ),
      { seed, numRuns: 40 },
    );
  });

  it('refuses a pinned layout that is not a power of two from 1 to 1024', async () => {
    const svc = service(await storeWith([4]));
    for (const bad of [0, 3, 2048, 1.5]) {
      await expect(svc.scan(list, 0, 4, 10, null, { pinnedBuckets: bad })).rejects.toEqual(
        new InvalidInputError('pinnedBuckets', 'a power of two from 1 to 1024'),
      );
    }
  });
});
