/**
 * Regression: a pair whose history outgrew one read page froze. The Cassandra store returned only
 * the first page of `pair_ops`, so every later op was missing from the fold: a block answered 200
 * and did nothing. Here 2,500 ops are written straight into the history (no compaction, as a
 * pair written before checkpoints existed would hold), then a block is applied through the
 * service: the whole history must be read (three pages of 1,000) and the block must hold.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { type TestKeyspace, testKeyspace } from '../support/cassandra.js';
import { SingleBucketLists } from './support/single-bucket-lists.js';

const [ada, bo] = [1n, 2n];
const OPS = 2500;
let ks: TestKeyspace;
let store: CassandraGraphStore;
let graph: GraphService;

beforeAll(async () => {
  ks = await testKeyspace('long_history');
  store = new CassandraGraphStore(ks.client);
  graph = new GraphService({ store, lists: new SingleBucketLists(store), maxFollowing: 7500 });
  await graph.putUser({ id: ada, username: 'ada' });
  await graph.putUser({ id: bo, username: 'bo' });
});

afterAll(async () => {
  await ks?.drop();
});

it(`a history of ${OPS} ops (more than one read page) is read whole, and a block on it holds`, async () => {
  const start = 1_700_000_000_000_000n;
  const ops = Array.from({ length: OPS }, (_, i) => ({
    sourceId: ada,
    targetId: bo,
    kind: i % 2 === 0 ? ('follow' as const) : ('unfollow' as const),
    position: start + BigInt(i),
    base: 0,
  }));
  for (let i = 0; i < ops.length; i += 100) {
    await Promise.all(ops.slice(i, i + 100).map((op) => store.appendPair({ op })));
  }
  await graph.follow(ada, bo);
  const history = await store.readPairHistory(ada, bo);
  expect(history.ops.length).toBe(OPS + 1);
  expect(history.ops.slice(0, OPS)).toEqual(ops);

  expect(await graph.block(bo, ada)).toMatchObject({ state: 'blocking', changed: true });
  expect(await graph.getFollowStatus(ada, bo)).toEqual({ state: 'none' });
  expect(await graph.contains(bo, 'follows', 'in', [ada])).toEqual([]);
  expect(await store.listBucket({ userId: bo, relation: 'follows', direction: 'in' }, 1, null, 10)).toEqual(
    [],
  );
});
