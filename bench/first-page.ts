/**
 * C1: the first followers page of the loaded celebrity list (`npm run bench:load` first) while the
 * list gains `--rate` followers per second (default 50), limit 50, hydrated (ids and usernames):
 *
 *   cacheOn   `GraphService.listPage(celebrity followers, 50, null)` with the read caches on; the
 *             follows go through the same service, so every one reaches its cache as a local event
 *             (the acknowledging instance: the hardest case for a cached first page);
 *   cacheOff  the same call on a second `GraphService` over the same store with the caches off;
 *   postgres  the hydrated keyset page (`pgJoinedPage`) while Postgres gains the same followers
 *             (one INSERT each into `follows` and `users`, at the same rate).
 *
 * Each repetition times every arm for `--seconds` of sequential reads (arms rotated per repetition),
 * the writer running throughout that arm. Ratios per repetition: p99 and p50 of each Cassandra arm ÷
 * Postgres (C1: cacheOn p99 ÷ postgres p99, target ≤ 0.5), reported as median [min–max]. Every page
 * read while a follow is acknowledged is checked: once `follow()` returns, the next cacheOn page
 * read must begin with that follower (read-your-writes on the acknowledging instance).
 *
 * The new followers are accounts created for the run (ids above the loaded list) and unfollowed at
 * the end; Postgres's rows for them are deleted, so the keyspace and the Postgres table are left as
 * they were found (apart from tombstones).
 *
 * `--without-postgres` (the CI smoke run) drops the Postgres arm and its ratios.
 *
 *   npm run bench:first-page -- [--followers 9000000] [--reps 3] [--seconds 10] [--rate 50]
 */
import { GraphService } from '../src/graph/graph-service.js';
import type { ListKey, UserId } from '../src/model/types.js';
import { barChartSvg } from './support/charts.js';
import {
  CELEBRITY,
  cpuMeter,
  loadAverage,
  openBench,
  percentile,
  ratioSummary,
  sortedCopy,
} from './support/harness.js';
import { pgJoinedPage, startPostgres } from './support/postgres.js';

const bench = openBench({
  usage:
    'npm run bench:first-page -- [--followers 9000000] [--reps 3] [--seconds 10] [--rate 50] [--without-postgres]',
  options: {
    followers: { type: 'string', default: '9000000' },
    reps: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '10' },
    rate: { type: 'string', default: '50' },
    'without-postgres': { type: 'boolean', default: false },
  },
});
const args = bench.args;
const F = Number(args.followers);
const REPS = Number(args.reps);
const SECONDS = Number(args.seconds);
const RATE = Number(args.rate);
const LIMIT = 50;
const list: ListKey = { userId: CELEBRITY, relation: 'follows', direction: 'in' };
/** New followers: ids far above the loaded followers and the background graph. */
const NEW_BASE = 9_500_000_000n;

const { store, lists, graph } = await bench.celebrity(F);
const uncached = new GraphService({ store, lists, maxFollowing: 10_000_000, caches: false });
const pgdb = args['without-postgres'] ? null : await startPostgres(F);
console.log(`${F} followers; postgres ${pgdb?.version ?? 'off'}; load average ${loadAverage()}`);

type ArmName = 'cacheOn' | 'cacheOff' | 'postgres';
const ARMS: ArmName[] = pgdb ? ['cacheOn', 'cacheOff', 'postgres'] : ['cacheOn', 'cacheOff'];
const pool = () => {
  if (!pgdb) throw new Error('no postgres arm');
  return pgdb.pool;
};
let nextNew = 0;
const added: UserId[] = [];
let stale = 0;
let writeErrors = 0;
const staleByArm: Record<string, number> = { cacheOn: 0, cacheOff: 0, postgres: 0 };

/** The followers the writer will add, created before timing (users are not what C1 measures). */
const WARMUP_S = Math.min(2, SECONDS);
const perArm = (seconds: number) => Math.ceil(RATE * seconds) + 5;
const total = (perArm(SECONDS) * REPS + perArm(WARMUP_S)) * ARMS.length;
for (let i = 0; i < total; i += 100) {
  await Promise.all(
    Array.from({ length: Math.min(100, total - i) }, (_, k) => {
      const id = NEW_BASE + BigInt(i + k);
      return graph.putUser({ id, username: `c1_new_${i + k}` });
    }),
  );
  bench.progress(`created ${Math.min(total, i + 100)}/${total} new followers`);
}
bench.progress(`created ${total} new followers`, true);
// A run that died midway left some of them following (and their Postgres rows): undo that first.
let leftover = 0;
for (let i = 0; i < total; i += 1000) {
  const ids = Array.from({ length: Math.min(1000, total - i) }, (_, k) => NEW_BASE + BigInt(i + k));
  for (const id of await uncached.contains(CELEBRITY, 'follows', 'in', ids)) {
    await graph.unfollow(id, CELEBRITY);
    leftover++;
  }
}
if (pgdb) {
  await pgdb.pool.query('DELETE FROM follows WHERE follower_id >= $1', [String(NEW_BASE)]);
  await pgdb.pool.query('DELETE FROM users WHERE id >= $1', [String(NEW_BASE)]);
}
if (leftover > 0) console.log(`undid ${leftover} follows left by an earlier run`);

/** Adds one follower to the arm's side: the service (both Cassandra arms) or Postgres. */
async function addFollower(arm: ArmName): Promise<UserId> {
  const id = NEW_BASE + BigInt(nextNew++);
  if (arm === 'postgres') {
    const at = BigInt(Date.now()) * 1000n;
    await pool().query('INSERT INTO users (id, username, deactivated) VALUES ($1, $2, false)', [
      String(id),
      `c1_new_${id - NEW_BASE}`,
    ]);
    await pool().query('INSERT INTO follows (follower_id, followee_id, created_at) VALUES ($1, $2, $3)', [
      String(id),
      String(CELEBRITY),
      String(at),
    ]);
  } else {
    await graph.follow(id, CELEBRITY);
    added.push(id);
  }
  return id;
}

/** A writer at `RATE` per second until stopped; returns how many it added. */
function startWriter(arm: ArmName, onAcked: (id: UserId) => void) {
  let stopped = false;
  let count = 0;
  const started = performance.now();
  const run = (async () => {
    while (!stopped) {
      const due = started + (count * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      if (stopped) break;
      try {
        onAcked(await addFollower(arm));
      } catch (e) {
        // A follow refused under load (503) is retried as the next one; counted, never fatal.
        writeErrors++;
        if (writeErrors === 1) console.error(`writer: ${(e as Error).message}`);
      }
      count++;
    }
  })();
  return async () => {
    stopped = true;
    await run;
    return count;
  };
}

const read: Record<ArmName, () => Promise<bigint | undefined>> = {
  cacheOn: async () => (await graph.listPage(list, LIMIT, null)).items[0]?.id,
  cacheOff: async () => (await uncached.listPage(list, LIMIT, null)).items[0]?.id,
  postgres: async () => (await pgJoinedPage(pool(), LIMIT, null))[0]?.followerId,
};

async function timeArm(arm: ArmName, seconds: number) {
  let acked: UserId | null = null;
  const stop = startWriter(arm, (id) => {
    acked = id;
  });
  const meter = cpuMeter();
  const times: number[] = [];
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const want = acked;
    const t = performance.now();
    const first = await read[arm]();
    times.push(performance.now() - t);
    // A cached read settles in microtasks: let the writer's timers run between reads (an HTTP
    // server interleaves them the same way), untimed.
    await new Promise((r) => setImmediate(r));
    // Read-your-writes: a page read begun after a follow was acknowledged shows it (or a newer one).
    if (want !== null && first !== undefined && first < want) {
      stale++;
      staleByArm[arm] = (staleByArm[arm] ?? 0) + 1;
      if (staleByArm[arm] === 1)
        console.error(`${arm}: a page read after ${want} was acknowledged began with ${first}`);
    }
  }
  const cpu = meter();
  const writes = await stop();
  const s = sortedCopy(times);
  return { p50: percentile(s, 50), p99: percentile(s, 99), reads: times.length, writes, ...cpu };
}

// Warm-up: two seconds per arm.
for (const arm of ARMS) await timeArm(arm, WARMUP_S);
const reps: Record<ArmName, Awaited<ReturnType<typeof timeArm>>>[] = [];
for (let r = 0; r < REPS; r++) {
  const order = ARMS.map((_, i) => ARMS[(i + r) % ARMS.length] as ArmName);
  const rep = {} as Record<ArmName, Awaited<ReturnType<typeof timeArm>>>;
  for (const arm of order) rep[arm] = await timeArm(arm, SECONDS);
  reps.push(rep);
  console.log(
    `rep ${r}: ${ARMS.map((a) => `${a} p50 ${rep[a].p50.toFixed(3)} p99 ${rep[a].p99.toFixed(3)} ms (${rep[a].reads} reads, ${rep[a].writes} follows)`).join('; ')}; load ${loadAverage()}`,
  );
}
const cacheStats = graph.caches.stats();

// Leave the list and the table as found.
let undone = 0;
for (const id of added) {
  await graph.unfollow(id, CELEBRITY).catch(() => undefined);
  undone++;
  if (undone % 200 === 0) bench.progress(`unfollowed ${undone}/${added.length} new followers`);
}
if (pgdb) {
  await pgdb.pool.query('DELETE FROM follows WHERE follower_id >= $1', [String(NEW_BASE)]);
  await pgdb.pool.query('DELETE FROM users WHERE id >= $1', [String(NEW_BASE)]);
  await pgdb.stop();
}
bench.progress(`unfollowed ${undone} new followers; postgres rows deleted`, true);

const med = (f: (x: (typeof reps)[number]) => number) => +percentile(sortedCopy(reps.map(f)), 50).toFixed(3);
const arm = (a: ArmName) => ({
  p50_ms: med((x) => x[a].p50),
  p99_ms: med((x) => x[a].p99),
  reads: med((x) => x[a].reads),
  follows: med((x) => x[a].writes),
  nodeCpuS: med((x) => x[a].nodeCpuS),
  jvmCpuS: med((x) => x[a].jvmCpuS),
});
const results = {
  at: new Date().toISOString(),
  followers: F,
  reps: REPS,
  seconds: SECONDS,
  rate: RATE,
  postgresVersion: pgdb?.version ?? null,
  loadAverageEnd: loadAverage(),
  staleReads: stale,
  staleByArm,
  writeErrors,
  cacheStats,
  arms: Object.fromEntries(ARMS.map((a) => [a, arm(a)])) as Record<ArmName, ReturnType<typeof arm>>,
  /** Cache on ÷ cache off, same run (what the cache buys). */
  onOffP99: ratioSummary(reps.map((x) => x.cacheOn.p99 / x.cacheOff.p99)),
  onOffP50: ratioSummary(reps.map((x) => x.cacheOn.p50 / x.cacheOff.p50)),
  c1: pgdb ? ratioSummary(reps.map((x) => x.cacheOn.p99 / x.postgres.p99)) : null,
  c1p50: pgdb ? ratioSummary(reps.map((x) => x.cacheOn.p50 / x.postgres.p50)) : null,
  cacheOffP99: pgdb ? ratioSummary(reps.map((x) => x.cacheOff.p99 / x.postgres.p99)) : null,
  cacheOffP50: pgdb ? ratioSummary(reps.map((x) => x.cacheOff.p50 / x.postgres.p50)) : null,
};
console.log(JSON.stringify(results, null, 2));
const fmt = (r: { median: number; min: number; max: number } | null) =>
  r ? `${r.median} [${r.min}–${r.max}]` : '—';
const md = `# bench:first-page ${F} followers, +${RATE}/s (${REPS} reps × ${SECONDS} s per arm)

load average at end ${results.loadAverageEnd}; stale reads after an acknowledged follow: ${stale} (${JSON.stringify(staleByArm)})

| arm | p50 / p99 ms | reads per rep | node CPU s | JVM CPU s |
|---|---|---|---|---|
${ARMS.map((a) => `| ${a} | ${results.arms[a].p50_ms} / ${results.arms[a].p99_ms} | ${results.arms[a].reads} | ${results.arms[a].nodeCpuS} | ${results.arms[a].jvmCpuS} |`).join('\n')}

| ratio | p99 | p50 |
|---|---|---|
| cache on ÷ postgres (C1) | ${fmt(results.c1)} | ${fmt(results.c1p50)} |
| cache off ÷ postgres | ${fmt(results.cacheOffP99)} | ${fmt(results.cacheOffP50)} |
| cache on ÷ cache off | ${fmt(results.onOffP99)} | ${fmt(results.onOffP50)} |
`;
const svg = barChartSvg(
  `first page while gaining ${RATE}/s (${F} followers)`,
  ARMS,
  [
    { name: 'p50', values: ARMS.map((a) => results.arms[a].p50_ms) },
    { name: 'p99', values: ARMS.map((a) => results.arms[a].p99_ms) },
  ],
  'ms',
);
console.log(`wrote ${await bench.writeResults(`first-page-${F}`, results, svg, md)}`);
await bench.close();
if (stale > 0) {
  console.error(`${stale} page reads missed a follow acknowledged before they began`);
  process.exitCode = 1;
}
