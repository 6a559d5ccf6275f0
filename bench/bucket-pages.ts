/**
 * Page latency at N = 1, 8, 16, 64 on the same 200,000 rows.
 *
 *   npm run bench:buckets -- [--pages 200] [--rounds 3] [--rows 200000]
 *
 * For each layout and limit (20, 50, 200): walk the first `--pages` pages, timing each page, with the
 * layouts interleaved round by round (A B C D, A B C D, …) so they share the machine's noise. Reports
 * p50/p95/p99 page latency and rows/queries/rounds per page; writes <results>/bucket-pages-<time>
 * .{json,svg,md}. Not a test: figures are for choosing the bucket thresholds.
 *
 * Reading the figures: every doubling of N costs latency and queries, so a list should stay in one
 * bucket as long as its partition is comfortable and double only to keep buckets near that size.
 * The figures themselves live in bench/results/ and in the README's tables (taken from those
 * files), not here, so the two cannot disagree.
 */
import { BucketedListService, type ListReadStats } from '../src/lists/list-service.js';
import { BENCH_LAYOUTS, BENCH_ROWS, benchList, openBenchLists } from './support/bench-lists.js';
import { barChartSvg } from './support/charts.js';
import { loadAverage, markdownTable, openBench, percentile } from './support/harness.js';

const bench = openBench({
  usage: 'npm run bench:buckets -- [--pages 200] [--rounds 3] [--rows 200000]',
  options: {
    pages: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '3' },
    rows: { type: 'string', default: String(BENCH_ROWS) },
  },
});
const PAGES = Number(bench.args.pages);
const ROUNDS = Number(bench.args.rounds);
const ROWS = Number(bench.args.rows);
const LIMITS = [20, 50, 200];

const { store, close } = await openBenchLists(bench, ROWS);
type Sample = { ms: number; stats: ListReadStats };
const samples = new Map<string, Sample[]>();

for (let round = 0; round < ROUNDS; round++) {
  for (const limit of LIMITS) {
    for (const n of BENCH_LAYOUTS) {
      await store.putLayout(benchList, { buckets: n, growingTo: null, copiedThrough: 0 });
      let last: ListReadStats | null = null;
      const svc = new BucketedListService({
        store,
        cursorSecret: 'bench-cursor-secret-0123456789',
        bucketThresholds: [],
        layoutCacheTtlMs: 60_000,
        onPage: (s) => {
          last = s;
        },
      });
      const key = `${n}|${limit}`;
      const out = samples.get(key) ?? [];
      let cursor: string | null = null;
      await svc.page(benchList, limit, null);
      for (let p = 0; p < PAGES; p++) {
        const t = performance.now();
        const page = await svc.page(benchList, limit, cursor);
        out.push({ ms: performance.now() - t, stats: last! });
        cursor = page.nextCursor;
        if (!cursor) break;
      }
      samples.set(key, out);
    }
  }
}

const rows: Record<string, number | string>[] = [];
for (const limit of LIMITS) {
  for (const n of BENCH_LAYOUTS) {
    const s = samples.get(`${n}|${limit}`)!;
    const ms = s.map((x) => x.ms).sort((a, b) => a - b);
    const avg = (f: (x: Sample) => number) => s.reduce((a, x) => a + f(x), 0) / s.length;
    rows.push({
      N: n,
      limit,
      pages: s.length,
      p50_ms: +percentile(ms, 50).toFixed(2),
      p95_ms: +percentile(ms, 95).toFixed(2),
      p99_ms: +percentile(ms, 99).toFixed(2),
      rows_per_page: +avg((x) => x.stats.rowsRead).toFixed(1),
      queries_per_page: +avg((x) => x.stats.queries).toFixed(1),
      rounds_per_page: +avg((x) => x.stats.rounds).toFixed(2),
    });
  }
}
console.table(rows);
const title = `${ROWS.toLocaleString('en-US')} rows, ${PAGES} pages × ${ROUNDS} rounds`;
const written = await bench.writeResults(
  'bucket-pages',
  { at: new Date().toISOString(), pages: PAGES, rounds: ROUNDS, rows },
  barChartSvg(
    `p50 page latency by bucket count (${title})`,
    BENCH_LAYOUTS.map((n) => `N=${n}`),
    LIMITS.map((limit) => ({
      name: `limit ${limit}`,
      values: BENCH_LAYOUTS.map((n) => rows.find((r) => r.N === n && r.limit === limit)!.p50_ms as number),
    })),
    'ms',
  ),
  markdownTable(`bench:buckets (${title})`, rows, [
    `at ${new Date().toISOString()}, load average ${loadAverage()}`,
  ]),
);
console.log(`wrote ${written}`);
await close();
