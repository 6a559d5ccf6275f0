/**
 * Fold once: the write path folds the pair whole (`foldPair`) at most three times per op — the
 * first read, the re-read, and a compaction commit's checkpoint — whatever the op (live, replayed,
 * a duplicate, one that a block refuses, one that commits a compaction). Counted through the fold
 * module's test seam (`foldProbe`) on the in-memory store; every other step derives from those
 * folds (`write-path.ts`).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GraphService } from '../../../src/graph/graph-service.js';
import { foldProbe } from '../../../src/graph/pair/pair-fold.js';
import { MemoryGraphStore } from '../../support/memory/graph-store.js';
import { SingleBucketLists } from '../support/single-bucket-lists.js';

const [ada, bo, cy] = [1n, 2n, 3n];

let graph: GraphService;
let folds = 0;

/** The `foldPair` calls `op` makes. */
async function foldsOf(op: () => Promise<unknown>): Promise<number> {
  folds = 0;
  await op();
  return folds;
}

/** A service whose pairs compact after `compactAbove` ops (default: never in these tests). */
async function setup(compactAbove = 1_000) {
  const store = new MemoryGraphStore();
  let now = 1_000_000_000n;
  graph = new GraphService({
    store,
    lists: new SingleBucketLists(store),
    maxFollowing: 100,
    // A second per clock read: compactions settle and leave the event window within a few ops.
    clock: () => (now += 1_000_000n),
    historyPolicy: {
      compactAbove,
      keep: 2,
      // Budgets a loaded machine cannot overrun; the clock's second per read still settles them.
      writeBudgetMs: 5_000,
      viewBudgetMs: 5_000,
      batchTimeoutMs: 5_000,
      clockSkewMs: 50,
    },
    countLeaseMs: 0,
  });
  await graph.putUser({ id: ada, username: 'ada' });
  await graph.putUser({ id: bo, username: 'bo' });
  await graph.putUser({ id: cy, username: 'cy', private: true });
}

beforeEach(async () => {
  await setup();
  foldProbe.onFold = () => {
    folds++;
  };
});

afterEach(() => {
  foldProbe.onFold = undefined;
});

describe('the write path folds a pair at most three times per op', () => {
  it('live ops of every kind fold the first read and the re-read only', async () => {
    const counts = {
      follow: await foldsOf(() => graph.follow(ada, bo)),
      repeatFollow: await foldsOf(() => graph.follow(ada, bo)),
      unfollow: await foldsOf(() => graph.unfollow(ada, bo)),
      request: await foldsOf(() => graph.follow(ada, cy)),
      accept: await foldsOf(() => graph.acceptRequest(cy, ada)),
      removeFollower: await foldsOf(() => graph.removeFollower(cy, ada)),
      requestAgain: await foldsOf(() => graph.follow(bo, cy)),
      decline: await foldsOf(() => graph.declineRequest(cy, bo)),
      mute: await foldsOf(() => graph.mute(ada, bo)),
      closeFriend: await foldsOf(() => graph.addCloseFriend(ada, bo)),
      restrict: await foldsOf(() => graph.restrict(ada, bo)),
      block: await foldsOf(() => graph.block(bo, ada)),
      unblock: await foldsOf(() => graph.unblock(bo, ada)),
    };
    expect(counts).toEqual({
      follow: 2,
      repeatFollow: 2,
      unfollow: 2,
      request: 2,
      accept: 2,
      removeFollower: 2,
      requestAgain: 2,
      decline: 2,
      mute: 2,
      closeFriend: 2,
      restrict: 2,
      block: 2,
      unblock: 2,
    });
  });

  it('replays, duplicates and refused replays fold no more', async () => {
    await graph.block(bo, ada);
    const position = 1_000n;
    const counts = {
      replayBehindBlock: await foldsOf(() => graph.follow(ada, bo, { position })),
      duplicate: await foldsOf(() => graph.follow(ada, bo, { position })),
      replayBelow: await foldsOf(() => graph.unblock(bo, ada, { position: 500n })),
    };
    expect(counts).toEqual({ replayBehindBlock: 2, duplicate: 2, replayBelow: 2 });
  });

  it('an op that announces, observes or commits a compaction folds at most three times', async () => {
    await setup(4);
    const counts: number[] = [];
    for (let i = 0; i < 40; i++) {
      counts.push(await foldsOf(() => (i % 2 === 0 ? graph.follow(ada, bo) : graph.unfollow(ada, bo))));
    }
    expect(counts.filter((n) => n > 3)).toEqual([]);
    // Some op committed a compaction (its checkpoint is the third fold), so the bound was exercised.
    expect(counts).toContain(3);
  });
});
