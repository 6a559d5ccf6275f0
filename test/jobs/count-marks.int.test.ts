/**
 * Review finding 5 on the real node: an edge batch that was applied but answered a timeout, then
 * the client's retry. The write's dirty marks are written before its append, so the reconciler
 * recounts the list once the lease has passed: 1 follower, `exact: true` (before the fix: 0
 * followers and `exact: true`, even after a reconcile pass).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { reconcileDirty } from '../../src/jobs/reconcile-dirty.js';
import { StoreUnavailableError } from '../../src/model/errors.js';
import { FaultyStore } from '../graph/support/faulty-store.js';
import { SingleBucketLists } from '../graph/support/single-bucket-lists.js';
import { type TestKeyspace, testKeyspace } from '../support/cassandra.js';

const LEASE_MS = 300;

let ks: TestKeyspace;
let store: FaultyStore;
let graph: GraphService;

beforeAll(async () => {
  ks = await testKeyspace('count_marks');
  store = new FaultyStore(ks.client);
  graph = new GraphService({
    store,
    lists: new SingleBucketLists(store),
    maxFollowing: 7500,
    countLeaseMs: LEASE_MS,
  });
  for (const id of [1n, 2n]) await graph.putUser({ id, username: `u${id}` });
});

afterAll(async () => {
  await ks?.drop();
});

it('regression: an edge write applied but timed out, then the retry: followers 1 and exact after a pass, not 0', async () => {
  store.failNextWrite('apply-then-timeout');
  await expect(graph.follow(1n, 2n)).rejects.toBeInstanceOf(StoreUnavailableError);
  expect(await graph.follow(1n, 2n)).toMatchObject({ state: 'following', changed: false });
  const rows = await store.listBucket({ userId: 2n, relation: 'follows', direction: 'in' }, 1, null, 10);
  expect(rows.map((e) => e.otherId)).toEqual([1n]);
  await new Promise((r) => setTimeout(r, LEASE_MS + 100));
  await reconcileDirty(store);
  const { asOf: _a, ...followed } = await graph.counts(2n);
  const { asOf: _b, ...follower } = await graph.counts(1n);
  expect({ followed, follower }).toEqual({
    followed: { followers: 1, following: 0, exact: true },
    follower: { followers: 0, following: 1, exact: true },
  });
});
