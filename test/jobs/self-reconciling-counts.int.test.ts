/**
 * ACCEPTANCE (self-reconciling counts) on the real node: 8 concurrent clients storm follows and
 * unfollows over a few accounts while the in-service reconciler runs every 200 ms; after the
 * writes stop, every account's counts read `exact: true` and equal its list sizes within 10 s,
 * with no job started by hand — from both copies of the counts (the list tables and the account
 * tables, `cql/023`), both written by every write and reconciled by the same passes.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { type DirtyReconcilerHandle, startDirtyReconciler } from '../../src/jobs/reconcile-dirty.js';
import { PairBusyError } from '../../src/model/errors.js';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { SingleBucketLists } from '../graph/support/single-bucket-lists.js';
import { type TestKeyspace, testKeyspace } from '../support/cassandra.js';

const CLIENTS = 8;
const USERS = Array.from({ length: 6 }, (_, i) => BigInt(i + 1));
const OPS_PER_CLIENT = 150;

let ks: TestKeyspace;
let store: CassandraGraphStore;
let graph: GraphService;
/** The same service reading counts from the account tables. */
let accounts: GraphService;
let reconciler: DirtyReconcilerHandle;
const passes = { n: 0, absDrift: 0 };

beforeAll(async () => {
  ks = await testKeyspace('selfcounts');
  store = new CassandraGraphStore(ks.client);
  graph = new GraphService({
    store,
    lists: new SingleBucketLists(store),
    maxFollowing: 1_000_000,
    countsFrom: 'lists',
  });
  accounts = new GraphService({
    store,
    lists: new SingleBucketLists(store),
    maxFollowing: 1_000_000,
    countsFrom: 'accounts',
    caches: false,
  });
  for (const id of USERS) await graph.putUser({ id, username: `s${id}` });
  reconciler = startDirtyReconciler(store, {
    intervalMs: 200,
    onPass: (r) => {
      passes.n++;
      passes.absDrift += r.absDrift;
    },
  });
});

afterAll(async () => {
  await reconciler?.stop();
  await ks?.drop();
});

async function retryBusy(run: () => Promise<unknown>) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await run();
    } catch (e) {
      if (!(e instanceof PairBusyError) || attempt > 200) throw e;
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

async function listSize(userId: bigint, direction: 'in' | 'out') {
  return (await store.listBucket({ userId, relation: 'follows', direction }, 1, null, 10_000)).length;
}

it('counts become exact and equal the list sizes within 10 s of the last write, reconciled in the service', async () => {
  let seed = 12345;
  const rnd = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  const plans = Array.from({ length: CLIENTS }, () =>
    Array.from({ length: OPS_PER_CLIENT }, () => {
      const a = USERS[rnd(USERS.length)] as bigint;
      let b = USERS[rnd(USERS.length)] as bigint;
      if (a === b) b = a === 1n ? 2n : 1n;
      return { a, b, follow: rnd(3) !== 0 };
    }),
  );
  await Promise.all(
    plans.map(async (plan) => {
      for (const { a, b, follow } of plan)
        await retryBusy(() => (follow ? graph.follow(a, b) : graph.unfollow(a, b)));
    }),
  );
  const stopped = performance.now();
  const sizes = Object.fromEntries(
    await Promise.all(
      USERS.map(async (u) => [
        String(u),
        { followers: await listSize(u, 'in'), following: await listSize(u, 'out'), exact: true },
      ]),
    ),
  );
  const want = { lists: sizes, accounts: sizes };
  const readFrom = async (g: GraphService) =>
    Object.fromEntries(
      await Promise.all(
        USERS.map(async (u) => {
          const c = await g.counts(u);
          return [String(u), { followers: c.followers, following: c.following, exact: c.exact }];
        }),
      ),
    );
  const read = async () => ({ lists: await readFrom(graph), accounts: await readFrom(accounts) });
  let got = await read();
  while (JSON.stringify(got) !== JSON.stringify(want) && performance.now() - stopped < 10_000) {
    await new Promise((r) => setTimeout(r, 100));
    got = await read();
  }
  const seconds = (performance.now() - stopped) / 1000;
  console.log(
    `[self-counts] ${CLIENTS * OPS_PER_CLIENT} writes by ${CLIENTS} clients; exact ${seconds.toFixed(2)} s after the last write; ` +
      `${passes.n} passes corrected Σ|drift| ${passes.absDrift}`,
  );
  expect(got).toEqual(want);
  for (const u of USERS) {
    const [l, a] = [await graph.counts(u), await accounts.counts(u)];
    expect(l.asOf).not.toBeNull();
    expect(a).toEqual(l);
  }
}, 120_000);
