/**
 * T2 depth independence on the loaded celebrity list (`npm run bench:load` first): page p50/p99
 * at page 1, 100, 1,000, 10,000 and the last page (limit 50) through `BucketedListService.page`.
 * The cursors are collected by one walk, then each repetition times `--rounds` pages at every
 * depth, interleaved (1, 100, …, last, 1, 100, …), so drift in background load hits every depth
 * alike. Ratios (page 10,000 ÷ page 1; last ÷ page 1) are computed per repetition; the median and
 * spread over repetitions are reported with Node and JVM CPU and the load average.
 *
 * T3 (`--with-postgres`, see `support/postgres.ts`): the same depths as keyset pages of one
 * Postgres `follows` table holding the same rows, arms interleaved A B / B A per repetition at each
 * `--concurrency` (default 1,8: that many workers each timing `--rounds` pages over the depths in
 * turn); ratios ours ÷ Postgres of p50 and p99 per repetition, median and spread.
 *
 *   npm run bench:page -- [--followers 9000000] [--reps 3] [--rounds 100] [--with-postgres]
 *     [--concurrency 1,8]
 */
import { parseArgs } from 'node:util';
import type { ListKey } from '../src/store/types.js';
import { barChartSvg } from './support/charts.js';
import {
  CELEBRITY,
  cpuMeter,
  loadAverage,
  openCelebrityServices,
  percentile,
  ratioSummary,
  sortedCopy,
  writeResults,
} from './support/harness.js';
import { pgBoundary, pgPage, startPostgres } from './support/postgres.js';

const { values: args } = parseArgs({
  options: {
    followers: { type: 'string', default: '9000000' },
    reps: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '100' },
    'with-postgres': { type: 'boolean', default: false },
    concurrency: { type: 'string', default: '1,8' },
  },
});
const F = Number(args.followers);
const REPS = Number(args.reps);
const ROUNDS = Number(args.rounds);
const LIMIT = 50;
const list: ListKey = { userId: CELEBRITY, relation: 'follows', direction: 'in' };

const { client, store, lists: svc } = await openCelebrityServices(F);
const layout = await store.getLayout(list);
console.log(`${F} followers, N=${layout.buckets}; load average ${loadAverage()}; walking…`);

const wanted = [1, 100, 1000, 10_000];
const cursors = new Map<string, string | null>();
const pageNumbers = new Map<string, number>();
let cursor: string | null = null;
let page = 0;
let seen = 0;
let lastCursor: string | null = null;
const walk = performance.now();
do {
  page++;
  if (wanted.includes(page)) {
    cursors.set(`page ${page}`, cursor);
    pageNumbers.set(`page ${page}`, page);
  }
  lastCursor = cursor;
  const p = await svc.page(list, LIMIT, cursor);
  seen += p.items.length;
  cursor = p.nextCursor;
} while (cursor);
cursors.set('last', lastCursor);
pageNumbers.set('last', page);
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
// T3: ours against Postgres keyset pages at the same depths, interleaved, at each concurrency.
interface T3Row {
  concurrency: number;
  ours: { p50_ms: number; p99_ms: number };
  postgres: { p50_ms: number; p99_ms: number };
  p50Ratio: ReturnType<typeof ratioSummary>;
  p99Ratio: ReturnType<typeof ratioSummary>;
  byDepth: {
    depth: string;
    ours_p50_ms: number;
    postgres_p50_ms: number;
    ours_p99_ms: number;
    postgres_p99_ms: number;
  }[];
}
let t3: { postgresVersion: string; rows: T3Row[] } | null = null;
if (args['with-postgres']) {
  const pgdb = await startPostgres(F);
  try {
    const bounds = new Map<string, Awaited<ReturnType<typeof pgBoundary>>>();
    for (const l of labels) bounds.set(l, await pgBoundary(pgdb.pool, LIMIT, pageNumbers.get(l)!));
    // Same pages, same rows: the first item of every depth must agree.
    for (const l of labels) {
      const ours = (await svc.page(list, LIMIT, cursors.get(l) ?? null)).items[0]?.id;
      const theirs = (await pgPage(pgdb.pool, LIMIT, bounds.get(l) ?? null))[0]?.followerId;
      if (ours !== theirs) throw new Error(`${l}: ours starts at ${ours}, postgres at ${theirs}`);
    }
    const CONC = (args.concurrency ?? '1').split(',').map(Number);
    type Arm = 'ours' | 'postgres';
    const one = (arm: Arm, l: string) =>
      arm === 'ours'
        ? svc.page(list, LIMIT, cursors.get(l) ?? null)
        : pgPage(pgdb.pool, LIMIT, bounds.get(l) ?? null);
    async function timeArm(arm: Arm, c: number) {
      const times = new Map<string, number[]>(labels.map((l) => [l, []]));
      await Promise.all(
        Array.from({ length: c }, async (_, w) => {
          for (let k = 0; k < ROUNDS; k++) {
            const l = labels[(k + w) % labels.length]!;
            const t = performance.now();
            await one(arm, l);
            times.get(l)!.push(performance.now() - t);
          }
        }),
      );
      return times;
    }
    for (const arm of ['ours', 'postgres'] as Arm[]) await timeArm(arm, 4); // warm-up
    const rowsT3: T3Row[] = [];
    for (const c of CONC) {
      const reps: Record<Arm, Map<string, number[]>>[] = [];
      for (let r = 0; r < REPS; r++) {
        const order: Arm[] = r % 2 === 0 ? ['ours', 'postgres'] : ['postgres', 'ours'];
        const rep = {} as Record<Arm, Map<string, number[]>>;
        for (const arm of order) rep[arm] = await timeArm(arm, c);
        reps.push(rep);
        const q = (arm: Arm, p: number) =>
          percentile(sortedCopy([...rep[arm].values()].flat()), p).toFixed(3);
        console.log(
          `T3 concurrency ${c} rep ${r}: ours p50 ${q('ours', 50)} p99 ${q('ours', 99)} ms; postgres p50 ${q('postgres', 50)} p99 ${q('postgres', 99)} ms; load ${loadAverage()}`,
        );
      }
      const flat = (m: Map<string, number[]>) => sortedCopy([...m.values()].flat());
      const allOf = (arm: Arm) => sortedCopy(reps.flatMap((rep) => [...rep[arm].values()].flat()));
      const depthOf = (arm: Arm, l: string) => sortedCopy(reps.flatMap((rep) => rep[arm].get(l)!));
      rowsT3.push({
        concurrency: c,
        ours: {
          p50_ms: +percentile(allOf('ours'), 50).toFixed(3),
          p99_ms: +percentile(allOf('ours'), 99).toFixed(3),
        },
        postgres: {
          p50_ms: +percentile(allOf('postgres'), 50).toFixed(3),
          p99_ms: +percentile(allOf('postgres'), 99).toFixed(3),
        },
        p50Ratio: ratioSummary(
          reps.map((rep) => percentile(flat(rep.ours), 50) / percentile(flat(rep.postgres), 50)),
        ),
        p99Ratio: ratioSummary(
          reps.map((rep) => percentile(flat(rep.ours), 99) / percentile(flat(rep.postgres), 99)),
        ),
        byDepth: labels.map((l) => ({
          depth: l,
          ours_p50_ms: +percentile(depthOf('ours', l), 50).toFixed(3),
          postgres_p50_ms: +percentile(depthOf('postgres', l), 50).toFixed(3),
          ours_p99_ms: +percentile(depthOf('ours', l), 99).toFixed(3),
          postgres_p99_ms: +percentile(depthOf('postgres', l), 99).toFixed(3),
        })),
      });
    }
    t3 = { postgresVersion: pgdb.version, rows: rowsT3 };
  } finally {
    await pgdb.stop();
  }
}

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
  T3: t3,
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
const c1 = t3?.rows.find((r) => r.concurrency === 1) ?? t3?.rows[0];
const svg = c1
  ? barChartSvg(
      `page latency by depth, ours vs Postgres keyset (${F} followers, N=${layout.buckets}, limit ${LIMIT}, concurrency ${c1.concurrency})`,
      labels,
      [
        { name: 'ours p50', values: c1.byDepth.map((d) => d.ours_p50_ms) },
        { name: 'Postgres p50', values: c1.byDepth.map((d) => d.postgres_p50_ms) },
        { name: 'ours p99', values: c1.byDepth.map((d) => d.ours_p99_ms) },
        { name: 'Postgres p99', values: c1.byDepth.map((d) => d.postgres_p99_ms) },
      ],
      'ms',
    )
  : barChartSvg(
      `page latency by depth (${F} followers, N=${layout.buckets}, limit ${LIMIT})`,
      labels,
      [
        { name: 'p50', values: rows.map((r) => r.p50_ms) },
        { name: 'p99', values: rows.map((r) => r.p99_ms) },
      ],
      'ms',
    );
const fmtR = (r: ReturnType<typeof ratioSummary>) => `${r.median} [${r.min}–${r.max}]`;
const t3Md = t3
  ? `\n## T3 ours ÷ Postgres ${t3.postgresVersion} keyset page (same rows, same depths, ${REPS} reps A B / B A)\n\n| concurrency | ours p50 / p99 ms | Postgres p50 / p99 ms | p50 ratio | p99 ratio |\n|---|---|---|---|---|\n${t3.rows
      .map(
        (r) =>
          `| ${r.concurrency} | ${r.ours.p50_ms} / ${r.ours.p99_ms} | ${r.postgres.p50_ms} / ${r.postgres.p99_ms} | ${fmtR(r.p50Ratio)} | ${fmtR(r.p99Ratio)} |`,
      )
      .join(
        '\n',
      )}\n\n| concurrency | depth | ours p50 | Postgres p50 | ours p99 | Postgres p99 |\n|---|---|---|---|---|---|\n${t3.rows
      .flatMap((r) =>
        r.byDepth.map(
          (d) =>
            `| ${r.concurrency} | ${d.depth} | ${d.ours_p50_ms} | ${d.postgres_p50_ms} | ${d.ours_p99_ms} | ${d.postgres_p99_ms} |`,
        ),
      )
      .join('\n')}\n`
  : '';
if (t3)
  console.table(
    t3.rows.map((r) => ({
      concurrency: r.concurrency,
      ...r.ours,
      pg_p50: r.postgres.p50_ms,
      pg_p99: r.postgres.p99_ms,
      p50Ratio: fmtR(r.p50Ratio),
      p99Ratio: fmtR(r.p99Ratio),
    })),
  );
console.log(`wrote ${await writeResults(`page-${F}`, result, svg, md + t3Md)}`);
await client.shutdown();
