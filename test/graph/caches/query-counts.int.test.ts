/**
 * Q2: DB queries per request on a warm service, counted from `/metrics`
 * (`flocklist_db_query_duration_seconds` counts, every op): an edge check (the follow status
 * route), a counts read and a 300-id `followers/contains` on an ordinary list (one inverse bucket),
 * and followed-by (the following cache), each asked twice in a row; the second must cost at most
 * 1, 1, 8 and 0 queries, and the same requests
 * with the caches off show what they save. Printed per request. The background pollers' statements
 * (the feed tail's event reads, the registry's loads) are left out.
 */
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GraphService } from '../../../src/graph/graph-service.js';
import { createHttpMetrics, registerCacheMetrics } from '../../../src/http/metrics.js';
import { reconcileDirty } from '../../../src/jobs/reconcile-dirty.js';
import { BucketedListService } from '../../../src/lists/list-service.js';
import { CassandraGraphStore } from '../../../src/store/cassandra/graph-store.js';
import { bearer, buildTestApp, call } from '../../http/support/app.js';
import { type TestKeyspace, testKeyspace } from '../../support/cassandra.js';

const OWNER = 1n;
const VIEWER = 2n;
const FOLLOWERS = Array.from({ length: 30 }, (_, i) => 100n + BigInt(i));
/** 300 ids: the 30 followers and 270 accounts that do not follow the owner. */
const IDS = [...FOLLOWERS, ...Array.from({ length: 270 }, (_, i) => 1000n + BigInt(i))];

/** Statements the background pollers issue (the feed's tail, the deactivated registry). */
const BACKGROUND = new Set(['readEvents', 'listEventPeriods', 'listDeactivated']);

let ks: TestKeyspace;
const apps: Record<'on' | 'off', Awaited<ReturnType<typeof build>>> = {} as never;

async function build(caches: boolean) {
  const registry = new Registry();
  const metrics = createHttpMetrics(registry);
  const store = new CassandraGraphStore(ks.client, {
    onQuery: (name, seconds, ok) => metrics.recorder.observeQuery(name, seconds, ok),
  });
  const lists = new BucketedListService({
    store,
    cursorSecret: 'cursor-secret-0123456789abcdef',
    bucketThresholds: [50_000, 200_000, 400_000],
  });
  const graph = new GraphService({
    store,
    lists,
    maxFollowing: 7500,
    countLeaseMs: 0,
    ...(caches ? {} : { caches: false as const }),
  });
  registerCacheMetrics(registry, () => graph.caches.stats());
  const { app } = buildTestApp({ graph, receipts: store, registry, metrics });
  return { app, registry, graph, store };
}

/** Every DB statement counted so far (all ops). */
async function queries(registry: Registry): Promise<Map<string, number>> {
  const metric = await registry.getSingleMetric('flocklist_db_query_duration_seconds')?.get();
  const out = new Map<string, number>();
  for (const v of (metric?.values ?? []) as {
    metricName?: string;
    labels: Record<string, unknown>;
    value: number;
  }[])
    if (v.metricName === 'flocklist_db_query_duration_seconds_count')
      out.set(String(v.labels.op), (out.get(String(v.labels.op)) ?? 0) + v.value);
  return out;
}

async function cost(which: 'on' | 'off', request: () => Promise<{ status: number }>) {
  const { registry } = apps[which];
  const before = await queries(registry);
  const r = await request();
  expect(r.status).toBe(200);
  const after = await queries(registry);
  const ops: Record<string, number> = {};
  let total = 0;
  for (const [op, n] of after) {
    const d = n - (before.get(op) ?? 0);
    // The feed tail's and the registry's polls run in the background, not for the request.
    if (d > 0 && !BACKGROUND.has(op)) {
      ops[op] = d;
      total += d;
    }
  }
  return { total, ops };
}

beforeAll(async () => {
  ks = await testKeyspace('cacheq2');
  const on = await build(true);
  apps.on = on;
  apps.off = await build(false);
  for (const id of [OWNER, VIEWER, ...IDS])
    await on.store.putUser({ id, username: `u${id}`, private: false, state: 'active', hideLists: false });
  for (const f of FOLLOWERS) await on.graph.follow(f, OWNER);
  await on.graph.follow(VIEWER, OWNER);
  // The viewer follows 10 of the owner's followers (followed-by: 10 of a 11-member following list).
  for (const f of FOLLOWERS.slice(0, 10)) await on.graph.follow(VIEWER, f);
  await reconcileDirty(on.store);
}, 180_000);

afterAll(async () => {
  await ks?.drop();
});

describe('Q2: DB queries per request, warm', () => {
  const requests = {
    'edge check': (app: ReturnType<typeof buildTestApp>['app']) =>
      call(app, 'GET', `/v1/users/${VIEWER}/following/${OWNER}`, { auth: bearer(VIEWER) }),
    'counts read': (app: ReturnType<typeof buildTestApp>['app']) =>
      call(app, 'GET', `/v1/users/${OWNER}/counts`, { auth: bearer(VIEWER) }),
    '300-id contains': (app: ReturnType<typeof buildTestApp>['app']) =>
      call(app, 'POST', `/v1/users/${OWNER}/followers/contains`, {
        auth: bearer(OWNER),
        body: { ids: IDS.map(String) },
      }),
    'followed-by': (app: ReturnType<typeof buildTestApp>['app']) =>
      call(app, 'GET', `/v1/users/${OWNER}/followed-by?limit=3`, { auth: bearer(VIEWER) }),
  };
  // followed-by is not one of Q2's rows: the following cache serves it whole.
  const targets = { 'edge check': 1, 'counts read': 1, '300-id contains': 8, 'followed-by': 0 };

  for (const [name, request] of Object.entries(requests) as [
    keyof typeof requests,
    (typeof requests)['edge check'],
  ][])
    it(`${name}: at most ${targets[name]} queries warm`, async () => {
      const figures: Record<string, unknown> = {};
      for (const which of ['off', 'on'] as const) {
        const cold = await cost(which, () => request(apps[which].app));
        const warm = await cost(which, () => request(apps[which].app));
        figures[which] = { cold, warm };
        if (which === 'on') expect(warm.total).toBeLessThanOrEqual(targets[name]);
      }
      console.log(`[Q2] ${name}: ${JSON.stringify(figures)}`);
      if (name === '300-id contains') {
        const r = await request(apps.on.app);
        expect((r.json.ids as string[]).sort()).toEqual(FOLLOWERS.map(String).sort());
      }
      if (name === 'followed-by') {
        const r = await request(apps.on.app);
        const ids = FOLLOWERS.slice(0, 10).reverse().slice(0, 3).map(String);
        expect([(r.json.sample as { id: string }[]).map((m) => m.id), r.json.total]).toEqual([ids, 10]);
      }
    });
});

describe('a cold edge check', () => {
  it("is one read of the edges (follows and requests at once) beside the two accounts' user rows, none warm", async () => {
    const fresh = await build(true);
    const statements = async () => {
      const before = await queries(fresh.registry);
      const r = await call(fresh.app, 'GET', `/v1/users/${VIEWER}/following/${OWNER}`, {
        auth: bearer(VIEWER),
      });
      expect([r.status, r.json.state]).toEqual([200, 'following']);
      const out: string[] = [];
      for (const [op, n] of await queries(fresh.registry))
        if (!BACKGROUND.has(op)) for (let i = 0; i < n - (before.get(op) ?? 0); i++) out.push(op);
      return out.sort();
    };
    const cold = await statements();
    const warm = await statements();
    console.log(`[edge check] cold ${cold}; warm ${warm.length}`);
    expect(cold).toEqual(['getEdgesOutOf', 'getUser', 'getUser']);
    expect(warm).toEqual([]);
  });
});

describe('Q1: a cold counts read', () => {
  it('is two single-partition reads from the account tables on a new keyspace (made with the migration marker set: no migrate-counts run), none warm', async () => {
    // A new process: cold caches; its first counts read also reads the migration marker, once.
    const fresh = await build(true);
    const statements = async (read: () => Promise<unknown>) => {
      const before = await queries(fresh.registry);
      await read();
      const out: string[] = [];
      for (const [op, n] of await queries(fresh.registry))
        if (!BACKGROUND.has(op)) for (let i = 0; i < n - (before.get(op) ?? 0); i++) out.push(op);
      return out.sort();
    };
    const cold = await statements(() => fresh.graph.counts(OWNER));
    const next = await statements(() => fresh.graph.counts(VIEWER));
    const warm = await statements(() => fresh.graph.counts(OWNER));
    console.log(`[Q1] counts cold (first read of a process) ${cold}; cold ${next}; warm ${warm.length}`);
    expect(cold).toEqual(['getSweepProgress', 'getUserCountHeads', 'getUserCounts']);
    expect(next).toEqual(['getUserCountHeads', 'getUserCounts']);
    expect(warm).toEqual([]);
    expect(await fresh.graph.counts(OWNER)).toEqual({
      followers: 31,
      following: 0,
      exact: true,
      asOf: expect.any(BigInt),
    });
  });
});
