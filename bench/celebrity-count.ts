/**
 * T7 counts on the loaded celebrity list (`npm run bench:load` first).
 *
 *   Latency, cold: `GraphService.counts(celebrity)` with the read caches off (every call reaches
 *   the store), from the account tables (`counts`: two single-partition reads, `cql/023`) and from
 *   the list tables (`countsLists`: six, what counts read until `jobs migrate-counts` is done),
 *   each ÷ a raw prepared single-partition point read (`edges_out` of a random follower),
 *   `--rounds` calls per arm, the arms interleaved in rotating order over `--reps`; p50/p99
 *   ratio per repetition, median and spread; a fourth arm, two point reads in parallel, shows the
 *   floor of any read that takes two requests. The celebrity's lists are recounted into the account
 *   tables first when those lack them (`migrateCountsOfUsers`; the keyspace's marker is left
 *   alone). `--latency-only` stops there (the rest unfollows and refollows 1% of the list).
 *   Drift: the count right after the load (must be F), then 1% of the followers unfollow through
 *   `GraphService.unfollow` (`--concurrency` at a time) and a tenth of those are sent twice at
 *   once (a client retry racing its own original); drift = |counter − rows| ÷ rows, before and
 *   after `reconcileList`. The unfollowed members then follow again (new positions, so the list
 *   keeps F members but their order changes: run this after `bench:page --with-postgres`).
 *
 *   Reconcile: the whole list's `reconcileList` time, and one bucket's recount (what the
 *   reconcilers do per dirty bucket) with `--deactivate` followers deactivated, through the
 *   registry of deactivated accounts ÷ through every member's user row, A B / B A over
 *   `--recount-reps`; both must count the same, and the followers are reactivated after.
 *
 *   npm run bench:count -- [--followers 9000000] [--reps 3] [--rounds 500] [--concurrency 32] [--percent 1]
 *                          [--deactivate 100] [--recount-reps 3]
 */
import { deactivatedFilter, registryFilter } from '../src/graph/accounts/account-state.js';
import { GraphService } from '../src/graph/graph-service.js';
import { migrateCountsOfUsers } from '../src/jobs/migrate-counts.js';
import { reconcileList } from '../src/jobs/reconcile.js';
import { countBucket } from '../src/lists/list-walker.js';
import { readBucketCodes } from '../src/model/buckets.js';
import { listIn } from '../src/model/types.js';
import { barChartSvg } from './support/charts.js';
import {
  CELEBRITY,
  cpuMeter,
  FIRST_FOLLOWER,
  interleaved,
  loadAverage,
  openBench,
  percentile,
  ratioSummary,
  sortedCopy,
} from './support/harness.js';

const bench = openBench({
  usage:
    'npm run bench:count -- [--followers 9000000] [--reps 3] [--rounds 500] [--concurrency 32] [--percent 1] [--deactivate 100] [--recount-reps 3] [--latency-only]',
  options: {
    followers: { type: 'string', default: '9000000' },
    reps: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '500' },
    concurrency: { type: 'string', default: '32' },
    percent: { type: 'string', default: '1' },
    deactivate: { type: 'string', default: '100' },
    'recount-reps': { type: 'string', default: '3' },
    'latency-only': { type: 'boolean', default: false },
  },
});
const args = bench.args;
const F = Number(args.followers);
const REPS = Number(args.reps);
const ROUNDS = Number(args.rounds);
const CONCURRENCY = Number(args.concurrency);
const DEACTIVATE = Number(args.deactivate);
const RECOUNT_REPS = Number(args['recount-reps']);

const { client, store, lists, graph } = await bench.celebrity(F);
const list = listIn(CELEBRITY, 'follows');
const N = (await store.getLayout(list)).buckets;
console.log(`${F} followers, N=${N}; load average ${loadAverage()}`);

// Cold: no read cache, so every call reads the store; one service per copy of the counts, neither
// with a registry (its feed-tail polls would add background reads to every arm).
const coldFrom = (countsFrom: 'accounts' | 'lists') =>
  new GraphService({ store, lists, maxFollowing: 10_000_000, caches: false, registry: false, countsFrom });
const cold = { accounts: coldFrom('accounts'), lists: coldFrom('lists') };
const listsCount = await cold.lists.counts(CELEBRITY);
let accountsCount = await cold.accounts.counts(CELEBRITY);
let recountS: number | null = null;
if (accountsCount.asOf === null) {
  const t = performance.now();
  await migrateCountsOfUsers(store, [CELEBRITY]);
  recountS = (performance.now() - t) / 1000;
  accountsCount = await cold.accounts.counts(CELEBRITY);
  console.log(`recounted the celebrity's lists into the account tables in ${recountS.toFixed(1)} s`);
}
console.log(
  `counts: account tables ${accountsCount.followers}/${accountsCount.following} exact ${accountsCount.exact}; list tables ${listsCount.followers}/${listsCount.following} exact ${listsCount.exact}`,
);

let seed = 7;
const rand = () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed / 2 ** 31;
};
const RAW = "SELECT state FROM edges_out WHERE source_id = ? AND relation = 'follows' AND target_id = ?";
const arms = {
  counts: async () => {
    await cold.accounts.counts(CELEBRITY);
  },
  countsLists: async () => {
    await cold.lists.counts(CELEBRITY);
  },
  point: async () => {
    const f = FIRST_FOLLOWER + BigInt(Math.floor(rand() * F));
    await client.execute(RAW, [f, CELEBRITY], { prepare: true });
  },
  /** Two point reads in parallel: the floor of any read that takes two requests. */
  point2: async () => {
    const [f, g] = [rand(), rand()].map((x) => FIRST_FOLLOWER + BigInt(Math.floor(x * F)));
    await Promise.all([
      client.execute(RAW, [f, CELEBRITY], { prepare: true }),
      client.execute(RAW, [g, CELEBRITY], { prepare: true }),
    ]);
  },
};
type Arm = keyof typeof arms;
async function timeArm(arm: Arm, n: number) {
  const meter = cpuMeter();
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await arms[arm]();
    times.push(performance.now() - t);
  }
  const s = sortedCopy(times);
  return { p50: percentile(s, 50), p99: percentile(s, 99), ...meter() };
}
// Warm-up: 100 calls per arm (fewer only when a run times fewer, as the smoke run does).
for (const arm of Object.keys(arms) as Arm[]) await timeArm(arm, Math.min(100, ROUNDS));
// Three arms, each repetition in a rotated order (A B C, B C A, C A B, …).
const ARMS = ['counts', 'countsLists', 'point', 'point2'] as const;
type Timing = Awaited<ReturnType<typeof timeArm>>;
const reps: Record<Arm, Timing>[] = [];
for (let r = 0; r < REPS; r++) {
  const rep = {} as Record<Arm, Timing>;
  for (let i = 0; i < ARMS.length; i++) {
    const arm = ARMS[(r + i) % ARMS.length] as Arm;
    rep[arm] = await timeArm(arm, ROUNDS);
  }
  reps.push(rep);
  console.log(
    `T7 rep ${r}: counts (account tables) p50 ${rep.counts.p50.toFixed(3)} p99 ${rep.counts.p99.toFixed(3)} ms; counts (list tables) p50 ${rep.countsLists.p50.toFixed(3)} p99 ${rep.countsLists.p99.toFixed(3)} ms; point p50 ${rep.point.p50.toFixed(3)} p99 ${rep.point.p99.toFixed(3)} ms; two point reads p50 ${rep.point2.p50.toFixed(3)} p99 ${rep.point2.p99.toFixed(3)} ms; load ${loadAverage()}`,
  );
}
const med = <T>(f: (x: T) => number, of: readonly T[]) => +percentile(sortedCopy(of.map(f)), 50).toFixed(3);
const latency = {
  counts: { p50_ms: med((x) => x.counts.p50, reps), p99_ms: med((x) => x.counts.p99, reps) },
  countsLists: { p50_ms: med((x) => x.countsLists.p50, reps), p99_ms: med((x) => x.countsLists.p99, reps) },
  point: { p50_ms: med((x) => x.point.p50, reps), p99_ms: med((x) => x.point.p99, reps) },
  point2: { p50_ms: med((x) => x.point2.p50, reps), p99_ms: med((x) => x.point2.p99, reps) },
  p99Ratio: ratioSummary(reps.map((x) => x.counts.p99 / x.point.p99)),
  p50Ratio: ratioSummary(reps.map((x) => x.counts.p50 / x.point.p50)),
  listsP99Ratio: ratioSummary(reps.map((x) => x.countsLists.p99 / x.point.p99)),
  listsP50Ratio: ratioSummary(reps.map((x) => x.countsLists.p50 / x.point.p50)),
  point2P99Ratio: ratioSummary(reps.map((x) => x.point2.p99 / x.point.p99)),
  point2P50Ratio: ratioSummary(reps.map((x) => x.point2.p50 / x.point.p50)),
  recountS,
  reps,
};
const fmt = (r: { median: number; min: number; max: number }) => `${r.median} [${r.min}–${r.max}]`;
const latencyMd = `| T7, cold (caches off) | value |
|---|---|
| counts, account tables, p50 / p99 ms | ${latency.counts.p50_ms} / ${latency.counts.p99_ms} |
| counts, list tables, p50 / p99 ms | ${latency.countsLists.p50_ms} / ${latency.countsLists.p99_ms} |
| point read p50 / p99 ms | ${latency.point.p50_ms} / ${latency.point.p99_ms} |
| p99 ratio, account tables (median [spread]) | ${fmt(latency.p99Ratio)} |
| p50 ratio, account tables | ${fmt(latency.p50Ratio)} |
| p99 ratio, list tables | ${fmt(latency.listsP99Ratio)} |
| p50 ratio, list tables | ${fmt(latency.listsP50Ratio)} |
| two point reads in parallel, p50 / p99 ms | ${latency.point2.p50_ms} / ${latency.point2.p99_ms} |
| p99 / p50 ratio, two point reads (the floor of two requests) | ${fmt(latency.point2P99Ratio)} / ${fmt(latency.point2P50Ratio)} |
`;
const latencySvg = () =>
  barChartSvg(
    `cold count read vs point read (${F} followers, N=${N})`,
    ['p50', 'p99'],
    [
      { name: 'counts(), account tables', values: [latency.counts.p50_ms, latency.counts.p99_ms] },
      { name: 'counts(), list tables', values: [latency.countsLists.p50_ms, latency.countsLists.p99_ms] },
      { name: 'raw point read', values: [latency.point.p50_ms, latency.point.p99_ms] },
    ],
    'ms',
  );
if (args['latency-only']) {
  const md = `# bench:count ${F} followers (N=${N}, ${REPS}×${ROUNDS}), latency only\n\nload average at end ${loadAverage()}\n\n${latencyMd}`;
  console.log(md);
  const result = {
    at: new Date().toISOString(),
    followers: F,
    buckets: N,
    reps: REPS,
    rounds: ROUNDS,
    latency,
  };
  console.log(`wrote ${await bench.writeResults(`count-${F}-latency`, result, latencySvg(), md)}`);
  await bench.close();
  process.exit(0);
}

// Drift: `--percent` (default 1%) unfollows, a tenth of them retried concurrently with their original.
const countNow = async () => (await graph.counts(CELEBRITY)).followers;
const afterLoad = await countNow();
// A counter left off by earlier runs (an interrupted bench, a refollow) is reconciled first, so
// the drift measured below is this run's churn alone.
let startReconciled: number | null = null;
if (afterLoad !== F) {
  startReconciled = (await reconcileList(store, list)).counted;
  console.log(`counter ${afterLoad} before the run, rows ${startReconciled}: reconciled first`);
  if (startReconciled !== F) {
    console.error(`the list holds ${startReconciled} members, not ${F}: reload or refollow first`);
    process.exit(1);
  }
}
const U = Math.max(1, Math.floor((F * Number(args.percent)) / 100));
const stride = Math.floor(F / U);
const victims = Array.from({ length: U }, (_, k) => FIRST_FOLLOWER + BigInt(k * stride));
async function pool<T>(items: readonly T[], run: (x: T, i: number) => Promise<unknown>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < items.length) {
        const i = next++;
        await run(items[i]!, i);
      }
    }),
  );
}
const churn = cpuMeter();
let retried = 0;
await pool(victims, async (f, i) => {
  if (i % 10 === 0) {
    retried++;
    await Promise.all([graph.unfollow(f, CELEBRITY), graph.unfollow(f, CELEBRITY)]);
  } else await graph.unfollow(f, CELEBRITY);
});
const churnSpan = churn();
const truth = F - U;
const beforeReconcile = await countNow();
const reconcileMeter = cpuMeter();
const rec = await reconcileList(store, list);
const reconcileSpan = reconcileMeter();
const afterReconcile = await countNow();
const drift = (c: number) => Math.abs(c - truth) / truth;
console.log(
  `drift: after load ${afterLoad} (expected ${F}); after ${U} unfollows (${retried} sent twice at once) ${beforeReconcile} vs ${truth} rows (${(drift(beforeReconcile) * 100).toFixed(4)}%); reconcile counted ${rec.counted}, after ${afterReconcile} (${(drift(afterReconcile) * 100).toFixed(4)}%)`,
);
console.log(
  `reconcile: ${rec.counted} rows in ${reconcileSpan.wallS.toFixed(1)} s (${Math.round(rec.counted / reconcileSpan.wallS)} rows/s); CPU Node ${reconcileSpan.nodeCpuS.toFixed(1)} s, JVM ${reconcileSpan.jvmCpuS.toFixed(1)} s`,
);
// Restore the member count (new positions; see the note above).
await pool(victims, (f) => graph.follow(f, CELEBRITY));
const restored = await countNow();

// One bucket's recount, what the reconcilers do per dirty bucket, with `--deactivate` followers
// deactivated: through the registry of deactivated accounts (read once, then the registered
// members' rows) against reading every member's user row (the filter it replaced). A B / B A.
const gone = Array.from(
  { length: DEACTIVATE },
  (_, k) => FIRST_FOLLOWER + BigInt(k * Math.floor(F / DEACTIVATE) + 1),
);
for (const id of gone) await graph.putUser({ id, state: 'deactivated' });
await graph.settleAccountTasks();
const code = readBucketCodes(await store.getLayout(list))[0] as number;
const filters = { registry: () => registryFilter(store), perMember: () => deactivatedFilter(store) };
type Filter = keyof typeof filters;
async function recount(f: Filter) {
  const meter = cpuMeter();
  const counted = await countBucket(store, list, code, 5000, filters[f]());
  return { counted, ...meter() };
}
const recounts = await interleaved(RECOUNT_REPS, ['registry', 'perMember'] as const, recount, (rep, r) => {
  console.log(
    `recount of bucket ${code} rep ${r}: registry ${rep.registry.counted} in ${rep.registry.wallS.toFixed(2)} s, per-member ${rep.perMember.counted} in ${rep.perMember.wallS.toFixed(2)} s; load ${loadAverage()}`,
  );
  if (rep.registry.counted !== rep.perMember.counted) {
    console.error(`RECOUNT MISMATCH: registry ${rep.registry.counted}, per-member ${rep.perMember.counted}`);
    process.exit(1);
  }
});
for (const id of gone) await graph.putUser({ id, state: 'active' });
await graph.settleAccountTasks();

const result = {
  at: new Date().toISOString(),
  followers: F,
  buckets: N,
  reps: REPS,
  rounds: ROUNDS,
  loadAverageEnd: loadAverage(),
  latency,
  drift: {
    afterLoad,
    expectedAfterLoad: F,
    startReconciled,
    unfollows: U,
    sentTwiceAtOnce: retried,
    unfollowWallS: +churnSpan.wallS.toFixed(1),
    rows: truth,
    beforeReconcile,
    driftBeforeReconcile: drift(beforeReconcile),
    reconcileCounted: rec.counted,
    afterReconcile,
    driftAfterReconcile: drift(afterReconcile),
    restoredAfterRefollow: restored,
    reconcileWallS: +reconcileSpan.wallS.toFixed(1),
    reconcileRowsPerS: Math.round(rec.counted / reconcileSpan.wallS),
    reconcileNodeCpuS: +reconcileSpan.nodeCpuS.toFixed(1),
    reconcileJvmCpuS: +reconcileSpan.jvmCpuS.toFixed(1),
  },
  recount: {
    bucketCode: code,
    deactivated: DEACTIVATE,
    counted: recounts[0]?.registry.counted ?? null,
    registryWallS: med((x) => x.registry.wallS, recounts),
    perMemberWallS: med((x) => x.perMember.wallS, recounts),
    speedup: ratioSummary(recounts.map((x) => x.perMember.wallS / x.registry.wallS)),
    reps: recounts,
  },
};
const md = `# bench:count ${F} followers (N=${N}, ${REPS}×${ROUNDS})

load average at end ${result.loadAverageEnd}

${latencyMd}
| T7 drift | value |
|---|---|
| count after load | ${afterLoad} (expected ${F})${startReconciled === null ? '' : `; reconciled to ${startReconciled} before the churn`} |
| unfollows (sent twice at once) | ${U} (${retried}) in ${result.drift.unfollowWallS} s |
| counter before reconcile vs rows | ${beforeReconcile} vs ${truth}: drift ${(drift(beforeReconcile) * 100).toFixed(4)}% |
| after reconcile | ${afterReconcile}: drift ${(drift(afterReconcile) * 100).toFixed(4)}% |
| after refollow | ${restored} |
| reconcile of the whole list | ${rec.counted} rows in ${result.drift.reconcileWallS} s (${result.drift.reconcileRowsPerS} rows/s; CPU Node ${result.drift.reconcileNodeCpuS} s, JVM ${result.drift.reconcileJvmCpuS} s) |

| one bucket's recount (code ${code}, ${DEACTIVATE} followers deactivated) | value |
|---|---|
| counted (both filters agree) | ${result.recount.counted} |
| registry filter, median s | ${result.recount.registryWallS} |
| per-member user reads, median s | ${result.recount.perMemberWallS} |
| per-member ÷ registry time (median [spread]) | ${fmt(result.recount.speedup)} |
`;
const svg = latencySvg();
console.log(md);
console.log(`wrote ${await bench.writeResults(`count-${F}`, result, svg, md)}`);
await bench.close();
process.exit(0);
