/**
 * `npm run bench:smoke`: every bench in `bench/*.ts` once, at tiny sizes, so a bench that rots
 * (a statement that gained a marker, a renamed import, a result file another bench reads) fails CI
 * instead of the next person who runs it at 9M.
 *
 * Each bench runs as its own process, exactly as `npm run bench:<name>` runs it (they are
 * top-level-await scripts that exit with their verdict), with the arguments in `SMOKE` below, a
 * time limit (`--timeout`, 300 s: the first bench migrates the keyspace, minutes on a busy node)
 * and `BENCH_RESULTS_DIR` pointed at a fresh temporary directory (removed at the end): a smoke run
 * never writes into `bench/results/`. Postgres arms are skipped: no run passes `--with-postgres`. Every bench
 * gets `--keyspace bench_smoke`: one keyspace for the whole run, so the celebrity benches share
 * one load — but for the few marked `aside` in `SMOKE`, which run in a second lane beside the
 * rest, each in a keyspace of its own (a new keyspace is made from the baseline in seconds). The
 * celebrity benches share one tiny load (`bench:load --followers 200`, first, on the empty
 * keyspace: its verification counts whole tables), the threshold bench reads the bucket and
 * partition results written before it, in the same directory.
 *
 * The node: `CASSANDRA_CONTACT_POINTS` when set, else the project's own local node, started (or
 * reused) and stopped the way `src/main.ts` and the jobs do it (`contactPointsOrLocalNode`).
 * `bench_smoke` is dropped first, so a rerun on the same node starts clean (two smoke runs
 * against one node at once would share it), and left in place after, to look into.
 *
 * Exits non-zero when any bench exits non-zero, is killed by its time limit, or when a bench file
 * has no entry here (a new bench must say how it runs small).
 *
 *   npm run bench:smoke -- [--only load-celebrity,page-depth] [--timeout 300]
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { contactPointsOrLocalNode } from '../src/local-cassandra/node.js';
import { defaultNodeOptions } from '../src/local-cassandra/node-options.js';
import { SCHEMA_CHANGE } from '../src/store/cassandra/client.js';
import { openBench } from './support/harness.js';

/** The smoke's one keyspace (dropped before the run), celebrity size and list size. */
const KEYSPACE = 'bench_smoke';
const F = 200;
const LIST_ROWS = 2000;

/**
 * Every bench file (without `.ts`) and its tiny arguments, in the order they run. `aside`: the
 * bench runs in a second lane beside the others, in a keyspace of its own (`bench_smoke_<file>`,
 * dropped first like the main one) — for the benches that mostly wait (the feed's settle, a
 * broker's start) and whose verdict counts only their own keyspace's feed.
 */
const SMOKE: readonly (readonly [file: string, args: readonly string[], lane?: 'aside'])[] = [
  [
    'load-celebrity',
    [
      `--followers=${F}`,
      '--background-users=200',
      '--background-follows=3',
      '--t1-window=100',
      '--t1-reps=1',
    ],
  ],
  ['http-walk', [`--followers=${F}`, '--limit=50', '--count-queries']],
  ['partitions', [`--followers=${F}`]],
  ['bucket-pages', [`--rows=${LIST_ROWS}`, '--sizes=500,1000,2000', '--pages=5', '--reps=1']],
  ['thresholds', [`--followers=${F}`, `--partitions=partitions-${KEYSPACE}`]],
  ['page-depth', [`--rows=${LIST_ROWS}`, '--reps=5']],
  ['celebrity-page', [`--followers=${F}`, '--reps=1', '--p99-reps=1', '--rounds=5', '--concurrency=1']],
  ['celebrity-scan', [`--followers=${F}`, '--slices=1,2', '--reps=1']],
  ['celebrity-probe', [`--followers=${F}`, '--reps=1', '--rounds=20']],
  ['search', [`--followers=${F}`, '--reps=1', '--rounds=5', '--without-postgres', '--index']],
  ['first-page', [`--followers=${F}`, '--reps=1', '--seconds=1', '--rate=20', '--without-postgres']],
  ['first-page-http', [`--followers=${F}`, '--reps=1', '--seconds=1', '--rate=20', '--without-peer']],
  ['feed-waiters', ['--long-polls=5', '--streams=5', '--cap=10', '--over=3', '--seconds=1'], 'aside'],
  ['feed-tail', ['--rate=200', '--seconds=2', '--writers=8', '--warm=0'], 'aside'],
  ['feed-late', ['--late=5', '--gap-ms=10', '--users=4'], 'aside'],
  [
    'celebrity-count',
    [`--followers=${F}`, '--reps=1', '--rounds=20', '--concurrency=4', '--deactivate=5', '--recount-reps=1'],
  ],
  [
    'follow-write',
    [`--followers=${F}`, '--reps=1', '--rounds=20', '--callers=4', '--users=40', '--warmup=20', '--s2'],
  ],
  [
    'events',
    [
      `--followers=${F}`,
      '--reps=1',
      '--rounds=10',
      '--callers=2',
      '--users=30',
      '--deliveries=5',
      '--gap-ms=10',
    ],
  ],
  ['http-celebrity', [`--followers=${F}`, '--reps=1', '--connections=2', '--duration=1']],
  ['tracing', [`--followers=${F}`, '--reps=2', '--rounds=20']],
  ['write-path', ['--follows=40', '--users=30', '--callers=1,4', '--rounds=1']],
  ['http-load', ['--duration=1', '--connections=2', '--followers=60']],
  ['suggest', ['--users=2000', '--edges=20000']],
  ['cache-memory', ['--users=20000', '--edges=2000', '--following=15000']],
  ['relay', ['--events=2000', '--crash-events=2000', '--crashes=1', '--batch=100', '--pairs=50'], 'aside'],
  [
    'all-in',
    [
      '--follows=100',
      '--rate=50',
      '--users=50',
      '--settle-seconds=3',
      '--idle-seconds=3',
      '--quiet-seconds=20',
      '--window-seconds=3',
    ],
    'aside',
  ],
  ['mixed', ['--seconds=5', '--warmup-seconds=1', '--clients=4', '--users=200', '--celebrity=500'], 'aside'],
  ['mixed-compare', ['latest', '--against-ours'], 'aside'],
  ['profile', ['--seconds=5', '--out=smoke', '--', 'bench/suggest.ts', '--users=2000', '--edges=20000']],
];

const bench = openBench({
  usage: 'npm run bench:smoke -- [--only load-celebrity,page-depth] [--timeout 300]',
  options: {
    only: { type: 'string' },
    timeout: { type: 'string', default: '300' },
  },
});
const TIMEOUT_S = Number(bench.args.timeout);
const ROOT = fileURLToPath(new URL('..', import.meta.url));

const files = readdirSync(new URL('.', import.meta.url))
  .filter((f) => f.endsWith('.ts') && f !== 'smoke.ts')
  .map((f) => f.slice(0, -3));
const missing = files.filter((f) => !SMOKE.some(([name]) => name === f));
const stale = SMOKE.filter(([name]) => !files.includes(name)).map(([name]) => name);
if (missing.length > 0 || stale.length > 0) {
  console.error(
    `[bench:smoke] every bench needs one entry in SMOKE (bench/smoke.ts): ${missing.length ? `missing ${missing.join(', ')}` : ''}${missing.length && stale.length ? '; ' : ''}${stale.length ? `no such bench ${stale.join(', ')}` : ''}`,
  );
  process.exit(1);
}
const only = bench.args.only?.split(',');
const runs = only ? SMOKE.filter(([name]) => only.includes(name)) : SMOKE;

const started = performance.now();
const configured = process.env.CASSANDRA_CONTACT_POINTS ? bench.config.contactPoints : undefined;
const { contactPoints, node } = await contactPointsOrLocalNode(
  configured,
  defaultNodeOptions().heap,
  (line) => console.log(`[cassandra] ${line}`),
);
if (node) {
  console.log(
    `[bench:smoke] local node ${node.owned ? `started in ${(node.startupMs / 1000).toFixed(1)} s` : 'reused'}`,
  );
}
const resultsDir = await mkdtemp(join(tmpdir(), 'flocklist-bench-smoke-'));
const env = {
  ...process.env,
  CASSANDRA_CONTACT_POINTS: contactPoints.join(','),
  CASSANDRA_LOCAL_DC: bench.config.localDataCenter,
  BENCH_RESULTS_DIR: resultsDir,
};

/** One bench as a child process; resolves to its exit code (124 when its time ran out). */
function runBench(file: string, args: readonly string[]): Promise<number> {
  const child = spawn(process.execPath, ['--import', 'tsx', `bench/${file}.ts`, ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'inherit', 'inherit'],
    detached: true,
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    // The bench's own children (autocannon, the profiled script) go with it: it leads its group.
    if (child.pid) process.kill(-child.pid, 'SIGKILL');
  }, TIMEOUT_S * 1000);
  return new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(timedOut ? 124 : (code ?? (signal ? 1 : 0)));
    });
  });
}

const outcomes: { file: string; code: number; seconds: number }[] = [];
const keyspaceOf = (file: string, lane?: 'aside') =>
  lane === 'aside' ? `${KEYSPACE}_${file.replace(/\W/g, '_')}` : KEYSPACE;
/** Runs `lane`'s benches one after another. */
async function runLane(lane: typeof runs) {
  for (const [file, args, aside] of lane) {
    const keyspace = keyspaceOf(file, aside);
    console.log(
      `\n[bench:smoke] ── ${file} --keyspace=${keyspace} ${args.join(' ')}${aside ? ' (aside)' : ''}`,
    );
    const t0 = performance.now();
    const code = await runBench(file, [`--keyspace=${keyspace}`, ...args]);
    const seconds = (performance.now() - t0) / 1000;
    outcomes.push({ file, code, seconds });
    console.log(
      `[bench:smoke] ${file}: ${code === 0 ? 'ok' : code === 124 ? `timed out after ${TIMEOUT_S} s` : `FAILED (exit ${code})`} in ${seconds.toFixed(1)} s`,
    );
  }
}
try {
  const admin = await bench.cql();
  for (const keyspace of new Set(runs.map(([file, , lane]) => keyspaceOf(file, lane)))) {
    await admin.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`, [], SCHEMA_CHANGE);
  }
  await bench.close();
  console.log(
    `[bench:smoke] ${runs.length} benches on ${contactPoints.join(',')}, results in ${resultsDir}, ${TIMEOUT_S} s each at most`,
  );
  // Their output interleaves; each bench's first and last lines name it.
  await Promise.all([
    runLane(runs.filter(([, , lane]) => lane !== 'aside')),
    runLane(runs.filter(([, , lane]) => lane === 'aside')),
  ]);
} finally {
  await rm(resultsDir, { recursive: true, force: true });
  if (node) await node.stop();
}

const order = (file: string) => SMOKE.findIndex(([name]) => name === file);
outcomes.sort((x, y) => order(x.file) - order(y.file));
const failed = outcomes.filter((o) => o.code !== 0);
console.log(`\n[bench:smoke] ${'bench'.padEnd(16)} exit  seconds`);
for (const o of outcomes) {
  console.log(
    `[bench:smoke] ${o.file.padEnd(16)} ${String(o.code).padStart(4)}  ${o.seconds.toFixed(1).padStart(7)}`,
  );
}
console.log(
  `[bench:smoke] ${outcomes.length - failed.length} of ${outcomes.length} benches passed${failed.length ? `; failed: ${failed.map((o) => o.file).join(', ')}` : ''}; total ${((performance.now() - started) / 1000).toFixed(1)} s`,
);
process.exit(failed.length > 0 ? 1 : 0);
