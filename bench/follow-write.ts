/**
 * T8 follow cost: `GraphService.follow` of a fresh pair (history read, append, re-read, edge
 * batch, counter increments) ÷ one raw prepared single-row INSERT (a row shaped like `edges_out`
 * into a scratch table `bench_single_insert`, so the graph tables stay consistent), in one process
 * against one node, arms interleaved A B / B A over `--reps`:
 *
 *   latency: `--rounds` sequential calls per arm, p50/p99 ratio per repetition;
 *   throughput: `--callers` concurrent callers for `--rounds` × callers calls per arm, ratio of
 *   follows/s ÷ inserts/s per repetition.
 *
 * Every follow is a fresh pair among `--users` (≤ 1,000) users created up front (a fresh block of
 * ids above 9,500,000,000 per run, in the celebrity keyspace of `--followers`; they never touch the
 * celebrity), every insert a fresh key, so no arm hits an overwrite or a no-op.
 *
 *   npm run bench:follow -- [--followers 9000000] [--reps 3] [--rounds 300] [--callers 32] [--users 400]
 */
import { GraphService } from '../src/graph/graph-service.js';
import { CassandraGraphStore } from '../src/store/cassandra/graph-store.js';
import { barChartSvg } from './support/charts.js';
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
    'npm run bench:follow -- [--followers 9000000] [--reps 3] [--rounds 300] [--callers 32] [--users 400]',
  options: {
    followers: { type: 'string', default: '9000000' },
    reps: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '300' },
    callers: { type: 'string', default: '32' },
    users: { type: 'string', default: '400' },
  },
});
const args = bench.args;
const F = Number(args.followers);
const REPS = Number(args.reps);
const ROUNDS = Number(args.rounds);
const CALLERS = Number(args.callers);
const USERS = Number(args.users);
if (USERS > 1000) throw new Error('--users at most 1000');
/** This run's users: a fresh block of 1,000 ids, so a rerun never finds its pairs already followed. */
const BASE = 9_500_000_000n + BigInt(Date.now() % 1_000_000) * 1000n;
const runSalt = BASE;

const { client, graph, lists } = await bench.celebrity(F);
await client.execute(
  'CREATE TABLE IF NOT EXISTS bench_single_insert (source_id bigint, relation text, target_id bigint, state text, created_at bigint, version bigint, PRIMARY KEY ((source_id, relation), target_id))',
);
const INSERT =
  'INSERT INTO bench_single_insert (source_id, relation, target_id, state, created_at, version) VALUES (?, ?, ?, ?, ?, ?)';
for (let u = 0; u < USERS; u++)
  await graph.putUser({ id: BASE + BigInt(u), username: `b${BASE + BigInt(u)}` });
console.log(`${USERS} users ready; load average ${loadAverage()}`);

// Fresh pairs over this run's own users (ordered pairs a ≠ b), so no follow is a no-op.
let pairNo = 0;
const nextPair = (): [bigint, bigint] => {
  for (;;) {
    const k = pairNo++;
    const a = k % USERS;
    const b = Math.floor(k / USERS) % USERS;
    if (a !== b) return [BASE + BigInt(a), BASE + BigInt(b)];
  }
};
let insertNo = 0n;
let retries = 0;
const arms = {
  follow: async () => {
    const [a, b] = nextPair();
    // A timed-out request (a JVM pause on the shared machine) is retried, as a client would; the
    // retry's time counts in the call's latency and the count of retries is reported.
    for (let attempt = 1; ; attempt++) {
      try {
        await graph.follow(a, b);
        return;
      } catch (e) {
        if (attempt >= 3) throw e;
        retries++;
      }
    }
  },
  insert: async () => {
    const k = insertNo++;
    await client.execute(INSERT, [runSalt, 'follows', k, 'active', k, k], { prepare: true });
  },
};
type Arm = keyof typeof arms;
const latency = (arm: Arm, n: number) => sequentialLatency(arms[arm], n);
const throughput = (arm: Arm, n: number) => concurrentCalls(arms[arm], n, CALLERS);
await latency('follow', 50);
await latency('insert', 50);
const reps: {
  lat: Record<Arm, { p50: number; p99: number }>;
  tput: Record<Arm, Awaited<ReturnType<typeof throughput>>>;
}[] = [];
for (let r = 0; r < REPS; r++) {
  const order: Arm[] = r % 2 === 0 ? ['follow', 'insert'] : ['insert', 'follow'];
  const lat = {} as Record<Arm, { p50: number; p99: number }>;
  const tput = {} as Record<Arm, Awaited<ReturnType<typeof throughput>>>;
  for (const arm of order) lat[arm] = await latency(arm, ROUNDS);
  for (const arm of order) tput[arm] = await throughput(arm, ROUNDS * 4);
  reps.push({ lat, tput });
  console.log(
    `T8 rep ${r}: follow p50 ${lat.follow.p50.toFixed(3)} p99 ${lat.follow.p99.toFixed(3)} ms, ${Math.round(tput.follow.perS)}/s; insert p50 ${lat.insert.p50.toFixed(3)} p99 ${lat.insert.p99.toFixed(3)} ms, ${Math.round(tput.insert.perS)}/s; load ${loadAverage()}`,
  );
}
// What a follow costs the node: the statements one follow sends, by the store's own names, counted
// over 50 more fresh follows through a store with the query hook (and the same list service).
const statements = new Map<string, number>();
{
  const counted = new CassandraGraphStore(client, {
    onQuery: (name) => statements.set(name, (statements.get(name) ?? 0) + 1),
  });
  const countedGraph = new GraphService({ store: counted, lists, maxFollowing: 10_000_000 });
  for (let i = 0; i < 50; i++) {
    const [a, b] = nextPair();
    await countedGraph.follow(a, b);
  }
}
const perFollow = Object.fromEntries(
  [...statements].sort((x, y) => y[1] - x[1]).map(([name, n]) => [name, +(n / 50).toFixed(2)]),
);
const statementsPerFollow = +Object.values(perFollow)
  .reduce((a, b) => a + b, 0)
  .toFixed(2);
console.log(`statements per follow: ${statementsPerFollow} ${JSON.stringify(perFollow)}`);
const med = (f: (x: (typeof reps)[number]) => number) => +percentile(sortedCopy(reps.map(f)), 50).toFixed(3);
const result = {
  at: new Date().toISOString(),
  followers: F,
  reps: REPS,
  rounds: ROUNDS,
  callers: CALLERS,
  loadAverageEnd: loadAverage(),
  followRetries: retries,
  follow: {
    p50_ms: med((x) => x.lat.follow.p50),
    p99_ms: med((x) => x.lat.follow.p99),
    perS: Math.round(med((x) => x.tput.follow.perS)),
    nodeCpuS: med((x) => x.tput.follow.nodeCpuS),
    jvmCpuS: med((x) => x.tput.follow.jvmCpuS),
  },
  insert: {
    p50_ms: med((x) => x.lat.insert.p50),
    p99_ms: med((x) => x.lat.insert.p99),
    perS: Math.round(med((x) => x.tput.insert.perS)),
    nodeCpuS: med((x) => x.tput.insert.nodeCpuS),
    jvmCpuS: med((x) => x.tput.insert.jvmCpuS),
  },
  p99Ratio: ratioSummary(reps.map((x) => x.lat.follow.p99 / x.lat.insert.p99)),
  p50Ratio: ratioSummary(reps.map((x) => x.lat.follow.p50 / x.lat.insert.p50)),
  throughputRatio: ratioSummary(reps.map((x) => x.tput.follow.perS / x.tput.insert.perS)),
  statementsPerFollow,
  statementsByName: perFollow,
  perRep: reps,
};
const fmt = (r: { median: number; min: number; max: number }) => `${r.median} [${r.min}–${r.max}]`;
const md = `# bench:follow (keyspace of ${F}; ${REPS} reps, ${ROUNDS} sequential calls, ${ROUNDS * 4} calls at ${CALLERS} callers per arm)

load average at end ${result.loadAverageEnd}

| arm | p50 ms | p99 ms | per s at ${CALLERS} callers | node CPU s | JVM CPU s |
|---|---|---|---|---|---|
| follow | ${result.follow.p50_ms} | ${result.follow.p99_ms} | ${result.follow.perS} | ${result.follow.nodeCpuS} | ${result.follow.jvmCpuS} |
| single INSERT | ${result.insert.p50_ms} | ${result.insert.p99_ms} | ${result.insert.perS} | ${result.insert.nodeCpuS} | ${result.insert.jvmCpuS} |

follow calls retried after a timeout: ${retries}

statements per follow (store query hook, 50 fresh follows): ${statementsPerFollow} — ${Object.entries(
  perFollow,
)
  .map(([k, v]) => `${k} ${v}`)
  .join(', ')}; the INSERT arm sends 1

T8 follow p99 ÷ INSERT p99: ${fmt(result.p99Ratio)} (p50 ${fmt(result.p50Ratio)}); follows/s ÷ inserts/s: ${fmt(result.throughputRatio)}
`;
const svg = barChartSvg(
  `follow vs single INSERT (${CALLERS} callers for throughput)`,
  ['p50 ms', 'p99 ms'],
  [
    { name: 'follow', values: [result.follow.p50_ms, result.follow.p99_ms] },
    { name: 'single INSERT', values: [result.insert.p50_ms, result.insert.p99_ms] },
  ],
  'ms',
);
console.log(md);
console.log(`wrote ${await bench.writeResults(`follow-${F}`, result, svg, md)}`);
await bench.close();
process.exit(0);
