/**
 * The bucket thresholds, from two measurements (`npm run bench:thresholds`, after `bench:buckets`
 * and `bench:partitions` on the loaded celebrity list):
 *
 *   - page cost by bucket count N: p50/p99 at limit 50 and queries per page on the same 200,000
 *     rows at N = 1, 8, 16, 64 (the newest `bench/results/bucket-pages-*.json`);
 *   - bytes per list row: the `followers` table's largest partition on the loaded list (one of the
 *     celebrity's buckets) divided by its rows per bucket (the newest `bench/results/partitions-<F>-*.json`).
 *
 * For every N it states the largest `followers` partition a `--followers` list would have (rows ×
 * bytes per row ÷ N, against the 64 MiB bound of T10) beside the page cost at that N, and draws
 * both against N. A threshold set is the list size at which each doubling happens; it is read off
 * as: the smallest N whose partition stays under `--bucket-mib` (default 16 MiB, a quarter of the
 * bound: room for wide rows, tombstones and a growth's double-written rows).
 *
 *   npm run bench:thresholds -- [--followers 9000000] [--bucket-mib 16] [--partitions partitions-<F>]
 *
 * `--partitions` names the partition result to read (its name up to the time stamp), e.g.
 * `partitions-bench_smoke` after `bench:partitions -- --keyspace bench_smoke`.
 */
import { bucketsForSize } from '../src/lists/list-service.js';
import { lineChartSvg } from './support/charts.js';
import { DEFAULT_THRESHOLDS, markdownTable, openBench } from './support/harness.js';

const bench = openBench({
  usage: 'npm run bench:thresholds -- [--followers 9000000] [--bucket-mib 16] [--partitions partitions-<F>]',
  options: {
    followers: { type: 'string', default: '9000000' },
    'bucket-mib': { type: 'string', default: '16' },
    partitions: { type: 'string' },
  },
});
const args = bench.args;
const F = Number(args.followers);
const BUCKET_MIB = Number(args['bucket-mib']);
const MiB = 2 ** 20;

const { json: pages, file: pagesFile } = bench.latestResult<{
  at: string;
  rows: { N: number; limit: number; p50_ms: number; p99_ms: number; queries_per_page: number }[];
}>('bucket-pages', 'npm run bench:buckets');
const { json: partitions, file: partitionsFile } = bench.latestResult<{
  rows: { table: string; maxPartitionBytes: number | string }[];
}>(args.partitions ?? `partitions-${F}`, `npm run bench:partitions -- --followers ${F}`);
const followers = partitions.rows.find((r) => r.table === 'followers');
if (!followers || typeof followers.maxPartitionBytes !== 'number' || !(followers.maxPartitionBytes > 0)) {
  throw new Error(`${partitionsFile} has no partition size for followers`);
}
// Bytes per row from the celebrity's own buckets: the table's largest partition is one of them
// (every other list is far smaller), holding about F / N_loaded rows. tablestats gives the upper
// edge of a histogram bucket (≤ 20 % above the true size), so this errs on the large side.
const loadedN = bucketsForSize(F, DEFAULT_THRESHOLDS);
const bytesPerRow = followers.maxPartitionBytes / Math.ceil(F / loadedN);

const layouts = [...new Set(pages.rows.map((r) => r.N))].sort((a, b) => a - b);
const at50 = (n: number) => pages.rows.find((r) => r.N === n && r.limit === 50)!;
const allN = [1, 2, 4, 8, 16, 32, 64];
const rows = allN.map((n) => ({
  N: n,
  rows_per_bucket: Math.ceil(F / n),
  bucket_MiB: +(((F / n) * bytesPerRow) / MiB).toFixed(1),
  under_64MiB: (F / n) * bytesPerRow <= 64 * MiB ? 'yes' : 'no',
  page_p50_ms: layouts.includes(n) ? at50(n).p50_ms : '',
  page_p99_ms: layouts.includes(n) ? at50(n).p99_ms : '',
  queries_per_page: layouts.includes(n) ? at50(n).queries_per_page : '',
}));
const rowsPerBucket = Math.floor((BUCKET_MIB * MiB) / bytesPerRow);
// A list doubles when a bucket would pass rowsPerBucket: thresholds rowsPerBucket·2^k, rounded down
// to a round figure.
const round = (x: number) => {
  const p = 10 ** Math.floor(Math.log10(x));
  return Math.floor(x / p) * p;
};
const suggested = Array.from({ length: 6 }, (_, k) => round(rowsPerBucket) * 2 ** k);
const chosenN = allN.find((n) => (F / n) * bytesPerRow <= BUCKET_MIB * MiB) ?? 64;
const notes = [
  `bytes per followers row: ${bytesPerRow.toFixed(1)} (from ${partitionsFile}: largest followers partition ${followers.maxPartitionBytes} B over ${Math.ceil(F / loadedN)} rows, N = ${loadedN})`,
  `page cost: ${pagesFile} of ${pages.at} (200,000 rows, limit 50)`,
  `a ${BUCKET_MIB} MiB bucket holds ≈ ${rowsPerBucket} rows; thresholds doubling from there: ${suggested.join(',')}; a ${F}-row list would get N = ${chosenN}`,
];
const md = markdownTable(`bench:thresholds: partition size against page cost for ${F} rows`, rows, notes);
const chartSize = lineChartSvg(
  `largest followers partition of a ${F}-row list by N (MiB; T10 bound 64)`,
  [
    { name: 'bucket MiB', points: rows.map((r) => [r.N, r.bucket_MiB] as const) },
    { name: '64 MiB bound', points: rows.map((r) => [r.N, 64] as const) },
  ],
  { x: 'buckets N', y: 'MiB', logX: true },
);
const chartCost = lineChartSvg(
  'page latency by N (limit 50, same 200,000 rows)',
  [
    { name: 'p50 ms', points: layouts.map((n) => [n, at50(n).p50_ms] as const) },
    { name: 'p99 ms', points: layouts.map((n) => [n, at50(n).p99_ms] as const) },
  ],
  { x: 'buckets N', y: 'ms', logX: true },
);
const svg = [
  '<svg xmlns="http://www.w3.org/2000/svg" width="760" height="760">',
  chartSize.replace('<svg ', '<svg x="0" y="0" '),
  chartCost.replace('<svg ', '<svg x="0" y="380" '),
  '</svg>',
].join('\n');
console.log(md);
console.log(
  `wrote ${await bench.writeResults(`thresholds-${F}`, { followers: F, bytesPerRow, rows, suggested, chosenN }, svg, md)}`,
);
