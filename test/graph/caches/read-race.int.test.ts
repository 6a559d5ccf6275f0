/**
 * The read-through race on the real node: a read parked after it read the store (the
 * old value in hand) while a write changes the value must store nothing, so the next read shows the
 * new value at once, not after the TTL. For an edge state (the follow status), a user row (a
 * deactivation) and a whole following list (followed-by). The caches' TTL is 2 s here, so a stale
 * entry, had it been stored, would still be served by the checks that follow.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GraphService } from '../../../src/graph/graph-service.js';
import { CassandraGraphStore } from '../../../src/store/cassandra/graph-store.js';
import { type TestKeyspace, testKeyspace } from '../../support/cassandra.js';
import { heldStore } from '../support/parked-reads.js';
import { SingleBucketLists } from '../support/single-bucket-lists.js';

let ks: TestKeyspace;

beforeAll(async () => {
  ks = await testKeyspace('cacherace');
});

afterAll(async () => {
  await ks?.drop();
});

function service() {
  const h = heldStore(new CassandraGraphStore(ks.client));
  const graph = new GraphService({
    store: h.store,
    lists: new SingleBucketLists(h.store),
    maxFollowing: 100,
    countLeaseMs: 0,
    caches: { ttlMs: 2000 },
  });
  return { h, graph };
}

describe('the read-through race on the real node', () => {
  it('a follow status read parked while the follow lands stores nothing', async () => {
    const { h, graph } = service();
    for (const id of [1n, 2n]) await graph.putUser({ id, username: `r${id}` });
    const held = h.park('getEdgesOutOf');
    const reader = graph.getFollowStatus(1n, 2n);
    await held.atRead;
    const { position } = await graph.follow(1n, 2n);
    held.release();
    expect([await reader, await graph.getFollowStatus(1n, 2n)]).toEqual([
      { state: 'none' },
      { state: 'following', since: position },
    ]);
    expect(graph.caches.edges.stats.refused).toBeGreaterThan(0);
    graph.feed.close();
  });

  it('a user row read parked while the account is deactivated stores nothing', async () => {
    const { h, graph } = service();
    for (const id of [3n, 4n]) await graph.putUser({ id, username: `r${id}` });
    const held = h.park('getUser');
    const reader = graph.getUser(4n);
    await held.atRead;
    await graph.putUser({ id: 4n, state: 'deactivated' });
    held.release();
    expect([(await reader).state, (await graph.getUser(4n)).state]).toEqual(['active', 'deactivated']);
    await expect(graph.assertCanViewProfile(3n, 4n)).rejects.toThrow();
    graph.feed.close();
  });

  it('a whole following list read parked while the viewer follows one more stores nothing (followed-by)', async () => {
    const { h, graph } = service();
    const [V, X] = [5n, 9n];
    for (const id of [5n, 6n, 7n, 9n]) await graph.putUser({ id, username: `r${id}` });
    await graph.follow(V, 6n);
    for (const f of [6n, 7n]) await graph.follow(f, X);
    const ids = async () => {
      const r = await graph.followedBy(V, X, 10);
      return { sample: r.sample.map((m) => m.id), total: r.total };
    };
    const held = h.park('listBucket');
    const reader = ids();
    await held.atRead;
    await graph.follow(V, 7n);
    held.release();
    expect([await reader, await ids()]).toEqual([
      { sample: [6n], total: 1 },
      { sample: [7n, 6n], total: 2 },
    ]);
    expect(graph.caches.following.stats.refused).toBeGreaterThan(0);
    graph.feed.close();
  });
});
