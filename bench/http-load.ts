/**
 * HTTP load benchmark (autocannon, loopback only, bounded): requests/s and p50/p99 for
 * `GET /v1/users/{id}/followers?limit=50` and `PUT /v1/users/{id}/following/{target}`, each
 * against the same work done by calling the domain (`GraphService`) directly in the same run, so
 * the API's overhead (auth, validation, routing, JSON, metrics, logging) is measured, not guessed.
 *
 *   npm run bench:http-load -- [--duration 8] [--connections 10] [--followers 500]
 *
 * Uses the node at `--contact-points` (must be loopback) and a throwaway keyspace that is dropped
 * at the end. Results go to the results directory (default the git-ignored bench/results/).
 */
import os from 'node:os';
import { Registry } from 'prom-client';
import { createApp } from '../src/app.js';
import { GraphService } from '../src/graph/graph-service.js';
import { createLogger } from '../src/http/logger.js';
import { createHttpMetrics } from '../src/http/metrics.js';
import { mintToken } from '../src/jobs/token.js';
import { BucketedListService } from '../src/lists/list-service.js';
import { CassandraGraphStore } from '../src/store/cassandra/graph-store.js';
import { MemoryGraphStore } from '../test/support/memory/graph-store.js';
import { BENCH_JWT_SECRET, serveApp } from './support/app-server.js';
import { barChartSvg } from './support/charts.js';
import { markdownTable, openBench } from './support/harness.js';

interface AutocannonResult {
  requests: { average: number };
  latency: { p50: number; p99: number; average: number };
  non2xx: number;
  errors: number;
  duration: number;
  statusCodeStats: Record<string, { count: number }>;
}
interface AutocannonRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  setupRequest?: (req: AutocannonRequest) => AutocannonRequest;
}
type Autocannon = (opts: Record<string, unknown>) => Promise<AutocannonResult>;

const bench = openBench({
  usage: 'npm run bench:http-load -- [--duration 8] [--connections 10] [--followers 500]',
  options: {
    duration: { type: 'string', default: '8' },
    connections: { type: 'string', default: '10' },
    followers: { type: 'string', default: '500' },
  },
});
const values = bench.args;
const DURATION_S = Math.min(60, Math.max(1, Number(values.duration)));
const CONNECTIONS = Math.min(64, Math.max(1, Number(values.connections)));
const FOLLOWERS = Math.min(5000, Math.max(60, Number(values.followers)));
const SECRET = BENCH_JWT_SECRET;
const CELEB = 1n;
const ACTORS = 50;
const TARGETS = 1000;
const actorId = (i: number) => 10_000n + BigInt(i);
const targetId = (i: number) => 20_000n + BigInt(i);

const contact = bench.config.contactPoints;
if (!contact.every((c) => c.startsWith('127.'))) throw new Error('bench/http-load targets loopback only');

const summarize = (ms: number[], seconds: number) => {
  const s = [...ms].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0;
  return { rps: s.length / seconds, p50: q(0.5), p99: q(0.99), count: s.length };
};

/** `concurrency` loops calling `op` for `seconds`; latencies in ms. */
async function direct(op: () => Promise<unknown>, seconds: number, concurrency: number) {
  const ms: number[] = [];
  const end = performance.now() + seconds * 1000;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await op();
        ms.push(performance.now() - t);
      }
    }),
  );
  return summarize(ms, (performance.now() - start) / 1000);
}

async function inBatches<T>(items: T[], size: number, fn: (t: T) => Promise<unknown>) {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

/**
 * The HTTP layer's own CPU cost, without the database or sockets: the same GET and PUT through
 * `app.request()` vs the domain calls, both over the in-memory store, sequentially.
 */
async function inProcessOverhead(seconds: number) {
  const store = new MemoryGraphStore();
  const lists = new BucketedListService({
    store,
    cursorSecret: `${SECRET}:cursor`,
    bucketThresholds: [50_000],
  });
  const graph = new GraphService({ store, lists, maxFollowing: 7500 });
  const registry = new Registry();
  const app = createApp({
    graph,
    feed: graph.feed,
    receipts: store,
    ready: async () => true,
    http: {
      jwtSecret: SECRET,
      bodyLimitBytes: 65_536,
      rateLimitPerMinute: 1e9,
      receiptTtlSeconds: 86_400,
      docs: false,
    },
    registry,
    logger: createLogger('silent'),
  });
  const followers = Array.from({ length: 200 }, (_, i) => 1000n + BigInt(i));
  for (const id of [CELEB, ...followers]) await graph.putUser({ id, username: `b${id}` });
  for (const id of followers) await graph.follow(id, CELEB);
  const viewer = 1000n;
  const auth = { authorization: `Bearer ${mintToken({ sub: String(viewer) }, SECRET)}` };
  const list = { userId: CELEB, relation: 'follows' as const, direction: 'in' as const };
  let n = 0;
  const rows = [];
  for (const [name, viaDomain, viaHttp] of [
    [
      'GET followers limit=50 (memory store, in-process)',
      async () => {
        await graph.assertCanViewLists(viewer, CELEB);
        const page = await graph.listPage(list, 50, null);
        await graph.getUsers(page.items.map((i) => i.id));
      },
      async () => {
        const res = await app.request(`/v1/users/${CELEB}/followers?limit=50`, { headers: auth });
        await res.arrayBuffer();
      },
    ],
    [
      'PUT following (memory store, in-process)',
      async () => {
        const i = n++;
        await graph.follow(followers[i % 200] as bigint, followers[(i * 7 + 1) % 200] as bigint);
      },
      async () => {
        const i = n++;
        const a = followers[i % 200] as bigint;
        const t = followers[(i * 7 + 1) % 200] as bigint;
        const res = await app.request(`/v1/users/${a}/following/${t}`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${mintToken({ sub: String(a) }, SECRET)}` },
        });
        await res.arrayBuffer();
      },
    ],
  ] as const) {
    const d = await direct(viaDomain, seconds, 1);
    const h = await direct(viaHttp, seconds, 1);
    rows.push({
      name,
      domain: { ops: Math.round(d.rps), p50_ms: +d.p50.toFixed(3), p99_ms: +d.p99.toFixed(3) },
      http: { ops: Math.round(h.rps), p50_ms: +h.p50.toFixed(3), p99_ms: +h.p99.toFixed(3) },
      overhead_p50_ms: +(h.p50 - d.p50).toFixed(3),
    });
  }
  return rows;
}

async function main() {
  const autocannon = (await import('autocannon' as string)).default as Autocannon;
  const { client } = await bench.throwawayKeyspace('bench_http', { requestTimeoutMs: 10_000 });

  const registry = new Registry();
  const metrics = createHttpMetrics(registry);
  const store = new CassandraGraphStore(client, {
    onQuery: (n, s, ok) => metrics.recorder.observeQuery(n, s, ok),
  });
  const lists = new BucketedListService({
    store,
    cursorSecret: `${SECRET}:cursor`,
    bucketThresholds: [50_000, 200_000],
    onPage: (s) => metrics.recorder.observeBucketFetches(s.list.relation, s.kind, s.queries),
  });
  const graph = new GraphService({ store, lists, maxFollowing: 7500 });
  const served = await serveApp({ graph, receipts: store, ready: async () => true, registry, metrics });
  const url = served.url;

  try {
    const t0 = performance.now();
    const followerIds = Array.from({ length: FOLLOWERS }, (_, i) => 1000n + BigInt(i));
    const allUsers = [CELEB, ...followerIds, ...Array.from({ length: ACTORS }, (_, i) => actorId(i))];
    allUsers.push(...Array.from({ length: TARGETS }, (_, i) => targetId(i)));
    await inBatches(allUsers, 32, (id) => graph.putUser({ id, username: `b${id}` }));
    await inBatches(followerIds, 32, (id) => graph.follow(id, CELEB));
    console.log(
      `seeded ${allUsers.length} users, ${FOLLOWERS} followers in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );

    const viewer = actorId(0);
    const viewerToken = `Bearer ${mintToken({ sub: String(viewer) }, SECRET)}`;
    const actorTokens = Array.from(
      { length: ACTORS },
      (_, i) => `Bearer ${mintToken({ sub: String(actorId(i)) }, SECRET)}`,
    );
    let pair = 0;
    const nextPair = () => {
      const n = pair++;
      return { a: n % ACTORS, t: Math.floor(n / ACTORS) % TARGETS };
    };

    const listKey = { userId: CELEB, relation: 'follows' as const, direction: 'in' as const };
    const domainGet = async () => {
      await graph.assertCanViewLists(viewer, CELEB);
      const page = await graph.listPage(listKey, 50, null);
      await graph.getUsers(page.items.map((i) => i.id));
    };
    const domainPut = async () => {
      const { a, t } = nextPair();
      await graph.follow(actorId(a), targetId(t));
    };
    const cannon = (title: string, req: AutocannonRequest) =>
      autocannon({ url, title, connections: CONNECTIONS, duration: DURATION_S, requests: [req] });
    const getReq: AutocannonRequest = {
      method: 'GET',
      path: `/v1/users/${CELEB}/followers?limit=50`,
      headers: { authorization: viewerToken },
    };
    const putReq: AutocannonRequest = {
      method: 'PUT',
      setupRequest: (req) => {
        const { a, t } = nextPair();
        return {
          ...req,
          path: `/v1/users/${actorId(a)}/following/${targetId(t)}`,
          headers: { authorization: actorTokens[a] as string },
        };
      },
    };

    await autocannon({ url, connections: CONNECTIONS, duration: 2, requests: [getReq] });
    const getDomain = await direct(domainGet, DURATION_S, CONNECTIONS);
    const getHttp = await cannon('GET followers limit=50', getReq);
    const putDomain = await direct(domainPut, DURATION_S, CONNECTIONS);
    const putHttp = await cannon('PUT following', putReq);

    const row = (name: string, d: ReturnType<typeof summarize>, h: AutocannonResult) => ({
      name,
      domain: { rps: Math.round(d.rps), p50_ms: +d.p50.toFixed(2), p99_ms: +d.p99.toFixed(2), ops: d.count },
      http: {
        rps: Math.round(h.requests.average),
        p50_ms: h.latency.p50,
        p99_ms: h.latency.p99,
        non2xx: h.non2xx,
        errors: h.errors,
        statuses: Object.fromEntries(Object.entries(h.statusCodeStats).map(([k, v]) => [k, v.count])),
      },
      overhead: {
        p50_ms: +(h.latency.p50 - d.p50).toFixed(2),
        p99_ms: +(h.latency.p99 - d.p99).toFixed(2),
        throughput_ratio: +(h.requests.average / d.rps).toFixed(2),
      },
    });
    const inProcess = await inProcessOverhead(Math.min(DURATION_S, 4));
    for (const r of inProcess) {
      console.log(
        `${r.name}\n  domain: ${r.domain.ops} ops/s p50 ${r.domain.p50_ms} ms | http: ${r.http.ops} req/s p50 ${r.http.p50_ms} ms | overhead p50 +${r.overhead_p50_ms} ms`,
      );
    }
    const results = {
      when: new Date().toISOString(),
      machine: {
        cpus: os.cpus().length,
        model: os.cpus()[0]?.model,
        memGiB: Math.round(os.totalmem() / 2 ** 30),
      },
      node: process.version,
      params: {
        durationSeconds: DURATION_S,
        connections: CONNECTIONS,
        followers: FOLLOWERS,
        cassandra: contact,
      },
      rows: [
        row('GET /v1/users/{id}/followers?limit=50', getDomain, getHttp),
        row('PUT /v1/users/{id}/following/{target}', putDomain, putHttp),
      ],
    };
    for (const r of results.rows) {
      console.log(
        `${r.name}\n  domain: ${r.domain.rps} ops/s p50 ${r.domain.p50_ms} ms p99 ${r.domain.p99_ms} ms\n` +
          `  http:   ${r.http.rps} req/s p50 ${r.http.p50_ms} ms p99 ${r.http.p99_ms} ms non2xx ${r.http.non2xx} errors ${r.http.errors}\n` +
          `  overhead: p50 +${r.overhead.p50_ms} ms, p99 +${r.overhead.p99_ms} ms, throughput ×${r.overhead.throughput_ratio}`,
      );
    }
    const written = await bench.writeResults(
      'http-load',
      results,
      barChartSvg(
        'HTTP vs direct domain call, p50 (ms)',
        results.rows.map((r) => r.name),
        [
          { name: 'domain p50', values: results.rows.map((r) => r.domain.p50_ms) },
          { name: 'http p50', values: results.rows.map((r) => r.http.p50_ms) },
        ],
        'ms',
      ),
      markdownTable(
        `bench:http (${DURATION_S} s, ${CONNECTIONS} connections)`,
        results.rows.map((r) => ({ ...r })),
        [`at ${results.when}`],
      ),
    );
    console.log(`results: ${written}`);
  } finally {
    await served.close();
    await bench.close();
  }
}

await main();
