/**
 * `npm run bench:events` — what the change feed costs and how fast it delivers:
 *
 *   E1: a fresh follow through `GraphService` with the outbox (feed rows in the edge batch) ÷ the
 *       same follow without (`events: false`), arms interleaved A B / B A over `--reps`: p50/p99 of
 *       `--rounds` sequential follows, and JVM + Node CPU per follow over `--rounds` × 4 follows at
 *       `--callers` concurrent callers.
 *   F5: the same follow with the feed's intents (an intent beside the marks, its delete after the
 *       answer) ÷ with feed rows but no intents (`feedIntents: false`), in the same interleaved reps.
 *   E2: acknowledgement → SSE delivery: `--deliveries` follows, one every `--gap-ms`, while one
 *       client holds `GET /v1/events/stream` open on the real app; each event's delay from the
 *       follow's acknowledgement to the SSE frame's arrival, p50/p99/max, against the watermark
 *       (the feed's lag L, 10 s with the default bounds).
 *
 * Runs in the celebrity keyspace of `--followers` (fresh users above 9,600,000,000 per run).
 *
 *   npm run bench:events -- [--followers 9000000] [--reps 3] [--rounds 200] [--callers 16] [--deliveries 200] [--gap-ms 50]
 */
import { GraphService } from '../src/graph/graph-service.js';
import { DEFAULT_HISTORY_POLICY, feedLagMicros } from '../src/graph/pair/pair-history.js';
import { mintToken } from '../src/jobs/token.js';
import { BENCH_JWT_SECRET, startCelebrityApp } from './support/app-server.js';
import { barChartSvg } from './support/charts.js';
import { feedWatermark, streamEvents } from './support/feed-client.js';
import {
  concurrentCalls,
  loadAverage,
  openBench,
  percentile,
  ratioSummary,
  sequentialLatency,
  sortedCopy,
} from './support/harness.js';

const bench = openBench({
  usage:
    'npm run bench:events -- [--followers 9000000] [--reps 3] [--rounds 200] [--callers 16] [--deliveries 200] [--gap-ms 50]',
  options: {
    followers: { type: 'string', default: '9000000' },
    reps: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '200' },
    callers: { type: 'string', default: '16' },
    users: { type: 'string', default: '300' },
    deliveries: { type: 'string', default: '200' },
    'gap-ms': { type: 'string', default: '50' },
  },
});
const a = bench.args;
const F = Number(a.followers);
const REPS = Number(a.reps);
const ROUNDS = Number(a.rounds);
const CALLERS = Number(a.callers);
const USERS = Number(a.users);
const DELIVERIES = Number(a.deliveries);
const GAP_MS = Number(a['gap-ms']);
const LAG_MS = Number(feedLagMicros(DEFAULT_HISTORY_POLICY) / 1000n);
const BASE = 9_600_000_000n + BigInt(Date.now() % 1_000_000) * 1000n;

const app = await startCelebrityApp(bench, F);
const { store, lists, graph } = app;
const without = new GraphService({ store, lists, maxFollowing: 10_000_000, events: false });
const noIntents = new GraphService({ store, lists, maxFollowing: 10_000_000, feedIntents: false });
for (let u = 0; u < USERS; u++)
  await graph.putUser({ id: BASE + BigInt(u), username: `e${BASE + BigInt(u)}` });
console.log(`${USERS} users ready; load average ${loadAverage()}`);

let pairNo = 0;
const nextPair = (): [bigint, bigint] => {
  for (;;) {
    const k = pairNo++;
    const x = k % USERS;
    const y = Math.floor(k / USERS) % USERS;
    if (x !== y) return [BASE + BigInt(x), BASE + BigInt(y)];
  }
};
const arms = {
  events: () => graph.follow(...nextPair()),
  plain: () => without.follow(...nextPair()),
  nointents: () => noIntents.follow(...nextPair()),
};
type Arm = keyof typeof arms;
const latency = (arm: Arm, n: number) => sequentialLatency(arms[arm], n);
async function cpu(arm: Arm, n: number) {
  const c = await concurrentCalls(arms[arm], n, CALLERS);
  return { ...c, cpuMsPerFollow: ((c.nodeCpuS + c.jvmCpuS) * 1000) / n };
}
await latency('events', 30);
await latency('plain', 30);
await latency('nointents', 30);
const reps: {
  lat: Record<Arm, { p50: number; p99: number }>;
  cpu: Record<Arm, Awaited<ReturnType<typeof cpu>>>;
}[] = [];
for (let r = 0; r < REPS; r++) {
  const arms3: Arm[] = ['events', 'plain', 'nointents'];
  // Each arm first once in three reps, last once: A B C, B C A, C A B.
  const order = arms3.map((_, i) => arms3[(i + r) % 3] as Arm);
  const lat = {} as Record<Arm, { p50: number; p99: number }>;
  const c = {} as Record<Arm, Awaited<ReturnType<typeof cpu>>>;
  for (const arm of order) lat[arm] = await latency(arm, ROUNDS);
  for (const arm of order) c[arm] = await cpu(arm, ROUNDS * 4);
  reps.push({ lat, cpu: c });
  console.log(
    `rep ${r}: with events p50 ${lat.events.p50.toFixed(2)} ms, ${c.events.cpuMsPerFollow.toFixed(2)} ms CPU/follow; without p50 ${lat.plain.p50.toFixed(2)} ms, ${c.plain.cpuMsPerFollow.toFixed(2)} ms CPU/follow; events without intents p50 ${lat.nointents.p50.toFixed(2)} ms, ${c.nointents.cpuMsPerFollow.toFixed(2)} ms CPU/follow; load ${loadAverage()}`,
  );
}

// E2: one SSE client on the real app; follows acknowledged one every GAP_MS.
const admin = mintToken({ sub: '1', admin: true, expiresInSeconds: 86_400 }, BENCH_JWT_SECRET);
const auth = { authorization: `Bearer ${admin}` };
const cursor = await feedWatermark(app.url, auth, null);
const acked = new Map<string, number>();
const arrived = new Map<string, number>();
const sse = streamEvents(app.url, auth, cursor, (e) => {
  if (e.type === 'follow.created') arrived.set(`${e.source}>${e.target}`, performance.now());
});
for (let i = 0; i < DELIVERIES; i++) {
  const [x, y] = nextPair();
  await graph.follow(x, y);
  acked.set(`${x}>${y}`, performance.now());
  bench.progress(`E2: ${i + 1}/${DELIVERIES} follows acknowledged`);
  await new Promise((r) => setTimeout(r, GAP_MS));
}
const deadline = performance.now() + LAG_MS + 15_000;
const delivered = () => [...acked.keys()].filter((k) => arrived.has(k)).length;
while (delivered() < acked.size && performance.now() < deadline) await new Promise((r) => setTimeout(r, 100));
bench.progress(`E2: ${acked.size} follows acknowledged, ${delivered()} delivered`, true);
sse.stop();
await sse.done;
const delays = sortedCopy(
  [...acked].flatMap(([k, t]) => (arrived.has(k) ? [(arrived.get(k) as number) - t] : [])),
);
const missing = acked.size - delays.length;

const med = (f: (x: (typeof reps)[number]) => number) => +percentile(sortedCopy(reps.map(f)), 50).toFixed(3);
const result = {
  at: new Date().toISOString(),
  followers: F,
  reps: REPS,
  rounds: ROUNDS,
  callers: CALLERS,
  loadAverageEnd: loadAverage(),
  e1: {
    withEvents: {
      p50_ms: med((x) => x.lat.events.p50),
      p99_ms: med((x) => x.lat.events.p99),
      cpuMsPerFollow: med((x) => x.cpu.events.cpuMsPerFollow),
    },
    without: {
      p50_ms: med((x) => x.lat.plain.p50),
      p99_ms: med((x) => x.lat.plain.p99),
      cpuMsPerFollow: med((x) => x.cpu.plain.cpuMsPerFollow),
    },
    p50Ratio: ratioSummary(reps.map((x) => x.lat.events.p50 / x.lat.plain.p50)),
    p99Ratio: ratioSummary(reps.map((x) => x.lat.events.p99 / x.lat.plain.p99)),
    cpuRatio: ratioSummary(reps.map((x) => x.cpu.events.cpuMsPerFollow / x.cpu.plain.cpuMsPerFollow)),
  },
  f5: {
    withoutIntents: {
      p50_ms: med((x) => x.lat.nointents.p50),
      p99_ms: med((x) => x.lat.nointents.p99),
      cpuMsPerFollow: med((x) => x.cpu.nointents.cpuMsPerFollow),
    },
    p50Ratio: ratioSummary(reps.map((x) => x.lat.events.p50 / x.lat.nointents.p50)),
    cpuRatio: ratioSummary(reps.map((x) => x.cpu.events.cpuMsPerFollow / x.cpu.nointents.cpuMsPerFollow)),
  },
  e2: {
    watermarkMs: LAG_MS,
    deliveries: acked.size,
    missing,
    p50_ms: Math.round(percentile(delays, 50)),
    p99_ms: Math.round(percentile(delays, 99)),
    max_ms: Math.round(delays.at(-1) ?? Number.NaN),
  },
  perRep: reps,
};
const fmt = (r: { median: number; min: number; max: number }) => `${r.median} [${r.min}–${r.max}]`;
const md = `# bench:events (keyspace of ${F}; ${REPS} reps, ${ROUNDS} sequential follows, ${ROUNDS * 4} at ${CALLERS} callers per arm)

load average at end ${result.loadAverageEnd}

| arm | p50 ms | p99 ms | JVM + Node CPU ms per follow |
|---|---|---|---|
| follow with events | ${result.e1.withEvents.p50_ms} | ${result.e1.withEvents.p99_ms} | ${result.e1.withEvents.cpuMsPerFollow} |
| follow without | ${result.e1.without.p50_ms} | ${result.e1.without.p99_ms} | ${result.e1.without.cpuMsPerFollow} |
| follow with events, no intents | ${result.f5.withoutIntents.p50_ms} | ${result.f5.withoutIntents.p99_ms} | ${result.f5.withoutIntents.cpuMsPerFollow} |

E1 with ÷ without: p50 ${fmt(result.e1.p50Ratio)}, p99 ${fmt(result.e1.p99Ratio)}, CPU per follow ${fmt(result.e1.cpuRatio)} (target ≤ 1.10)

F5 with intents ÷ without: p50 ${fmt(result.f5.p50Ratio)} (target ≤ 1.10), CPU per follow ${fmt(result.f5.cpuRatio)} (target ≤ 1.15)

E2 acknowledgement → SSE delivery over ${result.e2.deliveries} follows (watermark ${LAG_MS} ms): p50 ${result.e2.p50_ms} ms, p99 ${result.e2.p99_ms} ms, max ${result.e2.max_ms} ms, not delivered ${missing} (target p99 ≤ watermark + 1 s)
`;
const svg = barChartSvg(
  'follow with and without the outbox, and without its intents',
  ['p50 ms', 'p99 ms', 'CPU ms/follow'],
  [
    {
      name: 'with events',
      values: [result.e1.withEvents.p50_ms, result.e1.withEvents.p99_ms, result.e1.withEvents.cpuMsPerFollow],
    },
    {
      name: 'without',
      values: [result.e1.without.p50_ms, result.e1.without.p99_ms, result.e1.without.cpuMsPerFollow],
    },
    {
      name: 'events, no intents',
      values: [
        result.f5.withoutIntents.p50_ms,
        result.f5.withoutIntents.p99_ms,
        result.f5.withoutIntents.cpuMsPerFollow,
      ],
    },
  ],
  'ms',
);
console.log(md);
console.log(`wrote ${await bench.writeResults('events', result, svg, md)}`);
await app.close();
if (missing > 0) {
  console.error(`${missing} acknowledged follows never reached the SSE client`);
  process.exit(1);
}
