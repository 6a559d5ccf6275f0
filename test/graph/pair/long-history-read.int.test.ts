/**
 * Regression: a pair whose history outgrew one read page froze (the Cassandra store returned only
 * the first page of `pair_ops`, so a block answered 200 and did nothing). Now the pair read is one
 * statement whose first page is one snapshot, and a history longer than `maxOps` drains: writes
 * that would only add an op wait (503 pair_busy) while the compaction steps go through alone, and
 * each commit folds what the snapshot page covers. Here 10 × `maxOps` ops are written straight into
 * the history (no compaction, as a pair written before checkpoints existed would hold), then a
 * follow and a block go through the service, retried on pair_busy as a client would.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { GraphService } from '../../../src/graph/graph-service.js';
import { DEFAULT_HISTORY_POLICY } from '../../../src/graph/pair/pair-history.js';
import { PairBusyError } from '../../../src/model/errors.js';
import { PAIR_READ_ROWS } from '../../../src/ports/records.js';
import { CassandraGraphStore } from '../../../src/store/cassandra/graph-store.js';
import { type TestKeyspace, testKeyspace } from '../../support/cassandra.js';
import { SingleBucketLists } from '../support/single-bucket-lists.js';

const [ada, bo] = [1n, 2n];
const OPS = 10 * DEFAULT_HISTORY_POLICY.maxOps;
let ks: TestKeyspace;
let store: CassandraGraphStore;
let graph: GraphService;

beforeAll(async () => {
  ks = await testKeyspace('long_history');
  store = new CassandraGraphStore(ks.client);
  // A short settle (B + 2S), so the drain takes seconds, not minutes.
  graph = new GraphService({
    store,
    lists: new SingleBucketLists(store),
    maxFollowing: 7500,
    historyPolicy: { writeBudgetMs: 1000, clockSkewMs: 50 },
  });
  await graph.putUser({ id: ada, username: 'ada' });
  await graph.putUser({ id: bo, username: 'bo' });
});

afterAll(async () => {
  await ks?.drop();
});

/** Retries on pair_busy for at most a minute; returns the result and how many answers were busy. */
async function untilNotBusy<T>(f: () => Promise<T>): Promise<{ value: T; busy: number }> {
  const end = Date.now() + 60_000;
  for (let busy = 0; ; busy++) {
    try {
      return { value: await f(), busy };
    } catch (e) {
      if (!(e instanceof PairBusyError) || Date.now() > end) throw e;
      await new Promise((r) => setTimeout(r, 150));
    }
  }
}

it(`a history of ${OPS} ops (10 × maxOps) reads in one statement's snapshot, drains, and a block on it holds`, async () => {
  const start = 1_700_000_000_000_000n;
  const ops = Array.from({ length: OPS }, (_, i) => ({
    sourceId: ada,
    targetId: bo,
    kind: i % 2 === 0 ? ('follow' as const) : ('unfollow' as const),
    position: start + BigInt(i),
    base: 0,
  }));
  for (let i = 0; i < ops.length; i += 100) {
    await Promise.all(ops.slice(i, i + 100).map((op) => store.appendPair({ pair: [ada, bo], op })));
  }
  const first = await store.readPairHistory(ada, bo);
  expect(first.ops).toEqual(ops);
  expect(first.snapshotThrough).toBe(start + BigInt(PAIR_READ_ROWS - 1));

  const follow = await untilNotBusy(() => graph.follow(ada, bo));
  expect(follow.value).toMatchObject({ state: 'following', changed: true });
  const block = await untilNotBusy(() => graph.block(bo, ada));
  expect(block.value).toMatchObject({ state: 'blocking', changed: true });
  console.log(
    `[long-history] busy answers before the follow: ${follow.busy}, before the block: ${block.busy}`,
  );

  // Every op is either folded into the checkpoint or still above its horizon: none lost.
  const after = await store.readPairHistory(ada, bo);
  expect((after.checkpoint?.count ?? 0) + after.ops.length).toBe(OPS + 2);
  expect(await graph.getFollowStatus(ada, bo)).toEqual({ state: 'none' });
  expect(await graph.contains(bo, 'follows', 'in', [ada])).toEqual([]);
  expect(await store.listBucket({ userId: bo, relation: 'follows', direction: 'in' }, 1, null, 10)).toEqual(
    [],
  );
  expect(await graph.relationship(bo, ada)).toMatchObject({ blocking: true });
});
