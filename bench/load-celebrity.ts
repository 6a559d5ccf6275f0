/**
 * Bulk load of one celebrity with `--followers` followers (default 9,000,000), each a real `users`
 * row, written with the service's own statements and the same position/version semantics as a
 * follow through `GraphService`:
 *
 *   follower i = FIRST_FOLLOWER + i, position p_i = P0 + i (µs), version = pairVersion of a history
 *   holding one follow op at p_i with base 0 = p_i·1024 + 1.
 *   users, pair_ops (kind follow, base 0, so repair re-folds to the same state), edges_out and the
 *   follower's `following` row (its out-list has no layout row: one bucket, code 1), edges_in and
 *   the celebrity's `followers` row in bucket code N | murmur3(i) & (N-1), N = bucketsForSize(F,
 *   thresholds). Then the layout row (written first, so a reader never sees rows outside it) and
 *   the celebrity's follower count, set to exactly F.
 *
 * Rows stream chunk by chunk through a bounded pool of requests (memory stays flat). Per-follower
 * tables get single-row inserts; `followers` and `edges_in` rows of one chunk are grouped into
 * unlogged single-partition batches (one mutation each). Every write is idempotent (fixed cells,
 * fixed `USING TIMESTAMP`), so resuming is just re-running: progress is a chunk watermark in
 * `bench_load_progress`, committed when every chunk below it finished, and a rerun rewrites at most
 * the chunks that were in flight. The last step counts every table written and states the counts.
 *
 * Not written: `usernames` rows (an LWT per user; the loader's users are never renamed), the
 * followers' own `following` counters (counter increments are not idempotent, so they would break
 * resumability; the reconcile job can set them).
 *
 * T1 (ours ÷ raw): after the load is verified, `--t1-reps` repetitions (default 3, 0 skips) rewrite
 * the first `--t1-window` followers (default min(F, 50,000)) twice, interleaved A B / B A: A is this
 * loader's chunk path (same statements, batches and pool), B the best plain raw form, the driver's
 * `executeConcurrent` with one prepared single-row INSERT per row into the same six tables at the
 * same concurrency. Both write the very same cells (fixed values and timestamps), so the counts
 * stay exact; rows/s of each, the median ratio and its spread go into the results.
 *
 *   npm run bench:load -- [--followers 9000000] [--concurrency 256] [--chunk 2000] [--thresholds …]
 *     [--t1-window 50000] [--t1-reps 3]
 */
import { parseArgs } from 'node:util';
import cassandra from 'cassandra-driver';
import { bucketCode, bucketOf } from '../src/graph/buckets.js';
import { bucketsForSize } from '../src/graph/list-service.js';
import { CassandraGraphStore } from '../src/store/cassandra/graph-store.js';
import { LQ, Q } from '../src/store/cassandra/statements.js';
import type { ListKey } from '../src/store/types.js';
import { barChartSvg } from './support/bench-lists.js';
import {
  CELEBRITY,
  cpuMeter,
  FIRST_FOLLOWER,
  keyspaceFor,
  loadAverage,
  openCelebrityKeyspace,
  peakRssMiB,
  ratioSummary,
  writeResults,
} from './support/harness.js';

const { values: args } = parseArgs({
  options: {
    followers: { type: 'string', default: '9000000' },
    concurrency: { type: 'string', default: '256' },
    chunk: { type: 'string', default: '2000' },
    batch: { type: 'string', default: '100' },
    't1-window': { type: 'string', default: '50000' },
    't1-reps': { type: 'string', default: '3' },
    thresholds: {
      type: 'string',
      default: process.env.GRAPH_BUCKET_THRESHOLDS ?? '250000,500000,1000000,2000000,4000000,8000000',
    },
  },
});
const F = Number(args.followers);
const CONCURRENCY = Number(args.concurrency);
const CHUNK = Number(args.chunk);
const BATCH = Number(args.batch);
const T1_REPS = Number(args['t1-reps']);
const THRESHOLDS = (args.thresholds ?? '').split(',').map(Number);
const N = bucketsForSize(F, THRESHOLDS);
const T1_WINDOW = Math.min(F, Number(args['t1-window']));
/** Fixed first position (2023-11-14T22:13:20Z in µs): a rerun writes the very same cells. */
const P0 = 1_700_000_000_000_000n;
const ROWS_PER_FOLLOWER = 6;

const celebrityIn: ListKey = { userId: CELEBRITY, relation: 'follows', direction: 'in' };

const client = await openCelebrityKeyspace(F, 120_000);
const store = new CassandraGraphStore(client);
await client.execute(
  'CREATE TABLE IF NOT EXISTS bench_load_progress (run text PRIMARY KEY, followers bigint, done_through bigint, finished boolean)',
);
const RUN = 'celebrity';
const saved = (
  await client.execute(
    'SELECT followers, done_through, finished FROM bench_load_progress WHERE run = ?',
    [RUN],
    { prepare: true },
  )
).first();
const resumeFrom = saved ? Number(saved.done_through as bigint) : 0;
console.log(
  `keyspace ${keyspaceFor(F)}: ${F} followers, N=${N} buckets, ${resumeFrom > 0 ? `resuming at ${resumeFrom}` : 'from the start'}; load average ${loadAverage()}`,
);

const opts = { prepare: true, isIdempotent: true } as const;
const fCode = (i: number) => bucketCode(N, bucketOf(FIRST_FOLLOWER + BigInt(i), N));

let inflight = 0;
const waiters: (() => void)[] = [];
let failed: unknown = null;
async function slot(): Promise<void> {
  while (inflight >= CONCURRENCY) await new Promise<void>((r) => waiters.push(r));
  inflight++;
}
function release() {
  inflight--;
  waiters.shift()?.();
}
async function send(run: () => Promise<unknown>): Promise<void> {
  await slot();
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        await run();
        return;
      } catch (e) {
        if (attempt >= 5) throw e;
        await new Promise((r) => setTimeout(r, 200 * attempt));
      }
    }
  } finally {
    release();
  }
}

async function writeChunk(from: number, to: number): Promise<void> {
  const pending: Promise<void>[] = [];
  const byCode = new Map<number, number[]>();
  for (let i = from; i < to; i++) {
    const follower = FIRST_FOLLOWER + BigInt(i);
    const pos = P0 + BigInt(i);
    const version = pos * 1024n + 1n;
    const [low, high] = follower < CELEBRITY ? [follower, CELEBRITY] : [CELEBRITY, follower];
    pending.push(
      send(() => client.execute(Q.putUser, [follower, `u${follower}`, false, 'active', false], opts)),
      send(() => client.execute(Q.appendOp, [low, high, pos, follower, 'follow', 0n], opts)),
      send(() =>
        client.execute(Q.putOut, [follower, 'follows', CELEBRITY, 'active', pos, pos, version], opts),
      ),
      send(() => client.execute(LQ.following.putRow, [follower, 1, pos, CELEBRITY, pos, version], opts)),
    );
    const code = fCode(i);
    const list = byCode.get(code) ?? [];
    byCode.set(code, list);
    list.push(i);
  }
  for (const [code, members] of byCode) {
    for (let k = 0; k < members.length; k += BATCH) {
      const part = members.slice(k, k + BATCH);
      const rows = part.map((i) => {
        const pos = P0 + BigInt(i);
        return { follower: FIRST_FOLLOWER + BigInt(i), pos, version: pos * 1024n + 1n };
      });
      pending.push(
        send(() =>
          client.batch(
            rows.map((r) => ({
              query: LQ.followers.putRow,
              params: [CELEBRITY, code, r.pos, r.follower, r.pos, r.version],
            })),
            { ...opts, logged: false },
          ),
        ),
        send(() =>
          client.batch(
            rows.map((r) => ({
              query: Q.putIn,
              params: [CELEBRITY, 'follows', code, r.follower, 'active', r.pos, r.pos, r.version],
            })),
            { ...opts, logged: false },
          ),
        ),
      );
    }
  }
  await Promise.all(pending);
}

await client.execute(Q.putUser, [CELEBRITY, `celebrity${CELEBRITY}`, false, 'active', false], opts);
await store.putLayout(celebrityIn, { buckets: N, growingTo: null, copiedThrough: 0 });

const meter = cpuMeter();
const tty = process.stdout.isTTY;
const started = performance.now();
let written = resumeFrom;
let watermark = resumeFrom;
const doneChunks = new Set<number>();
const chunkRuns = new Set<Promise<void>>();
let lastLine = performance.now();
const progress = (force = false) => {
  const now = performance.now();
  if (!force && now - lastLine < 2000) return;
  lastLine = now;
  const s = (now - started) / 1000;
  const rate = ((written - resumeFrom) * ROWS_PER_FOLLOWER) / s;
  const eta = rate > 0 ? ((F - written) * ROWS_PER_FOLLOWER) / rate : Number.POSITIVE_INFINITY;
  const line = `${written}/${F} followers, ${Math.round(rate)} rows/s, ETA ${Math.round(eta)} s, rss ${Math.round(process.memoryUsage().rss / 2 ** 20)} MiB, load ${loadAverage()}`;
  if (tty) process.stdout.write(`\r\x1b[K${line}`);
  else console.log(line);
};
const ticker = setInterval(() => progress(), 2000);

async function commitWatermark() {
  while (doneChunks.has(watermark)) {
    doneChunks.delete(watermark);
    watermark = Math.min(F, watermark + CHUNK);
  }
  await client.execute(
    'INSERT INTO bench_load_progress (run, followers, done_through, finished) VALUES (?, ?, ?, false)',
    [RUN, BigInt(F), BigInt(watermark)],
    opts,
  );
}

for (let from = resumeFrom; from < F && !failed; from += CHUNK) {
  const to = Math.min(F, from + CHUNK);
  // Bounded: at most a few chunks are being issued while earlier ones drain.
  while (chunkRuns.size >= 4) await Promise.race(chunkRuns);
  const run = writeChunk(from, to).then(
    async () => {
      written += to - from;
      doneChunks.add(from);
      await commitWatermark();
    },
    (e: unknown) => {
      failed = e;
    },
  );
  const tracked = run.finally(() => chunkRuns.delete(tracked));
  chunkRuns.add(tracked);
}
await Promise.all(chunkRuns);
clearInterval(ticker);
progress(true);
if (tty) process.stdout.write('\n');
if (failed) {
  console.error('load failed; rerun to resume', failed);
  await client.shutdown();
  process.exit(1);
}
const loadSpan = meter();

// Counts: set the celebrity's follower count to exactly F (read the shards' sum, add the gap).
const current = await store.getCount(celebrityIn);
if (current !== F) await store.incrementCount(celebrityIn, 0, F - current);
await client.execute('UPDATE bench_load_progress SET finished = true WHERE run = ?', [RUN], opts);

console.log(`verifying row counts (load average ${loadAverage()})…`);
const verifyStart = performance.now();
const MIN = -(2n ** 63n);
const MAX = 2n ** 63n - 1n;
async function countTable(table: string, pk: string): Promise<number> {
  const ranges = Math.max(32, Math.ceil(F / 20_000));
  const step = (MAX - MIN) / BigInt(ranges);
  let total = 0;
  const bounds = Array.from(
    { length: ranges },
    (_, r) => [MIN + step * BigInt(r), r === ranges - 1 ? MAX : MIN + step * BigInt(r + 1)] as const,
  );
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < bounds.length) {
        const [lo, hi] = bounds[next++]!;
        const q = `SELECT COUNT(*) AS n FROM ${table} WHERE token(${pk}) ${lo === MIN ? '>=' : '>'} ? AND token(${pk}) <= ?`;
        const rs = await client.execute(q, [lo, hi], { prepare: true, readTimeout: 120_000 });
        total += Number(rs.first()?.n as bigint);
      }
    }),
  );
  return total;
}
async function countCelebrityPartitions(table: string, key: string): Promise<number> {
  let total = 0;
  for (let b = 0; b < N; b++) {
    const rs = await client.execute(
      `SELECT COUNT(*) AS n FROM ${table} WHERE ${key}`,
      [CELEBRITY, bucketCode(N, b)],
      {
        prepare: true,
        readTimeout: 120_000,
      },
    );
    total += Number(rs.first()?.n as bigint);
  }
  return total;
}
const counts = {
  users: await countTable('users', 'user_id'),
  pair_ops: await countTable('pair_ops', 'low_id, high_id'),
  edges_out: await countTable('edges_out', 'source_id'),
  following: await countTable('following', 'user_id, bucket'),
  edges_in: await countCelebrityPartitions(
    'edges_in',
    "target_id = ? AND relation = 'follows' AND bucket = ?",
  ),
  followers: await countCelebrityPartitions('followers', 'user_id = ? AND bucket = ?'),
  list_layouts_buckets: (await store.getLayout(celebrityIn)).buckets,
  list_counts: await store.getCount(celebrityIn),
};
const expected = {
  users: F + 1,
  pair_ops: F,
  edges_out: F,
  following: F,
  edges_in: F,
  followers: F,
  list_layouts_buckets: N,
  list_counts: F,
};
const verifyS = (performance.now() - verifyStart) / 1000;

// T1: the loader's chunk path (A) against raw executeConcurrent single-row inserts (B).
async function oursWindow(): Promise<void> {
  const runs = new Set<Promise<void>>();
  for (let from = 0; from < T1_WINDOW; from += CHUNK) {
    while (runs.size >= 4) await Promise.race(runs);
    const run = writeChunk(from, Math.min(T1_WINDOW, from + CHUNK));
    const tracked = run.finally(() => runs.delete(tracked));
    runs.add(tracked);
  }
  await Promise.all(runs);
}
async function rawWindow(): Promise<void> {
  const STEP = 10_000;
  for (let from = 0; from < T1_WINDOW; from += STEP) {
    const to = Math.min(T1_WINDOW, from + STEP);
    const items: { query: string; params: unknown[] }[] = [];
    for (let i = from; i < to; i++) {
      const follower = FIRST_FOLLOWER + BigInt(i);
      const pos = P0 + BigInt(i);
      const version = pos * 1024n + 1n;
      const [low, high] = follower < CELEBRITY ? [follower, CELEBRITY] : [CELEBRITY, follower];
      const code = fCode(i);
      items.push(
        { query: Q.putUser, params: [follower, `u${follower}`, false, 'active', false] },
        { query: Q.appendOp, params: [low, high, pos, follower, 'follow', 0n] },
        { query: Q.putOut, params: [follower, 'follows', CELEBRITY, 'active', pos, pos, version] },
        { query: LQ.following.putRow, params: [follower, 1, pos, CELEBRITY, pos, version] },
        { query: LQ.followers.putRow, params: [CELEBRITY, code, pos, follower, pos, version] },
        { query: Q.putIn, params: [CELEBRITY, 'follows', code, follower, 'active', pos, pos, version] },
      );
    }
    await cassandra.concurrent.executeConcurrent(client, items, {
      concurrencyLevel: CONCURRENCY,
      raiseOnFirstError: true,
    });
  }
}
const t1Runs: {
  arm: 'ours' | 'raw';
  rep: number;
  rowsPerS: number;
  wallS: number;
  nodeCpuS: number;
  jvmCpuS: number;
}[] = [];
if (T1_REPS > 0) {
  console.log(
    `T1: ${T1_REPS} reps of ${T1_WINDOW} followers (${T1_WINDOW * ROWS_PER_FOLLOWER} rows) per arm`,
  );
  await rawWindow(); // warm-up (prepares the raw statements' plan and caches)
  for (let rep = 0; rep < T1_REPS; rep++) {
    for (const arm of (rep % 2 === 0 ? ['ours', 'raw'] : ['raw', 'ours']) as ('ours' | 'raw')[]) {
      const m = cpuMeter();
      if (arm === 'ours') await oursWindow();
      else await rawWindow();
      const c = m();
      const rowsPerS = (T1_WINDOW * ROWS_PER_FOLLOWER) / c.wallS;
      t1Runs.push({
        arm,
        rep,
        rowsPerS: Math.round(rowsPerS),
        wallS: +c.wallS.toFixed(2),
        nodeCpuS: +c.nodeCpuS.toFixed(1),
        jvmCpuS: +c.jvmCpuS.toFixed(1),
      });
      console.log(
        `T1 rep ${rep} ${arm}: ${Math.round(rowsPerS)} rows/s (${c.wallS.toFixed(1)} s, node CPU ${c.nodeCpuS.toFixed(1)} s, JVM CPU ${c.jvmCpuS.toFixed(1)} s), load ${loadAverage()}`,
      );
    }
  }
  if (failed) throw failed;
}
const t1 =
  T1_REPS > 0
    ? ratioSummary(
        Array.from({ length: T1_REPS }, (_, rep) => {
          const of = (arm: string) => t1Runs.find((r) => r.rep === rep && r.arm === arm)!.rowsPerS;
          return of('ours') / of('raw');
        }),
      )
    : null;
const ok = Object.entries(expected).every(([k, v]) => counts[k as keyof typeof counts] === v);
const rowsWritten = (F - resumeFrom) * ROWS_PER_FOLLOWER;
const summary = {
  followers: F,
  buckets: N,
  resumedFrom: resumeFrom,
  concurrency: CONCURRENCY,
  chunk: CHUNK,
  batch: BATCH,
  rowsWrittenThisRun: rowsWritten,
  loadWallS: +loadSpan.wallS.toFixed(1),
  rowsPerS: Math.round(rowsWritten / loadSpan.wallS),
  nodeCpuS: +loadSpan.nodeCpuS.toFixed(1),
  jvmCpuS: +loadSpan.jvmCpuS.toFixed(1),
  peakRssMiB: Math.round(peakRssMiB()),
  verifyS: +verifyS.toFixed(1),
  loadAverageEnd: loadAverage(),
  t1Window: T1_WINDOW,
  T1: t1,
  t1Runs,
  counts,
  expected,
  verified: ok,
};
console.log(JSON.stringify(summary, null, 2));
const md = `# bench:load ${F} followers\n\n| figure | value |\n|---|---|\n${Object.entries(summary)
  .filter(([, v]) => typeof v !== 'object')
  .map(([k, v]) => `| ${k} | ${v} |`)
  .join('\n')}\n\n| table | counted | expected |\n|---|---|---|\n${Object.keys(expected)
  .map((k) => `| ${k} | ${counts[k as keyof typeof counts]} | ${expected[k as keyof typeof expected]} |`)
  .join('\n')}\n`;
const t1Md = t1
  ? `\n## T1 (window ${T1_WINDOW} followers, ${T1_REPS} reps, A B / B A)\n\nours ÷ raw rows/s: median ${t1.median} [${t1.min}–${t1.max}]\n\n| rep | arm | rows/s | wall s | node CPU s | JVM CPU s |\n|---|---|---|---|---|---|\n${t1Runs
      .map((r) => `| ${r.rep} | ${r.arm} | ${r.rowsPerS} | ${r.wallS} | ${r.nodeCpuS} | ${r.jvmCpuS} |`)
      .join('\n')}\n`
  : '';
const svg = t1
  ? barChartSvg(
      `load rows/s, ${F} followers (T1 window ${T1_WINDOW})`,
      Array.from({ length: T1_REPS }, (_, r) => `rep ${r}`),
      (['ours', 'raw'] as const).map((arm) => ({
        name: arm === 'ours' ? 'bench:load path' : 'raw executeConcurrent',
        values: Array.from(
          { length: T1_REPS },
          (_, rep) => t1Runs.find((x) => x.rep === rep && x.arm === arm)!.rowsPerS,
        ),
      })),
      'rows/s',
    )
  : `<svg xmlns="http://www.w3.org/2000/svg" width="480" height="60" font-family="sans-serif" font-size="14"><text x="10" y="35">load ${F}: ${summary.rowsPerS} rows/s, ${summary.loadWallS} s, peak RSS ${summary.peakRssMiB} MiB</text></svg>`;
console.log(`wrote ${await writeResults(`load-${F}`, summary, svg, md + t1Md)}`);
await client.shutdown();
console.log(
  `${ok ? 'VERIFIED' : 'MISMATCH'}: ${Object.entries(counts)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ')} (expected ${F} followers, N=${N})`,
);
process.exit(ok ? 0 : 1);
