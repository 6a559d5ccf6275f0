/**
 * Bulk load of one celebrity with `--followers` followers (default 9,000,000), each a real `users`
 * row, written with the service's own statements and the same position/version semantics as a
 * follow through `GraphService`:
 *
 *   follower i = FIRST_FOLLOWER + i (username `usernameFor(i)`: realistic handles, see
 *   `support/usernames.ts`), position p_i = P0 + i (µs), version = pairVersion of a history
 *   holding one follow op at p_i with base 0 = p_i·1024 + 1.
 *   users, pair_ops (kind follow, base 0, so repair re-folds to the same state), edges_out and the
 *   follower's `following` row (its out-list has no layout row: one bucket, code 1), the
 *   celebrity's `followers` row in the time bucket the service's placement gives p_i (a directory
 *   planned with `planDirectory` at `--bucket-rows`, stored first), with the follower's username
 *   in the row as the service writes it, and its `edges_in` row in hash bucket N | murmur3(i) &
 *   (N-1), N = bucketsForSize(F, thresholds) (the probe index stays hash-bucketed). Then the layout
 *   row (written first) and the celebrity's follower count, set to exactly F. `--only-list` writes
 *   only what a page reads (users and `followers` rows): 18M rows for 9M followers instead of 54M.
 *
 * Rows stream chunk by chunk through a bounded pool of requests (memory stays flat). Per-follower
 * tables get single-row inserts; `followers` and `edges_in` rows of one chunk are grouped into
 * unlogged single-partition batches (one mutation each). Every write is idempotent (fixed cells,
 * fixed `USING TIMESTAMP`), so resuming is just re-running: progress is a chunk watermark in
 * `bench_load_progress`, committed when every chunk below it finished, and a rerun rewrites at most
 * the chunks that were in flight. The last step counts every table written and states the counts.
 *
 * Then the background graph (`--background-users`, default 100,000; `--background-follows`, the
 * mean out-degree, default 10; see `support/background-graph.ts`): power-law out- and in-degrees,
 * written through the same statements (users, pair_ops, edges_out, following, followers, edges_in,
 * a layout row for any list past the first threshold), then every background list's counter set
 * to its exact size. Each phase keeps its own watermark, so an interruption anywhere resumes there.
 *
 * Progress: a bar with rows/s and ETA on a TTY, a plain line every 5 s otherwise. Every tick is
 * also appended to `<results>/load-<F>.timeline.jsonl` (cumulative over resumed runs), which
 * the run's chart draws: load rate over time, per phase.
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
 *     [--bucket-rows 250000] [--only-list]
 *     [--background-users 100000] [--background-follows 10] [--seed 1] [--t1-window 50000] [--t1-reps 3]
 */
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import cassandra from 'cassandra-driver';
import { bucketsForSize, DEFAULT_TIME_BUCKET_ROWS } from '../src/lists/list-service.js';
import { bucketCode, bucketCodeOf } from '../src/model/buckets.js';
import { nowPosition } from '../src/model/clock.js';
import { bucketFor, type Directory, planDirectory } from '../src/model/time-buckets.js';
import type { ListKey } from '../src/model/types.js';
import { LQ, Q } from '../src/store/cassandra/statements.js';
import { BACKGROUND_FIRST, backgroundGraph } from './support/background-graph.js';
import { lineChartSvg } from './support/charts.js';
import {
  CELEBRITY,
  cpuMeter,
  DEFAULT_THRESHOLDS,
  FIRST_FOLLOWER,
  keyspaceFor,
  loadAverage,
  openBench,
  peakRssMiB,
  ratioSummary,
} from './support/harness.js';
import { usernameFor } from './support/usernames.js';

const bench = openBench({
  usage:
    'npm run bench:load -- [--followers 9000000] [--concurrency 256] [--chunk 2000] [--thresholds …] [--background-users 100000] [--background-follows 10] [--seed 1] [--t1-window 50000] [--t1-reps 3]',
  options: {
    followers: { type: 'string', default: '9000000' },
    concurrency: { type: 'string', default: '256' },
    chunk: { type: 'string', default: '2000' },
    batch: { type: 'string', default: '100' },
    'background-users': { type: 'string', default: '100000' },
    'background-follows': { type: 'string', default: '10' },
    seed: { type: 'string', default: '1' },
    't1-window': { type: 'string', default: '50000' },
    't1-reps': { type: 'string', default: '3' },
    thresholds: { type: 'string', default: DEFAULT_THRESHOLDS.join(',') },
    'bucket-rows': { type: 'string', default: String(DEFAULT_TIME_BUCKET_ROWS) },
    'only-list': { type: 'boolean', default: false },
  },
});
const args = bench.args;
const F = Number(args.followers);
const CONCURRENCY = Number(args.concurrency);
const CHUNK = Number(args.chunk);
const BATCH = Number(args.batch);
const T1_REPS = args['only-list'] ? 0 : Number(args['t1-reps']);
const THRESHOLDS = (args.thresholds ?? '').split(',').map(Number);
const N = bucketsForSize(F, THRESHOLDS);
const BUCKET_ROWS = Number(args['bucket-rows']);
/** Only what a list page reads: each follower's user row and its `followers` row (no pair, edge or out-list rows). */
const ONLY_LIST = Boolean(args['only-list']);
const T1_WINDOW = Math.min(F, Number(args['t1-window']));
/** Fixed first position (2023-11-14T22:13:20Z in µs): a rerun writes the very same cells. */
const P0 = 1_700_000_000_000_000n;
const ROWS_PER_FOLLOWER = ONLY_LIST ? 2 : 6;
/** Background follow k of the global sequence sits at P_BG + k: after every celebrity follow. */
const P_BG = P0 + 20_000_000_000n;
const BG_CHUNK = 500;
const SEED = Number(args.seed);
const bg = backgroundGraph({
  users: Number(args['background-users']),
  meanFollows: Number(args['background-follows']),
  maxFollows: 7500,
  seed: SEED,
});
const U = bg.users;
const E = bg.edges;
const bgId = (i: number) => BACKGROUND_FIRST + BigInt(i);
const outOf = (id: bigint): ListKey => ({ userId: id, relation: 'follows', direction: 'out' });
const inOf = (id: bigint): ListKey => ({ userId: id, relation: 'follows', direction: 'in' });

const celebrityIn: ListKey = { userId: CELEBRITY, relation: 'follows', direction: 'in' };

const { client, store } = await bench.celebrity(F, 120_000);
await client.execute(
  'CREATE TABLE IF NOT EXISTS bench_load_progress (run text PRIMARY KEY, followers bigint, done_through bigint, finished boolean)',
);
async function savedWatermark(run: string): Promise<number> {
  const row = (
    await client.execute('SELECT done_through FROM bench_load_progress WHERE run = ?', [run], {
      prepare: true,
    })
  ).first();
  return row ? Number(row.done_through as bigint) : 0;
}
const resumeFrom = await savedWatermark('celebrity');

/**
 * The celebrity's followers list is time-bucketed like any list the service writes: its directory
 * is planned from the rows' created_at (`planDirectory`, `--bucket-rows` a bucket) and every row
 * goes to `bucketFor(directory, created_at)`, the service's own placement. Stored once, with mode
 * `time` (the inverse edges keep their N-bucket layout); a rerun checks it is the same plan.
 */
async function celebrityDirectory(): Promise<Directory> {
  function* createdAts() {
    for (let i = 0; i < F; i++) yield P0 + BigInt(i);
  }
  const planned = planDirectory(createdAts(), BUCKET_ROWS);
  const stored = await store.getDirectory(celebrityIn);
  if (stored.version === 0) {
    await store.updateDirectory(celebrityIn, 0, {
      add: planned.filter((b) => b.start !== null),
      mode: 'time',
    });
    return store.getDirectory(celebrityIn);
  }
  const same = (a: Directory['buckets'], b: Directory['buckets']) =>
    a.length === b.length && a.every((x, k) => x.id === b[k]?.id && x.start === b[k]?.start);
  if (!same(stored.buckets, planned)) {
    throw new Error(
      'the keyspace holds another bucket plan: use the --bucket-rows it was loaded with, or a new keyspace',
    );
  }
  return stored;
}
const directory = await celebrityDirectory();
console.log(
  `keyspace ${bench.config.keyspace ?? keyspaceFor(F)}: ${F} followers, N=${N} buckets, ${resumeFrom > 0 ? `resuming at ${resumeFrom}` : 'from the start'}; background ${U} users, ${E} follows (seed ${SEED}); load average ${loadAverage()}`,
);

const opts = { prepare: true, isIdempotent: true } as const;
/** The users rows' fixed write time (the statement binds one since the registry of deactivated accounts). */
const USER_WRITE_TIME = P0;
const userRow = (id: bigint, username: string) => [id, username, false, 'active', false, USER_WRITE_TIME];
/** The follower's `followers` row partition (time bucket) and its `edges_in` one (inverse-edge layout bucket of N). */
const fCode = (i: number) => bucketFor(directory, P0 + BigInt(i)).id;
const inCode = (i: number) => bucketCodeOf(N, FIRST_FOLLOWER + BigInt(i));

let inflight = 0;
const waiters: (() => void)[] = [];
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

interface ListRow {
  owner: bigint;
  /** The list row's partition; `edges_in`'s is `inCode`. */
  code: number;
  inCode: number;
  other: bigint;
  pos: bigint;
  /** The member's username, kept in the list row as a page reads it. */
  username: string;
}
/** `followers` and `edges_in` rows grouped by partition into unlogged single-partition batches. */
function sendListRows(rows: readonly ListRow[], pending: Promise<void>[], inverse = true): void {
  const group = (partition: (r: ListRow) => number) => {
    const byPartition = new Map<string, ListRow[]>();
    for (const r of rows) {
      const key = `${r.owner}:${partition(r)}`;
      const part = byPartition.get(key) ?? [];
      byPartition.set(key, part);
      part.push(r);
    }
    return [...byPartition.values()];
  };
  for (const part of group((r) => r.code)) {
    for (let k = 0; k < part.length; k += BATCH) {
      const batch = part.slice(k, k + BATCH);
      // The row, and its username cell one below the row's write time, as the service writes it.
      pending.push(
        send(() =>
          client.batch(
            batch.flatMap((r) => [
              {
                query: LQ.followers.putRow,
                params: [r.owner, r.code, r.pos, r.other, r.pos, r.pos * 1024n + 1n],
              },
              {
                query: LQ.followers.setUsername,
                params: [r.pos * 1024n, r.username, r.owner, r.code, r.pos, r.other],
              },
            ]),
            { ...opts, logged: false },
          ),
        ),
      );
    }
  }
  if (!inverse) return;
  for (const part of group((r) => r.inCode)) {
    for (let k = 0; k < part.length; k += BATCH) {
      const batch = part.slice(k, k + BATCH);
      pending.push(
        send(() =>
          client.batch(
            batch.map((r) => ({
              query: Q.putIn,
              params: [r.owner, 'follows', r.inCode, r.other, 'active', r.pos, r.pos, r.pos * 1024n + 1n],
            })),
            { ...opts, logged: false },
          ),
        ),
      );
    }
  }
}

/** The per-follower rows of one follow (`source` → `target` at `pos`): op, out edge, out list row. */
function sendFollowRows(
  source: bigint,
  target: bigint,
  pos: bigint,
  outCode: number,
  pending: Promise<void>[],
) {
  const version = pos * 1024n + 1n;
  const [low, high] = source < target ? [source, target] : [target, source];
  pending.push(
    send(() =>
      client.execute(
        Q.appendOp,
        [low, high, pos, source, 'follow', 0n, cassandra.types.unset, nowPosition()],
        opts,
      ),
    ),
    send(() => client.execute(Q.putOut, [source, 'follows', target, 'active', pos, pos, version], opts)),
    send(() => client.execute(LQ.following.putRow, [source, outCode, pos, target, pos, version], opts)),
  );
}

async function writeCelebrityChunk(from: number, to: number): Promise<void> {
  const pending: Promise<void>[] = [];
  const listRows: ListRow[] = [];
  for (let i = from; i < to; i++) {
    const follower = FIRST_FOLLOWER + BigInt(i);
    const pos = P0 + BigInt(i);
    const username = usernameFor(follower);
    pending.push(send(() => client.execute(Q.putUser, userRow(follower, username), opts)));
    if (!ONLY_LIST) sendFollowRows(follower, CELEBRITY, pos, 1, pending);
    listRows.push({ owner: CELEBRITY, code: fCode(i), inCode: inCode(i), other: follower, pos, username });
  }
  sendListRows(listRows, pending, !ONLY_LIST);
  await Promise.all(pending);
}

/** Background users `from`..`to`: their user rows and every follow they make. */
async function writeBackgroundChunk(from: number, to: number): Promise<void> {
  const pending: Promise<void>[] = [];
  const listRows: ListRow[] = [];
  for (let i = from; i < to; i++) {
    const source = bgId(i);
    const username = usernameFor(source);
    pending.push(send(() => client.execute(Q.putUser, userRow(source, username), opts)));
    const outN = bucketsForSize(bg.outDegree(i), THRESHOLDS);
    const outCode = bucketCodeOf(outN, source); // out lists stay under 7,500
    bg.targets(i).forEach((t, k) => {
      const target = bgId(t);
      const pos = P_BG + BigInt(bg.offset(i) + k);
      sendFollowRows(source, target, pos, outCode, pending);
      const inN = bucketsForSize(bg.inDegree(t), THRESHOLDS);
      // Background lists stay in one time bucket (id 1); their inverse edges take the N of their size.
      listRows.push({
        owner: target,
        code: 1,
        inCode: bucketCodeOf(inN, source),
        other: source,
        pos,
        username,
      });
    });
  }
  sendListRows(listRows, pending);
  await Promise.all(pending);
}

/** Sets every background list's counter to its exact size (read the sum, add the gap). */
async function writeBackgroundCounts(from: number, to: number): Promise<void> {
  const pending: Promise<void>[] = [];
  for (let i = from; i < to; i++) {
    for (const [list, size] of [
      [outOf(bgId(i)), bg.outDegree(i)],
      [inOf(bgId(i)), bg.inDegree(i)],
    ] as const) {
      pending.push(
        send(async () => {
          const current = await store.getCount(list);
          if (current !== size) await store.incrementCount(list, 0, size - current);
        }),
      );
    }
  }
  await Promise.all(pending);
}

// Progress: a bar on a TTY, plain lines otherwise; every tick also goes to the timeline file.
const tty = process.stdout.isTTY;
const timelineFile = bench.resultPath(`load-${F}.timeline.jsonl`);
interface Tick {
  phase: string;
  elapsedS: number;
  done: number;
  total: number;
  rowsPerS: number;
  rssMiB: number;
}
const readTimeline = (): Tick[] => {
  try {
    return readFileSync(timelineFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Tick);
  } catch {
    return [];
  }
};
if (resumeFrom === 0) writeFileSync(timelineFile, '');
/** Active seconds of earlier (interrupted) runs, so the chart's time axis runs on across resumes. */
const elapsedBefore = readTimeline().at(-1)?.elapsedS ?? 0;
const processStart = performance.now();
const fmtS = (s: number) =>
  Number.isFinite(s) ? `${Math.floor(s / 60)}m${String(Math.round(s % 60)).padStart(2, '0')}s` : '?';

/**
 * Runs one resumable phase over `total` units in chunks of `chunk`: at most 4 chunks in flight,
 * the watermark (every chunk below it done) committed after each chunk. Returns the rows written.
 */
async function runPhase(o: {
  run: string;
  total: number;
  chunk: number;
  unit: string;
  rowsPerUnit: (from: number, to: number) => number;
  write: (from: number, to: number) => Promise<void>;
}): Promise<number> {
  const from0 = await savedWatermark(o.run);
  let watermark = from0;
  let done = from0;
  let rows = 0;
  let failed: unknown = null;
  const doneChunks = new Set<number>();
  const runs = new Set<Promise<void>>();
  const started = performance.now();
  let last = { t: started, rows: 0 };
  const tick = (final = false) => {
    const now = performance.now();
    const rate = rows / ((now - started) / 1000);
    const instant = (rows - last.rows) / ((now - last.t) / 1000 || 1);
    last = { t: now, rows };
    const rssMiB = Math.round(process.memoryUsage().rss / 2 ** 20);
    const t: Tick = {
      phase: o.run,
      elapsedS: +(elapsedBefore + (now - processStart) / 1000).toFixed(1),
      done,
      total: o.total,
      rowsPerS: Math.round(instant),
      rssMiB,
    };
    appendFileSync(timelineFile, `${JSON.stringify(t)}\n`);
    const unitsPerS = (done - from0) / ((now - started) / 1000);
    const eta = unitsPerS > 0 ? (o.total - done) / unitsPerS : Number.POSITIVE_INFINITY;
    const pct = o.total > 0 ? done / o.total : 1;
    const bar = `[${'#'.repeat(Math.round(pct * 30)).padEnd(30, '.')}]`;
    const line = `${bar} ${(pct * 100).toFixed(1)}% ${o.run} ${done}/${o.total} ${o.unit}, ${Math.round(rate)} rows/s, ETA ${fmtS(eta)}, rss ${rssMiB} MiB, load ${loadAverage()}`;
    if (tty) process.stdout.write(`\r\x1b[K${line}${final ? '\n' : ''}`);
    else console.log(line);
  };
  const ticker = setInterval(tick, tty ? 1000 : 5000);
  const commit = async () => {
    while (doneChunks.has(watermark)) {
      doneChunks.delete(watermark);
      watermark = Math.min(o.total, watermark + o.chunk);
    }
    await client.execute(
      'INSERT INTO bench_load_progress (run, followers, done_through, finished) VALUES (?, ?, ?, false)',
      [o.run, BigInt(F), BigInt(watermark)],
      opts,
    );
  };
  for (let from = from0; from < o.total && !failed; from += o.chunk) {
    const to = Math.min(o.total, from + o.chunk);
    while (runs.size >= 4) await Promise.race(runs);
    const run = o.write(from, to).then(
      async () => {
        done += to - from;
        rows += o.rowsPerUnit(from, to);
        doneChunks.add(from);
        await commit();
      },
      (e: unknown) => {
        failed = e;
      },
    );
    const tracked = run.finally(() => runs.delete(tracked));
    runs.add(tracked);
  }
  await Promise.all(runs);
  clearInterval(ticker);
  tick(true);
  if (failed) {
    console.error(`${o.run} failed; rerun to resume`, failed);
    await bench.close();
    process.exit(1);
  }
  return rows;
}

await client.execute(Q.putUser, userRow(CELEBRITY, `celebrity${CELEBRITY}`), opts);
await store.putLayout(celebrityIn, { buckets: N, growingTo: null, copiedThrough: 0 });
// Background lists past the first threshold get their layout row before any of their rows.
let bgLayouts = 0;
for (let i = 0; i < U; i++) {
  for (const [list, size] of [
    [outOf(bgId(i)), bg.outDegree(i)],
    [inOf(bgId(i)), bg.inDegree(i)],
  ] as const) {
    const buckets = bucketsForSize(size, THRESHOLDS);
    if (buckets > 1) {
      await store.putLayout(list, { buckets, growingTo: null, copiedThrough: 0 });
      bgLayouts++;
    }
  }
}

const meter = cpuMeter();
let rowsWritten = await runPhase({
  run: 'celebrity',
  total: F,
  chunk: CHUNK,
  unit: 'followers',
  rowsPerUnit: (from, to) => (to - from) * ROWS_PER_FOLLOWER,
  write: writeCelebrityChunk,
});
rowsWritten += await runPhase({
  run: 'background',
  total: U,
  chunk: BG_CHUNK,
  unit: 'users',
  rowsPerUnit: (from, to) => to - from + 5 * (bg.offset(to) - bg.offset(from)),
  write: writeBackgroundChunk,
});
await runPhase({
  run: 'background-counts',
  total: U,
  chunk: BG_CHUNK * 4,
  unit: 'users',
  rowsPerUnit: (from, to) => 2 * (to - from),
  write: writeBackgroundCounts,
});
const loadSpan = meter();

// Counts: set the celebrity's follower count to exactly F (read the shards' sum, add the gap).
const current = await store.getCount(celebrityIn);
if (current !== F) await store.incrementCount(celebrityIn, 0, F - current);
await client.execute("UPDATE bench_load_progress SET finished = true WHERE run = 'celebrity'", [], opts);

console.log(`verifying row counts (load average ${loadAverage()})…`);
const verifyStart = performance.now();
const MIN = -(2n ** 63n);
const MAX = 2n ** 63n - 1n;
async function countTable(table: string, pk: string): Promise<number> {
  const ranges = Math.max(32, Math.ceil((F + E) / 20_000));
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
async function countCelebrityPartitions(
  table: string,
  key: string,
  codes: readonly number[],
): Promise<number> {
  let total = 0;
  for (const code of codes) {
    const rs = await client.execute(`SELECT COUNT(*) AS n FROM ${table} WHERE ${key}`, [CELEBRITY, code], {
      prepare: true,
      readTimeout: 120_000,
    });
    total += Number(rs.first()?.n as bigint);
  }
  return total;
}
/** Background lists whose counter differs from the generated size (must be 0). */
async function backgroundCountMismatches(): Promise<number> {
  let bad = 0;
  const checks: Promise<void>[] = [];
  for (let i = 0; i < U; i++) {
    for (const [list, size] of [
      [outOf(bgId(i)), bg.outDegree(i)],
      [inOf(bgId(i)), bg.inDegree(i)],
    ] as const) {
      checks.push(
        send(async () => {
          if ((await store.getCount(list)) !== size) bad++;
        }),
      );
    }
    if (checks.length >= 2000) await Promise.all(checks.splice(0));
  }
  await Promise.all(checks);
  return bad;
}
const counts = {
  users: await countTable('users', 'user_id'),
  pair_ops: await countTable('pair_ops', 'low_id, high_id'),
  edges_out: await countTable('edges_out', 'source_id'),
  following: await countTable('following', 'user_id, bucket'),
  edges_in: await countTable('edges_in', 'target_id, relation, bucket'),
  followers: await countTable('followers', 'user_id, bucket'),
  celebrity_edges_in: await countCelebrityPartitions(
    'edges_in',
    "target_id = ? AND relation = 'follows' AND bucket = ?",
    Array.from({ length: N }, (_, b) => bucketCode(N, b)),
  ),
  celebrity_followers: await countCelebrityPartitions(
    'followers',
    'user_id = ? AND bucket = ?',
    directory.buckets.map((b) => b.id),
  ),
  celebrity_time_buckets: directory.buckets.length,
  celebrity_buckets: (await store.getLayout(celebrityIn)).buckets,
  celebrity_count: await store.getCount(celebrityIn),
  background_count_mismatches: await backgroundCountMismatches(),
};
const full = ONLY_LIST ? 0 : F;
const expected = {
  users: F + 1 + U,
  pair_ops: full + E,
  edges_out: full + E,
  following: full + E,
  edges_in: full + E,
  followers: F + E,
  celebrity_edges_in: full,
  celebrity_followers: F,
  celebrity_time_buckets: directory.buckets.length,
  celebrity_buckets: N,
  celebrity_count: F,
  background_count_mismatches: 0,
};
const verifyS = (performance.now() - verifyStart) / 1000;

// T1: the loader's chunk path (A) against raw executeConcurrent single-row inserts (B).
async function oursWindow(): Promise<void> {
  const runs = new Set<Promise<void>>();
  for (let from = 0; from < T1_WINDOW; from += CHUNK) {
    while (runs.size >= 4) await Promise.race(runs);
    const run = writeCelebrityChunk(from, Math.min(T1_WINDOW, from + CHUNK));
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
      const username = usernameFor(follower);
      items.push(
        { query: Q.putUser, params: userRow(follower, username) },
        {
          query: Q.appendOp,
          params: [low, high, pos, follower, 'follow', 0n, cassandra.types.unset, nowPosition()],
        },
        { query: Q.putOut, params: [follower, 'follows', CELEBRITY, 'active', pos, pos, version] },
        { query: LQ.following.putRow, params: [follower, 1, pos, CELEBRITY, pos, version] },
        { query: LQ.followers.putRow, params: [CELEBRITY, code, pos, follower, pos, version] },
        { query: LQ.followers.setUsername, params: [version - 1n, username, CELEBRITY, code, pos, follower] },
        { query: Q.putIn, params: [CELEBRITY, 'follows', inCode(i), follower, 'active', pos, pos, version] },
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
const summary = {
  followers: F,
  buckets: N,
  resumedFrom: resumeFrom,
  concurrency: CONCURRENCY,
  chunk: CHUNK,
  batch: BATCH,
  backgroundUsers: U,
  backgroundFollows: E,
  backgroundMaxFollowers: Math.max(0, ...Array.from({ length: Math.min(U, 1000) }, (_, i) => bg.inDegree(i))),
  backgroundLayoutRows: bgLayouts,
  seed: SEED,
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
const timeline = readTimeline();
const svg = lineChartSvg(
  `bench:load rate over time (${F} followers + ${U} background users; ${summary.loadWallS} s this run, peak RSS ${summary.peakRssMiB} MiB)`,
  [...new Set(timeline.map((t) => t.phase))].map((phase) => ({
    name: `${phase} rows/s`,
    points: timeline.filter((t) => t.phase === phase).map((t) => [t.elapsedS / 60, t.rowsPerS] as const),
  })),
  { x: 'minutes of loading (cumulative over resumed runs)', y: 'rows/s' },
);
console.log(`wrote ${await bench.writeResults(`load-${F}`, summary, svg, md + t1Md)}`);
await bench.close();
console.log(
  `${ok ? 'VERIFIED' : 'MISMATCH'}: ${Object.entries(counts)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ')} (expected ${F} followers, N=${N})`,
);
process.exit(ok ? 0 : 1);
