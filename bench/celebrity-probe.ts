/**
 * Point reads on the loaded celebrity list (`npm run bench:load` first), each against a raw
 * prepared statement on the same table and keys, in one process, arms alternating A B A B:
 *
 *   T5 edge check: `GraphService.contains(follower, follows, out, [celebrity])` ÷ a raw
 *      single-partition `SELECT state FROM edges_out WHERE source_id, relation, target_id`, with
 *      the read caches off (`T5 … cache off`) and on with a random follower each call (`T5 … miss`).
 *   C2 edge check, hit: the same call with the caches on, over a hot set of 1000 ids (half of them
 *      followers: negative answers included) read once untimed before each timed run, ÷ the raw
 *      SELECT.
 *   T6 300-id contains on the celebrity's inverse: `contains(celebrity, follows, in, 300 ids)`
 *      (about half of them followers) ÷ 300 concurrent raw single-row reads of `edges_in` at the
 *      same bucket codes.
 *
 * Per repetition, `--rounds` calls per arm (T5) or `--rounds / 10` (T6); ratios of p99 and p50 per
 * repetition, reported as median and spread, with Node and JVM CPU per arm and the load average.
 *
 * With `--with-postgres` (see `support/postgres.ts`) T6 has a second pair: the same 300-id contains
 * ÷ one Postgres `follower_id = ANY($ids)` query on the `follows` table holding the same rows (the
 * "raw" columns of that row are Postgres).
 *
 *   npm run bench:probe -- [--followers 9000000] [--reps 3] [--rounds 2000] [--with-postgres]
 */
import { GraphService } from '../src/graph/graph-service.js';
import { bucketCodeOf } from '../src/model/buckets.js';
import type { ListKey } from '../src/model/types.js';
import { mulberry32 } from '../test/support/random.js';
import { barChartSvg } from './support/charts.js';
import {
  CELEBRITY,
  cpuMeter,
  FIRST_FOLLOWER,
  loadAverage,
  openBench,
  percentile,
  ratioSummary,
  sortedCopy,
} from './support/harness.js';
import { pgContains, startPostgres } from './support/postgres.js';

const bench = openBench({
  usage: 'npm run bench:probe -- [--followers 9000000] [--reps 3] [--rounds 2000] [--with-postgres]',
  options: {
    followers: { type: 'string', default: '9000000' },
    reps: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '2000' },
    seed: { type: 'string', default: '42' },
    'with-postgres': { type: 'boolean', default: false },
  },
});
const args = bench.args;
const F = Number(args.followers);
const REPS = Number(args.reps);
const ROUNDS = Number(args.rounds);
const list: ListKey = { userId: CELEBRITY, relation: 'follows', direction: 'in' };

const rand = mulberry32(Number(args.seed));
const follower = () => FIRST_FOLLOWER + BigInt(Math.floor(rand() * F));
/** Half followers, half ids just past the list. */
const probeId = () => FIRST_FOLLOWER + BigInt(Math.floor(rand() * 2 * F));

const { client, store, lists, graph } = await bench.celebrity(F);
/** The same service with the read caches off (what T5 measured before the read caches). */
const uncached = new GraphService({ store, lists, maxFollowing: 10_000_000, caches: false });
/** The C2 hot set: 500 followers and 500 ids past the list. */
const HOT = Array.from({ length: 1000 }, (_, i) =>
  i % 2 === 0 ? FIRST_FOLLOWER + BigInt(Math.floor(rand() * F)) : FIRST_FOLLOWER + BigInt(F + i),
);
let hotAt = 0;
const N = (await store.getLayout(list)).buckets;
console.log(`${F} followers, N=${N}; load average ${loadAverage()}`);

const pgdb = args['with-postgres'] ? await startPostgres(F) : null;

const RAW_OUT = "SELECT state FROM edges_out WHERE source_id = ? AND relation = 'follows' AND target_id = ?";
const RAW_IN =
  "SELECT state FROM edges_in WHERE target_id = ? AND relation = 'follows' AND bucket = ? AND source_id = ?";

const arms = {
  t5Service: async () => {
    const f = follower();
    const hit = await uncached.contains(f, 'follows', 'out', [CELEBRITY]);
    if (hit.length !== 1) throw new Error(`edge ${f} → celebrity missing`);
  },
  t5Miss: async () => {
    const f = follower();
    const hit = await graph.contains(f, 'follows', 'out', [CELEBRITY]);
    if (hit.length !== 1) throw new Error(`edge ${f} → celebrity missing`);
  },
  c2Hit: async () => {
    const i = hotAt++ % HOT.length;
    const hit = await graph.contains(HOT[i] as bigint, 'follows', 'out', [CELEBRITY]);
    if (hit.length !== (i % 2 === 0 ? 1 : 0)) throw new Error(`edge ${HOT[i]} → celebrity: ${hit.length}`);
  },
  t5Raw: async () => {
    const f = follower();
    const rs = await client.execute(RAW_OUT, [f, CELEBRITY], { prepare: true });
    if (rs.first()?.state !== 'active') throw new Error(`edge ${f} → celebrity missing`);
  },
  t6Service: async () => {
    const ids = Array.from({ length: 300 }, probeId);
    await graph.contains(CELEBRITY, 'follows', 'in', ids);
  },
  t6Raw: async () => {
    const ids = Array.from({ length: 300 }, probeId);
    await Promise.all(
      ids.map((id) => client.execute(RAW_IN, [CELEBRITY, bucketCodeOf(N, id), id], { prepare: true })),
    );
  },
  t6Postgres: async () => {
    const ids = Array.from({ length: 300 }, probeId);
    await pgContains(pgdb!.pool, ids);
  },
};
type ArmName = keyof typeof arms;

async function timeArm(name: ArmName, n: number) {
  // The hot set read once, untimed, so the timed calls are hits (within the TTL).
  if (name === 'c2Hit') for (const id of HOT) await graph.contains(id, 'follows', 'out', [CELEBRITY]);
  const meter = cpuMeter();
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await arms[name]();
    times.push(performance.now() - t);
  }
  const cpu = meter();
  const s = sortedCopy(times);
  return { p50: percentile(s, 50), p99: percentile(s, 99), perS: n / cpu.wallS, ...cpu };
}

// Warm-up: 200 calls per arm (fewer only when a run times fewer, as the smoke run does).
for (const name of Object.keys(arms) as ArmName[])
  if (pgdb || name !== 't6Postgres') await timeArm(name, Math.min(200, ROUNDS));
// Same rows: Postgres and the service agree on which of 300 ids follow.
if (pgdb) {
  const ids = Array.from({ length: 300 }, probeId);
  const ours = (await graph.contains(CELEBRITY, 'follows', 'in', ids)).length;
  const theirs = await pgContains(pgdb.pool, ids);
  if (ours !== theirs) throw new Error(`contains: service found ${ours}, postgres ${theirs}`);
}

const pairs: [string, ArmName, ArmName, number][] = [
  ['T5 edge check, cache off', 't5Service', 't5Raw', ROUNDS],
  ['T5 edge check, miss (cache on)', 't5Miss', 't5Raw', ROUNDS],
  ['C2 edge check, hit (cache on)', 'c2Hit', 't5Raw', ROUNDS],
  ['T6 300-id contains', 't6Service', 't6Raw', Math.max(50, Math.floor(ROUNDS / 10))],
];
if (pgdb)
  pairs.push([
    'T6 300-id contains vs Postgres = ANY',
    't6Service',
    't6Postgres',
    Math.max(50, Math.floor(ROUNDS / 10)),
  ]);
const results = [];
for (const [label, a, b, n] of pairs) {
  const reps: { service: Awaited<ReturnType<typeof timeArm>>; raw: Awaited<ReturnType<typeof timeArm>> }[] =
    [];
  for (let r = 0; r < REPS; r++) {
    const first = r % 2 === 0 ? a : b;
    const x = await timeArm(first, n);
    const y = await timeArm(first === a ? b : a, n);
    reps.push(first === a ? { service: x, raw: y } : { service: y, raw: x });
    console.log(
      `${label} rep ${r}: service p50 ${reps.at(-1)!.service.p50.toFixed(3)} p99 ${reps.at(-1)!.service.p99.toFixed(3)} ms; raw p50 ${reps.at(-1)!.raw.p50.toFixed(3)} p99 ${reps.at(-1)!.raw.p99.toFixed(3)} ms; load ${loadAverage()}`,
    );
  }
  const med = (f: (x: (typeof reps)[number]) => number) =>
    +percentile(sortedCopy(reps.map(f)), 50).toFixed(3);
  results.push({
    label,
    callsPerArmPerRep: n,
    service: {
      p50_ms: med((x) => x.service.p50),
      p99_ms: med((x) => x.service.p99),
      perS: Math.round(med((x) => x.service.perS)),
      nodeCpuS: med((x) => x.service.nodeCpuS),
      jvmCpuS: med((x) => x.service.jvmCpuS),
    },
    raw: {
      p50_ms: med((x) => x.raw.p50),
      p99_ms: med((x) => x.raw.p99),
      perS: Math.round(med((x) => x.raw.perS)),
      nodeCpuS: med((x) => x.raw.nodeCpuS),
      jvmCpuS: med((x) => x.raw.jvmCpuS),
    },
    p99Ratio: ratioSummary(reps.map((x) => x.service.p99 / x.raw.p99)),
    p50Ratio: ratioSummary(reps.map((x) => x.service.p50 / x.raw.p50)),
    throughputRatio: ratioSummary(reps.map((x) => x.service.perS / x.raw.perS)),
  });
}
const postgresVersion = pgdb?.version ?? null;
await pgdb?.stop();
const result = {
  at: new Date().toISOString(),
  followers: F,
  buckets: N,
  reps: REPS,
  postgresVersion,
  loadAverageEnd: loadAverage(),
  results,
};
console.log(JSON.stringify(results, null, 2));
const fmt = (r: { median: number; min: number; max: number }) => `${r.median} [${r.min}–${r.max}]`;
const md = `# bench:probe ${F} followers (N=${N}, ${REPS} reps)\n\nload average at end ${result.loadAverageEnd}\n\n| test | service p50 / p99 ms | raw p50 / p99 ms | p99 ratio | p50 ratio | throughput ratio | node CPU s service / raw | JVM CPU s service / raw |\n|---|---|---|---|---|---|---|---|\n${results
  .map(
    (r) =>
      `| ${r.label} | ${r.service.p50_ms} / ${r.service.p99_ms} | ${r.raw.p50_ms} / ${r.raw.p99_ms} | ${fmt(r.p99Ratio)} | ${fmt(r.p50Ratio)} | ${fmt(r.throughputRatio)} | ${r.service.nodeCpuS} / ${r.raw.nodeCpuS} | ${r.service.jvmCpuS} / ${r.raw.jvmCpuS} |`,
  )
  .join('\n')}\n`;
const svg = barChartSvg(
  `probe p99 (${F} followers, N=${N})`,
  results.map((r) => r.label),
  [
    { name: 'service p99', values: results.map((r) => r.service.p99_ms) },
    { name: 'raw p99', values: results.map((r) => r.raw.p99_ms) },
  ],
  'ms',
);
console.log(`wrote ${await bench.writeResults(`probe-${F}`, result, svg, md)}`);
await bench.close();
