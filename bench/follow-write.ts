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
 * Every follow is a fresh pair among `--users` (≤ 900) users created up front (a fresh block of
 * ids above 9,500,000,000 per run, in the celebrity keyspace of `--followers`; they never touch the
 * celebrity), every insert a fresh key, so no arm hits an overwrite or a no-op.
 *
 *   npm run bench:follow -- [--followers 9000000] [--reps 3] [--rounds 300] [--callers 32] [--users 400]
 *                           [--warmup 500]  (untimed calls of each arm before the first repetition)
 *                           [--s2]
 *
 * `--s2` adds a third arm (S2): the same follow through a second service whose store
 * writes no search rows or indexed names (`CassandraGraphStoreOptions.searchIndex: false`), in the
 * same rotation (A B C / C B A); reported: follow p50 and JVM CPU per follow with the index ÷
 * without.
 */
import type { GraphService } from '../src/graph/graph-service.js';
import { tallySince } from '../src/store/cassandra/request-counter.js';
import { barChartSvg } from './support/charts.js';
import {
  celebrityServices,
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
    'npm run bench:follow -- [--followers 9000000] [--reps 3] [--rounds 300] [--callers 32] [--users 400] [--warmup 500] [--s2]',
  options: {
    followers: { type: 'string', default: '9000000' },
    reps: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '300' },
    callers: { type: 'string', default: '32' },
    users: { type: 'string', default: '400' },
    warmup: { type: 'string', default: '500' },
    s2: { type: 'boolean', default: false },
  },
});
const args = bench.args;
const F = Number(args.followers);
const REPS = Number(args.reps);
const ROUNDS = Number(args.rounds);
const CALLERS = Number(args.callers);
const USERS = Number(args.users);
const WARMUP = Number(args.warmup);
if (USERS > 900) throw new Error('--users at most 900');
/** This run's users: a fresh block of 1,000 ids, so a rerun never finds its pairs already followed. */
const BASE = 9_500_000_000n + BigInt(Date.now() % 1_000_000) * 1000n;
const runSalt = BASE;

const S2 = Boolean(args.s2);
const { client, graph, requests, hooks } = await bench.celebrity(F);
const unindexed = S2 ? celebrityServices(client, requests, { searchIndex: false }).graph : null;
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
  /** `--s2`: the follow without the search index (the `follow` arm's body, another service). */
  unindexed: async () => {
    const [a, b] = nextPair();
    await (unindexed as GraphService).follow(a, b);
  },
  insert: async () => {
    const k = insertNo++;
    await client.execute(INSERT, [runSalt, 'follows', k, 'active', k, k], { prepare: true });
  },
};
type Arm = keyof typeof arms;
const latency = (arm: Arm, n: number) => sequentialLatency(arms[arm], n);
const throughput = (arm: Arm, n: number) => concurrentCalls(arms[arm], n, CALLERS);
// Untimed warm-up of both arms, sequential and concurrent (the JIT of a freshly started node made a
// first repetition 3× slower than the third without it).
const ARMS: Arm[] = S2 ? ['follow', 'insert', 'unindexed'] : ['follow', 'insert'];
for (const arm of ARMS) {
  await latency(arm, WARMUP);
  await throughput(arm, WARMUP * 2);
}
const reps: {
  lat: Record<Arm, { p50: number; p99: number }>;
  tput: Record<Arm, Awaited<ReturnType<typeof throughput>>>;
}[] = [];
for (let r = 0; r < REPS; r++) {
  const order: Arm[] = r % 2 === 0 ? ARMS : [...ARMS].reverse();
  const lat = {} as Record<Arm, { p50: number; p99: number }>;
  const tput = {} as Record<Arm, Awaited<ReturnType<typeof throughput>>>;
  for (const arm of order) lat[arm] = await latency(arm, ROUNDS);
  for (const arm of order) tput[arm] = await throughput(arm, ROUNDS * 4);
  reps.push({ lat, tput });
  console.log(
    `T8 rep ${r}: follow p50 ${lat.follow.p50.toFixed(3)} p99 ${lat.follow.p99.toFixed(3)} ms, ${Math.round(tput.follow.perS)}/s; insert p50 ${lat.insert.p50.toFixed(3)} p99 ${lat.insert.p99.toFixed(3)} ms, ${Math.round(tput.insert.perS)}/s; load ${loadAverage()}`,
  );
}
// `--s2`: the baseline arm must really write no search rows, and the measured arm must (one
// fresh pair each, the followee's search read back).
if (unindexed) {
  const wrote = async (g: GraphService) => {
    const [a, b] = nextPair();
    await g.follow(a, b);
    // The followee's followers searched for the follower's whole name, through the service.
    const list = { userId: b, relation: 'follows' as const, direction: 'in' as const };
    return (await graph.search(list, `b${a}`, 5, null)).items.length;
  };
  const [withIndex, without] = [await wrote(graph), await wrote(unindexed)];
  if (withIndex !== 1 || without !== 0)
    throw new Error(
      `S2 arms: search rows written ${withIndex} with the index, ${without} without (want 1 and 0)`,
    );
}
// What a follow costs the node, from the driver's request tracker (`request-counter.ts`: every
// attempt is a request, a batch one request whose statements are mutations), and by the store's own
// statement names (its query hook), over `COUNTED` fresh follows of each kind, sequential:
//   cold: an actor's first follow in this process (its cap budget is read);
//   warm: a fresh follow by an actor who followed just before (the budget is in the cache).
const COUNTED = 50;

/**
 * Requests the follow does not send: the deactivation registry's poll of the change feed's tail
 * runs on its own timer in the same client, so it lands in the tally; reported apart.
 */
const BACKGROUND = new Set(['SELECT graph_events', 'SELECT graph_event_periods']);
type Counted = {
  requestsPerFollow: number;
  background: Record<string, number>;
  mutationsPerFollow: number;
  errors: number;
  byKind: Record<string, number>;
  byStoreName: Record<string, number>;
};
const perFollow = (m: ReadonlyMap<string, number>) =>
  Object.fromEntries(
    [...m]
      .sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1))
      .map(([k, n]) => [k, +(n / COUNTED).toFixed(2)]),
  );
async function countFollows(pairs: [bigint, bigint][]): Promise<Counted> {
  const names = new Map<string, number>();
  hooks.onQuery = (name) => names.set(name, (names.get(name) ?? 0) + 1);
  const before = requests.snapshot();
  for (const [a, b] of pairs) await graph.follow(a, b);
  const t = tallySince(before, requests.snapshot());
  hooks.onQuery = null;
  const own = new Map([...t.requests].filter(([k]) => !BACKGROUND.has(k)));
  const total = [...own.values()].reduce((x, y) => x + y, 0);
  return {
    requestsPerFollow: +(total / pairs.length).toFixed(2),
    background: perFollow(new Map([...t.requests].filter(([k]) => BACKGROUND.has(k)))),
    mutationsPerFollow: +(t.mutations / pairs.length).toFixed(2),
    errors: t.errors,
    byKind: perFollow(own),
    byStoreName: perFollow(names),
  };
}
// Fresh actors: ids past the users the arms use (created now), each following two fresh targets.
const ACTORS = Array.from({ length: COUNTED }, (_, i) => BASE + BigInt(USERS + i));
for (const id of ACTORS) await graph.putUser({ id, username: `b${id}` });
const cold = await countFollows(ACTORS.map((a, i) => [a, BASE + BigInt(i)]));
// The targets were followed in the cold round too, so their list layouts are as cached as the actors'.
const warm = await countFollows(ACTORS.map((a, i) => [a, BASE + BigInt((i + 1) % COUNTED)]));
const show = (label: string, c: Counted) =>
  `${label}: ${c.requestsPerFollow} requests (${c.mutationsPerFollow} mutations) per follow — ${Object.entries(
    c.byKind,
  )
    .map(([k, v]) => `${k} ×${v}`)
    .join(
      ', ',
    )}${c.errors > 0 ? `; ${c.errors} failed attempts` : ''}; beside them, the feed tail's poll: ${JSON.stringify(c.background)}`;
console.log(show('fresh follow, warm actor', warm));
console.log(show('fresh follow, cold actor', cold));
console.log(`store statements per warm follow: ${JSON.stringify(warm.byStoreName)}`);
const med = (f: (x: (typeof reps)[number]) => number) => +percentile(sortedCopy(reps.map(f)), 50).toFixed(3);
const result = {
  at: new Date().toISOString(),
  followers: F,
  reps: REPS,
  rounds: ROUNDS,
  callers: CALLERS,
  warmup: WARMUP,
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
  jvmCpuMsPerFollow: med((x) => (x.tput.follow.jvmCpuS * 1000) / (ROUNDS * 4)),
  nodeCpuMsPerFollow: med((x) => (x.tput.follow.nodeCpuS * 1000) / (ROUNDS * 4)),
  jvmCpuMsPerInsert: med((x) => (x.tput.insert.jvmCpuS * 1000) / (ROUNDS * 4)),
  ...(S2
    ? {
        s2: {
          p50Ratio: ratioSummary(reps.map((x) => x.lat.follow.p50 / x.lat.unindexed.p50)),
          jvmCpuRatio: ratioSummary(reps.map((x) => x.tput.follow.jvmCpuS / x.tput.unindexed.jvmCpuS)),
          nodeCpuRatio: ratioSummary(reps.map((x) => x.tput.follow.nodeCpuS / x.tput.unindexed.nodeCpuS)),
          throughputRatio: ratioSummary(reps.map((x) => x.tput.follow.perS / x.tput.unindexed.perS)),
          unindexedP50Ms: med((x) => x.lat.unindexed.p50),
          unindexedJvmCpuMsPerFollow: med((x) => (x.tput.unindexed.jvmCpuS * 1000) / (ROUNDS * 4)),
        },
      }
    : {}),
  requestsPerFollow: warm.requestsPerFollow,
  mutationsPerFollow: warm.mutationsPerFollow,
  warm,
  cold,
  perRep: reps,
};
const fmt = (r: { median: number; min: number; max: number }) => `${r.median} [${r.min}–${r.max}]`;
const md = `# bench:follow (keyspace ${bench.config.keyspace ?? `of ${F}`}; ${REPS} reps, ${ROUNDS} sequential calls, ${ROUNDS * 4} calls at ${CALLERS} callers per arm)

load average at end ${result.loadAverageEnd}

| arm | p50 ms | p99 ms | per s at ${CALLERS} callers | node CPU s | JVM CPU s |
|---|---|---|---|---|---|
| follow | ${result.follow.p50_ms} | ${result.follow.p99_ms} | ${result.follow.perS} | ${result.follow.nodeCpuS} | ${result.follow.jvmCpuS} |
| single INSERT | ${result.insert.p50_ms} | ${result.insert.p99_ms} | ${result.insert.perS} | ${result.insert.nodeCpuS} | ${result.insert.jvmCpuS} |

follow calls retried after a timeout: ${retries}

requests per fresh follow (driver request tracker, ${COUNTED} follows each; the INSERT arm sends 1):

- ${show('warm actor', warm)}
- ${show('cold actor (first follow in this process: the cap reads its counts)', cold)}
- store statements per warm follow: ${Object.entries(warm.byStoreName)
  .map(([k, v]) => `${k} ${v}`)
  .join(', ')}

JVM CPU per follow ${result.jvmCpuMsPerFollow} ms (per INSERT ${result.jvmCpuMsPerInsert} ms), Node CPU per follow ${result.nodeCpuMsPerFollow} ms, at ${CALLERS} callers

T8 follow p99 ÷ INSERT p99: ${fmt(result.p99Ratio)} (p50 ${fmt(result.p50Ratio)}); follows/s ÷ inserts/s: ${fmt(result.throughputRatio)}
${
  result.s2
    ? `
S2 follow with the search index ÷ without: p50 ${fmt(result.s2.p50Ratio)} (without: ${result.s2.unindexedP50Ms} ms); JVM CPU ${fmt(result.s2.jvmCpuRatio)} (without: ${result.s2.unindexedJvmCpuMsPerFollow} ms a follow); Node CPU ${fmt(result.s2.nodeCpuRatio)}; follows/s ${fmt(result.s2.throughputRatio)}
`
    : ''
}`;
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
