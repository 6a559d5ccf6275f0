/**
 * `npm run bench:mixed` — a LinkBench-shaped mixed workload through the HTTP API, as clients run
 * the service (`node --import tsx src/main.ts` child processes, embedded worker and reconciler as
 * configured there), then an end-of-run check of everything it wrote against a model.
 *
 *   Load (may bypass HTTP): `bench:load`'s loader in a child process into a fresh keyspace: one
 *     celebrity with `--celebrity` followers and `--users` background accounts with power-law
 *     degrees (`--follows-per-user` on average; `support/background-graph.ts`, seeded with
 *     `--seed`), every counter exact. The model starts from the same generated graph.
 *   Mix (through HTTP only): `--clients` closed-loop clients for `--warmup-seconds` (not measured;
 *     the model follows it) and then `--seconds`, split over
 *     `--instances` service processes on the one node; the op mix and its Zipf-ish choice of
 *     targets are in `support/mixed-ops.ts`.
 *   Report: ops/s; p50/p99 and statuses per op; errors by status (503 is allowed under load; any
 *     other status the contract does not expect for the op is an error); all-in database requests
 *     per op: `flocklist_db_query_duration_seconds_count` summed over every instance's `/metrics`,
 *     sampled before and after the mix (background work it causes during the mix included).
 *   Check: every touched account's lists (all pages), counts and profile against the model, with
 *     reads retried up to `--settle-seconds` for what converges (`support/mixed-check.ts`).
 *
 * `--plant lost-write` drops one acknowledged follow after the mix through the API without telling
 * the model (an unfollow the model never sees): the check must fail, and the run exits 1.
 * `--target url[,url]` runs the mix against base URLs serving the same routes instead (a peer
 * implementation): nothing is started, the load goes through the API (`PUT` users and follows, as
 * the admin and the followers), and `/metrics` is read if it has the metric.
 * `--peer` runs it against the Postgres peer (`peer/`): Debian's Postgres started here
 * (`synchronous_commit=off`, fsync on: acknowledged before its WAL is flushed, as Cassandra's
 * periodic commitlog acknowledges before its sync), the same generated graph bulk-loaded into a
 * fresh database, `--instances` peer processes with `--peer-pool` connections each.
 * CPU: the seconds each party used over the measured mix (the service processes, the database
 * server with its children, this load generator), per op: nothing is pinned (two cores, three
 * parties), so the figures say who spent the machine.
 * `--cpu-prof`: the instances run under V8's profiler over the warm-up and the mix (our service's
 * node under Java Flight Recorder too), then stop to write their profiles and fresh instances
 * serve the check; the report adds self time by origin and the top functions
 * (`support/cpu-profile.ts`), and the recording's path for `bench:jvm-profile`.
 *
 * Exits 1 on any unexpected status, any mismatch, or a service that died; 2 on bad arguments.
 *
 *   npm run bench:mixed -- [--clients 16] [--instances 1] [--seconds 60] [--warmup-seconds 10] [--users 5000]
 *     [--celebrity 100000] [--follows-per-user 10] [--seed n] [--settle-seconds 60]
 *     [--plant lost-write] [--target http://host:port[,…]] [--peer] [--peer-pool 16] [--cpu-prof]
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { mintToken } from '../src/jobs/token.js';
import { loadPeerDatabase } from './peer/schema.js';
import { BENCH_JWT_SECRET } from './support/app-server.js';
import { BACKGROUND_FIRST, backgroundGraph } from './support/background-graph.js';
import { barChartSvg } from './support/charts.js';
import { describeProfile, type ProfileSummary, summarizeProfiles } from './support/cpu-profile.js';
import {
  CELEBRITY,
  FIRST_FOLLOWER,
  forEachIndex,
  loadAverage,
  markdownTable,
  openBench,
  percentile,
  serverPid,
  sortedCopy,
  treeCpuSeconds,
} from './support/harness.js';
import { checkModel } from './support/mixed-check.js';
import { KeyedLocks, MixedModel } from './support/mixed-model.js';
import { call, MIX, type MixContext, runClient } from './support/mixed-ops.js';
import { startJfr } from './support/nodetool.js';
import { type PostgresServer, startPostgresServer } from './support/postgres.js';
import { dbQueriesByOp, mapDelta, metricSamples, total } from './support/request-meters.js';
import { type ServiceProcess, startServiceProcess } from './support/service-process.js';
import { usernameFor } from './support/usernames.js';

const USAGE =
  'npm run bench:mixed -- [--clients 16] [--instances 1] [--seconds 60] [--warmup-seconds 10] [--users 5000] [--celebrity 100000] [--follows-per-user 10] [--seed n] [--settle-seconds 60] [--plant lost-write] [--target url[,url]] [--peer] [--peer-pool 16] [--cpu-prof]';
const bench = openBench({
  usage: USAGE,
  options: {
    clients: { type: 'string', default: '16' },
    instances: { type: 'string', default: '1' },
    seconds: { type: 'string', default: '60' },
    'warmup-seconds': { type: 'string', default: '10' },
    users: { type: 'string', default: '5000' },
    celebrity: { type: 'string', default: '100000' },
    'follows-per-user': { type: 'string', default: '10' },
    seed: { type: 'string' },
    'settle-seconds': { type: 'string', default: '60' },
    plant: { type: 'string' },
    target: { type: 'string' },
    peer: { type: 'boolean', default: false },
    'peer-pool': { type: 'string', default: '16' },
    'cpu-prof': { type: 'boolean', default: false },
  },
});
const a = bench.args;
const CLIENTS = Number(a.clients);
const INSTANCES = Number(a.instances);
const SECONDS = Number(a.seconds);
const WARMUP_S = Number(a['warmup-seconds']);
const USERS = Number(a.users);
const F = Number(a.celebrity);
const MEAN_FOLLOWS = Number(a['follows-per-user']);
const SETTLE_S = Number(a['settle-seconds']);
const SEED = a.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(a.seed);
const PLANT = a.plant;
const TARGETS = a.target?.split(',').map((u) => u.replace(/\/$/, ''));
const PEER = a.peer === true;
const PEER_POOL = Number(a['peer-pool']);
const PROFILE_DIR =
  a['cpu-prof'] === true
    ? bench.resultPath(
        `mixed${PEER ? '-peer' : ''}-cpuprof-${new Date().toISOString().replace(/[:.]/g, '-')}`,
      )
    : null;
const bad = (why: string) => {
  console.error(`${why}\nusage: ${USAGE}`);
  process.exit(2);
};
for (const [name, v, min] of [
  ['clients', CLIENTS, 1],
  ['instances', INSTANCES, 1],
  ['seconds', SECONDS, 1],
  ['warmup-seconds', WARMUP_S, 0],
  ['users', USERS, 2],
  ['celebrity', F, 1],
  ['follows-per-user', MEAN_FOLLOWS, 0],
  ['peer-pool', PEER_POOL, 1],
] as const) {
  if (!Number.isInteger(v) || v < min) bad(`--${name} must be an integer ≥ ${min}`);
}
if (PLANT !== undefined && PLANT !== 'lost-write') bad(`--plant ${PLANT}: only lost-write`);
if (PEER && TARGETS) bad('--peer and --target exclude each other');
if (a['cpu-prof'] && TARGETS) bad('--cpu-prof profiles the processes this bench starts: not with --target');
console.log(
  `bench:mixed seed ${SEED}: ${CLIENTS} clients, ${TARGETS ? `target ${TARGETS.join(',')}` : `${INSTANCES} ${PEER ? 'Postgres peer' : 'Flocklist'} instance(s)`}, ${SECONDS} s, ${USERS} users (${MEAN_FOLLOWS} follows each on average), celebrity with ${F} followers${PLANT ? `, planting ${PLANT}` : ''}; load ${loadAverage()}`,
);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const bg = backgroundGraph({ users: USERS, meanFollows: MEAN_FOLLOWS, maxFollows: 7500, seed: SEED });
const bgId = (i: number) => BACKGROUND_FIRST + BigInt(i);

const tokens = new Map<bigint, string>();
const token = (id: bigint) => {
  let t = tokens.get(id);
  if (!t) {
    t = mintToken({ sub: String(id), expiresInSeconds: 86_400 }, BENCH_JWT_SECRET);
    tokens.set(id, t);
  }
  return t;
};
const adminToken = mintToken({ sub: '1', admin: true, expiresInSeconds: 86_400 }, BENCH_JWT_SECRET);

/** Runs `bench:load` into `keyspace` as its own process (its output passes through). */
function runLoader(keyspace: string): Promise<number> {
  const args = [
    '--import',
    'tsx',
    'bench/load-celebrity.ts',
    `--keyspace=${keyspace}`,
    `--results-dir=${bench.config.resultsDir}`,
    `--contact-points=${bench.config.contactPoints.join(',')}`,
    `--local-dc=${bench.config.localDataCenter}`,
    `--followers=${F}`,
    `--background-users=${USERS}`,
    `--background-follows=${MEAN_FOLLOWS}`,
    `--seed=${SEED}`,
    '--t1-reps=0',
  ];
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  return new Promise((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
}

/** The same accounts and follows through the API (a `--target` that is not our keyspace). */
async function loadOverHttp(url: string) {
  const put = async (path: string, tok: string, body?: unknown) => {
    for (let attempt = 1; ; attempt++) {
      const r = await call(url, 'PUT', path, tok, body);
      if (r.status >= 200 && r.status < 300) return;
      if (attempt >= 5) throw new Error(`load: PUT ${path} answered ${r.status} ${JSON.stringify(r.body)}`);
      await sleep(200 * attempt);
    }
  };
  const pool = async (n: number, work: (i: number) => Promise<void>, label: string) => {
    await forEachIndex(n, 32, work, (done) => bench.progress(`load over HTTP: ${label} ${done}/${n}`));
    bench.progress(`load over HTTP: ${label} ${n}/${n}`, true);
  };
  await put(`/v1/users/${CELEBRITY}`, adminToken, { username: `celebrity${CELEBRITY}` });
  await pool(
    F,
    (i) =>
      put(`/v1/users/${FIRST_FOLLOWER + BigInt(i)}`, adminToken, {
        username: usernameFor(FIRST_FOLLOWER + BigInt(i)),
      }),
    'celebrity followers',
  );
  await pool(
    USERS,
    (i) => put(`/v1/users/${bgId(i)}`, adminToken, { username: usernameFor(bgId(i)) }),
    'users',
  );
  await pool(
    F,
    (i) =>
      put(
        `/v1/users/${FIRST_FOLLOWER + BigInt(i)}/following/${CELEBRITY}`,
        token(FIRST_FOLLOWER + BigInt(i)),
      ),
    'celebrity follows',
  );
  await pool(
    USERS,
    async (i) => {
      for (const t of bg.targets(i)) await put(`/v1/users/${bgId(i)}/following/${bgId(t)}`, token(bgId(i)));
    },
    'background follows',
  );
}

const services: ServiceProcess[] = [];
/** The services' warnings and errors (pino levels 40+), by message, and the first few whole. */
const serviceLog = { byMessage: {} as Record<string, number>, samples: [] as string[] };
function noteLogLine(line: string) {
  const level = /"level":(\d+)/.exec(line)?.[1];
  if (!level || Number(level) < 40) return;
  const msg = /"msg":"((?:[^"\\]|\\.)*)"/.exec(line)?.[1] ?? '?';
  const key = `${Number(level) >= 50 ? 'error' : 'warn'}: ${msg}`;
  serviceLog.byMessage[key] = (serviceLog.byMessage[key] ?? 0) + 1;
  if (serviceLog.samples.length < 10) serviceLog.samples.push(line.slice(0, 600));
}
let urls: string[];
/** How the instances are started (set once the database is loaded). */
let instanceSpec: { env: Record<string, string>; script: string } | null = null;
/** Starts `--instances` processes into `services`, profiled into `profileDir` when one is given. */
async function startInstances(profileDir: string | null) {
  if (!instanceSpec) throw new Error('no instance spec');
  const nodeArgs = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  for (let i = 0; i < INSTANCES; i++)
    services.push(
      await startServiceProcess({
        env: instanceSpec.env,
        nodeArgs,
        onLine: noteLogLine,
        script: instanceSpec.script,
      }),
    );
}
let keyspace: string | null = null;
const t0 = performance.now();
let pgServer: PostgresServer | null = null;
let databasePid: number | null = null;
if (TARGETS) {
  urls = TARGETS;
  await loadOverHttp(urls[0] as string);
} else if (PEER) {
  pgServer = await startPostgresServer({
    shared_buffers: '1GB',
    synchronous_commit: 'off',
    max_connections: String(Math.max(100, INSTANCES * PEER_POOL + 20)),
  });
  const admin = pgServer.pool({ max: 2 });
  const server = pgServer;
  const version = (await admin.query<{ server_version: string }>('SHOW server_version')).rows[0]
    ?.server_version;
  console.log(`postgres ${version} on port ${server.port}: loading the same graph into database peer`);
  const stamp = BigInt(Date.now() - 86_400_000) * 1000n;
  await loadPeerDatabase({
    admin,
    pool: () => server.pool({ database: 'peer', max: 4 }),
    database: 'peer',
    users: (function* () {
      yield { id: CELEBRITY, username: `celebrity${CELEBRITY}` };
      for (let i = 0; i < F; i++)
        yield { id: FIRST_FOLLOWER + BigInt(i), username: usernameFor(FIRST_FOLLOWER + BigInt(i)) };
      for (let i = 0; i < USERS; i++) yield { id: bgId(i), username: usernameFor(bgId(i)) };
    })(),
    follows: (function* () {
      for (let i = 0; i < F; i++)
        yield { follower: FIRST_FOLLOWER + BigInt(i), followee: CELEBRITY, at: stamp + BigInt(i) };
      let k = 0n;
      for (let i = 0; i < USERS; i++)
        for (const t of bg.targets(i))
          yield { follower: bgId(i), followee: bgId(t), at: stamp + BigInt(F) + k++ };
    })(),
    progress: (line, final) => bench.progress(line, final),
  });
  await admin.end();
  databasePid = server.pid();
  const env: Record<string, string> = {
    PORT: '0',
    HOST: '127.0.0.1',
    PEER_PG_PORT: String(server.port),
    PEER_DATABASE: 'peer',
    PEER_POOL: String(PEER_POOL),
    GRAPH_JWT_SECRET: BENCH_JWT_SECRET,
  };
  instanceSpec = { env, script: 'bench/peer/main.ts' };
  try {
    await startInstances(PROFILE_DIR);
  } catch (e) {
    console.error(String(e));
    await Promise.all(services.map((s) => s.stop(5000)));
    server.stop();
    process.exit(1);
  }
  urls = services.map((s) => s.url);
  console.log(`peers: ${services.map((s) => `pid ${s.pid} at ${s.url}`).join(', ')}`);
} else {
  keyspace = (await bench.throwawayKeyspace('bench_mixed')).keyspace;
  console.log(`keyspace ${keyspace}: loading (bench:load, seed ${SEED})`);
  const code = await runLoader(keyspace);
  if (code !== 0) {
    console.error(`bench:load exited ${code}`);
    await bench.close();
    process.exit(1);
  }
  const env: Record<string, string> = {
    PORT: '0',
    HOST: '127.0.0.1',
    CASSANDRA_CONTACT_POINTS: bench.config.contactPoints.join(','),
    CASSANDRA_LOCAL_DC: bench.config.localDataCenter,
    CASSANDRA_KEYSPACE: keyspace,
    GRAPH_JWT_SECRET: BENCH_JWT_SECRET,
    GRAPH_RATE_LIMIT_PER_MINUTE: '1000000',
  };
  instanceSpec = { env, script: 'src/main.ts' };
  try {
    await startInstances(PROFILE_DIR);
  } catch (e) {
    console.error(String(e));
    await Promise.all(services.map((s) => s.stop(5000)));
    await bench.close();
    process.exit(1);
  }
  urls = services.map((s) => s.url);
  console.log(`services: ${services.map((s) => `pid ${s.pid} at ${s.url}`).join(', ')}`);
  databasePid = serverPid();
}
const loadS = (performance.now() - t0) / 1000;
console.log(`loaded and started in ${loadS.toFixed(1)} s; load ${loadAverage()}`);

// The model starts from the generated graph, exactly what the loader wrote.
const model = new MixedModel();
model.addUser(CELEBRITY, `celebrity${CELEBRITY}`);
for (let i = 0; i < F; i++) {
  const id = FIRST_FOLLOWER + BigInt(i);
  model.addUser(id, usernameFor(id));
  model.setFollow(id, CELEBRITY, ['following']);
}
for (let i = 0; i < USERS; i++) model.addUser(bgId(i), usernameFor(bgId(i)));
for (let i = 0; i < USERS; i++)
  for (const t of bg.targets(i)) model.setFollow(bgId(i), bgId(t), ['following']);

let newIds = 0;
const ctx: MixContext = {
  model,
  locks: new KeyedLocks(),
  urls,
  token,
  adminToken,
  ranked: [CELEBRITY, ...Array.from({ length: USERS }, (_, i) => bgId(i))],
  celebrity: CELEBRITY,
  nextId: () => BACKGROUND_FIRST + BigInt(USERS + newIds++),
  stats: new Map(),
  measureFrom: 0,
  warmup: new Map(),
  errorSamples: [],
  acknowledgedFollows: [],
  deactivated: new Set(),
};

/** `flocklist_db_query_duration_seconds_count` summed, per URL (null when it has no such metric). */
async function dbQueries(): Promise<(Map<string, number> | null)[]> {
  return Promise.all(
    urls.map(async (u) => {
      try {
        const text = await (await fetch(`${u}/metrics`)).text();
        const byOp = dbQueriesByOp(text);
        if (byOp.size > 0) return byOp;
        const peer = new Map<string, number>();
        for (const x of metricSamples(text, 'peer_db_requests_total'))
          peer.set(x.labels.op ?? '?', (peer.get(x.labels.op ?? '?') ?? 0) + x.value);
        return peer.size > 0 ? peer : null;
      } catch {
        return null;
      }
    }),
  );
}

// The warm-up runs the same mix (the model follows it) but is not measured: the service's first
// seconds (JIT, prepared statements, caches, connections) would dominate a short run.
// With --cpu-prof on our service, Java Flight Recorder records the node over the warm-up and mix.
const stopJfr =
  PROFILE_DIR && !PEER ? await startJfr(`${PROFILE_DIR}/cassandra.jfr`, WARMUP_S + SECONDS + 5) : null;
const warmStart = performance.now();
ctx.measureFrom = warmStart + WARMUP_S * 1000;
const until = ctx.measureFrom + SECONDS * 1000;
/** CPU seconds so far of the service processes, the database server (with children), and this process. */
const cpuNow = () => {
  const own = process.cpuUsage();
  return {
    service: services.reduce((n, s) => n + treeCpuSeconds(s.pid), 0),
    database: databasePid === null ? Number.NaN : treeCpuSeconds(databasePid),
    loadGenerator: (own.user + own.system) / 1e6,
  };
};
let cpuBefore = cpuNow();
const beforeSampled = sleep(WARMUP_S * 1000).then(() => {
  cpuBefore = cpuNow();
  return dbQueries();
});
const bothPhases = () => [...ctx.warmup.values(), ...ctx.stats.values()];
const errorsSoFar = () =>
  bothPhases().reduce((n, s) => n + Object.values(s.errors).reduce((x, y) => x + y, 0), 0);
const unavailable = () => bothPhases().reduce((n, s) => n + (s.statuses['503'] ?? 0), 0);
const measuredOps = () => [...ctx.stats.values()].reduce((n, s) => n + s.ms.length, 0);
await Promise.all(
  Array.from({ length: CLIENTS }, (_, c) =>
    runClient(ctx, c, SEED, until, () => {
      const now = performance.now();
      const warm = now < ctx.measureFrom;
      const s = (now - (warm ? warmStart : ctx.measureFrom)) / 1000;
      const n = warm ? [...ctx.warmup.values()].reduce((k, x) => k + x.ms.length, 0) : measuredOps();
      bench.progress(
        `${warm ? `warm-up ${s.toFixed(0)}/${WARMUP_S}` : `mix ${s.toFixed(0)}/${SECONDS}`} s: ${n} ops, ${(n / s).toFixed(0)} ops/s, ${unavailable()} × 503, ${errorsSoFar()} errors; load ${loadAverage()}`,
      );
    }),
  ),
);
const mixS = (performance.now() - ctx.measureFrom) / 1000;
const cpuAfter = cpuNow();
const after = await dbQueries();
const before = await beforeSampled;
const ops = measuredOps();
const warmupOps = [...ctx.warmup.values()].reduce((n, s) => n + s.ms.length, 0);
bench.progress(
  `mix: ${ops} ops in ${mixS.toFixed(1)} s (${(ops / mixS).toFixed(0)} ops/s) after ${warmupOps} warm-up ops`,
  true,
);
const died = services.filter((s) => s.exited()).map((s) => `pid ${s.pid} ${JSON.stringify(s.exited())}`);

// The planted lost write: an acknowledged follow undone behind the model's back.
let planted: string | null = null;
if (PLANT === 'lost-write') {
  const candidates = [
    ...ctx.acknowledgedFollows.slice().reverse(),
    ...Array.from({ length: USERS }, (_, i) =>
      bg.targets(i).map((t) => [bgId(i), bgId(t)] as [bigint, bigint]),
    ).flat(),
  ];
  const pick = candidates.find(([x, y]) => model.certainFollow(x, y));
  if (!pick) throw new Error('--plant lost-write: no certain follow to drop');
  const [x, y] = pick;
  const r = await call(urls[0] as string, 'DELETE', `/v1/users/${x}/following/${y}`, token(x));
  if (r.status !== 200) throw new Error(`--plant lost-write: the unfollow answered ${r.status}`);
  planted = `${x}→${y}${ctx.acknowledgedFollows.some(([p, q]) => p === x && q === y) ? ' (acknowledged during the mix)' : ' (loaded)'}`;
  model.touched.add(x);
  model.touched.add(y);
  console.log(`planted lost write: dropped the follow ${planted} through the API; the model still holds it`);
}

// Profiled instances stop here (V8 writes a profile at exit), so the profile holds the warm-up
// and the mix, not the check's reads: fresh instances over the same database serve the check.
let profile: ProfileSummary | null = null;
if (PROFILE_DIR) {
  // The service drains for up to a minute before it exits (and V8 writes the profile at exit).
  await Promise.all(services.splice(0).map((s) => s.stop(120_000)));
  profile = await summarizeProfiles(PROFILE_DIR).catch((e) => {
    console.log(`no CPU profile written: ${String(e).split('\n')[0]}`);
    return null;
  });
  await stopJfr?.();
  await startInstances(null);
  urls = services.map((s) => s.url);
  console.log(`profiles in ${PROFILE_DIR}; the check reads through fresh instances ${urls.join(', ')}`);
}

// Everything the mix wrote settles before it is read back: the check retries up to the bound.
const check = await checkModel({
  model,
  urls,
  token,
  adminToken,
  accounts: [CELEBRITY, ...model.touched],
  boundMs: SETTLE_S * 1000,
  concurrency: Math.min(32, Math.max(8, CLIENTS)),
  progress: (line, final) => bench.progress(line, final),
});

const round = (x: number, d = 2) => +x.toFixed(d);
const kinds = [...ctx.stats.entries()].sort((x, y) => y[1].ms.length - x[1].ms.length);
const rows = kinds.map(([kind, s]) => {
  const sorted = sortedCopy(s.ms);
  return {
    op: kind,
    count: s.ms.length,
    share_pct: round((100 * s.ms.length) / Math.max(ops, 1), 1),
    p50_ms: round(percentile(sorted, 50)),
    p99_ms: round(percentile(sorted, 99)),
    statuses: s.statuses,
    errors: s.errors,
  };
});
const statusTotals: Record<string, number> = {};
const errorTotals: Record<string, number> = {};
for (const [, s] of kinds) {
  for (const [k, n] of Object.entries(s.statuses)) statusTotals[k] = (statusTotals[k] ?? 0) + n;
}
// Errors count in the verdict whether they came in the warm-up or the measured mix.
for (const s of bothPhases()) {
  for (const [k, n] of Object.entries(s.errors)) errorTotals[k] = (errorTotals[k] ?? 0) + n;
}
const errors = Object.values(errorTotals).reduce((x, y) => x + y, 0);
const dbDelta = after.map((v, i) => {
  const b = before[i];
  return v === null || b === null || b === undefined ? null : total(v) - total(b);
});
/** Database requests over the mix by statement, every instance summed, most first. */
const byStatement = new Map<string, number>();
after.forEach((v, i) => {
  const b = before[i];
  if (!v || !b) return;
  for (const [k, n] of mapDelta(b, v)) byStatement.set(k, (byStatement.get(k) ?? 0) + n);
});
const topStatements = [...byStatement]
  .sort((x, y) => y[1] - x[1])
  .slice(0, 20)
  .map(([statement, n]) => ({ statement, requests: n, perOp: round(n / Math.max(ops, 1), 2) }));
const cpu = Object.fromEntries(
  (['service', 'database', 'loadGenerator'] as const).map((k) => {
    const used = cpuAfter[k] - cpuBefore[k];
    return [
      k,
      Number.isFinite(used)
        ? {
            seconds: round(used, 1),
            coresBusy: round(used / mixS),
            msPerOp: round((1000 * used) / Math.max(ops, 1)),
          }
        : null,
    ];
  }),
);
const dbTotal = dbDelta.every((d) => d !== null) ? dbDelta.reduce<number>((x, y) => x + (y ?? 0), 0) : null;
const result = {
  when: new Date().toISOString(),
  seed: SEED,
  machine: {
    cpus: os.cpus().length,
    model: os.cpus()[0]?.model,
    memGiB: Math.round(os.totalmem() / 2 ** 30),
  },
  params: {
    clients: CLIENTS,
    instances: TARGETS ? null : INSTANCES,
    target: TARGETS ?? null,
    system: TARGETS ? 'target' : PEER ? 'postgres-peer' : 'flocklist',
    peerPool: PEER ? PEER_POOL : null,
    seconds: SECONDS,
    warmupSeconds: WARMUP_S,
    users: USERS,
    followsPerUser: MEAN_FOLLOWS,
    celebrity: F,
    settleSeconds: SETTLE_S,
    plant: PLANT ?? null,
    keyspace,
    mix: Object.fromEntries(MIX),
  },
  loadSeconds: round(loadS, 1),
  loadAverageEnd: loadAverage(),
  ops,
  warmupOps,
  warmupStatuses: Object.fromEntries([...ctx.warmup].map(([k, s]) => [k, s.statuses])),
  mixSeconds: round(mixS, 1),
  opsPerSecond: round(ops / mixS, 1),
  newAccounts: newIds,
  statusTotals,
  errorTotals,
  errorSamples: ctx.errorSamples,
  cpu,
  profile,
  dbRequests: {
    perInstance: dbDelta,
    total: dbTotal,
    perOp: dbTotal === null ? null : round(dbTotal / Math.max(ops, 1)),
    topStatements,
  },
  rows,
  check,
  planted,
  servicesDied: died,
  serviceLog,
};

const md = markdownTable(
  `bench:mixed (${CLIENTS} clients, ${TARGETS ? TARGETS.join(',') : `${INSTANCES} ${PEER ? 'Postgres peer' : 'Flocklist'} instance(s)`}, ${SECONDS} s, ${USERS} users, celebrity ${F}, seed ${SEED})`,
  rows,
  [
    `at ${result.when}; load average at end ${result.loadAverageEnd}; ${os.cpus().length} CPUs`,
    `**${result.opsPerSecond} ops/s** (${ops} ops in ${result.mixSeconds} s); statuses ${JSON.stringify(statusTotals)}; errors ${JSON.stringify(errorTotals)}`,
    `database requests per op (all-in, /metrics): **${result.dbRequests.perOp ?? 'n/a'}** (${dbTotal ?? 'n/a'} over the mix)`,
    `CPU over the mix (cores busy, ms per op): ${Object.entries(cpu)
      .map(([k, v]) => `${k} ${v ? `${v.coresBusy} cores, ${v.msPerOp} ms/op` : 'n/a'}`)
      .join('; ')}`,
    `check: ${check.items} items of ${check.accounts} accounts in ${check.seconds} s (${check.requests} requests): **${check.mismatchCount} mismatches**, converged on a later read: ${JSON.stringify(check.convergedLate)}; ${check.inexactCounts} count reads in range but \`exact: false\` (lists the loader wrote are never reconciled until written); out of range while \`exact: true\`: ${check.exactButWrong.length ? check.exactButWrong.join(', ') : 'none'}${planted ? `; planted lost write ${planted}` : ''}`,
    `database requests per op by statement: ${topStatements
      .slice(0, 12)
      .map((t) => `${t.statement} ${t.perOp}`)
      .join(', ')}`,
    `service log warnings/errors: ${JSON.stringify(serviceLog.byMessage)}`,
    ...(profile
      ? [describeProfile(profile, 'server (warm-up and mix)', { origins: 15, functions: 10 })]
      : []),
    ...check.mismatches.map((m) => `- mismatch: ${m}`),
    ...check.convergedLateFirstRead
      .slice(0, 5)
      .map((m) => `- differed on the first read, agreed later: ${m}`),
  ],
);
console.log(md);
console.log(
  `wrote ${await bench.writeResults(
    PEER ? 'mixed-peer' : 'mixed',
    result,
    barChartSvg(
      `bench:mixed latency by op (${CLIENTS} clients, ${result.opsPerSecond} ops/s)`,
      rows.map((r) => r.op),
      [
        { name: 'p50', values: rows.map((r) => r.p50_ms) },
        { name: 'p99', values: rows.map((r) => r.p99_ms) },
      ],
      'ms',
    ),
    md,
  )}`,
);
if (ctx.errorSamples.length > 0)
  console.log(`first unexpected answers:\n  ${ctx.errorSamples.slice(0, 10).join('\n  ')}`);
if (serviceLog.samples.length > 0)
  console.log(`first service warnings/errors:\n  ${serviceLog.samples.slice(0, 3).join('\n  ')}`);
await Promise.all(services.map((s) => s.stop(20_000)));
pgServer?.stop();
await bench.close();
const failedWhy = [
  ...(errors > 0 ? [`${errors} unexpected answers ${JSON.stringify(errorTotals)}`] : []),
  ...(check.mismatchCount > 0 ? [`${check.mismatchCount} model mismatches`] : []),
  ...(died.length > 0 ? [`service died: ${died.join(', ')}`] : []),
];
if (planted) {
  console.log(
    check.mismatchCount > 0
      ? `planted lost write ${planted}: CAUGHT by the check (exit 1, as it must)`
      : `planted lost write ${planted}: NOT caught — the check is blind to it`,
  );
}
console.log(failedWhy.length === 0 ? 'bench:mixed: PASS' : `bench:mixed: FAIL — ${failedWhy.join('; ')}`);
process.exit(failedWhy.length === 0 ? 0 : 1);
