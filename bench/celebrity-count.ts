/**
 * T7 counts on the loaded celebrity list (`npm run bench:load` first).
 *
 *   Latency: `GraphService.counts(celebrity)` (both counters: shard sum + correction + dirty
 *   flag per list) ÷ a raw prepared single-partition point read (`edges_out` of a random
 *   follower), `--rounds` calls per arm, interleaved A B / B A over `--reps`; p50/p99 ratio per
 *   repetition, median and spread.
 *   Drift: the count right after the load (must be F), then 1% of the followers unfollow through
 *   `GraphService.unfollow` (`--concurrency` at a time) and a tenth of those are sent twice at
 *   once (a client retry racing its own original); drift = |counter − rows| ÷ rows, before and
 *   after `reconcileList`. The unfollowed members then follow again (new positions, so the list
 *   keeps F members but their order changes: run this after `bench:page --with-postgres`).
 *
 *   npm run bench:count -- [--followers 9000000] [--reps 3] [--rounds 500] [--concurrency 32] [--percent 1]
 */
import { parseArgs } from 'node:util';
import { listIn } from '../src/graph/pair-writer.js';
import { reconcileList } from '../src/jobs/reconcile.js';
import { barChartSvg } from './support/charts.js';
import {
  CELEBRITY,
  cpuMeter,
  FIRST_FOLLOWER,
  loadAverage,
  openCelebrityServices,
  percentile,
  ratioSummary,
  sortedCopy,
  writeResults,
} from './support/harness.js';

const { values: args } = parseArgs({
  options: {
    followers: { type: 'string', default: '9000000' },
    reps: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '500' },
    concurrency: { type: 'string', default: '32' },
    percent: { type: 'string', default: '1' },
  },
});
const F = Number(args.followers);
const REPS = Number(args.reps);
const ROUNDS = Number(args.rounds);
const CONCURRENCY = Number(args.concurrency);

const { client, store, graph } = await openCelebrityServices(F);
const list = listIn(CELEBRITY, 'follows');
const N = (await store.getLayout(list)).buckets;
console.log(`${F} followers, N=${N}; load average ${loadAverage()}`);

let seed = 7;
const rand = () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed / 2 ** 31;
};
const RAW = "SELECT state FROM edges_out WHERE source_id = ? AND relation = 'follows' AND target_id = ?";
const arms = {
  counts: async () => {
    await graph.counts(CELEBRITY);
  },
  point: async () => {
    const f = FIRST_FOLLOWER + BigInt(Math.floor(rand() * F));
    await client.execute(RAW, [f, CELEBRITY], { prepare: true });
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
await timeArm('counts', 100);
await timeArm('point', 100);
const reps: Record<Arm, Awaited<ReturnType<typeof timeArm>>>[] = [];
for (let r = 0; r < REPS; r++) {
  const order: Arm[] = r % 2 === 0 ? ['counts', 'point'] : ['point', 'counts'];
  const rep = {} as Record<Arm, Awaited<ReturnType<typeof timeArm>>>;
  for (const arm of order) rep[arm] = await timeArm(arm, ROUNDS);
  reps.push(rep);
  console.log(
    `T7 rep ${r}: counts p50 ${rep.counts.p50.toFixed(3)} p99 ${rep.counts.p99.toFixed(3)} ms; point p50 ${rep.point.p50.toFixed(3)} p99 ${rep.point.p99.toFixed(3)} ms; load ${loadAverage()}`,
  );
}
const med = (f: (x: (typeof reps)[number]) => number) => +percentile(sortedCopy(reps.map(f)), 50).toFixed(3);

// Drift: `--percent` (default 1%) unfollows, a tenth of them retried concurrently with their original.
const countNow = async () => (await graph.counts(CELEBRITY)).followers;
const afterLoad = await countNow();
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
const rec = await reconcileList(store, list);
const afterReconcile = await countNow();
const drift = (c: number) => Math.abs(c - truth) / truth;
console.log(
  `drift: after load ${afterLoad} (expected ${F}); after ${U} unfollows (${retried} sent twice at once) ${beforeReconcile} vs ${truth} rows (${(drift(beforeReconcile) * 100).toFixed(4)}%); reconcile counted ${rec.counted}, after ${afterReconcile} (${(drift(afterReconcile) * 100).toFixed(4)}%)`,
);
// Restore the member count (new positions; see the note above).
await pool(victims, (f) => graph.follow(f, CELEBRITY));
const restored = await countNow();

const result = {
  at: new Date().toISOString(),
  followers: F,
  buckets: N,
  reps: REPS,
  rounds: ROUNDS,
  loadAverageEnd: loadAverage(),
  latency: {
    counts: { p50_ms: med((x) => x.counts.p50), p99_ms: med((x) => x.counts.p99) },
    point: { p50_ms: med((x) => x.point.p50), p99_ms: med((x) => x.point.p99) },
    p99Ratio: ratioSummary(reps.map((x) => x.counts.p99 / x.point.p99)),
    p50Ratio: ratioSummary(reps.map((x) => x.counts.p50 / x.point.p50)),
    reps,
  },
  drift: {
    afterLoad,
    expectedAfterLoad: F,
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
  },
};
const fmt = (r: { median: number; min: number; max: number }) => `${r.median} [${r.min}–${r.max}]`;
const md = `# bench:count ${F} followers (N=${N}, ${REPS}×${ROUNDS})

load average at end ${result.loadAverageEnd}

| T7 | value |
|---|---|
| counts p50 / p99 ms | ${result.latency.counts.p50_ms} / ${result.latency.counts.p99_ms} |
| point read p50 / p99 ms | ${result.latency.point.p50_ms} / ${result.latency.point.p99_ms} |
| p99 ratio (median [spread]) | ${fmt(result.latency.p99Ratio)} |
| p50 ratio | ${fmt(result.latency.p50Ratio)} |
| count after load | ${afterLoad} (expected ${F}) |
| unfollows (sent twice at once) | ${U} (${retried}) in ${result.drift.unfollowWallS} s |
| counter before reconcile vs rows | ${beforeReconcile} vs ${truth}: drift ${(drift(beforeReconcile) * 100).toFixed(4)}% |
| after reconcile | ${afterReconcile}: drift ${(drift(afterReconcile) * 100).toFixed(4)}% |
| after refollow | ${restored} |
`;
const svg = barChartSvg(
  `count read vs point read (${F} followers, N=${N})`,
  ['p50', 'p99'],
  [
    { name: 'counts()', values: [result.latency.counts.p50_ms, result.latency.counts.p99_ms] },
    { name: 'raw point read', values: [result.latency.point.p50_ms, result.latency.point.p99_ms] },
  ],
  'ms',
);
console.log(md);
console.log(`wrote ${await writeResults(`count-${F}`, result, svg, md)}`);
await client.shutdown();
process.exit(0);
