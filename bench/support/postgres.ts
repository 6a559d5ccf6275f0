/**
 * The Postgres baseline of the celebrity benchmarks (`--with-postgres`; never used by the tests):
 * Debian's PostgreSQL (installed with `apt-get install -y postgresql` when its binaries are
 * missing), a throw-away cluster under the git-ignored `.pgdata/` of the worktree, started with
 * `pg_ctl` on a free port of 127.0.0.1 (as the `postgres` user when we run as root: initdb refuses
 * root), trust auth on the loopback only, stopped again by `stop()`.
 *
 * The table is the seeds' basic tier: `follows(follower_id, followee_id, created_at)`, primary
 * key (follower_id, followee_id), index (followee_id, created_at DESC, follower_id DESC), filled
 * with exactly the rows `bench:load` writes for the celebrity (follower i = FIRST_FOLLOWER + i at
 * position P0 + i µs), then VACUUM ANALYZE so keyset pages are index-only scans. The rows are kept
 * between runs (a rerun checks the count and reloads only when it differs).
 *
 * Beside it, for hydrated pages (P2), `users(id PRIMARY KEY, username, deactivated)` holding every
 * follower with the username `bench:load` gave it (`usernameFor`), none deactivated; a hydrated
 * keyset page joins it (`pgJoinedPage`: ids and usernames, deactivated members dropped), as a
 * Postgres service would serve the followers page.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { userInfo } from 'node:os';
import { resolve } from 'node:path';
import pg from 'pg';
import { CELEBRITY, FIRST_FOLLOWER } from './harness.js';
import { usernameFor } from './usernames.js';

/** Fixed first position of `bench:load` (µs). */
const P0 = 1_700_000_000_000_000n;

function binDir(): string {
  const root = '/usr/lib/postgresql';
  const find = () =>
    existsSync(root)
      ? readdirSync(root)
          .filter((v) => existsSync(`${root}/${v}/bin/pg_ctl`))
          .sort((a, b) => Number(b) - Number(a))[0]
      : undefined;
  let v = find();
  if (!v) {
    console.log('postgres: installing Debian postgresql (apt-get install -y postgresql)…');
    execFileSync('apt-get', ['install', '-y', 'postgresql'], {
      stdio: 'inherit',
    });
    v = find();
    if (!v) throw new Error('postgresql installed but no pg_ctl under /usr/lib/postgresql/*/bin');
  }
  return `${root}/${v}/bin`;
}

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (typeof a === 'object' && a ? ok(a.port) : fail(new Error('no port'))));
    });
  });
}

export interface BenchPostgres {
  pool: pg.Pool;
  port: number;
  version: string;
  /** Rows of `follows` for the celebrity (checked after loading). */
  rows: number;
  stop(): Promise<void>;
}

/** A throw-away Postgres server of the benches (see the module note). */
export interface PostgresServer {
  port: number;
  /** A pool on `database` (default `postgres`) of this server; its idle errors are ignored. */
  pool(o?: { database?: string; max?: number }): pg.Pool;
  /** The postmaster's pid (its backends are its children), to read the server's CPU. */
  pid(): number | null;
  /** `pg_ctl stop -m fast`. */
  stop(): void;
}

/**
 * Starts the cluster under `.pgdata/` (made by `initdb` on first use) on a free loopback port with
 * `settings` (`-c name=value` each) beside the loopback-only basics.
 */
export async function startPostgresServer(settings: Record<string, string>): Promise<PostgresServer> {
  const bin = binDir();
  const dir = resolve(new URL('../../.pgdata', import.meta.url).pathname);
  const asRoot = userInfo().uid === 0;
  const run = (cmd: string, args: string[]) => {
    const full = asRoot ? ['-u', 'postgres', '--', `${bin}/${cmd}`, ...args] : args;
    const r = spawnSync(asRoot ? 'runuser' : `${bin}/${cmd}`, full, {
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr || r.stdout}`);
    return r.stdout;
  };
  if (!existsSync(`${dir}/PG_VERSION`)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (asRoot) execFileSync('chown', ['postgres:postgres', dir]);
    run('initdb', ['-D', dir, '--auth=trust', '-U', 'postgres', '--encoding=UTF8', '--no-sync']);
  }
  const port = await freePort();
  const extra = Object.entries(settings)
    .map(([k, v]) => `-c ${k}=${v}`)
    .join(' ');
  run('pg_ctl', [
    '-D',
    dir,
    '-l',
    `${dir}/server.log`,
    '-w',
    '-o',
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 ${extra}`,
    'start',
  ]);
  return {
    port,
    pool: (o = {}) => {
      const pool = new pg.Pool({
        host: '127.0.0.1',
        port,
        user: 'postgres',
        database: o.database ?? 'postgres',
        max: o.max ?? 16,
      });
      // An idle client told "terminating connection" while the server stops must not crash the bench.
      pool.on('error', () => undefined);
      return pool;
    },
    pid: () => {
      try {
        return Number(readFileSync(`${dir}/postmaster.pid`, 'utf8').split('\n')[0]);
      } catch {
        return null;
      }
    },
    stop: () => {
      run('pg_ctl', ['-D', dir, '-m', 'fast', '-w', 'stop']);
    },
  };
}

export async function startPostgres(followers: number, poolSize = 16): Promise<BenchPostgres> {
  const server = await startPostgresServer({
    shared_buffers: '256MB',
    fsync: 'off',
    synchronous_commit: 'off',
  });
  const { port } = server;
  const pool = server.pool({ max: poolSize });
  const stop = async () => {
    await pool.end().catch(() => undefined);
    server.stop();
  };
  try {
    const version = (await pool.query<{ server_version: string }>('SHOW server_version')).rows[0]!
      .server_version;
    await pool.query(
      `CREATE TABLE IF NOT EXISTS follows (
         follower_id bigint NOT NULL, followee_id bigint NOT NULL, created_at bigint NOT NULL,
         PRIMARY KEY (follower_id, followee_id))`,
    );
    await pool.query(
      'CREATE INDEX IF NOT EXISTS follows_by_followee ON follows (followee_id, created_at DESC, follower_id DESC)',
    );
    const count = async () =>
      Number(
        (
          await pool.query<{ n: string }>('SELECT count(*) AS n FROM follows WHERE followee_id = $1', [
            String(CELEBRITY),
          ])
        ).rows[0]!.n,
      );
    if ((await count()) !== followers) {
      console.log(`postgres ${version}: loading ${followers} follows rows…`);
      const t = performance.now();
      await pool.query('TRUNCATE follows');
      await pool.query(
        `INSERT INTO follows (follower_id, followee_id, created_at)
         SELECT $1::bigint + i, $2::bigint, $3::bigint + i FROM generate_series(0, $4::bigint - 1) AS i`,
        [String(FIRST_FOLLOWER), String(CELEBRITY), String(P0), followers],
      );
      await pool.query('VACUUM (ANALYZE) follows');
      console.log(`postgres: loaded in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    }
    const rows = await count();
    if (rows !== followers) throw new Error(`postgres follows holds ${rows} rows, expected ${followers}`);
    await loadUsers(pool, followers);
    return { pool, port, version, rows, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** One keyset page of the celebrity's followers, newest first, strictly below `after`. */
export async function pgPage(
  pool: pg.Pool,
  limit: number,
  after: { createdAt: bigint; followerId: bigint } | null,
): Promise<{ createdAt: bigint; followerId: bigint }[]> {
  const rs = after
    ? await pool.query<{ c: string; f: string }>(
        `SELECT created_at AS c, follower_id AS f FROM follows
         WHERE followee_id = $1 AND (created_at, follower_id) < ($2, $3)
         ORDER BY created_at DESC, follower_id DESC LIMIT $4`,
        [String(CELEBRITY), String(after.createdAt), String(after.followerId), limit],
      )
    : await pool.query<{ c: string; f: string }>(
        `SELECT created_at AS c, follower_id AS f FROM follows
         WHERE followee_id = $1 ORDER BY created_at DESC, follower_id DESC LIMIT $2`,
        [String(CELEBRITY), limit],
      );
  return rs.rows.map((r) => ({
    createdAt: BigInt(r.c),
    followerId: BigInt(r.f),
  }));
}

/** The keyset boundary before page `page` (1-based) at `limit`: the last row of page `page - 1`. */
export async function pgBoundary(
  pool: pg.Pool,
  limit: number,
  page: number,
): Promise<{ createdAt: bigint; followerId: bigint } | null> {
  if (page <= 1) return null;
  const rs = await pool.query<{ c: string; f: string }>(
    `SELECT created_at AS c, follower_id AS f FROM follows WHERE followee_id = $1
     ORDER BY created_at DESC, follower_id DESC OFFSET $2 LIMIT 1`,
    [String(CELEBRITY), (page - 1) * limit - 1],
  );
  const r = rs.rows[0];
  return r ? { createdAt: BigInt(r.c), followerId: BigInt(r.f) } : null;
}

/** Which of `ids` follow the celebrity: one `= ANY` query on the primary key. */
export async function pgContains(pool: pg.Pool, ids: readonly bigint[]): Promise<number> {
  const rs = await pool.query(
    'SELECT follower_id FROM follows WHERE followee_id = $1 AND follower_id = ANY($2::bigint[])',
    [String(CELEBRITY), ids.map(String)],
  );
  return rs.rowCount ?? 0;
}

/** The followers' `users` rows (id, `usernameFor(id)`, active), reloaded when the count differs. */
async function loadUsers(pool: pg.Pool, followers: number): Promise<void> {
  await pool.query(
    'CREATE TABLE IF NOT EXISTS users (id bigint PRIMARY KEY, username text NOT NULL, deactivated boolean NOT NULL)',
  );
  const users = async () =>
    Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM users')).rows[0]!.n);
  if ((await users()) === followers) return;
  console.log(`postgres: loading ${followers} users rows (usernames as bench:load writes them)…`);
  const t = performance.now();
  await pool.query('TRUNCATE users');
  const CHUNK = 50_000;
  for (let from = 0; from < followers; from += CHUNK) {
    const ids: string[] = [];
    const names: string[] = [];
    for (let i = from; i < Math.min(followers, from + CHUNK); i++) {
      const id = FIRST_FOLLOWER + BigInt(i);
      ids.push(String(id));
      names.push(usernameFor(id));
    }
    await pool.query(
      'INSERT INTO users (id, username, deactivated) SELECT id, name, false FROM unnest($1::bigint[], $2::text[]) AS u(id, name)',
      [ids, names],
    );
  }
  await pool.query('VACUUM (ANALYZE) users');
  const n = await users();
  if (n !== followers) throw new Error(`postgres users holds ${n} rows, expected ${followers}`);
  console.log(`postgres: users loaded in ${((performance.now() - t) / 1000).toFixed(1)} s`);
}

/**
 * One hydrated keyset page (P2): the celebrity's followers newest first strictly below `after`,
 * joined to `users` for the username, deactivated members dropped; `limit` rows.
 */
export async function pgJoinedPage(
  pool: pg.Pool,
  limit: number,
  after: { createdAt: bigint; followerId: bigint } | null,
): Promise<{ followerId: bigint; username: string }[]> {
  const where = after ? 'AND (f.created_at, f.follower_id) < ($2, $3)' : '';
  const params = after
    ? [String(CELEBRITY), String(after.createdAt), String(after.followerId), limit]
    : [String(CELEBRITY), limit];
  const rs = await pool.query<{ f: string; u: string }>(
    `SELECT f.follower_id AS f, u.username AS u FROM follows f JOIN users u ON u.id = f.follower_id
     WHERE f.followee_id = $1 ${where} AND NOT u.deactivated
     ORDER BY f.created_at DESC, f.follower_id DESC LIMIT $${after ? 4 : 2}`,
    params,
  );
  return rs.rows.map((r) => ({ followerId: BigInt(r.f), username: r.u }));
}
