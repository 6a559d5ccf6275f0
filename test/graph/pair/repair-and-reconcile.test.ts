import { describe, expect, it } from 'vitest';
import { GraphService } from '../../../src/graph/graph-service.js';
import { reconcileList, reconcileUsers } from '../../../src/jobs/reconcile.js';
import { repairPair, repairUsers } from '../../../src/jobs/repair.js';
import { type ListKey, RELATIONS } from '../../../src/model/types.js';
import { MemoryGraphStore } from '../../support/memory/graph-store.js';
import { SingleBucketLists } from '../support/single-bucket-lists.js';

const followersOf = (userId: bigint): ListKey => ({ userId, relation: 'follows', direction: 'in' });

async function setup() {
  const store = new MemoryGraphStore();
  const lists = new SingleBucketLists(store);
  // The jobs write through the store, as another process would; the read caches would serve what
  // they change up to their staleness bound, and these tests read right after a job.
  const graph = new GraphService({ store, lists, maxFollowing: 100, caches: false });
  for (const id of [1n, 2n, 3n]) await graph.putUser({ id, username: `u${id}` });
  return { store, lists, graph };
}

describe('repair', () => {
  it('rewrites a pair whose history moved on without its edge write, and is safe to re-run', async () => {
    const { store, lists, graph } = await setup();
    const f = await graph.follow(1n, 2n);
    await store.appendPair({
      pair: [1n, 2n],
      op: { sourceId: 2n, targetId: 1n, kind: 'block', position: f.position + 10n, base: 0 },
    });
    expect(await graph.contains(2n, 'follows', 'in', [1n])).toEqual([1n]);

    const first = await repairPair({ store, lists }, 2n, 1n);
    expect(first).toEqual({ a: 2n, b: 1n, ops: 2, edges: 2 });
    expect(await graph.contains(2n, 'follows', 'in', [1n])).toEqual([]);
    expect(await store.listBucket(followersOf(2n), 1, null, 10)).toEqual([]);
    expect(await graph.relationship(2n, 1n)).toMatchObject({ blocking: true });
    expect(await repairPair({ store, lists }, 1n, 2n)).toEqual({ ...first, a: 1n, b: 2n });
  });

  it('repairUsers covers the pairs among the users and their list counterparts, with progress', async () => {
    const { store, lists, graph } = await setup();
    await graph.follow(1n, 3n);
    const seen: [number, number][] = [];
    const results = await repairUsers({ store, lists }, [1n, 2n], {
      onProgress: (d, t) => seen.push([d, t]),
    });
    expect(results.map((r) => [r.a, r.b]).sort()).toEqual([
      [1n, 2n],
      [1n, 3n],
    ]);
    expect(seen).toEqual([
      [1, 2],
      [2, 2],
    ]);
  });
  it('repairUsers with several pairs at once: the same results, in the order the pairs were found', async () => {
    const { store, lists, graph } = await setup();
    for (const id of [4n, 5n]) await graph.putUser({ id, username: `u${id}` });
    for (const [a, b] of [
      [1n, 3n],
      [4n, 1n],
      [2n, 5n],
      [5n, 1n],
    ] as const)
      await graph.follow(a, b);
    await graph.block(3n, 2n);
    const users = [1n, 2n, 3n];
    const one = await repairUsers({ store, lists }, users, { concurrency: 1 });
    const seen: number[] = [];
    const many = await repairUsers({ store, lists }, users, {
      concurrency: 4,
      onProgress: (done, total) => {
        seen.push(done);
        expect(total).toBe(one.length);
      },
    });
    expect(many).toEqual(one);
    expect(one.map((r) => `${r.a}-${r.b}`)).toEqual(['1-2', '1-3', '2-3', '1-5', '1-4', '2-5']);
    expect(seen).toEqual([1, 2, 3, 4, 5, 6]);
  });
});

describe('reconcile', () => {
  it('corrects a drifted counter to the counted rows and records the drift', async () => {
    const { store, graph } = await setup();
    await graph.follow(1n, 2n);
    await graph.follow(3n, 2n);
    await store.incrementCount(followersOf(2n), 5, 4);
    const now = new Date('2026-11-30T05:00:00.000Z');
    expect(await reconcileList(store, followersOf(2n), { now: () => now })).toEqual({
      list: followersOf(2n),
      counted: 2,
      before: 6,
      drift: -4,
    });
    expect(await graph.counts(2n)).toMatchObject({ followers: 2, following: 0 });
    expect(await store.getReconciliation(followersOf(2n))).toEqual({
      reconciledAt: now,
      counted: 2,
      drift: -4,
    });
    expect((await reconcileList(store, followersOf(2n))).drift).toBe(0);
  });

  it('reconcileUsers walks every list of every user, paging', async () => {
    const { store, graph } = await setup();
    await graph.follow(1n, 2n);
    const results = await reconcileUsers(store, [1n, 2n], { pageSize: 1 });
    expect(results).toHaveLength(2 * RELATIONS.length * 2); // users × relations × directions
    expect(results.filter((r) => r.counted > 0).map((r) => [r.list.userId, r.list.direction])).toEqual([
      [1n, 'out'],
      [2n, 'in'],
    ]);
    expect(results.every((r) => r.drift === 0)).toBe(true);
  });
});
