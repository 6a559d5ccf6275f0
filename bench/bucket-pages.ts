/**
 * Page cost against time-bucket size: the chart that sets `DEFAULT_TIME_BUCKET_ROWS`.
 *
 *   npm run bench:buckets -- [--rows 1000000] [--sizes 25000,50000,100000,250000,500000,1000000]
 *     [--pages 200] [--reps 10] [--seed 1] [--keep]
 *
 * The same `--rows` followers rows (follower i at created_at P0 + i, its `usernameFor` handle in
 * the row, as `bench:load` writes them) are written once per plan into a throwaway keyspace, each
 * plan its own list: a directory planned with `planDirectory` at that many rows a bucket, stored
 * with mode `time`, and every row in `bucketFor(directory, created_at)` — the service's placement.
 * Then the keyspace is flushed (`nodetool flush`) and the `followers` table's largest partition
 * (`nodetool tablestats` / `tablehistograms`, the upper edge of a histogram bucket) gives the bytes
 * per row; each plan's partition MiB is its bucket rows × that (the largest plan's is measured).
 *
 * Timing: `--pages` pages of 50 at random depths (seeded, printed; the same depths for every plan),
 * each a newest-first page starting at that depth (`until` = the depth's created_at, which starts
 * in the bucket holding it, as a cursor page does) through `BucketedListService.page`. Plans are
 * interleaved per repetition, forward then backward (A B C …, … C B A). Per plan: p50 (median over
 * repetitions) and p99 (median [min–max] over `--reps` ≥ 10 repetitions), p99 ÷ the 250k plan's per
 * repetition, rows read and queries per page (the list engine's own page stats), and partition MiB.
 * Writes `bucket-pages-<time>.{json,svg,md}`; the SVG draws page cost and partition MiB against
 * bucket size. The keyspace is dropped at the end unless `--keep` (or `--keyspace`).
 */
import type { ListReadStats } from '../src/lists/list-pages.js';
import { BucketedListService } from '../src/lists/list-service.js';
import { bucketFor, planDirectory } from '../src/model/time-buckets.js';
import type { ListKey } from '../src/model/types.js';
import { CassandraGraphStore } from '../src/store/cassandra/graph-store.js';
import { LQ } from '../src/store/cassandra/statements.js';
import { lineChartSvg } from './support/charts.js';
import {
  loadAverage,
  markdownTable,
  openBench,
  percentile,
  ratioSummary,
  sortedCopy,
} from './support/harness.js';
import { nodetoolBatch } from './support/nodetool.js';
import { usernameFor } from './support/usernames.js';

const bench = openBench({
  usage:
    'npm run bench:buckets -- [--rows 1000000] [--sizes 25000,50000,100000,250000,500000,1000000] [--pages 200] [--reps 10] [--seed 1] [--keep]',
  options: {
    rows: { type: 'string', default: '1000000' },
    sizes: { type: 'string', default: '25000,50000,100000,250000,500000,1000000' },
    pages: { type: 'string', default: '200' },
    reps: { type: 'string', default: '10' },
    seed: { type: 'string', default: '1' },
    keep: { type: 'boolean', default: false },
  },
});
const ROWS = Number(bench.args.rows);
const SIZES = (bench.args.sizes ?? '').split(',').map(Number);
const PAGES = Number(bench.args.pages);
const REPS = Number(bench.args.reps);
const SEED = Number(bench.args.seed);
const LIMIT = 50;
const MiB = 2 ** 20;
const P0 = 1_700_000_000_000_000n;
const FIRST = 100_000_000n;
/** The plan every ratio is against (the default bucket size), or the first plan. */
const REFERENCE = SIZES.includes(250_000) ? 250_000 : SIZES[0]!;
const listOf = (k: number): ListKey => ({
  userId: 5_000_000_000n + BigInt(k),
  relation: 'follows',
  direction: 'in',
});

const { client, keyspace } = await bench.throwawayKeyspace('bench_tbuckets', { keep: bench.args.keep });
const store = new CassandraGraphStore(client);
console.log(
  `keyspace ${keyspace}: ${ROWS} rows under ${SIZES.length} plans (${SIZES.join(', ')} rows a bucket); seed ${SEED}; load average ${loadAverage()}`,
);

// 1. Write the rows under every plan (idempotent: a kept keyspace is rewritten with the same cells).
let inflight = 0;
const waiters: (() => void)[] = [];
async function send(run: () => Promise<unknown>): Promise<void> {
  while (inflight >= 64) await new Promise<void>((r) => waiters.push(r));
  inflight++;
  try {
    await run();
  } finally {
    inflight--;
    waiters.shift()?.();
  }
}
const started = performance.now();
const plans: { size: number; list: ListKey; buckets: number; largestBucket: number }[] = [];
for (const [k, size] of SIZES.entries()) {
  const list = listOf(k);
  function* createdAts() {
    for (let i = 0; i < ROWS; i++) yield P0 + BigInt(i);
  }
  const planned = planDirectory(createdAts(), size);
  const stored = await store.getDirectory(list);
  if (stored.version === 0)
    await store.updateDirectory(list, 0, { add: planned.filter((b) => b.start !== null), mode: 'time' });
  const directory = await store.getDirectory(list);
  const pending: Promise<void>[] = [];
  const BATCH = 100;
  for (let from = 0; from < ROWS; from += BATCH) {
    const rows = Array.from({ length: Math.min(BATCH, ROWS - from) }, (_, j) => from + j);
    // One batch per bucket (a batch may straddle a boundary: split it there).
    const byBucket = new Map<number, number[]>();
    for (const i of rows) {
      const id = bucketFor(directory, P0 + BigInt(i)).id;
      byBucket.set(id, [...(byBucket.get(id) ?? []), i]);
    }
    for (const [code, part] of byBucket) {
      pending.push(
        send(() =>
          client.batch(
            part.flatMap((i) => {
              const pos = P0 + BigInt(i);
              const other = FIRST + BigInt(i);
              return [
                {
                  query: LQ.followers.putRow,
                  params: [list.userId, code, pos, other, pos, pos * 1024n + 1n],
                },
                {
                  query: LQ.followers.setUsername,
                  params: [pos * 1024n, usernameFor(other), list.userId, code, pos, other],
                },
              ];
            }),
            { prepare: true, logged: false },
          ),
        ),
      );
    }
    if (pending.length >= 512) await Promise.all(pending.splice(0));
    bench.progress(`plan ${size}: ${from + rows.length}/${ROWS} rows, load ${loadAverage()}`);
  }
  await Promise.all(pending);
  bench.progress(`plan ${size}: ${ROWS} rows in ${directory.buckets.length} buckets`, true);
  plans.push({ size, list, buckets: directory.buckets.length, largestBucket: Math.min(size, ROWS) });
}
console.log(`wrote ${ROWS * SIZES.length} rows in ${((performance.now() - started) / 1000).toFixed(1)} s`);

// 2. Partition size: flush, then the followers table's largest partition.
let maxPartitionBytes = Number.NaN;
let sizeNote = '';
try {
  // One client JVM for both (`nodetoolBatch`); either failing is reported as before.
  const replies = await nodetoolBatch([
    ['flush', keyspace],
    ['tablestats', '-F', 'json', keyspace],
  ]);
  for (const r of replies) if (r.code !== 0) throw new Error(`nodetool exited ${r.code}\n${r.out.trim()}`);
  const stats = JSON.parse(replies[1]?.out ?? '') as Record<
    string,
    { tables?: Record<string, Record<string, unknown>> }
  >;
  const t = stats[keyspace]?.tables?.followers;
  maxPartitionBytes = Number(t?.compacted_partition_maximum_bytes);
  sizeNote = `followers largest partition ${maxPartitionBytes} B (nodetool tablestats after a flush: the upper edge of a histogram bucket, ≤ ~20% above)`;
} catch (e) {
  sizeNote = `no partition size (nodetool: ${(e instanceof Error ? e.message : String(e)).split('\n').at(-1)})`;
}
const largest = Math.max(...plans.map((p) => p.largestBucket));
const bytesPerRow = maxPartitionBytes / largest;
console.log(`${sizeNote}; ${bytesPerRow.toFixed(1)} bytes per row over the largest bucket (${largest} rows)`);

// 3. Pages at random depths, plans interleaved.
let state = SEED >>> 0 || 1;
const random = () => {
  // mulberry32
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const depths = Array.from({ length: PAGES }, () => Math.floor(random() * ROWS));
let last: ListReadStats | null = null;
const svc = new BucketedListService({
  store,
  cursorSecret: 'bench-cursor-secret-0123456789',
  bucketThresholds: [],
  layoutCacheTtlMs: 3_600_000,
  onPage: (s) => {
    last = s;
  },
});
/** The page of LIMIT starting at depth d (newest first: the row of follower ROWS-1-d). */
const pageAt = (list: ListKey, d: number) => svc.page(list, LIMIT, null, { until: P0 + BigInt(ROWS - d) });
for (const p of plans) {
  for (const d of depths.slice(0, 5)) {
    const items = (await pageAt(p.list, d)).items;
    const want = Math.min(LIMIT, ROWS - d);
    if (items.length !== want || items[0]?.id !== FIRST + BigInt(ROWS - 1 - d) || !items[0]?.username)
      throw new Error(`plan ${p.size}, depth ${d}: ${items.length} items from ${items[0]?.id}`);
  }
}
interface Rep {
  p50: number;
  p99: number;
  rows: number;
  queries: number;
}
const reps = new Map<number, Rep[]>(plans.map((p) => [p.size, []]));
for (let r = 0; r < REPS; r++) {
  const order = r % 2 === 0 ? plans : [...plans].reverse();
  for (const p of order) {
    const times: number[] = [];
    let rows = 0;
    let queries = 0;
    for (const d of depths) {
      const t = performance.now();
      await pageAt(p.list, d);
      times.push(performance.now() - t);
      const s = last as ListReadStats | null;
      rows += s?.rowsRead ?? 0;
      queries += s?.queries ?? 0;
    }
    const s = sortedCopy(times);
    reps
      .get(p.size)!
      .push({ p50: percentile(s, 50), p99: percentile(s, 99), rows: rows / PAGES, queries: queries / PAGES });
  }
  bench.progress(`rep ${r + 1}/${REPS}, load ${loadAverage()}`, r === REPS - 1);
}
const ref = reps.get(REFERENCE)!;
const rows = plans.map((p) => {
  const rs = reps.get(p.size)!;
  const med = (f: (x: Rep) => number) => percentile(sortedCopy(rs.map(f)), 50);
  const p99 = ratioSummary(rs.map((x) => x.p99));
  return {
    bucket_rows: p.size,
    buckets: p.buckets,
    partition_MiB: Number.isFinite(bytesPerRow) ? +((p.largestBucket * bytesPerRow) / MiB).toFixed(2) : '',
    p50_ms: +med((x) => x.p50).toFixed(3),
    p99_ms: `${p99.median} [${p99.min}–${p99.max}]`,
    [`p99 ÷ ${REFERENCE}`]: (() => {
      const q = ratioSummary(rs.map((x, k) => x.p99 / ref[k]!.p99));
      return `${q.median} [${q.min}–${q.max}]`;
    })(),
    rows_per_page: +med((x) => x.rows).toFixed(1),
    queries_per_page: +med((x) => x.queries).toFixed(2),
  };
});
console.table(rows);
const title = `${ROWS.toLocaleString('en-US')} rows, ${PAGES} random depths × ${REPS} reps, limit ${LIMIT}`;
const cost = lineChartSvg(
  `page latency against time-bucket size (${title})`,
  [
    { name: 'p50 ms', points: rows.map((r) => [r.bucket_rows, r.p50_ms] as const) },
    {
      name: 'p99 ms (median of reps)',
      points: plans.map((p) => [p.size, ratioSummary(reps.get(p.size)!.map((x) => x.p99)).median] as const),
    },
  ],
  { x: 'rows per bucket', y: 'ms', logX: true },
);
const size = lineChartSvg(
  `largest followers partition against time-bucket size (MiB; ${bytesPerRow.toFixed(1)} B/row; T10 bound 64)`,
  [
    {
      name: 'partition MiB',
      points: plans.map((p) => [p.size, (p.largestBucket * bytesPerRow) / MiB] as const),
    },
    { name: '64 MiB bound', points: plans.map((p) => [p.size, 64] as const) },
  ],
  { x: 'rows per bucket', y: 'MiB', logX: true },
);
const svg = [
  '<svg xmlns="http://www.w3.org/2000/svg" width="760" height="760">',
  cost.replace('<svg ', '<svg x="0" y="0" '),
  size.replace('<svg ', '<svg x="0" y="380" '),
  '</svg>',
].join('\n');
const written = await bench.writeResults(
  'bucket-pages',
  {
    at: new Date().toISOString(),
    rows: ROWS,
    limit: LIMIT,
    pages: PAGES,
    reps: REPS,
    seed: SEED,
    reference: REFERENCE,
    maxPartitionBytes,
    bytesPerRow,
    plans: plans.map((p) => ({ ...p, list: undefined, reps: reps.get(p.size) })),
    table: rows,
  },
  svg,
  markdownTable(`bench:buckets: page cost against time-bucket size (${title})`, rows, [
    `at ${new Date().toISOString()}, keyspace ${keyspace}, seed ${SEED}, load average ${loadAverage()}`,
    `${sizeNote}; partition MiB = bucket rows × ${bytesPerRow.toFixed(1)} B/row`,
    'p50: median over repetitions; p99: median [min–max] over repetitions; ratios per repetition against the reference plan.',
  ]),
);
console.log(`wrote ${written}`);
await bench.close();
