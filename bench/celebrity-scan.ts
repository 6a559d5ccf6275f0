/**
 * P5 fan-out scan on the loaded celebrity list (`npm run bench:load` first): rows/s of a scan in
 * `S` slices (`BucketedListService.scanBatches`, batches of 1,000, one worker per slice) against
 * raw driver paging of the very same partitions with the same parallelism, at each `--slices`
 * count (default 1, 8, 16, 64; target ≥ 0.85 at each).
 *
 * The list is time-bucketed (`model/time-buckets.ts`): slice `s` of `S` owns the whole buckets whose
 * owner key (`ownerKey`: 0 for the first bucket, then 1, 2, … in the order they were added) is `s`
 * modulo `S`, and reads them one after the other in clustering order, nothing it drops. The raw arm
 * is what such a slice costs without the service: `S` workers, worker `s` paging those same
 * partitions (the directory's bucket ids) with the driver (`fetchSize` 1,000, the service's own
 * columns `created_at, other_id, username`, no merge, no output). With more slices than buckets,
 * `S − buckets` slices of both arms own nothing (the directory, not the slice count, bounds the
 * parallelism).
 *
 * Every repetition scans the whole list in both arms, A B / B A, for `--reps` repetitions (p50 over
 * ≥ 3); each service pass must cover the list exactly once (count, id sum mod 2^64 and id XOR
 * equal the loaded ids'), and each raw pass must see as many rows. The median ratio per slice
 * count and its spread, Node and JVM CPU per row, and peak RSS are reported. Exit 1 when a pass
 * does not cover the list.
 *
 *   npm run bench:scan -- [--followers 9000000] [--slices 1,8,16,64] [--reps 3]
 */
import { ownerKey } from '../src/model/time-buckets.js';
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
  usage: 'npm run bench:scan -- [--followers 9000000] [--slices 1,8,16,64] [--reps 3]',
  options: {
    followers: { type: 'string', default: '9000000' },
    slices: { type: 'string', default: '1,8,16,64' },
    reps: { type: 'string', default: '3' },
  },
});
const args = bench.args;
const F = Number(args.followers);
const SLICES = (args.slices ?? '').split(',').map(Number);
const REPS = Number(args.reps);
const list: ListKey = {
  userId: CELEBRITY,
  relation: 'follows',
  direction: 'in',
};
const MASK = 2n ** 64n - 1n;

const { client, store, lists: svc } = await bench.celebrity(F, 60_000);
const directory = await svc.directory(list);
const mode = directory.mode ?? '(none stored)';
const buckets = directory.buckets.map((b) => ({
  id: b.id,
  key: ownerKey(b.id),
}));
const layout = await store.getLayout(list);
console.log(
  `${F} followers in ${buckets.length} time buckets (directory mode ${mode}, inverse-edge layout N=${layout.buckets}); load average ${loadAverage()}`,
);

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

/** The service: `slices` slices, one worker each. */
async function serviceScan(slices: number): Promise<Tally> {
  const t = tally();
  await Promise.all(
    Array.from({ length: slices }, async (_, slice) => {
      for await (const batch of svc.scanBatches(list, {
        slice,
        slices,
        batchSize: 1000,
      })) {
        for (const id of batch.ids) add(t, id);
      }
    }),
  );
  return t;
}

const RAW = 'SELECT created_at, other_id, username FROM followers WHERE user_id = ? AND bucket = ?';
/** Raw paging: worker `s` pages the partitions slice `s` of `slices` owns, one after the other. */
async function rawScan(slices: number): Promise<Tally> {
  const t = tally();
  await Promise.all(
    Array.from({ length: slices }, async (_, slice) => {
      const owned = buckets.filter((b) => b.key % slices === slice).sort((a, b) => a.key - b.key);
      for (const b of owned) {
        let pageState: string | undefined;
        do {
          const rs = await client.execute(RAW, [CELEBRITY, b.id], {
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
const covers = (t: Tally) => t.count === F && t.sum === expected.sum && t.xor === expected.xor;

console.log(`slices ${SLICES.join(',')}; ${REPS} reps of a whole-list pass per arm; warming up…`);
await serviceScan(Math.min(8, buckets.length));
await rawScan(Math.min(8, buckets.length));

type Arm = 'service' | 'raw';
const runs: {
  slices: number;
  arm: Arm;
  rep: number;
  rowsPerS: number;
  wallS: number;
  nodeCpuS: number;
  jvmCpuS: number;
  count: number;
  covers: boolean;
}[] = [];
for (const s of SLICES) {
  for (let r = 0; r < REPS; r++) {
    for (const arm of (r % 2 === 0 ? ['service', 'raw'] : ['raw', 'service']) as Arm[]) {
      const meter = cpuMeter();
      const t = arm === 'service' ? await serviceScan(s) : await rawScan(s);
      const c = meter();
      runs.push({
        slices: s,
        arm,
        rep: r,
        rowsPerS: t.count / c.wallS,
        wallS: c.wallS,
        nodeCpuS: c.nodeCpuS,
        jvmCpuS: c.jvmCpuS,
        count: t.count,
        covers: arm === 'service' ? covers(t) : t.count === F,
      });
      console.log(
        `slices ${s} rep ${r} ${arm}: ${t.count} rows${covers(t) ? '' : ' (NOT the loaded list)'}, ${Math.round(t.count / c.wallS)} rows/s (${c.wallS.toFixed(1)} s, node CPU ${c.nodeCpuS.toFixed(1)} s, JVM CPU ${c.jvmCpuS.toFixed(1)} s), load ${loadAverage()}`,
      );
    }
  }
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rows = SLICES.map((s) => {
  const of = (arm: Arm) => runs.filter((x) => x.slices === s && x.arm === arm);
  const ratios = of('service').map((x) => x.rowsPerS / of('raw').find((y) => y.rep === x.rep)!.rowsPerS);
  const perRow = (arm: Arm, k: 'nodeCpuS' | 'jvmCpuS') =>
    +((med(of(arm).map((x) => x[k])) / F) * 1e6).toFixed(2);
  return {
    slices: s,
    slicesWithRows: Math.min(s, buckets.length),
    serviceRowsPerS: Math.round(med(of('service').map((x) => x.rowsPerS))),
    rawRowsPerS: Math.round(med(of('raw').map((x) => x.rowsPerS))),
    serviceNodeCpuUsPerRow: perRow('service', 'nodeCpuS'),
    rawNodeCpuUsPerRow: perRow('raw', 'nodeCpuS'),
    serviceJvmCpuUsPerRow: perRow('service', 'jvmCpuS'),
    rawJvmCpuUsPerRow: perRow('raw', 'jvmCpuS'),
    P5: ratioSummary(ratios),
  };
});
const coverageOk = runs.every((x) => x.covers);
const result = {
  at: new Date().toISOString(),
  followers: F,
  timeBuckets: buckets.length,
  directoryMode: directory.mode,
  reps: REPS,
  loadAverageEnd: loadAverage(),
  peakRssMiB: Math.round(peakRssMiB()),
  coverageOk,
  rows,
  runs,
};
const fmtR = (r: ReturnType<typeof ratioSummary>) => `${r.median} [${r.min}–${r.max}]`;
console.table(rows.map((r) => ({ ...r, P5: fmtR(r.P5) })));
console.log(
  `P5 service ÷ raw: ${rows.map((r) => `${r.slices} slices ${fmtR(r.P5)}`).join('; ')}; every pass covered the list exactly: ${coverageOk}; peak RSS ${result.peakRssMiB} MiB`,
);
const md = `# bench:scan ${F} followers (${buckets.length} time buckets, ${REPS} reps, whole list per pass)\n\nload average at end ${result.loadAverageEnd}; peak RSS ${result.peakRssMiB} MiB; every service pass covered the list exactly (count, sum, xor): ${coverageOk}\n\n| slices | slices with rows | service rows/s | raw rows/s | node µs/row service | node µs/row raw | JVM µs/row service | JVM µs/row raw | P5 service ÷ raw, median [spread] |\n|---|---|---|---|---|---|---|---|---|\n${rows
  .map(
    (r) =>
      `| ${r.slices} | ${r.slicesWithRows} | ${r.serviceRowsPerS} | ${r.rawRowsPerS} | ${r.serviceNodeCpuUsPerRow} | ${r.rawNodeCpuUsPerRow} | ${r.serviceJvmCpuUsPerRow} | ${r.rawJvmCpuUsPerRow} | ${fmtR(r.P5)} |`,
  )
  .join(
    '\n',
  )}\n\nRaw: worker s of S pages, with the driver (fetchSize 1000), the partitions of the buckets slice s owns (owner key ≡ s mod S), the service's columns, no output.\n`;
const svg = lineChartSvg(
  `scan rows/s vs slices (${F} followers, ${buckets.length} time buckets, whole list)`,
  [
    {
      name: 'service scan',
      points: rows.map((r) => [r.slices, r.serviceRowsPerS] as const),
    },
    {
      name: 'raw paging',
      points: rows.map((r) => [r.slices, r.rawRowsPerS] as const),
    },
  ],
  { x: 'slices', y: 'rows/s', logX: true },
);
console.log(`wrote ${await bench.writeResults(`scan-${F}`, result, svg, md)}`);
await bench.close();
process.exit(coverageOk ? 0 : 1);
