/**
 * The time-bucket size, from two measurements (`npm run bench:thresholds`, after `bench:buckets`
 * and `bench:partitions` on the loaded celebrity list):
 *
 *   - page cost by rows per time bucket: p50/p99 at limit 50 and rows/queries per page on the
 *     same rows under every plan (the newest `bench/results/bucket-pages-*.json`);
 *   - bytes per list row on the loaded list: the `followers` table's largest partition over the
 *     celebrity's largest time bucket (the newest `bench/results/partitions-<F>-*.json`; else the
 *     bucket bench's own figure).
 *
 * For every measured bucket size it states the partition MiB at that many rows, how many buckets
 * a `--followers` list would have, and the page cost, against the 64 MiB bound of T10; the
 * suggestion is the largest size whose partition stays under `--bucket-mib` (default 16 MiB, a
 * quarter of the bound: room for wide rows, tombstones, a bucket's overshoot past its size and
 * rows written into old time). Compare it with `DEFAULT_TIME_BUCKET_ROWS`.
 *
 *   npm run bench:thresholds -- [--followers 9000000] [--bucket-mib 16] [--partitions partitions-<F>]
 *
 * `--partitions` names the partition result to read (its name up to the time stamp), e.g.
 * `partitions-bench_smoke` after `bench:partitions -- --keyspace bench_smoke`.
 */
import { DEFAULT_TIME_BUCKET_ROWS } from '../src/lists/list-service.js';
import { lineChartSvg } from './support/charts.js';
import { markdownTable, openBench } from './support/harness.js';

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
  rows: number;
  bytesPerRow: number | null;
  table: {
    bucket_rows: number;
    p50_ms: number;
    p99_ms: string;
    rows_per_page: number;
    queries_per_page: number;
  }[];
}>('bucket-pages', 'npm run bench:buckets');
if (!Array.isArray(pages.table)) {
  throw new Error(
    `${pagesFile} is a result of an older bench:buckets (the retired hash-bucket engine): run npm run bench:buckets again`,
  );
}
const { json: partitions, file: partitionsFile } = bench.latestResult<{
  celebrityBuckets?: { bytesPerRow: number | null; largestBucket: number };
}>(args.partitions ?? `partitions-${F}`, `npm run bench:partitions -- --followers ${F}`);
const loaded = partitions.celebrityBuckets?.bytesPerRow;
const bytesPerRow = typeof loaded === 'number' && loaded > 0 ? loaded : (pages.bytesPerRow ?? Number.NaN);
if (!(bytesPerRow > 0)) throw new Error(`no bytes per row in ${partitionsFile} or ${pagesFile}`);
const source =
  bytesPerRow === loaded
    ? `${partitionsFile} (largest followers partition over the celebrity's largest bucket, ${partitions.celebrityBuckets?.largestBucket} rows)`
    : `${pagesFile} (no celebrity buckets in ${partitionsFile})`;

const rows = pages.table.map((r) => ({
  bucket_rows: r.bucket_rows,
  buckets_for_list: Math.ceil(F / r.bucket_rows),
  bucket_MiB: +((r.bucket_rows * bytesPerRow) / MiB).toFixed(1),
  under_64MiB: r.bucket_rows * bytesPerRow <= 64 * MiB ? 'yes' : 'no',
  [`under_${BUCKET_MIB}MiB`]: r.bucket_rows * bytesPerRow <= BUCKET_MIB * MiB ? 'yes' : 'no',
  page_p50_ms: r.p50_ms,
  page_p99_ms: r.p99_ms,
  rows_per_page: r.rows_per_page,
  queries_per_page: r.queries_per_page,
}));
const fits = pages.table.filter((r) => r.bucket_rows * bytesPerRow <= BUCKET_MIB * MiB);
const suggested = fits.length ? Math.max(...fits.map((r) => r.bucket_rows)) : null;
const notes = [
  `bytes per followers row: ${bytesPerRow.toFixed(1)} from ${source}`,
  `page cost: ${pagesFile} of ${pages.at} (${pages.rows} rows, limit 50)`,
  `largest measured bucket size under ${BUCKET_MIB} MiB: ${suggested ?? 'none'} rows (DEFAULT_TIME_BUCKET_ROWS is ${DEFAULT_TIME_BUCKET_ROWS}); a ${F}-row list would have ${suggested ? Math.ceil(F / suggested) : '?'} buckets`,
];
const md = markdownTable(
  `bench:thresholds: time-bucket size against partition size and page cost for ${F} rows`,
  rows,
  notes,
);
const chartSize = lineChartSvg(
  `followers partition MiB by rows per time bucket (${bytesPerRow.toFixed(1)} B/row; T10 bound 64)`,
  [
    { name: 'bucket MiB', points: rows.map((r) => [r.bucket_rows, r.bucket_MiB] as const) },
    { name: '64 MiB bound', points: rows.map((r) => [r.bucket_rows, 64] as const) },
  ],
  { x: 'rows per bucket', y: 'MiB', logX: true },
);
const chartCost = lineChartSvg(
  `page p50 by rows per time bucket (limit 50, ${pages.rows} rows)`,
  [{ name: 'p50 ms', points: rows.map((r) => [r.bucket_rows, r.page_p50_ms] as const) }],
  { x: 'rows per bucket', y: 'ms', logX: true },
);
const svg = [
  '<svg xmlns="http://www.w3.org/2000/svg" width="760" height="760">',
  chartSize.replace('<svg ', '<svg x="0" y="0" '),
  chartCost.replace('<svg ', '<svg x="0" y="380" '),
  '</svg>',
].join('\n');
console.log(md);
console.log(
  `wrote ${await bench.writeResults(`thresholds-${F}`, { followers: F, bytesPerRow, rows, suggested }, svg, md)}`,
);
