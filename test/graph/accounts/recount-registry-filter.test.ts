/**
 * Recounts read the registry of deactivated accounts, not every member's user row
 * (`registryFilter` in `src/graph/accounts/account-state.ts`, used by both reconcilers), on the in-memory
 * store: the user rows read are exactly the members the registry names, a stale entry is confirmed
 * away, an oversized registry falls back to per-member reads, and a pass reads the registry only
 * after every shard's marks.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { registryFilter } from '../../../src/graph/accounts/account-state.js';
import { GraphService } from '../../../src/graph/graph-service.js';
import { reconcileList } from '../../../src/jobs/reconcile.js';
import { reconcileDirty } from '../../../src/jobs/reconcile-dirty.js';
import type { UserId } from '../../../src/model/types.js';
import { DIRTY_SHARDS } from '../../../src/ports/count-store.js';
import { MemoryGraphStore } from '../../support/memory/graph-store.js';
import { SingleBucketLists } from '../support/single-bucket-lists.js';

const CELEB = 1n;
const FANS = Array.from({ length: 2000 }, (_, i) => 1000n + BigInt(i));
const GONE = [FANS[5], FANS[777], FANS[1999]] as UserId[];
const followers = { userId: CELEB, relation: 'follows' as const, direction: 'in' as const };
const byId = (x: bigint, y: bigint) => (x < y ? -1 : x > y ? 1 : 0);

let store: MemoryGraphStore;
let graph: GraphService;

/** The store, recording the ids of every `getUsers` call and the order of registry and mark reads. */
function recording(extraRegistered: UserId[] = []) {
  const asked: UserId[] = [];
  const calls: string[] = [];
  const spy = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'getUsers')
        return (ids: readonly UserId[]) => {
          asked.push(...ids);
          return target.getUsers(ids);
        };
      if (prop === 'listDeactivated')
        return async (limit: number) => {
          calls.push('listDeactivated');
          const l = await target.listDeactivated(limit);
          return l === null ? null : [...l, ...extraRegistered];
        };
      if (prop === 'listDirty')
        return (shard: number, limit: number) => {
          calls.push('listDirty');
          return target.listDirty(shard, limit);
        };
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return { spy, asked: () => [...new Set(asked)].sort(byId), calls };
}

beforeEach(async () => {
  store = new MemoryGraphStore();
  graph = new GraphService({
    store,
    lists: new SingleBucketLists(store),
    maxFollowing: 7500,
    countLeaseMs: 0,
  });
  for (const id of [CELEB, ...FANS]) await graph.putUser({ id, username: `u${id}` });
  for (const f of FANS) await graph.follow(f, CELEB);
  await reconcileDirty(store);
  for (const id of GONE) await graph.putUser({ id, state: 'deactivated' });
  await graph.settleAccountTasks();
});

describe('recounts read the registry of deactivated accounts', () => {
  it('a dirty pass reads the user rows of the registered members only, after every shard’s marks', async () => {
    const r = recording();
    const pass = await reconcileDirty(r.spy);
    expect(pass).toMatchObject({ lists: 1, buckets: 1, rows: 1997 });
    expect((await graph.counts(CELEB)).followers).toBe(1997);
    expect(r.asked()).toEqual([...GONE].sort(byId));
    expect(r.calls).toEqual([...Array<string>(DIRTY_SHARDS).fill('listDirty'), 'listDeactivated']);
  });

  it('a registered account that is active again is confirmed away by its user row and counted', async () => {
    const stale = FANS[42] as UserId;
    const r = recording([stale]);
    const result = await reconcileList(r.spy, followers);
    expect(result).toMatchObject({ counted: 1997 });
    expect(r.asked()).toEqual([...GONE, stale].sort(byId));
  });

  it('more registered accounts than the bound: every member’s row is read, with the same result', async () => {
    const members = [...FANS];
    const over = recording();
    expect([...(await registryFilter(over.spy, 2)(members))].sort(byId)).toEqual([...GONE].sort(byId));
    expect(over.asked()).toEqual(members);
    const within = recording();
    expect([...(await registryFilter(within.spy, 3)(members))].sort(byId)).toEqual([...GONE].sort(byId));
    expect(within.asked()).toEqual([...GONE].sort(byId));
    expect(within.calls).toEqual(['listDeactivated']);
  });
});
