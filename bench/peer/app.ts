/**
 * The Postgres peer (`bench:mixed --peer`): the routes and JSON shapes of the mix's operations,
 * served on the same Hono stack over the relational schema of `schema.ts`, so "the same API on
 * Postgres" has a figure beside ours.
 *
 * Design note. It is what a careful team would write first on Postgres, not a strawman: one
 * transaction per change, counts moved in that transaction, keyset pages on an index per
 * direction, every visibility rule folded into one query beside the page's. What it does:
 * - Auth: the same HS256 JWTs (`sub`, `scope` with `graph:admin`, `exp` required); a caller whose
 *   own account is deactivated gets 404 on every route, as ours does.
 * - Visibility: private lists and counts for the owner and accepted followers only, `hide_lists`
 *   for the owner only, a block hides the owner (404); deactivated accounts answer 404 (the admin
 *   still reads and writes them through `/v1/users/{id}`) and drop out of every list, count and
 *   relationship at once.
 * - Writes: follows (requests to private accounts), unfollows, blocks (removing follows and
 *   requests both ways), mutes, close friends; account PUTs of the named fields only (a flip to
 *   public accepts the pending requests, a deactivation moves its counterparts' counts, both in
 *   their transaction); `Idempotency-Key` receipts (checked before, stored after the change, not
 *   inside its transaction).
 * - Races: pair operations take a transaction-scoped advisory lock on the pair, then share locks
 *   on both account rows; an account PUT locks its row for update (a flip also share-locks the
 *   requesters it accepts), so a deactivation, a flip or a block never interleaves with a follow
 *   of the same accounts. Deadlocks and serialization failures are retried.
 * Not served (not in the mix): feed, search, scans, `direction=newer`, imports, rate limits.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { verify } from 'hono/jwt';
import type pg from 'pg';
import { EDGE_KIND, type EdgeKind, FOLLOWING, REQUESTED } from './schema.js';

/** A named error answered as problem+json. */
class Problem extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 413 | 503,
    readonly code: string,
    detail: string,
  ) {
    super(detail);
  }
}

type Env = { Variables: { sub: bigint; admin: boolean } };
type Query = <R extends pg.QueryResultRow>(
  op: string,
  sql: string,
  params?: unknown[],
) => Promise<pg.QueryResult<R>>;

const MAX_ID = 9_223_372_036_854_775_807n;
const USERNAME = /^[A-Za-z0-9._]{1,30}$/;
const FOLLOWING_CAP = 7500;
/** Transient Postgres failures a transaction is retried on: deadlock, serialization. */
const RETRY_CODES = new Set(['40P01', '40001']);

function parseId(raw: string | undefined, what = 'id'): bigint {
  if (!raw || !/^[1-9]\d{0,18}$/.test(raw) || BigInt(raw) > MAX_ID)
    throw new Problem(400, 'invalid_id', `${what} must be a positive 64-bit integer in decimal`);
  return BigInt(raw);
}

/** Microseconds since the epoch (the peer's positions, like ours). */
const nowMicros = () => BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000));
const isoMicros = (us: bigint | string) => {
  const v = BigInt(us);
  const ms = v / 1000n;
  return `${new Date(Number(ms)).toISOString().slice(0, 19)}.${String(v % 1_000_000n).padStart(6, '0')}Z`;
};
const followState = (s: number | null | undefined) =>
  s === FOLLOWING ? 'following' : s === REQUESTED ? 'requested' : 'none';

/** The database requests by op, for `/metrics`. */
class Meter {
  readonly byOp = new Map<string, number>();
  count(op: string) {
    this.byOp.set(op, (this.byOp.get(op) ?? 0) + 1);
  }
  text(): string {
    const lines = ['# TYPE peer_db_requests_total counter'];
    for (const [op, n] of this.byOp) lines.push(`peer_db_requests_total{op="${op}"} ${n}`);
    return `${lines.join('\n')}\n`;
  }
}

/** The peer's database access: metered single statements and retried transactions. */
class Db {
  constructor(
    private readonly pool: pg.Pool,
    readonly meter: Meter,
  ) {}

  q: Query = (op, sql, params) => {
    this.meter.count(op);
    return this.pool.query(sql, params);
  };

  /**
   * Runs `work` in a transaction; `lock` (a pair's key) is taken with the BEGIN in one round trip.
   * Retried from the start on a deadlock or a serialization failure.
   */
  async tx<T>(lock: bigint | null, work: (q: Query) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const client = await this.pool.connect();
      const q: Query = (op, sql, params) => {
        this.meter.count(op);
        return client.query(sql, params);
      };
      try {
        await q('begin', lock === null ? 'BEGIN' : `BEGIN; SELECT pg_advisory_xact_lock(${lock})`);
        const out = await work(q);
        await q('commit', 'COMMIT');
        return out;
      } catch (e) {
        await q('rollback', 'ROLLBACK').catch(() => undefined);
        const code = (e as { code?: string }).code;
        if (attempt < 8 && code && RETRY_CODES.has(code)) continue;
        throw e;
      } finally {
        client.release();
      }
    }
  }
}

/** The advisory-lock key of an unordered pair (a collision only serializes more). */
const pairKey = (a: bigint, b: bigint) => {
  const [lo, hi] = a < b ? [a, b] : [b, a];
  return BigInt.asIntN(64, lo * 0x9e3779b97f4a7c15n + hi);
};

/** Which list a route reads, and how. */
const LISTS = {
  followers: { ownerOnly: false },
  following: { ownerOnly: false },
  requests: { ownerOnly: true },
  mutes: { ownerOnly: true },
  'close-friends': { ownerOnly: true },
  blocks: { ownerOnly: true },
} as const;
type ListName = keyof typeof LISTS;
const SEGMENT_KIND: Record<string, EdgeKind> = {
  blocks: 'blocks',
  mutes: 'mutes',
  'close-friends': 'close_friends',
};

/** The list page query of each list (`$1` owner, `$2` limit + 1, `$3`/`$4` the keyset bound). */
function pageSql(list: ListName, after: boolean): string {
  const bound = (at: string, id: string) => (after ? `AND (${at}, ${id}) < ($3, $4)` : '');
  switch (list) {
    case 'followers':
    case 'requests':
      return `SELECT f.follower_id AS id, u.username, f.created_at AS at FROM follows f
        JOIN users u ON u.id = f.follower_id
        WHERE f.followee_id = $1 AND f.state = ${list === 'followers' ? FOLLOWING : REQUESTED} AND u.active
        ${bound('f.created_at', 'f.follower_id')}
        ORDER BY f.created_at DESC, f.follower_id DESC LIMIT $2`;
    case 'following':
      return `SELECT f.followee_id AS id, u.username, f.created_at AS at FROM follows f
        JOIN users u ON u.id = f.followee_id
        WHERE f.follower_id = $1 AND f.state = ${FOLLOWING} AND u.active
        ${bound('f.created_at', 'f.followee_id')}
        ORDER BY f.created_at DESC, f.followee_id DESC LIMIT $2`;
    default:
      return `SELECT e.target_id AS id, u.username, e.created_at AS at FROM edges e
        JOIN users u ON u.id = e.target_id
        WHERE e.kind = ${EDGE_KIND[SEGMENT_KIND[list] as EdgeKind]} AND e.source_id = $1 AND u.active
        ${bound('e.created_at', 'e.target_id')}
        ORDER BY e.created_at DESC, e.target_id DESC LIMIT $2`;
  }
}

/** The owner's row as a viewer sees it: visibility and counts in one query. */
const VIEW_SQL = `SELECT o.active, o.private, o.hide_lists, c.followers, c.following,
    (SELECT active FROM users WHERE id = $2) AS viewer_active,
    EXISTS (SELECT 1 FROM edges WHERE kind = ${EDGE_KIND.blocks} AND source_id = $1 AND target_id = $2) AS blocked,
    EXISTS (SELECT 1 FROM follows WHERE follower_id = $2 AND followee_id = $1 AND state = ${FOLLOWING}) AS follows
  FROM users o JOIN counts c ON c.id = o.id WHERE o.id = $1`;
interface ViewRow {
  active: boolean;
  private: boolean;
  hide_lists: boolean;
  followers: string;
  following: string;
  viewer_active: boolean | null;
  blocked: boolean;
  follows: boolean;
}

/** Both accounts of a pair op under share locks, with what stands between them. */
const PAIR_SQL = `SELECT u.id, u.active, u.private, c.following,
    EXISTS (SELECT 1 FROM edges WHERE kind = ${EDGE_KIND.blocks}
      AND ((source_id = $1 AND target_id = $2) OR (source_id = $2 AND target_id = $1))) AS blocked,
    (SELECT state FROM follows WHERE follower_id = $1 AND followee_id = $2) AS state
  FROM users u JOIN counts c ON c.id = u.id WHERE u.id IN ($1, $2) ORDER BY u.id FOR SHARE OF u`;
interface PairRow {
  id: string;
  active: boolean;
  private: boolean;
  following: string;
  blocked: boolean;
  state: number | null;
}

export interface PeerOptions {
  pool: pg.Pool;
  jwtSecret: string;
  /** Seals list cursors (HMAC); defaults to the JWT secret. */
  cursorSecret?: string;
}

export function peerApp(o: PeerOptions) {
  const meter = new Meter();
  const db = new Db(o.pool, meter);
  const cursorSecret = o.cursorSecret ?? o.jwtSecret;
  const app = new Hono<Env>();

  const sealCursor = (owner: bigint, list: string, at: string, id: string) => {
    const body = `${at}.${id}`;
    const mac = createHmac('sha256', cursorSecret)
      .update(`${owner}/${list}/${body}`)
      .digest()
      .subarray(0, 16);
    return `${Buffer.from(body).toString('base64url')}.${mac.toString('base64url')}`;
  };
  const openCursor = (owner: bigint, list: string, cursor: string): [string, string] => {
    const bad = () => new Problem(400, 'invalid_cursor', 'The cursor is not one this list issued');
    const [b, m] = cursor.split('.');
    if (!b || !m) throw bad();
    const body = Buffer.from(b, 'base64url').toString();
    const want = createHmac('sha256', cursorSecret)
      .update(`${owner}/${list}/${body}`)
      .digest()
      .subarray(0, 16);
    const got = Buffer.from(m, 'base64url');
    if (got.length !== want.length || !timingSafeEqual(got, want)) throw bad();
    const [at, id] = body.split('.');
    if (!at || !id || !/^\d+$/.test(at) || !/^\d+$/.test(id)) throw bad();
    return [at, id];
  };

  app.onError((e, c) => {
    let p: Problem;
    if (e instanceof Problem) p = e;
    else {
      const code = (e as { code?: string }).code ?? '';
      if (code === '23505') p = new Problem(409, 'username_taken', 'The username belongs to another account');
      else if (/^(08|57P0)/.test(code) || /ECONNREFUSED|ECONNRESET|timeout/i.test(String(e)))
        p = new Problem(503, 'unavailable', 'The database is unreachable');
      else {
        console.error(JSON.stringify({ level: 50, msg: 'peer: unexpected error', err: String(e) }));
        return c.json(
          { type: 'about:blank', title: 'Internal error', status: 500, detail: 'internal error' },
          500,
          { 'content-type': 'application/problem+json' },
        );
      }
    }
    return c.json(
      {
        type: `https://flocklist.dev/problems/${p.code}`,
        title: p.code,
        status: p.status,
        detail: p.message,
      },
      p.status,
      { 'content-type': 'application/problem+json' },
    );
  });
  app.notFound(() => {
    throw new Problem(404, 'not_found', 'No such route');
  });

  app.get('/healthz', (c) => c.json({ ok: true }));
  app.get('/metrics', (c) => c.text(meter.text()));

  app.use(
    '/v1/*',
    bodyLimit({
      maxSize: 64 * 1024,
      onError: () => {
        throw new Problem(413, 'body_too_large', 'Bodies are limited to 64 KiB');
      },
    }),
  );
  app.use('/v1/*', async (c, next) => {
    const h = c.req.header('authorization');
    if (!h?.startsWith('Bearer ')) throw new Problem(401, 'unauthorized', 'A bearer token is required');
    let claims: Record<string, unknown>;
    try {
      claims = (await verify(h.slice(7), o.jwtSecret, 'HS256')) as Record<string, unknown>;
    } catch {
      throw new Problem(401, 'unauthorized', 'The token is invalid or expired');
    }
    if (typeof claims.exp !== 'number') throw new Problem(401, 'unauthorized', 'The token has no exp');
    c.set('sub', parseId(String(claims.sub), 'sub'));
    c.set(
      'admin',
      String(claims.scope ?? '')
        .split(' ')
        .includes('graph:admin'),
    );
    await next();
  });

  // Idempotency receipts: replayed for the same request, 409 for another one under the same key.
  app.use('/v1/*', async (c, next) => {
    const key = c.req.header('idempotency-key');
    if (c.req.method === 'GET' || key === undefined) return next();
    if (!/^[\x20-\x7e]{1,128}$/.test(key)) throw new Problem(400, 'invalid_idempotency_key', 'Bad key');
    const request = `${c.req.method} ${c.req.path} ${await c.req.raw.clone().text()}`;
    const prior = await db.q<{ request: string; status: number; body: string }>(
      'get_receipt',
      'SELECT request, status, body FROM idempotency WHERE user_id = $1 AND key = $2',
      [String(c.get('sub')), key],
    );
    const r = prior.rows[0];
    if (r) {
      if (r.request !== request)
        throw new Problem(409, 'idempotency_key_reused', 'Another request used this key');
      return c.body(r.body, r.status as 200, {
        'content-type': 'application/json',
        'idempotent-replayed': 'true',
      });
    }
    await next();
    if (c.res.status < 500) {
      await db.q(
        'put_receipt',
        'INSERT INTO idempotency (user_id, key, request, status, body) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING',
        [String(c.get('sub')), key, request, c.res.status, await c.res.clone().text()],
      );
    }
  });

  const actingAs = (c: { get: (k: 'sub' | 'admin') => bigint | boolean }, id: bigint) => {
    if (c.get('sub') !== id)
      throw new Problem(403, 'forbidden', "The token may not act on another user's graph");
  };
  const readBody = async (c: { req: { json: () => Promise<unknown> } }) => {
    try {
      return (await c.req.json()) as unknown;
    } catch {
      throw new Problem(400, 'invalid_body', 'The body is not JSON');
    }
  };
  const gone = (who = 'user') => new Problem(404, 'user_not_found', `Unknown or deactivated ${who}`);

  // ---- accounts ----
  app.put('/v1/users/:id', async (c) => {
    if (!c.get('admin')) throw new Problem(403, 'forbidden', 'graph:admin only');
    const id = parseId(c.req.param('id'));
    const body = await readBody(c);
    const fields = ['username', 'private', 'state', 'hide_lists', 'last_active_at'];
    if (typeof body !== 'object' || body === null || Object.keys(body).some((k) => !fields.includes(k)))
      throw new Problem(400, 'invalid_body', `The body is an object of ${fields.join(', ')}`);
    const b = body as {
      username?: unknown;
      private?: unknown;
      state?: unknown;
      hide_lists?: unknown;
      last_active_at?: unknown;
    };
    if (b.username !== undefined && (typeof b.username !== 'string' || !USERNAME.test(b.username)))
      throw new Problem(
        400,
        'invalid_body',
        'username: 1–30 characters of A–Z, a–z, 0–9, dot and underscore',
      );
    for (const k of ['private', 'hide_lists'] as const)
      if (b[k] !== undefined && typeof b[k] !== 'boolean')
        throw new Problem(400, 'invalid_body', `${k}: a boolean`);
    if (b.state !== undefined && b.state !== 'active' && b.state !== 'deactivated')
      throw new Problem(400, 'invalid_body', 'state: active or deactivated');
    let activeAt: bigint | undefined;
    if (b.last_active_at !== undefined) {
      const ms = typeof b.last_active_at === 'string' ? Date.parse(b.last_active_at) : Number.NaN;
      if (!Number.isFinite(ms)) throw new Problem(400, 'invalid_body', 'last_active_at: an RFC 3339 time');
      activeAt = BigInt(ms) * 1000n;
    }
    const onlyActivity = Object.keys(b).length === 1 && activeAt !== undefined;
    type UserRow = {
      username: string;
      private: boolean;
      hide_lists: boolean;
      active: boolean;
      last_active_at: string | null;
    };
    const { created, row } = await db.tx(null, async (q) => {
      const cur = (
        await q<UserRow>(
          'get_user_for_update',
          'SELECT username, private, hide_lists, active, last_active_at FROM users WHERE id = $1 FOR UPDATE',
          [String(id)],
        )
      ).rows[0];
      if (!cur) {
        if (onlyActivity) throw gone();
        if (typeof b.username !== 'string')
          throw new Problem(400, 'invalid_body', 'username is required to create');
        const next: UserRow = {
          username: b.username,
          private: b.private === true,
          hide_lists: b.hide_lists === true,
          active: b.state !== 'deactivated',
          last_active_at: activeAt === undefined ? null : String(activeAt),
        };
        await q(
          'insert_user',
          `WITH u AS (INSERT INTO users (id, username, private, hide_lists, active, last_active_at)
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id)
           INSERT INTO counts (id) SELECT id FROM u`,
          [String(id), next.username, next.private, next.hide_lists, next.active, next.last_active_at],
        );
        return { created: true, row: next };
      }
      if (onlyActivity && !cur.active) throw gone();
      const next: UserRow = { ...cur };
      if (typeof b.username === 'string') next.username = b.username;
      if (typeof b.hide_lists === 'boolean') next.hide_lists = b.hide_lists;
      if (activeAt !== undefined && (cur.last_active_at === null || activeAt > BigInt(cur.last_active_at)))
        next.last_active_at = String(activeAt);
      if (typeof b.private === 'boolean') next.private = b.private;
      if (cur.private && !next.private) await acceptPending(q, id, cur.active);
      if (b.state !== undefined) next.active = b.state === 'active';
      if (cur.active !== next.active) await moveCounterparts(q, id, next.active ? 1 : -1);
      await q(
        'update_user',
        'UPDATE users SET username = $2, private = $3, hide_lists = $4, active = $5, last_active_at = $6 WHERE id = $1',
        [String(id), next.username, next.private, next.hide_lists, next.active, next.last_active_at],
      );
      return { created: false, row: next };
    });
    return c.json(
      {
        id: String(id),
        username: row.username,
        private: row.private,
        state: row.active ? 'active' : 'deactivated',
        hide_lists: row.hide_lists,
        last_active_at: row.last_active_at === null ? null : isoMicros(row.last_active_at),
      },
      created ? 201 : 200,
    );
  });

  /** A flip to public: every pending request becomes a follow; counts move for the active ends. */
  async function acceptPending(q: Query, owner: bigint, ownerActive: boolean) {
    const requesters = (
      await q<{ id: string; active: boolean }>(
        'lock_requesters',
        `SELECT id, active FROM users WHERE id IN
           (SELECT follower_id FROM follows WHERE followee_id = $1 AND state = ${REQUESTED})
         ORDER BY id FOR SHARE`,
        [String(owner)],
      )
    ).rows;
    if (requesters.length === 0) return;
    await q(
      'accept_requests',
      `UPDATE follows SET state = ${FOLLOWING} WHERE followee_id = $1 AND state = ${REQUESTED}`,
      [String(owner)],
    );
    const active = requesters.filter((r) => r.active).length;
    await q(
      'count_accepts',
      `UPDATE counts SET
         followers = followers + CASE WHEN id = $1 THEN $2::bigint ELSE 0 END,
         following = following + CASE WHEN id <> $1 AND $3 THEN 1 ELSE 0 END
       WHERE id = $1 OR id = ANY($4::bigint[])`,
      [String(owner), active, ownerActive, requesters.map((r) => r.id)],
    );
  }

  /** A deactivation (−1) or reactivation (+1): every counterpart's count of the account moves. */
  async function moveCounterparts(q: Query, id: bigint, by: 1 | -1) {
    await q(
      'move_followee_counts',
      `UPDATE counts c SET followers = c.followers + $2 FROM follows f
       WHERE f.follower_id = $1 AND f.state = ${FOLLOWING} AND c.id = f.followee_id`,
      [String(id), by],
    );
    await q(
      'move_follower_counts',
      `UPDATE counts c SET following = c.following + $2 FROM follows f
       WHERE f.followee_id = $1 AND f.state = ${FOLLOWING} AND c.id = f.follower_id`,
      [String(id), by],
    );
  }

  app.get('/v1/users/:id', async (c) => {
    const id = parseId(c.req.param('id'));
    const viewer = c.get('sub');
    const r = (
      await db.q<{
        username: string;
        private: boolean;
        hide_lists: boolean;
        active: boolean;
        last_active_at: string | null;
        followers: string;
        following: string;
        viewer_active: boolean | null;
        out_state: number | null;
        in_state: number | null;
        blocking: boolean;
        blocked_by: boolean;
        muting: boolean;
      }>(
        'get_profile',
        `SELECT u.username, u.private, u.hide_lists, u.active, u.last_active_at, c.followers, c.following,
           (SELECT active FROM users WHERE id = $2) AS viewer_active,
           (SELECT state FROM follows WHERE follower_id = $2 AND followee_id = $1) AS out_state,
           (SELECT state FROM follows WHERE follower_id = $1 AND followee_id = $2) AS in_state,
           EXISTS (SELECT 1 FROM edges WHERE kind = ${EDGE_KIND.blocks} AND source_id = $2 AND target_id = $1) AS blocking,
           EXISTS (SELECT 1 FROM edges WHERE kind = ${EDGE_KIND.blocks} AND source_id = $1 AND target_id = $2) AS blocked_by,
           EXISTS (SELECT 1 FROM edges WHERE kind = ${EDGE_KIND.mutes} AND source_id = $2 AND target_id = $1) AS muting
         FROM users u JOIN counts c ON c.id = u.id WHERE u.id = $1`,
        [String(id), String(viewer)],
      )
    ).rows[0];
    const admin = c.get('admin');
    if (!r) throw gone();
    if (!admin && (!r.active || r.viewer_active === false || r.blocked_by)) throw gone();
    const own = viewer === id;
    const seesCounts = admin || own || (!r.hide_lists && (!r.private || r.out_state === FOLLOWING));
    return c.json({
      id: String(id),
      username: r.username,
      private: r.private,
      counts: seesCounts
        ? {
            followers: Number(r.followers),
            following: Number(r.following),
            exact: true,
            as_of: isoMicros(nowMicros()),
          }
        : null,
      relationship: {
        following: followState(r.out_state),
        followed_by: r.in_state === FOLLOWING,
        blocking: r.blocking,
        muting: r.muting,
        restricting: false,
      },
      ...(admin
        ? {
            state: r.active ? 'active' : 'deactivated',
            last_active_at: r.last_active_at === null ? null : isoMicros(r.last_active_at),
          }
        : {}),
    });
  });

  /** The owner as `viewer` may see it, or the error they get. */
  async function view(owner: bigint, viewer: bigint, admin: boolean, ownerOnly: boolean): Promise<ViewRow> {
    if (ownerOnly && !admin && viewer !== owner)
      throw new Problem(403, 'forbidden', 'Only the owner reads this list');
    const r = (await db.q<ViewRow>('get_view', VIEW_SQL, [String(owner), String(viewer)])).rows[0];
    if (!r?.active) throw gone();
    if (admin || viewer === owner) {
      if (!admin && r.viewer_active === false) throw gone('caller');
      return r;
    }
    if (r.viewer_active === false) throw gone('caller');
    if (r.blocked) throw gone();
    if (r.hide_lists)
      throw new Problem(403, 'lists_hidden', "The account's lists are visible only to itself");
    if (r.private && !r.follows)
      throw new Problem(403, 'private_account', 'Only accepted followers see this');
    return r;
  }

  app.get('/v1/users/:id/counts', async (c) => {
    const id = parseId(c.req.param('id'));
    const r = await view(id, c.get('sub'), c.get('admin'), false);
    return c.json({
      followers: Number(r.followers),
      following: Number(r.following),
      exact: true,
      as_of: isoMicros(nowMicros()),
    });
  });

  app.get('/v1/users/:id/:list{followers|following|requests|mutes|close-friends|blocks}', async (c) => {
    const id = parseId(c.req.param('id'));
    const list = c.req.param('list') as ListName;
    const rawLimit = c.req.query('limit') ?? '50';
    if (!/^\d{1,4}$/.test(rawLimit) || Number(rawLimit) < 1 || Number(rawLimit) > 200)
      throw new Problem(400, 'invalid_limit', 'limit: 1 to 200');
    const limit = Number(rawLimit);
    const cursor = c.req.query('cursor');
    const after = cursor === undefined ? null : openCursor(id, list, cursor);
    await view(id, c.get('sub'), c.get('admin'), LISTS[list].ownerOnly);
    const rows = (
      await db.q<{ id: string; username: string; at: string }>(
        `page_${list}`,
        pageSql(list, after !== null),
        after ? [String(id), limit + 1, after[0], after[1]] : [String(id), limit + 1],
      )
    ).rows;
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return c.json({
      items: page.map((r) => ({ id: r.id, username: r.username, followed_at: isoMicros(r.at) })),
      next_cursor: rows.length > limit && last ? sealCursor(id, list, last.at, last.id) : null,
      prev_cursor: null,
    });
  });

  app.post('/v1/users/:id/relationships', async (c) => {
    const id = parseId(c.req.param('id'));
    actingAs(c, id);
    const body = await readBody(c);
    const raw = (body as { ids?: unknown }).ids;
    if (!Array.isArray(raw) || raw.length > 100 || Object.keys(body as object).length !== 1)
      throw new Problem(400, 'invalid_body', 'The body is { "ids": [at most 100 ids] }');
    const ids = raw.map((x) => String(parseId(typeof x === 'string' ? x : undefined, 'ids[]')));
    const rows = (
      await db.q<{
        id: string;
        actor_active: boolean | null;
        active: boolean | null;
        out_state: number | null;
        in_state: number | null;
        blocking: boolean;
        blocked_by: boolean;
        muting: boolean;
        close_friend: boolean;
      }>(
        'get_relationships',
        `SELECT t.id::text AS id, (SELECT active FROM users WHERE id = $1) AS actor_active, u.active,
           (SELECT state FROM follows WHERE follower_id = $1 AND followee_id = t.id) AS out_state,
           (SELECT state FROM follows WHERE follower_id = t.id AND followee_id = $1) AS in_state,
           EXISTS (SELECT 1 FROM edges WHERE kind = ${EDGE_KIND.blocks} AND source_id = $1 AND target_id = t.id) AS blocking,
           EXISTS (SELECT 1 FROM edges WHERE kind = ${EDGE_KIND.blocks} AND source_id = t.id AND target_id = $1) AS blocked_by,
           EXISTS (SELECT 1 FROM edges WHERE kind = ${EDGE_KIND.mutes} AND source_id = $1 AND target_id = t.id) AS muting,
           EXISTS (SELECT 1 FROM edges WHERE kind = ${EDGE_KIND.close_friends} AND source_id = $1 AND target_id = t.id) AS close_friend
         FROM unnest($2::bigint[]) WITH ORDINALITY AS t(id, ord) LEFT JOIN users u ON u.id = t.id
         ORDER BY t.ord`,
        [String(id), ids],
      )
    ).rows;
    const actorActive =
      rows[0]?.actor_active ??
      (await db.q<{ active: boolean }>('get_user', 'SELECT active FROM users WHERE id = $1', [String(id)]))
        .rows[0]?.active;
    if (actorActive !== true) throw gone();
    return c.json({
      items: rows.map((r) => {
        const on = r.active === true;
        return {
          id: r.id,
          following: on && r.out_state === FOLLOWING,
          followed_by: on && r.in_state === FOLLOWING,
          requested: on && r.out_state === REQUESTED,
          requested_by: on && r.in_state === REQUESTED,
          blocking: on && r.blocking,
          blocked_by: on && r.blocked_by,
          muting: on && r.muting,
          close_friend: on && r.close_friend,
          restricting: false,
        };
      }),
    });
  });

  /** Both accounts of a pair op, locked; 404 unless both exist and are active. */
  async function pairRows(q: Query, a: bigint, b: bigint) {
    const rows = (await q<PairRow>('get_pair', PAIR_SQL, [String(a), String(b)])).rows;
    const actor = rows.find((r) => r.id === String(a));
    const target = rows.find((r) => r.id === String(b));
    if (!actor?.active) throw gone('caller');
    if (!target?.active) throw gone();
    return { actor, target, blocked: actor.blocked, state: actor.state };
  }

  /** Counts after `source → target` became (+1) or stopped being (−1) a follow of two active accounts. */
  const countFollow = (q: Query, source: bigint, target: bigint, by: 1 | -1) =>
    q(
      'count_follow',
      `UPDATE counts SET
         following = following + CASE WHEN id = $1 THEN $3::bigint ELSE 0 END,
         followers = followers + CASE WHEN id = $2 THEN $3::bigint ELSE 0 END
       WHERE id IN ($1, $2)`,
      [String(source), String(target), by],
    );

  const pairParams = (c: { req: { param: (k: string) => string | undefined } }) => {
    const a = parseId(c.req.param('id'));
    const b = parseId(c.req.param('target'), 'target');
    if (a === b) throw new Problem(400, 'self_edge', 'An account cannot do this to itself');
    return [a, b] as const;
  };

  app.put('/v1/users/:id/following/:target', async (c) => {
    const [a, b] = pairParams(c);
    actingAs(c, a);
    const state = await db.tx(pairKey(a, b), async (q) => {
      const p = await pairRows(q, a, b);
      if (p.blocked) throw new Problem(403, 'blocked', 'A block stands between the two accounts');
      if (p.state !== null) return followState(p.state);
      if (Number(p.actor.following) >= FOLLOWING_CAP)
        throw new Problem(409, 'following_cap', `At most ${FOLLOWING_CAP} follows`);
      const s = p.target.private ? REQUESTED : FOLLOWING;
      await q(
        'insert_follow',
        'INSERT INTO follows (follower_id, followee_id, state, created_at) VALUES ($1, $2, $3, $4)',
        [String(a), String(b), s, String(nowMicros())],
      );
      if (s === FOLLOWING) await countFollow(q, a, b, 1);
      return followState(s);
    });
    return c.json({ state });
  });

  app.delete('/v1/users/:id/following/:target', async (c) => {
    const [a, b] = pairParams(c);
    actingAs(c, a);
    await db.tx(pairKey(a, b), async (q) => {
      const p = await pairRows(q, a, b);
      if (p.state === null) return;
      await q('delete_follow', 'DELETE FROM follows WHERE follower_id = $1 AND followee_id = $2', [
        String(a),
        String(b),
      ]);
      if (p.state === FOLLOWING) await countFollow(q, a, b, -1);
    });
    return c.json({ state: 'none' });
  });

  app.put('/v1/users/:id/:typed{blocks|mutes|close-friends}/:target', async (c) => {
    const [a, b] = pairParams(c);
    actingAs(c, a);
    const typed = c.req.param('typed');
    const kind = EDGE_KIND[SEGMENT_KIND[typed] as EdgeKind];
    await db.tx(pairKey(a, b), async (q) => {
      await pairRows(q, a, b);
      const made = await q(
        'insert_edge',
        'INSERT INTO edges (kind, source_id, target_id, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING',
        [kind, String(a), String(b), String(nowMicros())],
      );
      if (typed !== 'blocks' || made.rowCount === 0) return;
      const removed = (
        await q<{ follower_id: string; followee_id: string; state: number }>(
          'delete_follows_both_ways',
          `DELETE FROM follows WHERE (follower_id = $1 AND followee_id = $2) OR (follower_id = $2 AND followee_id = $1)
           RETURNING follower_id, followee_id, state`,
          [String(a), String(b)],
        )
      ).rows;
      for (const r of removed)
        if (r.state === FOLLOWING) await countFollow(q, BigInt(r.follower_id), BigInt(r.followee_id), -1);
    });
    return c.json({ state: typed === 'blocks' ? 'blocking' : typed === 'mutes' ? 'muting' : 'close_friend' });
  });

  app.delete('/v1/users/:id/:typed{blocks|mutes|close-friends}/:target', async (c) => {
    const [a, b] = pairParams(c);
    actingAs(c, a);
    const kind = EDGE_KIND[SEGMENT_KIND[c.req.param('typed')] as EdgeKind];
    await db.tx(pairKey(a, b), async (q) => {
      await pairRows(q, a, b);
      await q('delete_edge', 'DELETE FROM edges WHERE kind = $1 AND source_id = $2 AND target_id = $3', [
        kind,
        String(a),
        String(b),
      ]);
    });
    return c.json({ state: 'none' });
  });

  return { app, meter };
}
