/**
 * T2 depth independence on the loaded celebrity list (`npm run bench:load` first): page p50/p99
 * at page 1, 100, 1,000, 10,000 and the last page (limit 50) through `BucketedListService.page`.
 * The cursors are collected by one walk, then each repetition times `--rounds` pages at every
 * depth, interleaved (1, 100, …, last, 1, 100, …), so drift in background load hits every depth
 * alike. Ratios (page 10,000 ÷ page 1; last ÷ page 1) are computed per repetition; the median and
 * spread over repetitions are reported with Node and JVM CPU and the load average.
 *
 *   npm run bench:page -- [--followers 9000000] [--reps 3] [--rounds 100]
 */
import { parseArgs } from 'node:util';
import { BucketedListService } from '../src/graph/list-service.js';
import { CassandraGraphStore } from '../src/store/cassandra/graph-store.js';
import type { ListKey } from '../src/store/types.js';
import { barChartSvg } from './support/bench-lists.js';
import {
  CELEBRITY,
  cpuMeter,
  DEFAULT_THRESHOLDS,
  loadAverage,
  openCelebrityKeyspace,
  percentile,
  ratioSummary,
  sortedCopy,
  writeResults,
} from './support/harness.js';

const { values: args } = parseArgs({
  options: {
    followers: { type: 'string', default: '9000000' },
    reps: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '100' },
  },
});
const F = Number(args.followers);
const REPS = Number(args.reps);
const ROUNDS = Number(args.rounds);
const LIMIT = 50;
const list: ListKey = { userId: CELEBRITY, relation: 'follows', direction: 'in' };

const client = await openCelebrityKeyspace(F);
const store = new CassandraGraphStore(client);
const svc = new BucketedListService({
  store,
  cursorSecret: 'bench-celebrity-page-secret',
  bucketThresholds: DEFAULT_THRESHOLDS,
  layoutCacheTtlMs: 3_600_000,
});
const layout = await store.getLayout(list);
console.log(`${F} followers, N=${layout.buckets}; load average ${loadAverage()}; walking…`);

const wanted = [1, 100, 1000, 10_000];
const cursors = new Map<string, string | null>();
let cursor: string | null = null;
let page = 0;
let seen = 0;
let lastCursor: string | null = null;
const walk = performance.now();
do {
  page++;
  if (wanted.includes(page)) cursors.set(`page ${page}`, cursor);
  lastCursor = cursor;
  const p = await svc.page(list, LIMIT, cursor);
  seen += p.items.length;
  cursor = p.nextCursor;
} while (cursor);
cursors.set('last', lastCursor);
console.log(`walked ${page} pages (${seen} items) in ${((performance.now() - walk) / 1000).toFixed(1)} s`);
if (seen !== F) console.warn(`WARNING: the walk saw ${seen} items, expected ${F}`);
const labels = [...cursors.keys()];

for (let w = 0; w < 20; w++) for (const l of labels) await svc.page(list, LIMIT, cursors.get(l) ?? null);

const meter = cpuMeter();
const all = new Map<string, number[]>(labels.map((l) => [l, []]));
const perRep: Record<string, { p50: number; p99: number }>[] = [];
for (let r = 0; r < REPS; r++) {
  const times = new Map<string, number[]>(labels.map((l) => [l, []]));
  for (let k = 0; k < ROUNDS; k++) {
    for (const l of labels) {
      const t = performance.now();
      await svc.page(list, LIMIT, cursors.get(l) ?? null);
      const ms = performance.now() - t;
      times.get(l)!.push(ms);
      all.get(l)!.push(ms);
    }
  }
  perRep.push(
    Object.fromEntries(
      labels.map((l) => {
        const s = sortedCopy(times.get(l)!);
        return [l, { p50: percentile(s, 50), p99: percentile(s, 99) }];
      }),
    ),
  );
}
const cpu = meter();
const ratio = (l: string, q: 'p50' | 'p99') =>
  ratioSummary(perRep.map((rep) => rep[l]![q] / rep['page 1']![q]));
const rows = labels.map((l) => {
  const s = sortedCopy(all.get(l)!);
  return {
    depth: l,
    p50_ms: +percentile(s, 50).toFixed(3),
    p99_ms: +percentile(s, 99).toFixed(3),
    p50_vs_page1: ratio(l, 'p50'),
    p99_vs_page1: ratio(l, 'p99'),
  };
});
const result = {
  at: new Date().toISOString(),
  followers: F,
  buckets: layout.buckets,
  limit: LIMIT,
  reps: REPS,
  rounds: ROUNDS,
  pagesInList: page,
  loadAverageEnd: loadAverage(),
  cpu,
  rows,
};
console.table(
  rows.map((r) => ({
    depth: r.depth,
    p50_ms: r.p50_ms,
    p99_ms: r.p99_ms,
    'p50 ratio (median [min–max])': `${r.p50_vs_page1.median} [${r.p50_vs_page1.min}–${r.p50_vs_page1.max}]`,
    'p99 ratio (median [min–max])': `${r.p99_vs_page1.median} [${r.p99_vs_page1.min}–${r.p99_vs_page1.max}]`,
  })),
);
console.log(
  `CPU: node ${cpu.nodeCpuS.toFixed(1)} s, JVM ${cpu.jvmCpuS.toFixed(1)} s over ${cpu.wallS.toFixed(1)} s; load average ${loadAverage()}`,
);
const md = `# bench:page ${F} followers (N=${layout.buckets}, limit ${LIMIT}, ${REPS}×${ROUNDS})\n\nload average at end ${result.loadAverageEnd}; node CPU ${cpu.nodeCpuS.toFixed(1)} s, JVM CPU ${cpu.jvmCpuS.toFixed(1)} s, wall ${cpu.wallS.toFixed(1)} s\n\n| depth | p50 ms | p99 ms | p50 ÷ page 1 (median [spread]) | p99 ÷ page 1 |\n|---|---|---|---|---|\n${rows
  .map(
    (r) =>
      `| ${r.depth} | ${r.p50_ms} | ${r.p99_ms} | ${r.p50_vs_page1.median} [${r.p50_vs_page1.min}–${r.p50_vs_page1.max}] | ${r.p99_vs_page1.median} [${r.p99_vs_page1.min}–${r.p99_vs_page1.max}] |`,
  )
  .join('\n')}\n`;
const svg = barChartSvg(
  `page latency by depth (${F} followers, N=${layout.buckets}, limit ${LIMIT})`,
  labels,
  [
    { name: 'p50', values: rows.map((r) => r.p50_ms) },
    { name: 'p99', values: rows.map((r) => r.p99_ms) },
  ],
  'ms',
);
console.log(`wrote ${await writeResults(`page-${F}`, result, svg, md)}`);
await client.shutdown();
