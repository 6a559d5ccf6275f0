/**
 * C1h: the hot first page of the loaded celebrity list over HTTP (`npm run bench:load` first),
 * while the list gains `--rate` followers a second through the API, against the Postgres peer
 * (`peer/`) serving the same route over the same rows. Arms, each with its own writer running
 * throughout:
 *
 *   same     follows and page reads through one service instance (the instance that acknowledged
 *            each follow answers the next read: its first-page cache is refreshed by local events);
 *   other    follows through instance A, page reads through instance B (B's cache learns of A's
 *            follows within the cross-instance bound; reads that miss a follow are counted);
 *   peer     follows and reads through one peer process over Postgres (no cache: a keyset page
 *            joined to `users` on every read).
 *
 * Both systems run as clients run them: `node --import tsx src/main.ts` (the keyspace of
 * `bench:load`, caches and embedded worker as configured by default) and `bench/peer/main.ts`
 * over the same `users` and `follows` rows bulk-loaded into the database `peer_celeb_<F>` (kept
 * between runs, reloaded when its row count differs). Reads are sequential `GET
 * /v1/users/{celebrity}/followers?limit=50` as a loaded follower; each repetition times every arm
 * for `--seconds` (arms rotated), and reports p50/p99 per arm and the ratios p99 ÷ the peer's p99
 * (C1h: `same`, target ≤ 0.5), median [min–max] over the repetitions. A page read begun after a
 * follow was acknowledged must show it (the `same` and `peer` arms: an error; `other`: counted).
 *
 * The new followers (ids from 9,600,000,000) are made through the admin API on both sides and
 * unfollowed at the end (and removed from Postgres), so both are left as they were found.
 * `--without-peer` (the CI smoke) drops the peer arm and its ratios. `--cpu-prof` runs both service
 * instances under V8's profiler and prints what their CPU was made of (`support/cpu-profile.ts`),
 * and Java Flight Recorder records the node over the timed arms (for `bench:jvm-profile`);
 * with `--arms same` only that arm runs (a profile of the acknowledging instance alone).
 *
 *   npm run bench:first-page-http -- [--followers 9000000] [--reps 3] [--seconds 10] [--rate 50] [--without-peer]
 *     [--arms same,other,peer] [--cpu-prof]
 */
import { mintToken } from '../src/jobs/token.js';
import { loadPeerDatabase } from './peer/schema.js';
import { BENCH_JWT_SECRET } from './support/app-server.js';
import { barChartSvg } from './support/charts.js';
import { describeProfile, summarizeProfiles } from './support/cpu-profile.js';
import {
  CELEBRITY,
  FIRST_FOLLOWER,
  forEachIndex,
  keyspaceFor,
  loadAverage,
  markdownTable,
  openBench,
  percentile,
  ratioSummary,
  sortedCopy,
} from './support/harness.js';
import { call } from './support/mixed-ops.js';
import { startJfr } from './support/nodetool.js';
import { startPostgresServer } from './support/postgres.js';
import { type ServiceProcess, startServiceProcess } from './support/service-process.js';
import { usernameFor } from './support/usernames.js';

const USAGE =
  'npm run bench:first-page-http -- [--followers 9000000] [--reps 3] [--seconds 10] [--rate 50] [--without-peer] [--arms same,other,peer] [--cpu-prof]';
const bench = openBench({
  usage: USAGE,
  options: {
    followers: { type: 'string', default: '9000000' },
    reps: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '10' },
    rate: { type: 'string', default: '50' },
    'without-peer': { type: 'boolean', default: false },
    arms: { type: 'string', default: 'same,other,peer' },
    'cpu-prof': { type: 'boolean', default: false },
  },
});
const F = Number(bench.args.followers);
const REPS = Number(bench.args.reps);
const SECONDS = Number(bench.args.seconds);
const RATE = Number(bench.args.rate);
const WITH_PEER = bench.args['without-peer'] !== true;
for (const [name, v] of [
  ['followers', F],
  ['reps', REPS],
  ['seconds', SECONDS],
  ['rate', RATE],
] as const) {
  if (!Number.isInteger(v) || v < 1) {
    console.error(`--${name} must be an integer ≥ 1\nusage: ${USAGE}`);
    process.exit(2);
  }
}
const NEW_BASE = 9_600_000_000n;
const LIMIT = 50;
const WARMUP_S = Math.min(2, SECONDS);
const token = (id: bigint) => mintToken({ sub: String(id), expiresInSeconds: 86_400 }, BENCH_JWT_SECRET);
const adminToken = mintToken({ sub: '1', admin: true, expiresInSeconds: 86_400 }, BENCH_JWT_SECRET);
const viewerToken = token(FIRST_FOLLOWER);

type Arm = 'same' | 'other' | 'peer';
const ARMS = (['same', 'other', 'peer'] as const).filter(
  (a) => String(bench.args.arms).split(',').includes(a) && (a !== 'peer' || WITH_PEER),
) as Arm[];
if (ARMS.length === 0) {
  console.error(`--arms names none of same, other, peer (peer needs the peer)\nusage: ${USAGE}`);
  process.exit(2);
}
const PROFILE_DIR =
  bench.args['cpu-prof'] === true
    ? bench.resultPath(`first-page-http-cpuprof-${new Date().toISOString().replace(/[:.]/g, '-')}`)
    : null;
const perArm = Math.ceil(RATE * SECONDS) + 5;
const NEW_COUNT = (perArm * REPS + Math.ceil(RATE * WARMUP_S) + 5) * ARMS.length;
const newIds = Array.from({ length: NEW_COUNT }, (_, k) => NEW_BASE + BigInt(k));

const keyspace = bench.config.keyspace ?? keyspaceFor(F);
const services: ServiceProcess[] = [];
const env: Record<string, string> = {
  PORT: '0',
  HOST: '127.0.0.1',
  CASSANDRA_CONTACT_POINTS: bench.config.contactPoints.join(','),
  CASSANDRA_LOCAL_DC: bench.config.localDataCenter,
  CASSANDRA_KEYSPACE: keyspace,
  GRAPH_JWT_SECRET: BENCH_JWT_SECRET,
  GRAPH_RATE_LIMIT_PER_MINUTE: '1000000',
};
for (let i = 0; i < 2; i++)
  services.push(
    await startServiceProcess({
      env,
      ...(PROFILE_DIR
        ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}/${i === 0 ? 'A' : 'B'}`] }
        : {}),
    }),
  );
const [A, B] = services.map((s) => s.url) as [string, string];

const pg = WITH_PEER ? await startPostgresServer({ shared_buffers: '1GB', synchronous_commit: 'off' }) : null;
const peerDb = `peer_celeb_${F}`;
if (pg) {
  const admin = pg.pool({ max: 2 });
  const exists = (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [peerDb])).rowCount === 1;
  let rows = -1;
  if (exists) {
    const p = pg.pool({ database: peerDb, max: 1 });
    rows = Number(
      (
        await p.query<{ n: string }>('SELECT count(*) AS n FROM follows WHERE followee_id = $1', [
          String(CELEBRITY),
        ])
      ).rows[0]?.n,
    );
    await p.end();
  }
  if (rows !== F) {
    const P0 = 1_700_000_000_000_000n;
    await loadPeerDatabase({
      admin,
      pool: () => pg.pool({ database: peerDb, max: 4 }),
      database: peerDb,
      users: (function* () {
        yield { id: CELEBRITY, username: `celebrity${CELEBRITY}` };
        for (let i = 0; i < F; i++)
          yield { id: FIRST_FOLLOWER + BigInt(i), username: usernameFor(FIRST_FOLLOWER + BigInt(i)) };
      })(),
      follows: (function* () {
        for (let i = 0; i < F; i++)
          yield { follower: FIRST_FOLLOWER + BigInt(i), followee: CELEBRITY, at: P0 + BigInt(i) };
      })(),
      progress: (line, final) => bench.progress(line, final),
    });
  }
  await admin.end();
  services.push(
    await startServiceProcess({
      env: {
        PORT: '0',
        HOST: '127.0.0.1',
        PEER_PG_PORT: String(pg.port),
        PEER_DATABASE: peerDb,
        PEER_POOL: '8',
        GRAPH_JWT_SECRET: BENCH_JWT_SECRET,
      },
      script: 'bench/peer/main.ts',
    }),
  );
}
const PEER = services[2]?.url ?? '';
console.log(
  `${F} followers; Flocklist instances ${A} and ${B} over ${keyspace}${pg ? `; peer ${PEER} over ${peerDb}` : ''}; load ${loadAverage()}`,
);

/** Runs `work` over `items` from 32 callers. */
async function pool<T>(items: T[], work: (x: T) => Promise<void>, label: string) {
  await forEachIndex(
    items.length,
    32,
    (i) => work(items[i] as T),
    (done) => bench.progress(`${label} ${done}/${items.length}`),
  );
  bench.progress(`${label} ${items.length}/${items.length}`, true);
}
const must = async (what: string, p: Promise<{ status: number; body: unknown }>) => {
  const a = await p;
  if (a.status < 200 || a.status >= 300) throw new Error(`${what}: ${a.status} ${JSON.stringify(a.body)}`);
};

/** Every new follower unfollows the celebrity on `url` (idempotent: leftovers of a run that died). */
const unfollowAll = (url: string, label: string) =>
  pool(
    newIds,
    (id) => must(`unfollow ${id}`, call(url, 'DELETE', `/v1/users/${id}/following/${CELEBRITY}`, token(id))),
    label,
  );
const bases = WITH_PEER ? [A, PEER] : [A];
for (const url of bases) {
  await pool(
    newIds,
    (id) =>
      must(
        `create ${id}`,
        call(url, 'PUT', `/v1/users/${id}`, adminToken, { username: `c1h_${id - NEW_BASE}` }),
      ),
    `new followers on ${url === A ? 'Flocklist' : 'the peer'}`,
  );
  await unfollowAll(url, `undoing earlier runs on ${url === A ? 'Flocklist' : 'the peer'}`);
}

let nextNew = 0;
let writeErrors = 0;
const errors: string[] = [];
const staleByArm: Record<Arm, number> = { same: 0, other: 0, peer: 0 };

async function timeArm(arm: Arm, seconds: number) {
  const writeUrl = arm === 'peer' ? PEER : A;
  const readUrl = arm === 'same' ? A : arm === 'other' ? B : PEER;
  let acked: bigint | null = null;
  let stopped = false;
  let writes = 0;
  const inFlight = new Set<Promise<void>>();
  const started = performance.now();
  // Follows are sent at the rate whatever their latency (up to 64 in flight): the list gains
  // `RATE` followers a second as long as the service keeps up; the report counts what it acknowledged.
  const writer = (async () => {
    // At most the arm's share of new followers: a slow last read does not stretch the writes.
    while (!stopped && writes < Math.ceil(RATE * seconds)) {
      const wait = started + (writes * 1000) / RATE - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      if (stopped) break;
      if (inFlight.size >= 64) await Promise.race(inFlight);
      const id = newIds[nextNew++];
      if (id === undefined) break;
      const p = call(writeUrl, 'PUT', `/v1/users/${id}/following/${CELEBRITY}`, token(id)).then((a) => {
        if (a.status === 200) {
          if (acked === null || id > acked) acked = id;
        } else if (writeErrors++ === 0)
          console.error(`writer (${arm}): ${a.status} ${JSON.stringify(a.body)}`);
      });
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
      writes++;
    }
    await Promise.all(inFlight);
  })();
  const times: number[] = [];
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const want = acked;
    const t = performance.now();
    const a = await call(readUrl, 'GET', `/v1/users/${CELEBRITY}/followers?limit=${LIMIT}`, viewerToken);
    times.push(performance.now() - t);
    if (a.status !== 200) {
      errors.push(`${arm}: page answered ${a.status} ${JSON.stringify(a.body).slice(0, 200)}`);
      continue;
    }
    const ids = (a.body as { items: { id: string }[] }).items.map((x) => BigInt(x.id));
    // Read-your-writes: a read begun after a follow was acknowledged shows it, unless a full page
    // of newer followers (later sends) pushed it off the first page.
    const pushedOff = ids.length === LIMIT && ids.some((x) => x > (want ?? 0n));
    if (want !== null && !ids.includes(want) && !pushedOff) {
      staleByArm[arm]++;
      if (arm !== 'other' && staleByArm[arm] === 1)
        errors.push(`${arm}: a page read after ${want} was acknowledged did not show it (first ${ids[0]})`);
    }
  }
  stopped = true;
  await writer;
  const s = sortedCopy(times);
  return { p50: percentile(s, 50), p99: percentile(s, 99), reads: times.length, writes };
}

type Timing = Awaited<ReturnType<typeof timeArm>>;
// With --cpu-prof, Java Flight Recorder records the node over the timed arms.
const stopJfr = PROFILE_DIR ? await startJfr(`${PROFILE_DIR}/cassandra.jfr`) : null;
for (const arm of ARMS) await timeArm(arm, WARMUP_S);
const reps: Record<Arm, Timing>[] = [];
for (let r = 0; r < REPS; r++) {
  const order = ARMS.map((_, i) => ARMS[(i + r) % ARMS.length] as Arm);
  const rep = {} as Record<Arm, Timing>;
  for (const arm of order) rep[arm] = await timeArm(arm, SECONDS);
  reps.push(rep);
  console.log(
    `rep ${r + 1}/${REPS}: ${ARMS.map((a) => `${a} p50 ${rep[a].p50.toFixed(2)} p99 ${rep[a].p99.toFixed(2)} ms (${rep[a].reads} reads, ${rep[a].writes} follows)`).join('; ')}; load ${loadAverage()}`,
  );
}

await stopJfr?.();
for (const url of bases) await unfollowAll(url, `unfollowing on ${url === A ? 'Flocklist' : 'the peer'}`);
// The service drains for up to a minute before it exits (and V8 writes a profile at exit).
await Promise.all(services.map((s) => s.stop(PROFILE_DIR ? 120_000 : 20_000)));
pg?.stop();
const profiles = PROFILE_DIR
  ? {
      A: await summarizeProfiles(`${PROFILE_DIR}/A`).catch(() => null),
      B: await summarizeProfiles(`${PROFILE_DIR}/B`).catch(() => null),
    }
  : null;

const med = (xs: number[]) => percentile(sortedCopy(xs), 50);
const rows = ARMS.map((arm) => ({
  arm,
  p50_ms: +med(reps.map((r) => r[arm].p50)).toFixed(2),
  p99_ms: +med(reps.map((r) => r[arm].p99)).toFixed(2),
  reads: reps.reduce((n, r) => n + r[arm].reads, 0),
  follows: reps.reduce((n, r) => n + r[arm].writes, 0),
  reads_missing_an_acknowledged_follow: staleByArm[arm],
}));
const ratios =
  ARMS.includes('peer') && ARMS.includes('same') && ARMS.includes('other')
    ? {
        sameP99: ratioSummary(reps.map((r) => r.same.p99 / r.peer.p99)),
        otherP99: ratioSummary(reps.map((r) => r.other.p99 / r.peer.p99)),
        sameP50: ratioSummary(reps.map((r) => r.same.p50 / r.peer.p50)),
      }
    : null;
const result = {
  when: new Date().toISOString(),
  params: { followers: F, reps: REPS, seconds: SECONDS, rate: RATE, limit: LIMIT, withPeer: WITH_PEER },
  loadAverageEnd: loadAverage(),
  reps,
  rows,
  ratios,
  writeErrors,
  errors,
  profiles,
};
const md = markdownTable(
  `bench:first-page-http (${F} followers, ${RATE} follows/s, ${REPS} × ${SECONDS} s)`,
  rows,
  [
    `at ${result.when}; load average at end ${result.loadAverageEnd}`,
    ratios
      ? `**C1h** same-instance p99 ÷ peer p99: **${ratios.sameP99.median}** [${ratios.sameP99.min}–${ratios.sameP99.max}]; other instance ${ratios.otherP99.median} [${ratios.otherP99.min}–${ratios.otherP99.max}]; p50 same ÷ peer ${ratios.sameP50.median}`
      : 'no ratios (the peer arm or another arm was left out)',
    `follows not acknowledged: ${writeErrors}; errors: ${errors.length ? errors.slice(0, 5).join(' | ') : 'none'}`,
    ...Object.entries(profiles ?? {}).map(([who, p]) =>
      p ? describeProfile(p, `instance ${who}`) : `instance ${who}: no profile written`,
    ),
  ],
);
console.log(md);
console.log(
  `wrote ${await bench.writeResults(
    'first-page-http',
    result,
    barChartSvg(
      `C1h: hot first page over HTTP while it gains ${RATE} follows/s (${F} followers)`,
      rows.map((r) => r.arm),
      [
        { name: 'p50', values: rows.map((r) => r.p50_ms) },
        { name: 'p99', values: rows.map((r) => r.p99_ms) },
      ],
      'ms',
    ),
    md,
  )}`,
);
await bench.close();
process.exit(errors.length === 0 ? 0 : 1);
