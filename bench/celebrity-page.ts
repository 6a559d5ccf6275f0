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
import type { ListKey } from '../src/model/types.js';
import { lineChartSvg } from './support/charts.js';
import {
  CELEBRITY,
  cpuMeter,
  FIRST_FOLLOWER,
  loadAverage,
  openBench,
  percentile,
  ratioSummary,
  sortedCopy,
} from './support/harness.js';
import { pgBoundary, pgPage, startPostgres } from './support/postgres.js';

const bench = openBench({
  usage:
    'npm run bench:page -- [--followers 9000000] [--reps 3] [--rounds 100] [--with-postgres] [--concurrency 1,8] [--unfollow-fraction 0]',
  options: {
    followers: { type: 'string', default: '9000000' },
    reps: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '100' },
    'with-postgres': { type: 'boolean', default: false },
    concurrency: { type: 'string', default: '1,8' },
    'unfollow-fraction': { type: 'string', default: '0' },
  },
});
const args = bench.args;
const F = Number(args.followers);
const REPS = Number(args.reps);
const ROUNDS = Number(args.rounds);
const LIMIT = 50;
const list: ListKey = { userId: CELEBRITY, relation: 'follows', direction: 'in' };

const { client, store, lists: svc, graph } = await bench.celebrity(F);
const layout = await store.getLayout(list);
console.log(`${F} followers, N=${layout.buckets}; load average ${loadAverage()}; collecting cursors…`);

const wanted = [1, 100, 1000, 10_000];
/** The 1-based page number of the last page at LIMIT over `size` members. */
const lastPageOf = (size: number) => Math.floor((size - 1) / LIMIT) + 1;
const BIG = 1000;
const APPROACH = 20; // the last 20 pages before each boundary are walked at LIMIT

/**
 * The cursors of the pages at `wanted` depths and of the last page. Pages before a boundary are
 * walked `BIG` at a time (a 9M list is 9,000 pages of 1,000 instead of 180,000 of 50), the last
 * `APPROACH` pages at LIMIT, so the cursor a depth is timed from is one a client paging at LIMIT
 * holds (its per-bucket ceilings come from LIMIT-sized pages). Returns, per label, the cursor,
 * the page number and the item offset where the page starts.
 */
async function collectCursors(size: number) {
  const targets = [
    ...wanted.filter((k) => (k - 1) * LIMIT < size).map((k) => ({ label: `page ${k}`, page: k })),
    { label: 'last', page: lastPageOf(size) },
  ];
  const found = new Map<string, { cursor: string | null; page: number; offset: number }>();
  let cursor: string | null = null;
  let offset = 0;
  const started = performance.now();
  let lastLine = started;
  for (const t of targets) {
    const at = (t.page - 1) * LIMIT;
    while (offset < at) {
      const remaining = at - offset;
      const step = remaining > APPROACH * LIMIT ? Math.min(BIG, remaining - APPROACH * LIMIT) : LIMIT;
      const p = await svc.page(list, step, cursor);
      offset += p.items.length;
      cursor = p.nextCursor;
      if (!cursor) throw new Error(`the list ended at ${offset} items before page ${t.page}`);
      if (performance.now() - lastLine > 5000) {
        lastLine = performance.now();
        const s = (lastLine - started) / 1000;
        console.log(
          `  walking: ${offset}/${size} items, ${Math.round(offset / s)} items/s, load ${loadAverage()}`,
        );
      }
    }
    found.set(t.label, { cursor, page: t.page, offset });
  }
  console.log(
    `collected ${found.size} cursors over ${offset} items in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  return found;
}

const collected = await collectCursors(F);
const cursors = new Map([...collected].map(([l, c]) => [l, c.cursor]));
const pageNumbers = new Map([...collected].map(([l, c]) => [l, c.page]));
const page = lastPageOf(F);
// The loaded list, newest first, is follower F-1, F-2, …, 0: every depth must start where it should,
// and the last page must end the list.
for (const [l, c] of collected) {
  const first = (await svc.page(list, LIMIT, c.cursor)).items[0]?.id;
  const want = FIRST_FOLLOWER + BigInt(F - 1 - c.offset);
  if (first !== want) throw new Error(`${l}: starts at ${first}, expected ${want}`);
}
const lastPage = await svc.page(list, LIMIT, cursors.get('last') ?? null);
// A full last page may still carry a cursor (a bucket read that returned exactly what it asked for
// cannot know it was the end); the page after it must then be empty and final.
const after = lastPage.nextCursor ? await svc.page(list, LIMIT, lastPage.nextCursor) : null;
if (
  lastPage.items.length !== F - (page - 1) * LIMIT ||
  (after !== null && (after.items.length !== 0 || after.nextCursor !== null))
) {
  throw new Error(
    `the last page has ${lastPage.items.length} items; after it ${after ? `${after.items.length} more and a cursor: ${after.nextCursor !== null}` : 'nothing'}`,
  );
}
const labels = [...cursors.keys()];

/**
 * Times `ROUNDS` pages at every depth per repetition, depths interleaved (1, 100, …, last, 1, …),
 * after 20 warm-up rounds; per-repetition p50/p99 per depth and every sample per depth.
 */
async function timeDepths(at: Map<string, string | null>) {
  const names = [...at.keys()];
  for (let w = 0; w < 20; w++) for (const l of names) await svc.page(list, LIMIT, at.get(l) ?? null);
  const all = new Map<string, number[]>(names.map((l) => [l, []]));
  const perRep: Record<string, { p50: number; p99: number }>[] = [];
  for (let r = 0; r < REPS; r++) {
    const times = new Map<string, number[]>(names.map((l) => [l, []]));
    for (let k = 0; k < ROUNDS; k++) {
      for (const l of names) {
        const t = performance.now();
        await svc.page(list, LIMIT, at.get(l) ?? null);
        const ms = performance.now() - t;
        times.get(l)!.push(ms);
        all.get(l)!.push(ms);
      }
    }
    perRep.push(
      Object.fromEntries(
        names.map((l) => {
          const s = sortedCopy(times.get(l)!);
          return [l, { p50: percentile(s, 50), p99: percentile(s, 99) }];
        }),
      ),
    );
  }
  return { all, perRep };
}

const meter = cpuMeter();
const { all, perRep } = await timeDepths(cursors);
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

// T2b (`--unfollow-fraction f`, last because it changes the list): every ⌈1/f⌉-th follower
// unfollows through GraphService.unfollow, then the same depths are timed again over the
// shortened list; p99 after ÷ p99 before, per repetition, and the node's own tombstone figures.
const FRACTION = Number(args['unfollow-fraction']);
async function tombstonesPerRead() {
  const rs = await client.execute(
    'SELECT table_name, count, max, p99th FROM system_views.tombstones_per_read WHERE keyspace_name = ?',
    [client.keyspace],
  );
  return Object.fromEntries(
    rs.rows
      .filter((r) => ['followers', 'edges_in'].includes(r.table_name as string))
      .map((r) => [
        r.table_name as string,
        { reads: Number(r.count), max: Number(r.max), p99: Number(r.p99th) },
      ]),
  );
}
let t2b: {
  unfollowed: number;
  every: number;
  unfollowS: number;
  rows: {
    depth: string;
    p99_before_ms: number;
    p99_after_ms: number;
    p99Ratio: ReturnType<typeof ratioSummary>;
  }[];
  tombstonesBefore: Record<string, unknown>;
  tombstonesAfter: Record<string, unknown>;
} | null = null;
if (FRACTION > 0) {
  const every = Math.max(2, Math.round(1 / FRACTION));
  const members = Array.from({ length: Math.ceil((F - 3) / every) }, (_, k) => 3 + k * every).filter(
    (i) => i < F,
  );
  const tombstonesBefore = await tombstonesPerRead();
  console.log(`T2b: ${members.length} followers unfollow (every ${every}th), 64 at a time…`);
  const started = performance.now();
  let next = 0;
  let done = 0;
  let lastLine = started;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < members.length) {
        const i = members[next++]!;
        await graph.unfollow(FIRST_FOLLOWER + BigInt(i), CELEBRITY);
        done++;
        if (performance.now() - lastLine > 5000) {
          lastLine = performance.now();
          const sec = (lastLine - started) / 1000;
          console.log(
            `  unfollowed ${done}/${members.length}, ${Math.round(done / sec)}/s, load ${loadAverage()}`,
          );
        }
      }
    }),
  );
  const unfollowS = (performance.now() - started) / 1000;
  const size = F - members.length;
  const after = await collectCursors(size);
  const afterCursors = new Map([...after].map(([l, c]) => [l, c.cursor]));
  const timed = await timeDepths(afterCursors);
  const tombstonesAfter = await tombstonesPerRead();
  t2b = {
    unfollowed: members.length,
    every,
    unfollowS: +unfollowS.toFixed(1),
    rows: [...afterCursors.keys()]
      .filter((l) => cursors.has(l))
      .map((l) => ({
        depth: l,
        p99_before_ms: +percentile(sortedCopy(all.get(l)!), 99).toFixed(3),
        p99_after_ms: +percentile(sortedCopy(timed.all.get(l)!), 99).toFixed(3),
        p99Ratio: ratioSummary(timed.perRep.map((rep, r) => rep[l]!.p99 / perRep[r]![l]!.p99)),
      })),
    tombstonesBefore,
    tombstonesAfter,
  };
  console.table(
    t2b.rows.map((r) => ({ ...r, p99Ratio: `${r.p99Ratio.median} [${r.p99Ratio.min}–${r.p99Ratio.max}]` })),
  );
  console.log(
    `T2b tombstones per read: before ${JSON.stringify(tombstonesBefore)}, after ${JSON.stringify(tombstonesAfter)}`,
  );
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
  T2b: t2b,
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
const depthX = (l: string) => pageNumbers.get(l)!;
const svg = lineChartSvg(
  `page latency vs depth (${F} followers, N=${layout.buckets}, limit ${LIMIT}${c1 ? `, ours vs Postgres keyset at concurrency ${c1.concurrency}` : ''})`,
  c1
    ? [
        { name: 'ours p50', points: c1.byDepth.map((d) => [depthX(d.depth), d.ours_p50_ms] as const) },
        { name: 'ours p99', points: c1.byDepth.map((d) => [depthX(d.depth), d.ours_p99_ms] as const) },
        {
          name: 'Postgres p50',
          points: c1.byDepth.map((d) => [depthX(d.depth), d.postgres_p50_ms] as const),
        },
        {
          name: 'Postgres p99',
          points: c1.byDepth.map((d) => [depthX(d.depth), d.postgres_p99_ms] as const),
        },
      ]
    : [
        { name: 'p50', points: rows.map((r) => [depthX(r.depth), r.p50_ms] as const) },
        { name: 'p99', points: rows.map((r) => [depthX(r.depth), r.p99_ms] as const) },
      ],
  { x: 'page number (limit 50)', y: 'ms', logX: true },
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
const t2bMd = t2b
  ? `\n## T2b: ${t2b.unfollowed} followers (every ${t2b.every}th) unfollowed in ${t2b.unfollowS} s, then the same depths\n\n| depth | p99 before ms | p99 after ms | p99 after ÷ before (median [spread]) |\n|---|---|---|---|\n${t2b.rows
      .map((r) => `| ${r.depth} | ${r.p99_before_ms} | ${r.p99_after_ms} | ${fmtR(r.p99Ratio)} |`)
      .join(
        '\n',
      )}\n\ntombstones per read (system_views.tombstones_per_read): before ${JSON.stringify(t2b.tombstonesBefore)}; after ${JSON.stringify(t2b.tombstonesAfter)}\n`
  : '';
console.log(`wrote ${await bench.writeResults(`page-${F}`, result, svg, md + t3Md + t2bMd)}`);
await bench.close();
