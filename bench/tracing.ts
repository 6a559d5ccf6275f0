/**
 * O1: what tracing costs on the followers page, over HTTP on loopback (the path clients take):
 * `GET /v1/users/{celebrity}/followers?limit=50` on the loaded list (`npm run bench:load` first),
 * at page 1 and at a deep cursor, sequential requests, three apps over the same keyspace:
 *
 *   off      the service as `npm start` runs it without `GRAPH_TRACING_ENDPOINT`: no tracer at all
 *            (the executor's `if`, nothing else);
 *   unsampled tracing on at sampling ratio 0: every span is created non-recording (the cost of the
 *            instrumentation points themselves when tracing is configured but a request is not sampled);
 *   control  a second app like `off` (its own store and graph): the A/A noise floor of the method;
 *   sampled  tracing on at ratio 1: every request recorded and exported through the batch processor
 *            to an exporter that drops what it is given (the export's network cost is not counted).
 *
 * The three apps run in one process: the provider is global, so `off` is the app built without a
 * tracer (no OpenTelemetry call on its path) while the provider is registered for the other two.
 * Each repetition makes `--rounds` rounds of one request per arm, the arms' order rotated per
 * round (A B C, B C A, …), so drift falls on every arm alike; the ratios per repetition are each
 * arm's mean latency ÷ off's, reported as mean with a 95 % interval (Student's t over the
 * repetitions, `--reps` ≥ 5) and median [min–max].
 *
 *   npm run bench:tracing -- [--followers 9000000] [--reps 7] [--rounds 400]
 */
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-node';
import { Registry } from 'prom-client';
import { GraphService } from '../src/graph/graph-service.js';
import { tracedGraph } from '../src/graph/traced-graph.js';
import { createHttpMetrics } from '../src/http/metrics.js';
import { startTracing } from '../src/http/tracing.js';
import { BucketedListService } from '../src/lists/list-service.js';
import { CassandraGraphStore } from '../src/store/cassandra/graph-store.js';
import { CQL_DIR } from '../src/store/cassandra/keyspace.js';
import { schemaPresent } from '../src/store/cassandra/migrations/migrate.js';
import { serveApp } from './support/app-server.js';
import { barChartSvg } from './support/charts.js';
import {
  CELEBRITY,
  cpuMeter,
  DEFAULT_THRESHOLDS,
  keyspaceFor,
  loadAverage,
  openBench,
  ratioSummary,
} from './support/harness.js';

const bench = openBench({
  usage: 'npm run bench:tracing -- [--followers 9000000] [--reps 7] [--rounds 400]',
  options: {
    followers: { type: 'string', default: '9000000' },
    reps: { type: 'string', default: '7' },
    rounds: { type: 'string', default: '400' },
  },
});
const F = Number(bench.args.followers);
const REPS = Number(bench.args.reps);
const ROUNDS = Number(bench.args.rounds);

/** Takes spans and drops them (what an unreachable collector costs the process, minus the network). */
class DroppingExporter implements SpanExporter {
  spans = 0;
  export(spans: ReadableSpan[], done: (r: { code: number }) => void): void {
    this.spans += spans.length;
    done({ code: 0 });
  }
  async shutdown(): Promise<void> {}
}

/** Student's t quantile (two-sided 95 %) for `df` degrees of freedom. */
function t95(df: number): number {
  const table = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179];
  return table[df - 1] ?? 1.96 + 2.5 / df;
}

function meanInterval(xs: readonly number[]) {
  const n = xs.length;
  const mean = xs.reduce((a, b) => a + b, 0) / n;
  const sd = n > 1 ? Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1)) : 0;
  const half = n > 1 ? (t95(n - 1) * sd) / Math.sqrt(n) : 0;
  return { mean: +mean.toFixed(4), low: +(mean - half).toFixed(4), high: +(mean + half).toFixed(4) };
}

const { client } = await bench.celebrity(F);
const exporter = new DroppingExporter();
// Ratio 1 for the sampled arm; the unsampled arm's requests carry a `traceparent` that says "not
// sampled", which the parent-based sampler keeps (one provider serves both arms).
const tracing = startTracing({ exporter, sampleRatio: 1 });
const keyspace = bench.config.keyspace ?? keyspaceFor(F);

async function arm(traced: boolean) {
  const store = new CassandraGraphStore(client, traced ? { tracer: tracing.tracer } : {});
  const lists = new BucketedListService({
    store,
    cursorSecret: 'bench-celebrity-cursor-secret',
    bucketThresholds: DEFAULT_THRESHOLDS,
    layoutCacheTtlMs: 3_600_000,
  });
  const graph = new GraphService({
    store,
    lists,
    maxFollowing: 10_000_000,
    ...(traced ? { tracer: tracing.tracer } : {}),
  });
  const registry = new Registry();
  const served = await serveApp({
    graph: traced ? tracedGraph(graph, tracing.tracer) : graph,
    receipts: store,
    ready: () => schemaPresent(client, keyspace, CQL_DIR),
    registry,
    metrics: createHttpMetrics(registry),
    ...(traced ? { tracing } : {}),
  });
  return { served, graph };
}

const arms = {
  off: await arm(false),
  control: await arm(false),
  unsampled: await arm(true),
  sampled: await arm(true),
};
type ArmName = keyof typeof arms;
const NAMES = Object.keys(arms) as ArmName[];
const token = arms.off.served.token(CELEBRITY, true);
const path = `/v1/users/${CELEBRITY}/followers?limit=50`;
const NOT_SAMPLED = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00';

// A deep cursor: a few pages in (the loaded list's depth does not change what tracing adds).
let deep: string | null = null;
{
  let cursor: string | null = null;
  for (let i = 0; i < Math.min(20, Math.floor(F / 50) - 1); i++) {
    const res = await fetch(`${arms.off.served.url}${path}${cursor ? `&cursor=${cursor}` : ''}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    cursor = ((await res.json()) as { next_cursor: string | null }).next_cursor;
    if (!cursor) break;
    deep = cursor;
  }
}

/** One request on `name`'s app; its latency (ms). */
async function once(name: ArmName, i: number): Promise<number> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (name === 'unsampled') headers.traceparent = NOT_SAMPLED;
  const q = i % 2 === 0 || !deep ? path : `${path}&cursor=${deep}`;
  const t0 = performance.now();
  const res = await fetch(`${arms[name].served.url}${q}`, { headers });
  await res.arrayBuffer();
  const ms = performance.now() - t0;
  if (res.status !== 200) throw new Error(`${name}: ${q} answered ${res.status}`);
  return ms;
}

/**
 * One repetition: `ROUNDS` rounds, each one request per arm in an order rotated per round, so
 * drift (the JVM's, the machine's) falls on every arm alike; each arm's mean latency.
 */
async function repetition(): Promise<Record<ArmName, number>> {
  const sums: Record<ArmName, number> = { off: 0, control: 0, unsampled: 0, sampled: 0 };
  for (let i = 0; i < ROUNDS; i++) {
    for (let k = 0; k < NAMES.length; k++) {
      const name = NAMES[(i + k) % NAMES.length] as ArmName;
      sums[name] += await once(name, i);
    }
  }
  return Object.fromEntries(NAMES.map((n) => [n, sums[n] / ROUNDS])) as Record<ArmName, number>;
}

// Warm every arm (prepared statements, layouts, JIT).
await repetition();
const cpu = cpuMeter();
const means: Record<ArmName, number[]> = { off: [], control: [], unsampled: [], sampled: [] };
for (let r = 0; r < REPS; r++) {
  const rep = await repetition();
  for (const n of NAMES) means[n].push(rep[n]);
  console.log(
    `[tracing] rep ${r + 1}/${REPS}: ${NAMES.map((n) => `${n} ${rep[n].toFixed(3)} ms`).join(', ')}`,
  );
}
const ratio = (n: ArmName) => means[n].map((m, i) => m / (means.off[i] as number));
const result = {
  followers: F,
  reps: REPS,
  rounds: ROUNDS,
  deepCursor: deep !== null,
  meanMs: Object.fromEntries(NAMES.map((n) => [n, ratioSummary(means[n])])),
  controlOverOff: { ...meanInterval(ratio('control')), ...ratioSummary(ratio('control')) },
  unsampledOverOff: { ...meanInterval(ratio('unsampled')), ...ratioSummary(ratio('unsampled')) },
  sampledOverOff: { ...meanInterval(ratio('sampled')), ...ratioSummary(ratio('sampled')) },
  spansExported: exporter.spans,
  load: loadAverage(),
  cpu: cpu(),
};
console.log(JSON.stringify(result, null, 2));
const svg = barChartSvg(
  `O1: followers page over HTTP, mean latency per repetition (${ROUNDS} requests, ${F} followers)`,
  means.off.map((_, i) => `rep ${i + 1}`),
  NAMES.map((n) => ({ name: n, values: means[n] })),
  'ms',
);
const md = [
  `# O1: tracing overhead on the followers page (${F} followers, ${REPS} reps × ${ROUNDS} requests)`,
  '',
  '| arm | mean ÷ off (95 % interval) | median [min–max] |',
  '|---|---|---|',
  ...(['control', 'unsampled', 'sampled'] as const).map((n) => {
    const s =
      n === 'control'
        ? result.controlOverOff
        : n === 'unsampled'
          ? result.unsampledOverOff
          : result.sampledOverOff;
    return `| ${n} | ${s.mean} [${s.low}, ${s.high}] | ${s.median} [${s.min}–${s.max}] |`;
  }),
  '',
].join('\n');
console.log(`wrote ${await bench.writeResults('tracing', result, svg, md)}`);
for (const a of Object.values(arms)) await a.served.close();
await tracing.shutdown();
await bench.close();
