/**
 * On Cassandra: a pair whose `pair_ops` holds only a checkpoint written before the `restricts`
 * relation existed — the fixture's `cp_state` text inserted as is, at the protocol's commit time —
 * reads back, takes a restrict through the service, and keeps every old edge (the unit test
 * `checkpoint-codec.test.ts` covers the codec and the fold).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { PAIR_STEP_TIME } from '../../src/ports/records.js';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { S } from '../../src/store/cassandra/statements.js';
import { decodeCheckpoint } from '../../src/store/checkpoint-codec.js';
import { SingleBucketLists } from '../graph/support/single-bucket-lists.js';
import { type TestKeyspace, testKeyspace } from '../support/cassandra.js';
import { activeEdges, OLD_CHECKPOINT as OLD } from './checkpoint-before-restrict.js';

const [A, B] = [OLD.low, OLD.high];
let ks: TestKeyspace;
let store: CassandraGraphStore;
let graph: GraphService;

beforeAll(async () => {
  ks = await testKeyspace('old_checkpoint');
  store = new CassandraGraphStore(ks.client);
  graph = new GraphService({ store, lists: new SingleBucketLists(store), maxFollowing: 100 });
  await graph.putUser({ id: A, username: 'ada' });
  await graph.putUser({ id: B, username: 'bo' });
});

afterAll(async () => {
  await ks?.drop();
});

it('an old checkpoint row decodes on Cassandra and a restrict lands on top of it, old edges intact', async () => {
  await ks.client.execute(
    S.commitCheckpoint.cql,
    [PAIR_STEP_TIME.commit(OLD.horizon, OLD.count), OLD.horizon, OLD.text, A, B],
    { prepare: true },
  );
  const read = await store.readPairHistory(A, B);
  expect(read.checkpoint).toEqual(decodeCheckpoint(OLD.horizon, OLD.text));
  expect(activeEdges(read.checkpoint?.edges ?? [])).toEqual(activeEdges(OLD.edges));

  expect(await graph.restrict(A, B)).toMatchObject({ state: 'restricting', changed: true });
  expect(await graph.relationships(A, [B])).toEqual([
    {
      id: B,
      following: true,
      followedBy: false,
      requested: false,
      requestedBy: false,
      blocking: false,
      blockedBy: false,
      muting: true,
      closeFriend: true,
      restricting: true,
    },
  ]);
  const active = activeEdges(await store.getPairEdges(A, B));
  expect(active.filter((e) => !e.includes('restricts'))).toEqual(activeEdges(OLD.edges));
  expect(active.filter((e) => e.includes('restricts'))).toHaveLength(1);
  expect(await graph.unrestrict(A, B)).toMatchObject({ state: 'none', changed: true });
  expect(activeEdges(await store.getPairEdges(A, B))).toEqual(activeEdges(OLD.edges));
});
