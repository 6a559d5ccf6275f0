import { describe, expect, it, vi } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { readCodesFor, reconcileDirty, startDirtyReconciler } from '../../src/jobs/reconcile-dirty.js';
import { ClockSkewError } from '../../src/model/errors.js';
import type { ListKey } from '../../src/model/types.js';
import { DIRTY_SHARDS } from '../../src/ports/count-store.js';
import { SingleBucketLists } from '../graph/support/single-bucket-lists.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';

const followersOf = (userId: bigint): ListKey => ({ userId, relation: 'follows', direction: 'in' });

async function setup() {
  const store = new MemoryGraphStore();
  const graph = new GraphService({
    store,
    lists: new SingleBucketLists(store),
    maxFollowing: 100,
    countLeaseMs: 0,
  });
  for (const id of [1n, 2n, 3n]) await graph.putUser({ id, username: `u${id}` });
  return { store, graph };
}

describe('reconcileDirty', () => {
  it('a pass whose clock is not known to be within the bound clears nothing (a clock ahead could clear a write in flight)', async () => {
    const { store, graph } = await setup();
    await graph.follow(1n, 2n);
    const allMarks = async () => {
      const all = [];
      for (let shard = 0; shard < DIRTY_SHARDS; shard++) all.push(...(await store.listDirty(shard, 100)));
      return all;
    };
    const marks = await allMarks();
    expect(marks.length).toBeGreaterThan(0);
    const refused = new ClockSkewError(
      "this instance's clock is 3000 ms from the database's (bound 2000 ms)",
      10,
    );
    const guard = {
      assertWritable: () => {
        throw refused;
      },
    };
    await expect(reconcileDirty(store, { clockGuard: guard })).rejects.toBe(refused);
    expect(await allMarks()).toEqual(marks);
    expect((await graph.counts(2n)).exact).toBe(false);
  });

  it('a write marks the bucket dirty; a pass recounts it, corrects drift, records as_of and clears the mark', async () => {
    const { store, graph } = await setup();
    await graph.follow(1n, 2n);
    await graph.follow(3n, 2n);
    expect(await store.hasDirty(followersOf(2n))).toBe(true);
    expect(await graph.counts(2n)).toEqual({ followers: 2, following: 0, exact: false, asOf: null });
    await store.incrementCount(followersOf(2n), 5, 4);
    const pass = await reconcileDirty(store);
    // Each follow marks the lists it may change: both follows lists (the requests lists too only
    // when a pending request stands for it to clear: none here), so 1, 2 and 3 × follows, one
    // bucket each.
    expect(pass).toEqual({ lists: 3, buckets: 3, rows: 4, absDrift: 4, deferred: 0, early: 0 });
    const counts = await graph.counts(2n);
    expect(counts).toEqual({ followers: 2, following: 0, exact: true, asOf: counts.asOf });
    expect(typeof counts.asOf).toBe('bigint');
    expect(await store.listDirty(0, 100)).toEqual([]);
    expect(await reconcileDirty(store)).toEqual({
      lists: 0,
      buckets: 0,
      rows: 0,
      absDrift: 0,
      deferred: 0,
      early: 0,
    });
  });

  it('regression: a write racing the recount leaves its mark, so the next pass fixes the drift it caused', async () => {
    const { store, graph } = await setup();
    await graph.follow(1n, 2n);
    const list = followersOf(2n);
    const listBucket = store.listBucket.bind(store);
    let raced = false;
    store.listBucket = async (l, code, after, limit) => {
      const rows = await listBucket(l, code, after, limit);
      if (!raced && l.userId === 2n && l.direction === 'in') {
        raced = true;
        await graph.follow(3n, 2n); // after the recount read: counted in the shards, not in the rows
      }
      return rows;
    };
    await reconcileDirty(store);
    expect(await store.hasDirty(list)).toBe(true);
    expect((await graph.counts(2n)).exact).toBe(false);
    await reconcileDirty(store);
    expect(await graph.counts(2n)).toMatchObject({ followers: 2, exact: true });
  });

  it('a list never written is exact at read time', async () => {
    const { graph } = await setup();
    const c = await graph.counts(1n);
    expect(c).toEqual({ followers: 0, following: 0, exact: true, asOf: c.asOf });
    expect(c.asOf).not.toBeNull();
  });

  it('maps a mark onto the read layout after a growth or a shrink', () => {
    expect(readCodesFor(1, { buckets: 1, growingTo: null, copiedThrough: 0 })).toEqual([1]);
    expect(readCodesFor(3, { buckets: 8, growingTo: null, copiedThrough: 0 })).toEqual([9, 11, 13, 15]);
    expect(readCodesFor(13, { buckets: 2, growingTo: null, copiedThrough: 0 })).toEqual([3]);
    expect(readCodesFor(5, { buckets: 4, growingTo: null, copiedThrough: 0 })).toEqual([5]);
  });
});

describe('startDirtyReconciler', () => {
  /** Pass starts (ms of fake time) over `ms`, with a mark written by `graph` at each of `writesAt`. */
  async function passTimes(o: { idleMaxMs?: number; writesAt: number[]; ms: number; nudge: boolean }) {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    try {
      const { store, graph } = await setup();
      const starts: number[] = [];
      const t0 = performance.now();
      const counting = Object.assign(Object.create(store), {
        listDirty: (shard: number, limit: number) => {
          if (shard === 0) starts.push(Math.round(performance.now() - t0));
          return store.listDirty(shard, limit);
        },
      }) as MemoryGraphStore;
      const r = startDirtyReconciler(counting, {
        intervalMs: 100,
        ...(o.idleMaxMs === undefined ? {} : { idleMaxMs: o.idleMaxMs }),
      });
      let done = 0;
      for (const at of o.writesAt) {
        await vi.advanceTimersByTimeAsync(at - done);
        done = at;
        await graph.follow(1n, at % 2 === 0 ? 2n : 3n);
        if (o.nudge) r.nudge();
      }
      await vi.advanceTimersByTimeAsync(o.ms - done);
      await r.stop();
      return starts;
    } finally {
      vi.useRealTimers();
    }
  }

  it('without idleMaxMs a pass every interval, idle or not', async () => {
    expect(await passTimes({ writesAt: [], ms: 1050, nudge: false })).toEqual([
      100, 200, 300, 400, 500, 600, 700, 800, 900, 1000,
    ]);
  });

  it('idle, the wait doubles up to idleMaxMs; a pass that recounts sets it back; a nudge brings the next pass to an interval after the last', async () => {
    // Idle: 100, then waits of 200, 400, 800, 800.
    expect(await passTimes({ idleMaxMs: 800, writesAt: [], ms: 3200, nudge: false })).toEqual([
      100, 300, 700, 1500, 2300, 3100,
    ]);
    // A write at 1600 nudges: the pass due at 2300 comes at 1600 (1500 + 100 passed), recounts,
    // and the waits grow again from the interval.
    expect(
      await passTimes({
        idleMaxMs: 800,
        writesAt: [1600],
        ms: 3200,
        nudge: true,
      }),
    ).toEqual([100, 300, 700, 1500, 1600, 1700, 1900, 2300, 3100]);
    // Not nudged: the write waits for the idle pass at 2300.
    expect(
      await passTimes({
        idleMaxMs: 800,
        writesAt: [1600],
        ms: 3200,
        nudge: false,
      }),
    ).toEqual([100, 300, 700, 1500, 2300, 2400, 2600, 3000]);
  });
});
