/**
 * T4 fan-out iteration on the loaded celebrity list: rows/s of `--workers` concurrent workers, each
 * iterating one slice of `BucketedListService.scanBatches` (batches of 1,000), against raw driver
 * paging (fetchSize 1,000, no merge, no output) over the same bucket partitions. The raw arm can
 * use at most N streams (one per partition), so with more workers than buckets it runs N streams.
 * Arms alternate A B A B per worker count for `--reps` repetitions; the median ratio and its
 * spread are reported with Node and JVM CPU per arm. The 16-worker scan must cover the list
 * exactly once: its count, id sum (mod 2^64) and id XOR equal the loaded ids'.
 *
 * The service arm pins the layout it read at the start (`pinnedBuckets: N`, see `scan-slices.ts`):
 * with more workers than buckets only N slices own rows, each reading whole buckets and nothing
 * it drops, as raw paging does; `--unpinned` measures the layout-free rule instead (each of the
 * `w > N` slices reads whole buckets and keeps about N/w of them).
 *
 * A window (`--window K`, default 8; 0 = the whole list) keeps the timed repetitions bounded at
 * 9M: both arms read the same K of the N bucket partitions (pinned: slice k of N owns exactly the
 * bucket at rank index k), `w` workers pulling those K one-bucket slices from a shared queue, so
 * each repetition reads K/N of the list; both arms must see the same row count. Then, once, the
 * whole list: the 16-worker service scan (16 slices of 16) checked for exact coverage, and a
 * 16-stream raw pass beside it (one whole-list ratio). Peak RSS covers everything.
 *
 *   npm run bench:scan -- [--followers 9000000] [--workers 1,4,8] [--window 8] [--reps 3] [--unpinned]
 */
import { bucketAtIndex } from '../src/lists/cursor/scan-slices.js';
import { bucketCode } from '../src/model/buckets.js';
import type { ListKey } from '../src/model/types.js';
import { lineChartSvg } from './support/charts.js';
import {
  CELEBRITY,
  cpuMeter,
  FIRST_FOLLOWER,
  loadAverage,
  openBench,
  peakRssMiB,
  ratioSummary,
} from './support/harness.js';

const bench = openBench({
  usage: 'npm run bench:scan -- [--followers 9000000] [--workers 1,4,8] [--window 8] [--reps 3] [--unpinned]',
  options: {
    followers: { type: 'string', default: '9000000' },
    workers: { type: 'string', default: '1,4,8' },
    window: { type: 'string', default: '8' },
    reps: { type: 'string', default: '3' },
    unpinned: { type: 'boolean', default: false },
  },
});
const args = bench.args;
const F = Number(args.followers);
const WORKERS = (args.workers ?? '').split(',').map(Number);
const REPS = Number(args.reps);
const WINDOW = Number(args.window);
const list: ListKey = { userId: CELEBRITY, relation: 'follows', direction: 'in' };
const MASK = 2n ** 64n - 1n;

const { client, store, lists: svc } = await bench.celebrity(F, 60_000);
const N = (await store.getLayout(list)).buckets;
console.log(`${F} followers, N=${N}; load average ${loadAverage()}`);

interface Tally {
  count: number;
  sum: bigint;
  xor: bigint;
}
const tally = (): Tally => ({ count: 0, sum: 0n, xor: 0n });
const add = (t: Tally, id: bigint) => {
  t.count++;
  t.sum = (t.sum + id) & MASK;
  t.xor ^= id;
};

/** Whole list: `workers` slices of `workers`, one worker each (the fan-out API as documented). */
async function serviceScan(workers: number): Promise<Tally> {
  const t = tally();
  await Promise.all(
    Array.from({ length: workers }, async (_, slice) => {
      for await (const batch of svc.scanBatches(list, {
        slice,
        slices: workers,
        batchSize: 1000,
        ...(args.unpinned ? {} : { pinnedBuckets: N }),
      })) {
        for (const id of batch.ids) add(t, id);
      }
    }),
  );
  return t;
}

/** `workers` workers pulling items off one shared queue until it is empty. */
async function drain<T>(items: readonly T[], workers: number, each: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(workers, items.length) }, async () => {
      while (next < items.length) await each(items[next++]!);
    }),
  );
}

/** The window: slices 0..K-1 of N (one bucket each when pinned), pulled by `workers` workers. */
async function serviceWindow(workers: number, k: number): Promise<Tally> {
  const t = tally();
  await drain(
    Array.from({ length: k }, (_, i) => i),
    workers,
    async (slice) => {
      for await (const batch of svc.scanBatches(list, {
        slice,
        slices: N,
        batchSize: 1000,
        ...(args.unpinned ? {} : { pinnedBuckets: N }),
      })) {
        for (const id of batch.ids) add(t, id);
      }
    },
  );
  return t;
}

const RAW = 'SELECT created_at, other_id FROM followers WHERE user_id = ? AND bucket = ?';
/** Raw driver paging over the partitions of the buckets at rank indexes 0..k-1. */
async function rawWindow(workers: number, k: number): Promise<Tally> {
  const t = tally();
  const codes = Array.from({ length: k }, (_, j) => bucketCode(N, bucketAtIndex(j, N)));
  await drain(codes, workers, async (code) => {
    let pageState: string | undefined;
    do {
      const rs = await client.execute(RAW, [CELEBRITY, code], {
        prepare: true,
        fetchSize: 1000,
        pageState,
      });
      for (const row of rs.rows) add(t, row.other_id as bigint);
      pageState = rs.pageState ?? undefined;
    } while (pageState);
  });
  return t;
}

const K = WINDOW > 0 ? Math.min(WINDOW, N) : N;
console.log(`window: ${K} of ${N} buckets per repetition; workers ${WORKERS.join(',')}; ${REPS} reps`);
await serviceWindow(2, Math.min(2, K)); // warm-up
await rawWindow(2, Math.min(2, K));

type Arm = 'service' | 'raw';
const runs: {
  workers: number;
  arm: Arm;
  rep: number;
  rowsPerS: number;
  wallS: number;
  nodeCpuS: number;
  jvmCpuS: number;
  count: number;
}[] = [];
const windowCounts = new Set<number>();
for (const w of WORKERS) {
  for (let r = 0; r < REPS; r++) {
    for (const arm of (r % 2 === 0 ? ['service', 'raw'] : ['raw', 'service']) as Arm[]) {
      const meter = cpuMeter();
      const t = arm === 'service' ? await serviceWindow(w, K) : await rawWindow(w, K);
      const c = meter();
      windowCounts.add(t.count);
      runs.push({
        workers: w,
        arm,
        rep: r,
        rowsPerS: t.count / c.wallS,
        wallS: c.wallS,
        nodeCpuS: c.nodeCpuS,
        jvmCpuS: c.jvmCpuS,
        count: t.count,
      });
      console.log(
        `workers ${w} rep ${r} ${arm}: ${t.count} rows, ${Math.round(t.count / c.wallS)} rows/s (${c.wallS.toFixed(1)} s, node CPU ${c.nodeCpuS.toFixed(1)} s, JVM CPU ${c.jvmCpuS.toFixed(1)} s), load ${loadAverage()}`,
      );
    }
  }
}
if (windowCounts.size !== 1) console.warn(`WARNING: the arms saw different row counts: ${[...windowCounts]}`);
const windowRows = [...windowCounts][0] ?? 0;

// Once over the whole list: the 16-worker service scan must cover it exactly; raw beside it.
const expected = tally();
for (let i = 0; i < F; i++) add(expected, FIRST_FOLLOWER + BigInt(i));
const whole: Record<
  Arm,
  { rowsPerS: number; wallS: number; nodeCpuS: number; jvmCpuS: number; count: number }
> = {} as never;
let coverage: { workers: number; ok: boolean; count: number; sumOk: boolean; xorOk: boolean } | null = null;
for (const arm of ['service', 'raw'] as Arm[]) {
  const meter = cpuMeter();
  const t = arm === 'service' ? await serviceScan(16) : await rawWindow(16, N);
  const c = meter();
  whole[arm] = {
    rowsPerS: Math.round(t.count / c.wallS),
    wallS: +c.wallS.toFixed(1),
    nodeCpuS: +c.nodeCpuS.toFixed(1),
    jvmCpuS: +c.jvmCpuS.toFixed(1),
    count: t.count,
  };
  if (arm === 'service') {
    coverage = {
      workers: 16,
      count: t.count,
      sumOk: t.sum === expected.sum,
      xorOk: t.xor === expected.xor,
      ok: false,
    };
    coverage.ok = t.count === F && coverage.sumOk && coverage.xorOk;
  }
  console.log(
    `whole list, 16 workers, ${arm}: ${t.count} rows in ${c.wallS.toFixed(1)} s (${whole[arm].rowsPerS} rows/s), peak RSS ${Math.round(peakRssMiB())} MiB`,
  );
}
const wholeRatio = +(whole.service.rowsPerS / whole.raw.rowsPerS).toFixed(3);
const rows = WORKERS.map((w) => {
  const of = (arm: Arm) => runs.filter((x) => x.workers === w && x.arm === arm);
  const ratios = of('service').map((s) => s.rowsPerS / of('raw').find((x) => x.rep === s.rep)!.rowsPerS);
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return {
    workers: w,
    streams: Math.min(w, K),
    serviceRowsPerS: Math.round(med(of('service').map((x) => x.rowsPerS))),
    rawRowsPerS: Math.round(med(of('raw').map((x) => x.rowsPerS))),
    serviceNodeCpuUsPerRow: +((med(of('service').map((x) => x.nodeCpuS)) / windowRows) * 1e6).toFixed(2),
    rawNodeCpuUsPerRow: +((med(of('raw').map((x) => x.nodeCpuS)) / windowRows) * 1e6).toFixed(2),
    serviceJvmCpuUsPerRow: +((med(of('service').map((x) => x.jvmCpuS)) / windowRows) * 1e6).toFixed(2),
    rawJvmCpuUsPerRow: +((med(of('raw').map((x) => x.jvmCpuS)) / windowRows) * 1e6).toFixed(2),
    T4: ratioSummary(ratios),
  };
});
const result = {
  at: new Date().toISOString(),
  followers: F,
  buckets: N,
  pinned: !args.unpinned,
  reps: REPS,
  windowBuckets: K,
  windowRows,
  whole: { ...whole, ratio: wholeRatio },
  loadAverageEnd: loadAverage(),
  peakRssMiB: Math.round(peakRssMiB()),
  coverage,
  rows,
  runs,
};
console.table(rows.map((r) => ({ ...r, T4: `${r.T4.median} [${r.T4.min}–${r.T4.max}]` })));
console.log(
  `whole list, 16 workers: service ÷ raw ${wholeRatio}; 16-worker coverage: ${JSON.stringify(coverage)}; peak RSS ${result.peakRssMiB} MiB; load average ${loadAverage()}`,
);
const md = `# bench:scan ${F} followers (N=${N}, ${REPS} reps, service ${args.unpinned ? 'unpinned' : 'pinned layout'})\n\nload average at end ${result.loadAverageEnd}; peak RSS ${result.peakRssMiB} MiB\n\nWindow: ${K} of ${N} buckets (${windowRows} rows) per repetition, both arms.\n\n| workers | streams | service rows/s | raw rows/s | node µs/row service | node µs/row raw | JVM µs/row service | JVM µs/row raw | T4 median [spread] |\n|---|---|---|---|---|---|---|---|---|\n${rows
  .map(
    (r) =>
      `| ${r.workers} | ${r.streams} | ${r.serviceRowsPerS} | ${r.rawRowsPerS} | ${r.serviceNodeCpuUsPerRow} | ${r.rawNodeCpuUsPerRow} | ${r.serviceJvmCpuUsPerRow} | ${r.rawJvmCpuUsPerRow} | ${r.T4.median} [${r.T4.min}–${r.T4.max}] |`,
  )
  .join(
    '\n',
  )}\n\nWhole list once, 16 workers: service ${whole.service.rowsPerS} rows/s (${whole.service.wallS} s, ${whole.service.count} rows), raw ${whole.raw.rowsPerS} rows/s (${whole.raw.wallS} s); ratio ${wholeRatio}. 16-worker coverage ${coverage?.ok ? 'exact (count, sum, xor)' : 'FAILED'}: ${JSON.stringify(coverage)}\n`;
const svg = lineChartSvg(
  `scan rows/s vs workers (${F} followers, N=${N}, window ${K} buckets, ${args.unpinned ? 'unpinned' : 'pinned'})`,
  [
    { name: 'service scan', points: rows.map((r) => [r.workers, r.serviceRowsPerS] as const) },
    { name: 'raw paging', points: rows.map((r) => [r.workers, r.rawRowsPerS] as const) },
  ],
  { x: 'workers', y: 'rows/s', logX: true },
);
console.log(`wrote ${await bench.writeResults(`scan-${F}`, result, svg, md)}`);
await bench.close();
process.exit(coverage?.ok === false ? 1 : 0);
