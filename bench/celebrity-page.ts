/**
 * Celebrity pages on the loaded list (`npm run bench:load` first), limit 50, against their targets:
 *
 * - Depths: page p50/p99 at page 1, 100, 1,000, 10,000 and the last page through
 *   `BucketedListService.page`. The cursors are collected by one walk, then each repetition times
 *   `--rounds` pages at every depth, interleaved (1, 100, …, last, 1, 100, …), so drift in
 *   background load hits every depth alike. Per depth: ratio to page 1 per repetition.
 * - **P4**: page 1 p99 ÷ page 10,000 p99 per repetition (target ≤ 1.2); on a list too short for
 *   page 10,000 the deepest numbered page there is, named in the output.
 * - **P1** (`--with-postgres`, see `support/postgres.ts`): the same depths as keyset pages of one
 *   Postgres `follows` table holding the same rows (ids only), arms A B / B A per repetition at
 *   each `--concurrency` (default 1,8: that many workers each timing `--rounds` pages over the
 *   depths in turn); ours ÷ Postgres of p50 and p99 per repetition (target ≤ 2).
 * - **P2** (with `--with-postgres`): the hydrated page, `GraphService.listPage` (ids and usernames
 *   from the list rows, deactivated members dropped by the in-memory registry: no member reads),
 *   against the keyset page joined to a Postgres `users` table holding the same usernames
 *   (`pgJoinedPage`), same depths, same protocol; p99 ÷ p99 (target ≤ 2). The registry must be
 *   fresh when timing starts (reported; a stale one reads members and the figure says so).
 * - **P3** (`--compare-followers 200000`): page p99 on the loaded list ÷ page p99 on a 200k list
 *   (a second keyspace: `bench:load -- --followers 200000 --only-list`, or `--compare-keyspace`),
 *   the depths both lists have (page 1, 100, 1,000, the last), A B / B A (target ≤ 1.3).
 *
 * Repetitions: p50s are taken over `--reps` (≥ 3), p99 ratios over `max(--reps, --p99-reps)`
 * repetitions (default 10), every ratio reported as median [min–max] over repetitions.
 *
 *   npm run bench:page -- [--followers 9000000] [--reps 3] [--p99-reps 10] [--rounds 100]
 *     [--with-postgres] [--concurrency 1,8] [--compare-followers 200000] [--compare-keyspace ks]
 *     [--unfollow-fraction 0]
 */
import type { ListKey } from '../src/model/types.js';
import { lineChartSvg } from './support/charts.js';
import {
  CELEBRITY,
  type CelebrityServices,
  cpuMeter,
  FIRST_FOLLOWER,
  loadAverage,
  openBench,
  percentile,
  ratioSummary,
  sortedCopy,
} from './support/harness.js';
import { pgBoundary, pgJoinedPage, pgPage, startPostgres } from './support/postgres.js';
import { usernameFor } from './support/usernames.js';

const bench = openBench({
  usage:
    'npm run bench:page -- [--followers 9000000] [--reps 3] [--p99-reps 10] [--rounds 100] [--with-postgres] [--concurrency 1,8] [--compare-followers 200000] [--compare-keyspace ks] [--unfollow-fraction 0]',
  options: {
    followers: { type: 'string', default: '9000000' },
    reps: { type: 'string', default: '3' },
    'p99-reps': { type: 'string', default: '10' },
    rounds: { type: 'string', default: '100' },
    'with-postgres': { type: 'boolean', default: false },
    concurrency: { type: 'string', default: '1,8' },
    'compare-followers': { type: 'string' },
    'compare-keyspace': { type: 'string' },
    'unfollow-fraction': { type: 'string', default: '0' },
  },
});
const args = bench.args;
const F = Number(args.followers);
/** Repetitions of every timed protocol: p50 over the first ≥ 3, p99 over all (≥ `--p99-reps`). */
const REPS = Math.max(Number(args.reps), Number(args['p99-reps']));
const ROUNDS = Number(args.rounds);
const LIMIT = 50;
const list: ListKey = {
  userId: CELEBRITY,
  relation: 'follows',
  direction: 'in',
};
const fmtR = (r: ReturnType<typeof ratioSummary>) => `${r.median} [${r.min}–${r.max}]`;

const main = await bench.celebrity(F);
const { client, store, lists: svc, graph } = main;
const layout = await store.getLayout(list);
const directory = await svc.directory(list);
const shape = `${directory.buckets.length} time buckets (mode ${directory.mode ?? 'unset'}), inverse-edge N=${layout.buckets}`;
console.log(`${F} followers, ${shape}; load average ${loadAverage()}; collecting cursors…`);

const wanted = [1, 100, 1000, 10_000];
/** The 1-based page number of the last page at LIMIT over `size` members. */
const lastPageOf = (size: number) => Math.floor((size - 1) / LIMIT) + 1;
const BIG = 1000;
const APPROACH = 20; // the last 20 pages before each boundary are walked at LIMIT

/**
 * The cursors of the pages at `wanted` depths and of the last page of `svc`'s celebrity list of
 * `size`. Pages before a boundary are walked `BIG` at a time (a 9M list is 9,000 pages of 1,000
 * instead of 180,000 of 50), the last `APPROACH` pages at LIMIT, so the cursor a depth is timed
 * from is one a client paging at LIMIT holds. Returns, per label, the cursor, the page number and
 * the item offset where the page starts; with `check`, that every depth starts at the follower it
 * should (the loaded list, newest first, is follower size-1, …, 0) and that the last page ends it.
 */
async function collectCursors(lists: CelebrityServices['lists'], size: number, check = true) {
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
      const p = await lists.page(list, step, cursor);
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
  if (!check) return found; // after unfollows (T2b) the members are no longer follower size-1, …, 0
  for (const [l, c] of found) {
    const first = (await lists.page(list, LIMIT, c.cursor)).items[0]?.id;
    const want = FIRST_FOLLOWER + BigInt(size - 1 - c.offset);
    if (first !== want) throw new Error(`${l}: starts at ${first}, expected ${want}`);
  }
  const lastPage = await lists.page(list, LIMIT, found.get('last')?.cursor ?? null);
  // A full last page may still carry a cursor (a bucket read that returned exactly what it asked
  // for cannot know it was the end); the page after it must then be empty and final.
  const after = lastPage.nextCursor ? await lists.page(list, LIMIT, lastPage.nextCursor) : null;
  if (
    lastPage.items.length !== size - (lastPageOf(size) - 1) * LIMIT ||
    (after !== null && (after.items.length !== 0 || after.nextCursor !== null))
  ) {
    throw new Error(
      `the last page has ${lastPage.items.length} items; after it ${after ? `${after.items.length} more and a cursor: ${after.nextCursor !== null}` : 'nothing'}`,
    );
  }
  return found;
}

const collected = await collectCursors(svc, F);
const cursors = new Map([...collected].map(([l, c]) => [l, c.cursor]));
const pageNumbers = new Map([...collected].map(([l, c]) => [l, c.page]));
const page = lastPageOf(F);
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
// P4: page 1 p99 ÷ page 10,000 p99 (the deepest numbered page the list has).
const deepLabel = [...labels].reverse().find((l) => l !== 'last' && l !== 'page 1') ?? 'last';
const p4 = {
  deep: deepLabel,
  p99Ratio: ratioSummary(perRep.map((rep) => rep['page 1']!.p99 / rep[deepLabel]!.p99)),
  p50Ratio: ratioSummary(perRep.map((rep) => rep['page 1']!.p50 / rep[deepLabel]!.p50)),
};
console.log(`P4 page 1 ÷ ${deepLabel}: p99 ${fmtR(p4.p99Ratio)}, p50 ${fmtR(p4.p50Ratio)} over ${REPS} reps`);

// P1 (ids only) and P2 (hydrated): ours against Postgres at the same depths, at each concurrency.
type Arm = 'ours' | 'postgres' | 'hydrated' | 'joined';
interface VsRow {
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
let pgResult: {
  postgresVersion: string;
  registryFresh: boolean;
  P1: VsRow[];
  P2: VsRow[];
} | null = null;
if (args['with-postgres']) {
  const pgdb = await startPostgres(F);
  try {
    const bounds = new Map<string, Awaited<ReturnType<typeof pgBoundary>>>();
    for (const l of labels) bounds.set(l, await pgBoundary(pgdb.pool, LIMIT, pageNumbers.get(l)!));
    // Same pages, same rows, same usernames: every depth must agree on its whole page.
    for (const l of labels) {
      const ours = (await graph.listPage(list, LIMIT, cursors.get(l) ?? null)).items.map(
        (i) => `${i.id}:${i.username}`,
      );
      const theirs = (await pgJoinedPage(pgdb.pool, LIMIT, bounds.get(l) ?? null)).map(
        (r) => `${r.followerId}:${r.username}`,
      );
      const ids = (await pgPage(pgdb.pool, LIMIT, bounds.get(l) ?? null)).map((r) => r.followerId);
      const named = ids.map((id) => `${id}:${usernameFor(id)}`);
      if (ours.join() !== theirs.join() || theirs.join() !== named.join()) {
        throw new Error(
          `${l}: ours ${ours.slice(0, 2)}…, postgres ${theirs.slice(0, 2)}…, expected ${named.slice(0, 2)}…`,
        );
      }
    }
    const CONC = (args.concurrency ?? '1').split(',').map(Number);
    const one = (arm: Arm, l: string): Promise<unknown> => {
      const at = cursors.get(l) ?? null;
      const b = bounds.get(l) ?? null;
      switch (arm) {
        case 'ours':
          return svc.page(list, LIMIT, at);
        case 'postgres':
          return pgPage(pgdb.pool, LIMIT, b);
        case 'hydrated':
          return graph.listPage(list, LIMIT, at);
        case 'joined':
          return pgJoinedPage(pgdb.pool, LIMIT, b);
      }
    };
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
    for (const arm of ['ours', 'postgres', 'hydrated', 'joined'] as Arm[]) await timeArm(arm, 4); // warm-up
    const registryFresh = graph.registry?.fresh() ?? false;
    if (!registryFresh)
      console.warn('WARNING: the deactivation registry is not fresh: P2 pages read members');
    const measure = async (pair: readonly [Arm, Arm], name: string): Promise<VsRow[]> => {
      const [a, b] = pair;
      const out: VsRow[] = [];
      for (const c of CONC) {
        const reps: Record<Arm, Map<string, number[]>>[] = [];
        for (let r = 0; r < REPS; r++) {
          const order = r % 2 === 0 ? [a, b] : [b, a];
          const rep = {} as Record<Arm, Map<string, number[]>>;
          for (const arm of order) rep[arm] = await timeArm(arm, c);
          reps.push(rep);
          const q = (arm: Arm, p: number) =>
            percentile(sortedCopy([...rep[arm].values()].flat()), p).toFixed(3);
          console.log(
            `${name} concurrency ${c} rep ${r}: ${a} p50 ${q(a, 50)} p99 ${q(a, 99)} ms; ${b} p50 ${q(b, 50)} p99 ${q(b, 99)} ms; load ${loadAverage()}`,
          );
        }
        const flat = (m: Map<string, number[]>) => sortedCopy([...m.values()].flat());
        const allOf = (arm: Arm) => sortedCopy(reps.flatMap((rep) => [...rep[arm].values()].flat()));
        const depthOf = (arm: Arm, l: string) => sortedCopy(reps.flatMap((rep) => rep[arm].get(l)!));
        const p50Reps = reps.slice(0, Math.max(3, Number(args.reps)));
        out.push({
          concurrency: c,
          ours: {
            p50_ms: +percentile(allOf(a), 50).toFixed(3),
            p99_ms: +percentile(allOf(a), 99).toFixed(3),
          },
          postgres: {
            p50_ms: +percentile(allOf(b), 50).toFixed(3),
            p99_ms: +percentile(allOf(b), 99).toFixed(3),
          },
          p50Ratio: ratioSummary(
            p50Reps.map((rep) => percentile(flat(rep[a]), 50) / percentile(flat(rep[b]), 50)),
          ),
          p99Ratio: ratioSummary(
            reps.map((rep) => percentile(flat(rep[a]), 99) / percentile(flat(rep[b]), 99)),
          ),
          byDepth: labels.map((l) => ({
            depth: l,
            ours_p50_ms: +percentile(depthOf(a, l), 50).toFixed(3),
            postgres_p50_ms: +percentile(depthOf(b, l), 50).toFixed(3),
            ours_p99_ms: +percentile(depthOf(a, l), 99).toFixed(3),
            postgres_p99_ms: +percentile(depthOf(b, l), 99).toFixed(3),
          })),
        });
      }
      return out;
    };
    const P1 = await measure(['ours', 'postgres'], 'P1');
    const P2 = await measure(['hydrated', 'joined'], 'P2');
    pgResult = {
      postgresVersion: pgdb.version,
      registryFresh: registryFresh && (graph.registry?.fresh() ?? false),
      P1,
      P2,
    };
  } finally {
    await pgdb.stop();
  }
}

// P3: the loaded list against a 200k list in another keyspace, the depths both have, A B / B A.
let p3: {
  compareFollowers: number;
  keyspace: string;
  shape: string;
  depths: string[];
  loaded: { p50_ms: number; p99_ms: number };
  compare: { p50_ms: number; p99_ms: number };
  p99Ratio: ReturnType<typeof ratioSummary>;
  p50Ratio: ReturnType<typeof ratioSummary>;
} | null = null;
if (args['compare-followers']) {
  const CF = Number(args['compare-followers']);
  const ks = args['compare-keyspace'] ?? `bench_celeb_${CF}`;
  const other = await bench.celebrity(CF, undefined, ks);
  const otherDir = await other.lists.directory(list);
  const otherShape = `${otherDir.buckets.length} time buckets (mode ${otherDir.mode ?? 'unset'})`;
  console.log(`P3: compare list ${CF} followers in ${ks}, ${otherShape}; collecting cursors…`);
  const theirs = await collectCursors(other.lists, CF);
  const depths = labels.filter(
    (l) => theirs.has(l) && (l === 'last' || wanted.includes(pageNumbers.get(l)!)),
  );
  const at = (lists: CelebrityServices['lists'], m: Map<string, { cursor: string | null }>) => async () => {
    const times: number[] = [];
    for (let k = 0; k < ROUNDS; k++) {
      for (const l of depths) {
        const t = performance.now();
        await lists.page(list, LIMIT, m.get(l)!.cursor);
        times.push(performance.now() - t);
      }
    }
    return sortedCopy(times);
  };
  const arms = { loaded: at(svc, collected), compare: at(other.lists, theirs) };
  await arms.loaded();
  await arms.compare(); // warm-up
  const reps: Record<'loaded' | 'compare', number[]>[] = [];
  for (let r = 0; r < REPS; r++) {
    const rep = {} as Record<'loaded' | 'compare', number[]>;
    const order: ('loaded' | 'compare')[] = r % 2 === 0 ? ['loaded', 'compare'] : ['compare', 'loaded'];
    for (const arm of order) rep[arm] = await arms[arm]();
    reps.push(rep);
    console.log(
      `P3 rep ${r}: ${F} p50 ${percentile(rep.loaded, 50).toFixed(3)} p99 ${percentile(rep.loaded, 99).toFixed(3)} ms; ${CF} p50 ${percentile(rep.compare, 50).toFixed(3)} p99 ${percentile(rep.compare, 99).toFixed(3)} ms`,
    );
  }
  const allOf = (arm: 'loaded' | 'compare') => sortedCopy(reps.flatMap((r) => r[arm]));
  p3 = {
    compareFollowers: CF,
    keyspace: ks,
    shape: otherShape,
    depths,
    loaded: {
      p50_ms: +percentile(allOf('loaded'), 50).toFixed(3),
      p99_ms: +percentile(allOf('loaded'), 99).toFixed(3),
    },
    compare: {
      p50_ms: +percentile(allOf('compare'), 50).toFixed(3),
      p99_ms: +percentile(allOf('compare'), 99).toFixed(3),
    },
    p99Ratio: ratioSummary(reps.map((r) => percentile(r.loaded, 99) / percentile(r.compare, 99))),
    p50Ratio: ratioSummary(
      reps
        .slice(0, Math.max(3, Number(args.reps)))
        .map((r) => percentile(r.loaded, 50) / percentile(r.compare, 50)),
    ),
  };
  console.log(
    `P3 p99 ${F} ÷ ${CF}: ${fmtR(p3.p99Ratio)} (p50 ${fmtR(p3.p50Ratio)}) over ${depths.join(', ')}`,
  );
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
  const after = await collectCursors(svc, size, false);
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
    t2b.rows.map((r) => ({
      ...r,
      p99Ratio: `${r.p99Ratio.median} [${r.p99Ratio.min}–${r.p99Ratio.max}]`,
    })),
  );
  console.log(
    `T2b tombstones per read: before ${JSON.stringify(tombstonesBefore)}, after ${JSON.stringify(tombstonesAfter)}`,
  );
}

const result = {
  at: new Date().toISOString(),
  followers: F,
  shape,
  timeBuckets: directory.buckets.length,
  inverseEdgeBuckets: layout.buckets,
  limit: LIMIT,
  reps: REPS,
  rounds: ROUNDS,
  pagesInList: page,
  loadAverageEnd: loadAverage(),
  cpu,
  rows,
  P4: p4,
  P1: pgResult?.P1 ?? null,
  P2: pgResult?.P2 ?? null,
  P3: p3,
  postgresVersion: pgResult?.postgresVersion ?? null,
  registryFresh: pgResult?.registryFresh ?? null,
  T2b: t2b,
};
console.table(
  rows.map((r) => ({
    depth: r.depth,
    p50_ms: r.p50_ms,
    p99_ms: r.p99_ms,
    'p50 ÷ page 1 (median [min–max])': fmtR(r.p50_vs_page1),
    'p99 ÷ page 1 (median [min–max])': fmtR(r.p99_vs_page1),
  })),
);
console.log(
  `CPU: node ${cpu.nodeCpuS.toFixed(1)} s, JVM ${cpu.jvmCpuS.toFixed(1)} s over ${cpu.wallS.toFixed(1)} s; load average ${loadAverage()}`,
);
const vsTable = (rowsVs: VsRow[], a: string, b: string) =>
  `| concurrency | ${a} p50 / p99 ms | ${b} p50 / p99 ms | p50 ratio | p99 ratio |\n|---|---|---|---|---|\n${rowsVs
    .map(
      (r) =>
        `| ${r.concurrency} | ${r.ours.p50_ms} / ${r.ours.p99_ms} | ${r.postgres.p50_ms} / ${r.postgres.p99_ms} | ${fmtR(r.p50Ratio)} | ${fmtR(r.p99Ratio)} |`,
    )
    .join(
      '\n',
    )}\n\n| concurrency | depth | ${a} p50 | ${b} p50 | ${a} p99 | ${b} p99 |\n|---|---|---|---|---|---|\n${rowsVs
    .flatMap((r) =>
      r.byDepth.map(
        (d) =>
          `| ${r.concurrency} | ${d.depth} | ${d.ours_p50_ms} | ${d.postgres_p50_ms} | ${d.ours_p99_ms} | ${d.postgres_p99_ms} |`,
      ),
    )
    .join('\n')}\n`;
const summary = [
  `- **P4** page 1 p99 ÷ ${p4.deep} p99: ${fmtR(p4.p99Ratio)} (p50 ${fmtR(p4.p50Ratio)}); target ≤ 1.2`,
  ...(pgResult
    ? [
        ...pgResult.P1.map(
          (r) =>
            `- **P1** concurrency ${r.concurrency}: p50 ${fmtR(r.p50Ratio)}, p99 ${fmtR(r.p99Ratio)} × Postgres keyset (ids only); target ≤ 2`,
        ),
        ...pgResult.P2.map(
          (r) =>
            `- **P2** concurrency ${r.concurrency}: hydrated p99 ${fmtR(r.p99Ratio)} (p50 ${fmtR(r.p50Ratio)}) × Postgres keyset joined to users; target ≤ 2; registry fresh throughout: ${pgResult?.registryFresh}`,
        ),
      ]
    : ['- P1, P2: not measured (no `--with-postgres`)']),
  p3
    ? `- **P3** page p99 ${F} ÷ ${p3.compareFollowers} (${p3.keyspace}, ${p3.shape}): ${fmtR(p3.p99Ratio)} (p50 ${fmtR(p3.p50Ratio)}), depths ${p3.depths.join(', ')}; target ≤ 1.3`
    : '- P3: not measured (no `--compare-followers`)',
];
console.log(summary.join('\n'));
const md = `# bench:page ${F} followers (${shape}, limit ${LIMIT}, ${REPS} reps × ${ROUNDS} rounds)\n\nload average at end ${result.loadAverageEnd}; node CPU ${cpu.nodeCpuS.toFixed(1)} s, JVM CPU ${cpu.jvmCpuS.toFixed(1)} s, wall ${cpu.wallS.toFixed(1)} s. Ratios: median [min–max] over repetitions (p50 over the first ${Math.max(3, Number(args.reps))}, p99 over all ${REPS}).\n\n${summary.join('\n')}\n\n## Depths\n\n| depth | p50 ms | p99 ms | p50 ÷ page 1 | p99 ÷ page 1 |\n|---|---|---|---|---|\n${rows
  .map(
    (r) => `| ${r.depth} | ${r.p50_ms} | ${r.p99_ms} | ${fmtR(r.p50_vs_page1)} | ${fmtR(r.p99_vs_page1)} |`,
  )
  .join('\n')}\n`;
const c1 = pgResult?.P1.find((r) => r.concurrency === 1) ?? pgResult?.P1[0];
const h1 = pgResult?.P2.find((r) => r.concurrency === 1) ?? pgResult?.P2[0];
const depthX = (l: string) => pageNumbers.get(l)!;
const svg = lineChartSvg(
  `page latency vs depth (${F} followers, ${directory.buckets.length} time buckets, limit ${LIMIT}${c1 ? `, ours vs Postgres keyset at concurrency ${c1.concurrency}` : ''})`,
  c1 && h1
    ? [
        {
          name: 'ours p99',
          points: c1.byDepth.map((d) => [depthX(d.depth), d.ours_p99_ms] as const),
        },
        {
          name: 'Postgres p99',
          points: c1.byDepth.map((d) => [depthX(d.depth), d.postgres_p99_ms] as const),
        },
        {
          name: 'ours hydrated p99',
          points: h1.byDepth.map((d) => [depthX(d.depth), d.ours_p99_ms] as const),
        },
        {
          name: 'Postgres joined p99',
          points: h1.byDepth.map((d) => [depthX(d.depth), d.postgres_p99_ms] as const),
        },
        {
          name: 'ours p50',
          points: c1.byDepth.map((d) => [depthX(d.depth), d.ours_p50_ms] as const),
        },
        {
          name: 'Postgres p50',
          points: c1.byDepth.map((d) => [depthX(d.depth), d.postgres_p50_ms] as const),
        },
      ]
    : [
        {
          name: 'p50',
          points: rows.map((r) => [depthX(r.depth), r.p50_ms] as const),
        },
        {
          name: 'p99',
          points: rows.map((r) => [depthX(r.depth), r.p99_ms] as const),
        },
      ],
  { x: 'page number (limit 50)', y: 'ms', logX: true },
);
const pgMd = pgResult
  ? `\n## P1: ours ÷ Postgres ${pgResult.postgresVersion} keyset page, ids only (same rows, same depths, A B / B A)\n\n${vsTable(pgResult.P1, 'ours', 'Postgres')}\n## P2: hydrated page (GraphService.listPage) ÷ Postgres keyset page joined to users\n\nregistry fresh throughout: ${pgResult.registryFresh}\n\n${vsTable(pgResult.P2, 'ours hydrated', 'Postgres joined')}`
  : '';
const p3Md = p3
  ? `\n## P3: ${F} ÷ ${p3.compareFollowers} followers (${p3.keyspace}, ${p3.shape})\n\n| list | p50 ms | p99 ms |\n|---|---|---|\n| ${F} | ${p3.loaded.p50_ms} | ${p3.loaded.p99_ms} |\n| ${p3.compareFollowers} | ${p3.compare.p50_ms} | ${p3.compare.p99_ms} |\n\np99 ratio ${fmtR(p3.p99Ratio)}, p50 ratio ${fmtR(p3.p50Ratio)}; depths ${p3.depths.join(', ')}\n`
  : '';
const t2bMd = t2b
  ? `\n## T2b: ${t2b.unfollowed} followers (every ${t2b.every}th) unfollowed in ${t2b.unfollowS} s, then the same depths\n\n| depth | p99 before ms | p99 after ms | p99 after ÷ before (median [spread]) |\n|---|---|---|---|\n${t2b.rows
      .map((r) => `| ${r.depth} | ${r.p99_before_ms} | ${r.p99_after_ms} | ${fmtR(r.p99Ratio)} |`)
      .join(
        '\n',
      )}\n\ntombstones per read (system_views.tombstones_per_read): before ${JSON.stringify(t2b.tombstonesBefore)}; after ${JSON.stringify(t2b.tombstonesAfter)}\n`
  : '';
if (pgResult) {
  for (const [name, rs] of [
    ['P1', pgResult.P1],
    ['P2', pgResult.P2],
  ] as const)
    console.table(
      rs.map((r) => ({
        target: name,
        concurrency: r.concurrency,
        ...r.ours,
        pg_p50: r.postgres.p50_ms,
        pg_p99: r.postgres.p99_ms,
        p50Ratio: fmtR(r.p50Ratio),
        p99Ratio: fmtR(r.p99Ratio),
      })),
    );
}
console.log(`wrote ${await bench.writeResults(`page-${F}`, result, svg, md + pgMd + p3Md + t2bMd)}`);
graph.registry?.close();
await bench.close();
