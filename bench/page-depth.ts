/**
 * Page latency by depth: on the 200,000-row list at limit 20,
 * walk to page 10,000 (the last) keeping the cursors of pages 1, 100, 1,000 and 10,000, then time
 * those pages REPS times each, interleaved, and compare p50s with page 1. A keyset walk should
 * not slow down with depth (each bucket read starts at the cursor's bound). The list is in one time
 * bucket (the retired hash-bucket engine's N = 16 and N = 64 arms are gone). Writes
 * <results>/page-depth.{json,svg,md}.
 *
 *   npm run bench:depth -- [--reps 300] [--rows 200000]
 */
import { BucketedListService } from '../src/lists/list-service.js';
import { BENCH_ROWS, benchList, openBenchLists } from './support/bench-lists.js';
import { barChartSvg } from './support/charts.js';
import { loadAverage, markdownTable, openBench, percentile } from './support/harness.js';

const bench = openBench({
  usage: 'npm run bench:depth -- [--reps 300] [--rows 200000]',
  options: {
    reps: { type: 'string', default: '300' },
    rows: { type: 'string', default: String(BENCH_ROWS) },
  },
});
const LIMIT = 20;
const REPS = Number(bench.args.reps);
const ROWS = Number(bench.args.rows);
const DEPTHS = [1, 100, 1000, 10_000];

const { store, close } = await openBenchLists(bench, ROWS);
const results: Record<string, number | string>[] = [];

{
  const svc = new BucketedListService({
    store,
    cursorSecret: 'bench-cursor-secret-0123456789',
    bucketThresholds: [],
    layoutCacheTtlMs: 60_000,
  });
  const cursors = new Map<number, string | null>();
  let cursor: string | null = null;
  const walkStart = performance.now();
  let pages = 0;
  for (let page = 1; page <= DEPTHS.at(-1)!; page++) {
    if (DEPTHS.includes(page)) cursors.set(page, cursor);
    const p = await svc.page(benchList, LIMIT, cursor);
    pages++;
    cursor = p.nextCursor;
    if (!cursor) break;
  }
  const walkS = (performance.now() - walkStart) / 1000;
  console.log(
    `walked ${pages} pages in ${walkS.toFixed(1)} s (last page has a next cursor: ${cursor !== null})`,
  );
  const times = new Map<number, number[]>(DEPTHS.map((d) => [d, []]));
  for (let r = 0; r < REPS; r++) {
    for (const d of DEPTHS) {
      const t = performance.now();
      await svc.page(benchList, LIMIT, cursors.get(d) ?? null);
      times.get(d)!.push(performance.now() - t);
    }
  }
  const p50First = percentile(
    [...times.get(1)!].sort((a, b) => a - b),
    50,
  );
  for (const d of DEPTHS) {
    const sorted = [...times.get(d)!].sort((a, b) => a - b);
    results.push({
      page: d,
      p50_ms: +percentile(sorted, 50).toFixed(3),
      p95_ms: +percentile(sorted, 95).toFixed(3),
      p99_ms: +percentile(sorted, 99).toFixed(3),
      p50_vs_page1: +(percentile(sorted, 50) / p50First).toFixed(2),
    });
  }
}
console.table(results);
const rowsTitle = `${ROWS.toLocaleString('en-US')} rows`;
await bench.writeResultFile(
  'page-depth.json',
  `${JSON.stringify({ at: new Date().toISOString(), limit: LIMIT, reps: REPS, results }, null, 2)}\n`,
);
await bench.writeResultFile(
  'page-depth.svg',
  barChartSvg(
    `p50 page latency by depth (${rowsTitle}, limit ${LIMIT}, ${REPS} reps)`,
    DEPTHS.map((d) => `page ${d}`),
    [
      {
        name: 'time buckets',
        values: DEPTHS.map((d) => results.find((r) => r.page === d)!.p50_ms as number),
      },
    ],
    'ms',
  ),
);
const md = await bench.writeResultFile(
  'page-depth.md',
  markdownTable(`bench:depth (${rowsTitle}, limit ${LIMIT}, ${REPS} reps)`, results, [
    `at ${new Date().toISOString()}, load average ${loadAverage()}`,
  ]),
);
console.log(`wrote ${md.replace(/\.md$/, '.{json,svg,md}')}`);
await close();
