/**
 * The reads a follow makes besides its pair: the list sizes that trigger growth
 * (`sizeCheckDue`) and the following cap's counters (`committedEstimate`). Both are skipped while
 * this process's inserts stay under 1/8 of the headroom, so a follow far from any threshold or
 * cap reads neither; near a threshold or the cap every write reads, and the cap stays exact for up
 * to 8 processes.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { GraphService } from '../../../src/graph/graph-service.js';
import { BucketedListService, SIZE_CHECK_MAX_AGE_MS } from '../../../src/lists/list-service.js';
import { FollowingCapError } from '../../../src/model/errors.js';
import { type ListKey, listId } from '../../../src/model/types.js';
import { followersOf } from '../../support/list-fixtures.js';
import { MemoryGraphStore } from '../../support/memory/graph-store.js';

/** A memory store that records every `getCount` by list. */
class CountingStore extends MemoryGraphStore {
  readonly countReads: string[] = [];
  override async getCount(list: ListKey): Promise<number> {
    this.countReads.push(listId(list));
    return super.getCount(list);
  }
}

const listService = (store: MemoryGraphStore, thresholds: number[], maxEntries?: number) =>
  new BucketedListService({
    store,
    cursorSecret: 'write-reads-secret-0123456789',
    bucketThresholds: thresholds,
    layoutCacheTtlMs: 0,
    writeGraceMs: 0,
    sleep: () => Promise.resolve(),
    ...(maxEntries ? { layoutCacheMaxEntries: maxEntries } : {}),
  });

async function users(graph: GraphService, ids: bigint[]) {
  for (const id of ids) await graph.putUser({ id, username: `u${id}` });
}

afterEach(() => {
  vi.useRealTimers();
});

describe('sizeCheckDue', () => {
  it('is due for an unsized list, then once the inserts reach 1/8 of the headroom, every insert within 8 of a threshold, never past the last', () => {
    const svc = listService(new MemoryGraphStore(), [800, 1600]);
    const list = followersOf(1n);
    expect([1, 2, 3].map(() => svc.sizeCheckDue(list, 1))).toEqual([true, true, true]);
    svc.noteSize(list, 0);
    const due = Array.from({ length: 100 }, () => svc.sizeCheckDue(list, 1));
    expect(due.indexOf(true)).toBe(99);
    expect(due.filter(Boolean)).toEqual([true]);
    svc.noteSize(list, 790);
    expect([svc.sizeCheckDue(list, 1), svc.sizeCheckDue(list, 1)]).toEqual([false, true]);
    svc.noteSize(list, 795);
    expect(svc.sizeCheckDue(list, 1)).toBe(true);
    svc.noteSize(list, 1600);
    expect(Array.from({ length: 10_000 }, () => svc.sizeCheckDue(list, 1)).some(Boolean)).toBe(false);
  });

  it('is due again once the size read is older than a minute', () => {
    vi.useFakeTimers();
    const svc = listService(new MemoryGraphStore(), [800]);
    const list = followersOf(2n);
    svc.noteSize(list, 0);
    expect(svc.sizeCheckDue(list, 1)).toBe(false);
    vi.advanceTimersByTime(SIZE_CHECK_MAX_AGE_MS + 1);
    expect(svc.sizeCheckDue(list, 1)).toBe(true);
  });

  it('keeps at most layoutCacheMaxEntries sizes (100 lists into 10: the 90 oldest are due again)', () => {
    const svc = listService(new MemoryGraphStore(), [800], 10);
    const lists = Array.from({ length: 100 }, (_, i) => followersOf(BigInt(1000 + i)));
    for (const l of lists) svc.noteSize(l, 0);
    expect(lists.map((l) => svc.sizeCheckDue(l, 1))).toEqual(lists.map((_, i) => i < 90));
  });
});

describe('a follow reads list sizes and cap counters only when due', () => {
  it('50 follows by one actor far from any threshold and the cap: 4 count reads for the first, 1 for each next (the new followee’s size)', async () => {
    const store = new CountingStore();
    const graph = new GraphService({ store, lists: listService(store, [250_000]), maxFollowing: 7500 });
    const actor = 1n;
    const targets = Array.from({ length: 50 }, (_, i) => 100n + BigInt(i));
    await users(graph, [actor, ...targets]);
    for (const t of targets) await graph.follow(actor, t);
    const out = listId({ userId: actor, relation: 'follows', direction: 'out' });
    const requests = listId({ userId: actor, relation: 'requests', direction: 'out' });
    expect([...store.countReads].sort()).toEqual(
      [out, out, requests, ...targets.map((t) => listId(followersOf(t)))].sort(),
    );
    expect((await graph.counts(actor)).following).toBe(50);
    expect(await Promise.all(targets.map(async (t) => (await graph.counts(t)).followers))).toEqual(
      targets.map(() => 1),
    );
  });

  it('a list still grows at its threshold: 45 followers past a threshold of 40, with fewer size reads than follows', async () => {
    const store = new CountingStore();
    const lists = listService(store, [40]);
    const graph = new GraphService({ store, lists, maxFollowing: 7500 });
    const celeb = 7n;
    const fans = Array.from({ length: 45 }, (_, i) => 1000n + BigInt(i));
    await users(graph, [celeb, ...fans]);
    for (const f of fans) await graph.follow(f, celeb);
    for (let g = lists.growthOf(followersOf(celeb)); g; g = lists.growthOf(followersOf(celeb))) await g;
    expect(await store.getLayout(followersOf(celeb))).toEqual({
      buckets: 2,
      growingTo: null,
      copiedThrough: 0,
    });
    const page = await lists.page(followersOf(celeb), 100, null);
    expect(page.items.map((i) => i.id)).toEqual([...fans].reverse());
    const reads = store.countReads.filter((l) => l === listId(followersOf(celeb))).length;
    console.log(`[write-reads] ${reads} size reads of the growing list for 45 follows`);
    expect(reads).toBeLessThan(45);
  });

  it('the cap holds exactly with two services (two processes) following for one actor: 80 of 100 land', async () => {
    const store = new MemoryGraphStore();
    const mk = () => new GraphService({ store, lists: listService(store, [250_000]), maxFollowing: 80 });
    const [p, q] = [mk(), mk()];
    const actor = 1n;
    const targets = Array.from({ length: 100 }, (_, i) => 100n + BigInt(i));
    await users(p, [actor, ...targets]);
    const outcomes: string[] = [];
    for (const [i, t] of targets.entries()) {
      try {
        await (i % 2 === 0 ? p : q).follow(actor, t);
        outcomes.push('ok');
      } catch (e) {
        outcomes.push(e instanceof FollowingCapError ? 'cap' : String(e));
      }
    }
    expect(outcomes).toEqual([...Array(80).fill('ok'), ...Array(20).fill('cap')]);
    expect((await p.counts(actor)).following).toBe(80);
  });
});
