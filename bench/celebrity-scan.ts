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
 *   npm run bench:scan -- [--followers 9000000] [--workers 1,4,16,64] [--reps 3] [--unpinned]
 */
import { parseArgs } from 'node:util';
import { bucketCode } from '../src/graph/buckets.js';
import type { ListKey } from '../src/store/types.js';
import { barChartSvg } from './support/charts.js';
import {
  CELEBRITY,
  cpuMeter,
  FIRST_FOLLOWER,
  loadAverage,
  openCelebrityServices,
  peakRssMiB,
  ratioSummary,
  writeResults,
} from './support/harness.js';

const { values: args } = parseArgs({
  options: {
    followers: { type: 'string', default: '9000000' },
    workers: { type: 'string', default: '1,4,16,64' },
    reps: { type: 'string', default: '3' },
    unpinned: { type: 'boolean', default: false },
  },
});
const F = Number(args.followers);
const WORKERS = (args.workers ?? '').split(',').map(Number);
const REPS = Number(args.reps);
const list: ListKey = { userId: CELEBRITY, relation: 'follows', direction: 'in' };
const MASK = 2n ** 64n - 1n;

const { client, store, lists: svc } = await openCelebrityServices(F, 60_000);
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

const RAW = 'SELECT created_at, other_id FROM followers WHERE user_id = ? AND bucket = ?';
async function rawScan(workers: number): Promise<Tally> {
  const t = tally();
  const codes = Array.from({ length: N }, (_, b) => bucketCode(N, b));
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(workers, N) }, async () => {
      while (next < codes.length) {
        const code = codes[next++]!;
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
      }
    }),
  );
  return t;
}

const expected = tally();
for (let i = 0; i < F; i++) add(expected, FIRST_FOLLOWER + BigInt(i));

await serviceScan(4);
await rawScan(4);

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
let coverage: { workers: number; ok: boolean; count: number; sumOk: boolean; xorOk: boolean } | null = null;
for (const w of WORKERS) {
  for (let r = 0; r < REPS; r++) {
    for (const arm of (r % 2 === 0 ? ['service', 'raw'] : ['raw', 'service']) as Arm[]) {
      const meter = cpuMeter();
      const t = arm === 'service' ? await serviceScan(w) : await rawScan(w);
      const c = meter();
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
      if (t.count !== F)
        console.warn(`WARNING: ${arm} scan with ${w} workers saw ${t.count} rows, expected ${F}`);
      if (arm === 'service' && w === 16 && coverage === null) {
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
        `workers ${w} rep ${r} ${arm}: ${Math.round(t.count / c.wallS)} rows/s (${c.wallS.toFixed(1)} s, node CPU ${c.nodeCpuS.toFixed(1)} s, JVM CPU ${c.jvmCpuS.toFixed(1)} s), load ${loadAverage()}`,
      );
    }
  }
}
const rows = WORKERS.map((w) => {
  const of = (arm: Arm) => runs.filter((x) => x.workers === w && x.arm === arm);
  const ratios = of('service').map((s) => s.rowsPerS / of('raw').find((x) => x.rep === s.rep)!.rowsPerS);
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return {
    workers: w,
    rawStreams: Math.min(w, N),
    serviceRowsPerS: Math.round(med(of('service').map((x) => x.rowsPerS))),
    rawRowsPerS: Math.round(med(of('raw').map((x) => x.rowsPerS))),
    serviceNodeCpuUsPerRow: +((med(of('service').map((x) => x.nodeCpuS)) / F) * 1e6).toFixed(2),
    rawNodeCpuUsPerRow: +((med(of('raw').map((x) => x.nodeCpuS)) / F) * 1e6).toFixed(2),
    T4: ratioSummary(ratios),
  };
});
const result = {
  at: new Date().toISOString(),
  followers: F,
  buckets: N,
  pinned: !args.unpinned,
  reps: REPS,
  loadAverageEnd: loadAverage(),
  peakRssMiB: Math.round(peakRssMiB()),
  coverage,
  rows,
  runs,
};
console.table(rows.map((r) => ({ ...r, T4: `${r.T4.median} [${r.T4.min}–${r.T4.max}]` })));
console.log(
  `16-worker coverage: ${JSON.stringify(coverage)}; peak RSS ${result.peakRssMiB} MiB; load average ${loadAverage()}`,
);
const md = `# bench:scan ${F} followers (N=${N}, ${REPS} reps, service ${args.unpinned ? 'unpinned' : 'pinned layout'})\n\nload average at end ${result.loadAverageEnd}; peak RSS ${result.peakRssMiB} MiB; 16-worker coverage ${coverage?.ok ? 'exact (count, sum, xor)' : 'FAILED'}\n\n| workers | raw streams | service rows/s | raw rows/s | node µs/row service | node µs/row raw | T4 median [spread] |\n|---|---|---|---|---|---|---|\n${rows
  .map(
    (r) =>
      `| ${r.workers} | ${r.rawStreams} | ${r.serviceRowsPerS} | ${r.rawRowsPerS} | ${r.serviceNodeCpuUsPerRow} | ${r.rawNodeCpuUsPerRow} | ${r.T4.median} [${r.T4.min}–${r.T4.max}] |`,
  )
  .join('\n')}\n`;
const svg = barChartSvg(
  `scan rows/s vs workers (${F} followers, N=${N}, ${args.unpinned ? 'unpinned' : 'pinned'})`,
  rows.map((r) => `${r.workers} workers`),
  [
    { name: 'service scan', values: rows.map((r) => r.serviceRowsPerS) },
    { name: 'raw paging', values: rows.map((r) => r.rawRowsPerS) },
  ],
  'rows/s',
);
console.log(`wrote ${await writeResults(`scan-${F}`, result, svg, md)}`);
await client.shutdown();
process.exit(coverage?.ok === false ? 1 : 0);
