/**
 * Counts stay honest when a write fails between its parts, on the in-memory
 * store with injected faults: every write marks the lists its op may change dirty *before* its
 * append, dated a lease ahead of its clock, and a reconcile pass leaves a mark from its future
 * standing. Time is a test clock shared by the service and the reconciler, so "after the lease"
 * is a step of the clock, not a wait.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { GraphService } from '../../../src/graph/graph-service.js';
import { COUNT_LEASE_MICROS } from '../../../src/graph/pair/count-step.js';
import { reconcileDirty } from '../../../src/jobs/reconcile-dirty.js';
import { nowPosition } from '../../../src/model/clock.js';
import { StoreUnavailableError } from '../../../src/model/errors.js';
import type { ListKey } from '../../../src/model/types.js';
import type { EdgeWrite, ListRowWrite } from '../../../src/ports/records.js';
import { MemoryGraphStore } from '../../support/memory/graph-store.js';
import { SingleBucketLists } from '../support/single-bucket-lists.js';

const followersOf = (userId: bigint): ListKey => ({ userId, relation: 'follows', direction: 'in' });

/** A memory store whose next calls can be made to fail, or to run something first. */
class FaultyMemoryStore extends MemoryGraphStore {
  /** Runs before the next `writeEdges` (then cleared). */
  beforeWrite: (() => Promise<void>) | null = null;
  /** The next `writeEdges` is applied, then answers a timeout (then cleared). */
  applyThenTimeout = false;
  /** Every `incrementCount` of this list fails (a lost counter write). */
  loseIncrementOf: ListKey | null = null;
  /** Every call below fails: the process died. */
  dead = false;

  override async writeEdges(edges: readonly EdgeWrite[], rows: readonly ListRowWrite[], version: bigint) {
    if (this.dead) throw new Error('process died');
    const before = this.beforeWrite;
    this.beforeWrite = null;
    await before?.();
    await super.writeEdges(edges, rows, version);
    if (this.applyThenTimeout) {
      this.applyThenTimeout = false;
      throw new StoreUnavailableError('write timed out (it was applied)');
    }
  }

  override async incrementCount(list: ListKey, shard: number, delta: number) {
    if (this.dead) throw new Error('process died');
    const lost = this.loseIncrementOf;
    if (
      lost &&
      lost.userId === list.userId &&
      lost.relation === list.relation &&
      lost.direction === list.direction
    )
      throw new StoreUnavailableError('counter write timed out (not applied)');
    return super.incrementCount(list, shard, delta);
  }

  override async markDirty(list: ListKey, bucketCode: number, version: bigint) {
    if (this.dead) throw new Error('process died');
    return super.markDirty(list, bucketCode, version);
  }
}

let store: FaultyMemoryStore;
let graph: GraphService;
let t: bigint;
const clock = () => t;
const pass = () => reconcileDirty(store, { now: clock });
/** Moves the test clock past every lease taken so far. */
const afterLease = () => {
  t += COUNT_LEASE_MICROS + 1n;
};

beforeEach(async () => {
  store = new FaultyMemoryStore();
  t = nowPosition();
  graph = new GraphService({ store, lists: new SingleBucketLists(store), maxFollowing: 100, clock });
  for (const id of [1n, 2n]) await graph.putUser({ id, username: `u${id}` });
});

/** The counts of 2 (followed by 1) as the API serves them, `asOf` dropped. */
async function countsOf2() {
  const { asOf: _, ...c } = await graph.counts(2n);
  return c;
}

describe('counts after a write that failed between its parts', () => {
  it.each([
    ['a new op (a live retry)', () => graph.follow(1n, 2n)],
    [
      'the same op (a retry at the first position)',
      (first: bigint) => graph.follow(1n, 2n, { position: first }),
    ],
  ])(
    'regression: an edge write that timed out after it was applied, then %s: recounted to 1, not 0 with exact: true',
    async (_, retry) => {
      store.applyThenTimeout = true;
      await expect(graph.follow(1n, 2n)).rejects.toBeInstanceOf(StoreUnavailableError);
      const first = (await store.readPairHistory(1n, 2n)).ops[0]?.position as bigint;
      t += 1000n;
      expect(await retry(first)).toMatchObject({ state: 'following', changed: false });
      // Within the lease every mark is from the pass's future: the list is left for a later pass
      // (one recount of those writes, not two), and reads as not exact meanwhile.
      expect(await pass()).toMatchObject({ lists: 0, buckets: 0 });
      expect(await countsOf2()).toEqual({ followers: 0, following: 0, exact: false });
      afterLease();
      await pass();
      expect(await countsOf2()).toEqual({ followers: 1, following: 0, exact: true });
      expect(await graph.counts(1n)).toMatchObject({ followers: 0, following: 1, exact: true });
    },
  );

  it('regression: a lost increment is recounted, not left at 0 with exact: true', async () => {
    store.loseIncrementOf = followersOf(2n);
    await expect(graph.follow(1n, 2n)).rejects.toBeInstanceOf(StoreUnavailableError);
    store.loseIncrementOf = null;
    afterLease();
    await pass();
    expect(await countsOf2()).toEqual({ followers: 1, following: 0, exact: true });
  });

  it('regression: a pass between the mark and the row write cannot clear the mark of a writer that then dies before its increment', async () => {
    store.beforeWrite = async () => {
      await pass(); // began before the rows and the increment: sees neither
      expect(await store.hasDirty(followersOf(2n))).toBe(true);
      t += 1000n;
    };
    // The rows land, then the process dies: no increment, no mark after the failure.
    const dying = store.incrementCount.bind(store);
    store.incrementCount = async (...args) => {
      store.dead = true;
      return dying(...args);
    };
    await expect(graph.follow(1n, 2n)).rejects.toThrow('process died');
    store.dead = false;
    store.incrementCount = dying;
    expect((await store.listBucket(followersOf(2n), 1, null, 10)).map((e) => e.otherId)).toEqual([1n]);
    afterLease();
    await pass();
    expect(await countsOf2()).toEqual({ followers: 1, following: 0, exact: true });
  });

  it('a write that completes within its lease needs no second mark; a pass after the lease clears its marks', async () => {
    const marks: bigint[] = [];
    const mark = store.markDirty.bind(store);
    store.markDirty = async (list, code, version) => {
      if (list.userId === 2n && list.relation === 'follows') marks.push(version - t);
      return mark(list, code, version);
    };
    await graph.follow(1n, 2n);
    expect(marks).toEqual([COUNT_LEASE_MICROS]);
    // Within the lease the pass leaves the two marks (from its future) and recounts nothing.
    expect(await pass()).toMatchObject({ lists: 0, buckets: 0, early: 2 });
    expect(await countsOf2()).toEqual({ followers: 1, following: 0, exact: false });
    afterLease();
    // After it, the one recount of each list: the follow is recounted once, not twice.
    // (A follow marks its two follow lists; the request lists only when its first read shows a
    // request it would clear.)
    expect(await pass()).toMatchObject({ lists: 2, buckets: 2, rows: 2, deferred: 0, early: 0 });
    expect(await countsOf2()).toEqual({ followers: 1, following: 0, exact: true });
    expect(await pass()).toEqual({ lists: 0, buckets: 0, rows: 0, absDrift: 0, deferred: 0, early: 0 });
  });

  it('a writer that overran its lease marks again at its clock once its increments are done', async () => {
    store.beforeWrite = async () => {
      afterLease(); // stalled past the lease before its rows
      await pass(); // clears the lease's marks, sees no row yet
    };
    await graph.follow(1n, 2n);
    expect(await store.hasDirty(followersOf(2n))).toBe(true);
    await pass();
    expect(await countsOf2()).toEqual({ followers: 1, following: 0, exact: true });
  });
});
