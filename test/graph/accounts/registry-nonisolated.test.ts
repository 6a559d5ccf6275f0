/**
 * The registry under a non-isolated batch: Cassandra's logged batch is atomic, not isolated, so
 * another instance's feed-tail poll can read an update's `user.updated` row before the `users` row
 * of the same batch (or long before, when the batchlog replays it). This store lands the event row
 * first and the user cells `lagMs` later, as one replica set can. B must keep the account pending
 * until its `state` cell reaches the event's position: before that rule B read the row once, found
 * it still active, trusted itself fresh, and listed the deactivated account until its 2-minute
 * reload. Asserted 3 × the API's bound (1 s) after A acknowledged.
 */
import { expect, it } from 'vitest';
import { GraphService } from '../../../src/graph/graph-service.js';
import { BucketedListService } from '../../../src/lists/list-service.js';
import { listIn } from '../../../src/model/types.js';
import { MemoryGraphStore } from '../../support/memory/graph-store.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

class NonIsolatedStore extends MemoryGraphStore {
  lagMs = 0;
  override async putUserFields(...a: Parameters<MemoryGraphStore['putUserFields']>) {
    const [id, fields, version, o] = a;
    if (!o?.event || this.lagMs === 0) return super.putUserFields(...a);
    // The events partition's share of the logged batch lands first...
    this.writeEvents([o.event], version);
    // ...the users partition's share later.
    await sleep(this.lagMs);
    return super.putUserFields(id, fields, version, {});
  }
}

it('a deactivation on A whose user cells land 600 ms after its feed row is enforced on B within the bound', async () => {
  const store = new NonIsolatedStore();
  const service = () =>
    new GraphService({
      store,
      lists: new BucketedListService({
        store,
        cursorSecret: 'registry-nonisolated-secret-0123456789',
        bucketThresholds: [1_000_000_000],
        layoutCacheTtlMs: 0,
      }),
      maxFollowing: 7500,
      countLeaseMs: 0,
    });
  const A = service();
  const B = service();
  await A.putUser({ id: 1n, username: 'owner' });
  await A.putUser({ id: 11n, username: 'fan' });
  await A.putUser({ id: 12n, username: 'other' });
  await A.follow(11n, 1n);
  await A.follow(12n, 1n);
  const page = async (g: GraphService) =>
    (await g.listPage(listIn(1n, 'follows'), 50, null)).items.map((i) => i.id);
  expect(await page(B)).toEqual([12n, 11n]);
  await sleep(600); // B's tail polls; its registry is fresh
  expect(B.registry?.fresh()).toBe(true);

  store.lagMs = 600;
  await A.putUser({ id: 11n, state: 'deactivated' });
  expect(await page(A)).toEqual([12n]);
  await sleep(3000);
  expect(await page(B)).toEqual([12n]);
  expect(B.registry?.isDeactivated(11n)).toBe(true);
  for (const g of [A, B]) {
    await g.settleAccountTasks();
    g.feed.close();
    g.registry?.close();
  }
});
