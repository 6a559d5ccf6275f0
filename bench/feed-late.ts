/**
 * F2: a change that takes effect late reaches a live SSE reader within D. The app is served on
 * loopback over a fresh keyspace (`support/app-server.ts`) with its intent recovery running every
 * `--recovery-ms` as `src/main.ts` runs it (`GRAPH_INTENT_RECOVERY_MS`, 2 s by default); one client
 * holds `GET /v1/events/stream` open from the watermark.
 *
 * A second service on the same keyspace injects `--late` follows (one every `--gap-ms`) whose
 * writer dies between its append and its view batch: the store refuses the batch carrying the
 * op's feed rows, so the follow answers an error while its op stands in the pair's history (it
 * took effect) with its intent, and no feed row. Only the recovery can deliver it: it finds the
 * intent older than L, the op present, and rewrites the pair's view and feed rows. Measured: from
 * the injected follow's failure (when it had taken effect) to its `follow.created` frame on the
 * stream, p50/p99/max, and how many never arrived. Target: p99 ≤ D (60 s); expected about L (10 s)
 * + the recovery's period.
 *
 *   npm run bench:feed-late -- [--late 200] [--gap-ms 100] [--users 30] [--recovery-ms 2000]
 */
import { Registry } from 'prom-client';
import { GraphService } from '../src/graph/graph-service.js';
import { DEFAULT_HISTORY_POLICY, feedLagMicros } from '../src/graph/pair/pair-history.js';
import { createHttpMetrics } from '../src/http/metrics.js';
import { BucketedListService } from '../src/lists/list-service.js';
import { StoreUnavailableError } from '../src/model/errors.js';
import type { GraphStore } from '../src/ports/graph-store.js';
import { CassandraGraphStore } from '../src/store/cassandra/graph-store.js';
import { serveApp } from './support/app-server.js';
import { barChartSvg } from './support/charts.js';
import { feedWatermark, streamEvents } from './support/feed-client.js';
import { loadAverage, markdownTable, openBench, percentile, sortedCopy } from './support/harness.js';

const bench = openBench({
  usage: 'npm run bench:feed-late -- [--late 200] [--gap-ms 100] [--users 30] [--recovery-ms 2000]',
  options: {
    late: { type: 'string', default: '200' },
    'gap-ms': { type: 'string', default: '100' },
    users: { type: 'string', default: '30' },
    'recovery-ms': { type: 'string', default: '2000' },
  },
});
const LATE = Number(bench.args.late);
const GAP_MS = Number(bench.args['gap-ms']);
const USERS = Number(bench.args.users);
const RECOVERY_MS = Number(bench.args['recovery-ms']);
const LAG_MS = Number(feedLagMicros(DEFAULT_HISTORY_POLICY) / 1000n);
const D_MS = 60_000;
if (USERS * (USERS - 1) < LATE) throw new Error(`--users ${USERS} make fewer than --late ${LATE} pairs`);

const { client } = await bench.throwawayKeyspace('bench_feed_late');
const store = new CassandraGraphStore(client);
const lists = new BucketedListService({
  store,
  cursorSecret: 'bench-feed-late-cursor-secret',
  bucketThresholds: [250_000],
});
const registry = new Registry();
const metrics = createHttpMetrics(registry);
const graph = new GraphService({ store, lists, maxFollowing: 7500 });
graph.intentRecovery.start(RECOVERY_MS);
const app = await serveApp({ graph, receipts: store, ready: async () => true, registry, metrics });
const auth = { authorization: `Bearer ${app.token(1n, true)}` };

// The dying writer: every batch carrying feed rows is refused after the append landed.
const dying = new Proxy(store, {
  get(t, p) {
    const v = Reflect.get(t, p, t) as unknown;
    if (typeof v !== 'function') return v;
    const fn = (v as (...a: unknown[]) => unknown).bind(t);
    if (p !== 'writeEdges') return fn;
    return (...a: unknown[]) => {
      if ((a[3] as unknown[] | undefined)?.length)
        return Promise.reject(new StoreUnavailableError('injected: the writer died before its view batch'));
      return fn(...a);
    };
  },
}) as GraphStore;
const injector = new GraphService({ store: dying, lists, maxFollowing: 7500, registry: false });

const BASE = 7_000_000_000n + BigInt(Date.now() % 1_000_000) * 1000n;
for (let u = 0; u < USERS; u++)
  await graph.putUser({ id: BASE + BigInt(u), username: `l${BASE + BigInt(u)}` });

const cursor = await feedWatermark(app.url, auth, null);
const arrived = new Map<string, number>();
const stream = streamEvents(app.url, auth, cursor, (e) => {
  if (e.type === 'follow.created') arrived.set(`${e.source}>${e.target}`, performance.now());
});

const tookEffect = new Map<string, number>();
let unexpected = 0;
for (let k = 0; tookEffect.size < LATE; k++) {
  const x = BASE + BigInt(k % USERS);
  const y = BASE + BigInt(Math.floor(k / USERS) % USERS);
  if (x === y) continue;
  try {
    await injector.follow(x, y);
    unexpected++;
  } catch (e) {
    if (!/injected/.test((e as Error).message)) throw e;
    tookEffect.set(`${x}>${y}`, performance.now());
  }
  bench.progress(`F2: ${tookEffect.size}/${LATE} late follows injected, ${arrived.size} delivered`);
  await new Promise((r) => setTimeout(r, GAP_MS));
}
const deadline = performance.now() + D_MS + 10_000;
const delivered = () => [...tookEffect.keys()].filter((k) => arrived.has(k)).length;
while (delivered() < tookEffect.size && performance.now() < deadline)
  await new Promise((r) => setTimeout(r, 250));
bench.progress(`F2: ${tookEffect.size} late follows injected, ${delivered()} delivered`, true);
stream.stop();
await stream.done;
graph.intentRecovery.stop();

const delays = sortedCopy(
  [...tookEffect].flatMap(([k, t]) => (arrived.has(k) ? [(arrived.get(k) as number) - t] : [])),
);
const missing = tookEffect.size - delays.length;
const result = {
  at: new Date().toISOString(),
  late: tookEffect.size,
  gapMs: GAP_MS,
  recoveryMs: RECOVERY_MS,
  lagMs: LAG_MS,
  dMs: D_MS,
  missing,
  acknowledgedByMistake: unexpected,
  p50_ms: Math.round(percentile(delays, 50)),
  p99_ms: Math.round(percentile(delays, 99)),
  max_ms: Math.round(delays.at(-1) ?? Number.NaN),
  loadAverageEnd: loadAverage(),
};
const md = markdownTable(
  `bench:feed-late (F2: ${result.late} changes that took effect unacknowledged, ${GAP_MS} ms apart)`,
  [
    {
      'took effect → SSE, p50 ms': result.p50_ms,
      'p99 ms': result.p99_ms,
      'max ms': result.max_ms,
      'never delivered': missing,
      'L ms': LAG_MS,
      'recovery every ms': RECOVERY_MS,
      'D ms': D_MS,
    },
  ],
  [`Target: p99 ≤ D = ${D_MS} ms, none missing. Load average at end ${result.loadAverageEnd}.`],
);
const svg = barChartSvg(
  'F2: a change that took effect late, to a live SSE reader',
  ['p50 ms', 'p99 ms', 'max ms', 'D ms'],
  [{ name: 'delivery', values: [result.p50_ms, result.p99_ms, result.max_ms, D_MS] }],
  'ms',
);
console.log(md);
console.log(`wrote ${await bench.writeResults('feed-late', result, svg, md)}`);
injector.feed.close();
await app.close();
await bench.close();
if (missing > 0 || unexpected > 0 || result.p99_ms > D_MS) {
  console.error(
    `${missing} late changes never delivered; ${unexpected} acknowledged; p99 ${result.p99_ms} ms`,
  );
  process.exit(1);
}
