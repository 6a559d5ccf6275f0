/**
 * The Postgres peer's relational schema and its bulk loader (`bench:mixed --peer`).
 *
 * The seeds' schema, grown to the mix's semantics: `users` (the account row: username unique,
 * private, hide_lists, active, last activity), `counts` (followers and following of each account,
 * maintained in the transaction of every change that moves them), `follows` (one row per pair with
 * its state, following or requested, and its time in µs) with an index per direction in list
 * order, `edges` (the typed edges: blocks, mutes, close friends) with its list-order index, and
 * `idempotency` (the receipts of `Idempotency-Key`s). What a count means: `followers(y)` is the
 * number of `x → y` follows in state following whose `x` is active; `following(x)` the number of
 * `x → y` whose `y` is active; so a deactivation moves its counterparts' counts (in its own
 * transaction) and a deactivated account's own counts stand still.
 */
import type pg from 'pg';

/** `follows.state`. */
export const FOLLOWING = 1;
export const REQUESTED = 2;
/** `edges.kind`. */
export const EDGE_KIND = { blocks: 1, mutes: 2, close_friends: 3 } as const;
export type EdgeKind = keyof typeof EDGE_KIND;

export const PEER_SCHEMA = [
  `CREATE TABLE users (
     id bigint PRIMARY KEY,
     username text NOT NULL UNIQUE,
     private boolean NOT NULL DEFAULT false,
     hide_lists boolean NOT NULL DEFAULT false,
     active boolean NOT NULL DEFAULT true,
     last_active_at bigint)`,
  `CREATE TABLE counts (
     id bigint PRIMARY KEY REFERENCES users (id),
     followers bigint NOT NULL DEFAULT 0,
     following bigint NOT NULL DEFAULT 0)`,
  `CREATE TABLE follows (
     follower_id bigint NOT NULL,
     followee_id bigint NOT NULL,
     state smallint NOT NULL,
     created_at bigint NOT NULL,
     PRIMARY KEY (follower_id, followee_id))`,
  `CREATE TABLE edges (
     kind smallint NOT NULL,
     source_id bigint NOT NULL,
     target_id bigint NOT NULL,
     created_at bigint NOT NULL,
     PRIMARY KEY (kind, source_id, target_id))`,
  `CREATE TABLE idempotency (
     user_id bigint NOT NULL,
     key text NOT NULL,
     request text NOT NULL,
     status int NOT NULL,
     body text NOT NULL,
     created_at timestamptz NOT NULL DEFAULT now(),
     PRIMARY KEY (user_id, key))`,
];

/** Made after the bulk load (a load into indexed tables is several times slower). */
export const PEER_INDEXES = [
  'CREATE INDEX follows_in ON follows (followee_id, state, created_at DESC, follower_id DESC)',
  'CREATE INDEX follows_out ON follows (follower_id, state, created_at DESC, followee_id DESC)',
  'CREATE INDEX edges_list ON edges (kind, source_id, created_at DESC, target_id DESC)',
];

/** Rows per `unnest` insert. */
const CHUNK = 50_000;

/**
 * Makes the peer's database `database` afresh (dropped first) on `admin`'s server, loads `users`
 * and `follows` (every follow in state following at the time the loader gives it), derives
 * `counts` from them, builds the indexes and analyzes; returns the seconds it took.
 */
export async function loadPeerDatabase(o: {
  admin: pg.Pool;
  pool: () => pg.Pool;
  database: string;
  users: Iterable<{ id: bigint; username: string }>;
  follows: Iterable<{ follower: bigint; followee: bigint; at: bigint }>;
  progress: (line: string, final?: boolean) => void;
}): Promise<number> {
  const t0 = performance.now();
  await o.admin.query(`DROP DATABASE IF EXISTS ${o.database} WITH (FORCE)`);
  await o.admin.query(`CREATE DATABASE ${o.database}`);
  const pool = o.pool();
  try {
    for (const ddl of PEER_SCHEMA) await pool.query(ddl);
    let ids: string[] = [];
    let names: string[] = [];
    let users = 0;
    const flushUsers = async () => {
      if (ids.length === 0) return;
      await pool.query('INSERT INTO users (id, username) SELECT * FROM unnest($1::bigint[], $2::text[])', [
        ids,
        names,
      ]);
      users += ids.length;
      ids = [];
      names = [];
      o.progress(`peer load: ${users} users`);
    };
    for (const u of o.users) {
      ids.push(String(u.id));
      names.push(u.username);
      if (ids.length >= CHUNK) await flushUsers();
    }
    await flushUsers();
    let from: string[] = [];
    let to: string[] = [];
    let at: string[] = [];
    let follows = 0;
    const flushFollows = async () => {
      if (from.length === 0) return;
      await pool.query(
        `INSERT INTO follows (follower_id, followee_id, state, created_at)
         SELECT f, t, ${FOLLOWING}, a FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS x(f, t, a)`,
        [from, to, at],
      );
      follows += from.length;
      from = [];
      to = [];
      at = [];
      o.progress(`peer load: ${users} users, ${follows} follows`);
    };
    for (const f of o.follows) {
      from.push(String(f.follower));
      to.push(String(f.followee));
      at.push(String(f.at));
      if (from.length >= CHUNK) await flushFollows();
    }
    await flushFollows();
    o.progress(`peer load: ${users} users, ${follows} follows; counts and indexes…`);
    await pool.query(
      `INSERT INTO counts (id, followers, following)
       SELECT u.id, coalesce(i.n, 0), coalesce(o.n, 0) FROM users u
       LEFT JOIN (SELECT followee_id AS id, count(*) AS n FROM follows GROUP BY followee_id) i ON i.id = u.id
       LEFT JOIN (SELECT follower_id AS id, count(*) AS n FROM follows GROUP BY follower_id) o ON o.id = u.id`,
    );
    for (const ddl of PEER_INDEXES) await pool.query(ddl);
    await pool.query('VACUUM (ANALYZE)');
    const s = (performance.now() - t0) / 1000;
    o.progress(
      `peer load: ${users} users, ${follows} follows, counts and indexes in ${s.toFixed(1)} s`,
      true,
    );
    return s;
  } finally {
    await pool.end();
  }
}
