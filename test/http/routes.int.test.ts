/**
 * Every operation of the API contract outside Part 2, on the real node through `app.request()`: happy paths,
 * each visibility rule and every error status the contract names, with whole bodies compared.
 * Deterministic `followed_at` values come from admin `Graph-Position` writes.
 */
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpMetrics } from '../../src/http/metrics.js';
import { ID_MESSAGE } from '../../src/http/schemas.js';
import { createCqlClient } from '../../src/store/cassandra/client.js';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { bearer, buildTestApp, call, problem } from './support/app.js';
import { type RealApp, realApp } from './support/real-app.js';

const P0 = 1_796_000_000_000_000n;
const at = (k: number) => P0 + BigInt(k) * 1000n;
const time = (k: number) => new Date(Number(at(k) / 1000n)).toISOString().replace('Z', '000Z');
const item = (id: number, k: number) => ({ id: String(id), username: `u${id}`, followed_at: time(k) });
const notFound = (id: number) => problem(404, 'user_not_found', `user ${id} not found`);
const FORBIDDEN = problem(403, 'forbidden', "a token may act only on its own subject's relationships");
const NOT_VISIBLE = problem(403, 'not_visible', 'this list is not visible to you');
const BLOCKED = problem(403, 'blocked', 'a block stands between these accounts');
const SELF = problem(400, 'self_relation', 'an account cannot follow, block, mute or list itself');

const admin = bearer(999_999, { admin: true });
const as = (id: number) => bearer(id);

let r: RealApp;
type Init = Parameters<typeof call>[3];
const req = (method: string, path: string, o: Init = {}) => call(r.app, method, path, o);
const expectRes = async (p: ReturnType<typeof req>, status: number, json: unknown) => {
  const res = await p;
  expect([res.status, res.json]).toEqual([status, json]);
  return res;
};

async function users(...specs: [number, boolean?][]) {
  for (const [id, priv] of specs) {
    const res = await req('PUT', `/v1/users/${id}`, {
      auth: admin,
      body: { username: `u${id}`, private: !!priv },
    });
    expect(res.status).toBe(201);
  }
}
/** Admin replay of `src → tgt` at position `at(k)`. */
async function adminOp(method: string, src: number, rel: string, tgt: number, k: number) {
  const res = await req(method, `/v1/users/${src}/${rel}/${tgt}`, {
    auth: admin,
    headers: { 'Graph-Position': String(at(k)) },
  });
  expect(res.status).toBe(200);
}

beforeAll(async () => {
  r = await realApp('http_routes');
});
afterAll(async () => {
  await r?.close();
});

describe('users', () => {
  it('PUT creates (201), updates (200), needs graph:admin, keeps usernames unique, validates', async () => {
    await expectRes(req('PUT', '/v1/users/10', { auth: admin, body: { username: 'zed' } }), 201, {
      id: '10',
      username: 'zed',
      private: false,
      state: 'active',
      hide_lists: false,
      last_active_at: null,
    });
    await expectRes(
      req('PUT', '/v1/users/10', { auth: admin, body: { username: 'Zed.2', private: true } }),
      200,
      {
        id: '10',
        username: 'Zed.2',
        private: true,
        state: 'active',
        hide_lists: false,
        last_active_at: null,
      },
    );
    await expectRes(
      req('PUT', '/v1/users/10', { auth: as(10), body: { username: 'zed' } }),
      403,
      problem(403, 'forbidden', 'this call needs the graph:admin scope'),
    );
    await expectRes(
      req('PUT', '/v1/users/11', { auth: admin, body: { username: 'Zed.2' } }),
      409,
      problem(409, 'username_taken', 'the username is held by another account'),
    );
    await expectRes(
      req('PUT', '/v1/users/11', { auth: admin, body: { username: 'has space' } }),
      400,
      problem(400, 'validation_failed', 'invalid body', {
        errors: [{ path: 'body.username', message: '1–30 characters of A–Z, a–z, 0–9, dot and underscore' }],
      }),
    );
    await expectRes(
      req('PUT', '/v1/users/11', { auth: admin, body: { username: 'x'.repeat(31) } }),
      400,
      problem(400, 'validation_failed', 'invalid body', {
        errors: [{ path: 'body.username', message: '1–30 characters of A–Z, a–z, 0–9, dot and underscore' }],
      }),
    );
    await expectRes(
      req('PUT', '/v1/users/12', { auth: admin, body: { private: true } }),
      400,
      problem(400, 'validation_failed', 'username: is required to create a user', {
        errors: [{ path: 'username', message: 'is required to create a user' }],
      }),
    );
    await expectRes(
      req('PUT', '/v1/users/01', { auth: admin, body: { username: 'ok' } }),
      400,
      problem(400, 'validation_failed', 'invalid path', {
        errors: [{ path: 'path.id', message: ID_MESSAGE }],
      }),
    );
  });

  it('GET returns the profile with counts and the viewer relationship; 404 unknown or blocking', async () => {
    await users([12], [13], [14]);
    await adminOp('PUT', 13, 'following', 12, 1);
    await adminOp('PUT', 12, 'following', 13, 2);
    await adminOp('PUT', 13, 'mutes', 12, 3);
    await expectRes(req('GET', '/v1/users/12', { auth: as(13) }), 200, {
      id: '12',
      username: 'u12',
      private: false,
      counts: { followers: 1, following: 1, exact: false, as_of: null },
      relationship: {
        following: 'following',
        followed_by: true,
        blocking: false,
        muting: true,
        restricting: false,
      },
    });
    await expectRes(req('GET', '/v1/users/12', { auth: as(12) }), 200, {
      id: '12',
      username: 'u12',
      private: false,
      counts: { followers: 1, following: 1, exact: false, as_of: null },
      relationship: {
        following: 'none',
        followed_by: false,
        blocking: false,
        muting: false,
        restricting: false,
      },
    });
    await expectRes(req('GET', '/v1/users/404404', { auth: as(12) }), 404, notFound(404404));
    await expectRes(req('PUT', '/v1/users/12/blocks/14', { auth: as(12) }), 200, { state: 'blocking' });
    await expectRes(req('GET', '/v1/users/12', { auth: as(14) }), 404, notFound(12));
    await expectRes(req('GET', '/v1/users/14', { auth: as(12) }), 200, {
      id: '14',
      username: 'u14',
      private: false,
      counts: expect.objectContaining({ followers: 0, following: 0 }),
      relationship: {
        following: 'none',
        followed_by: false,
        blocking: true,
        muting: false,
        restricting: false,
      },
    });
    await expectRes(
      req('GET', '/v1/users/12'),
      401,
      problem(401, 'unauthorized', 'no authorization included in request'),
    );
  });
});

describe('following', () => {
  beforeAll(async () => {
    await users([20], [21], [22, true], [23], [24]);
  });

  it('PUT follows a public account, requests a private one, and is idempotent (followed_at kept)', async () => {
    await expectRes(req('PUT', '/v1/users/21/following/20', { auth: as(21) }), 200, { state: 'following' });
    const first = await req('GET', '/v1/users/21/following/20', { auth: as(21) });
    await expectRes(req('PUT', '/v1/users/21/following/20', { auth: as(21) }), 200, { state: 'following' });
    await expectRes(req('GET', '/v1/users/21/following/20', { auth: as(21) }), 200, first.json);
    expect(first.json).toEqual({
      state: 'following',
      followed_at: expect.stringMatching(/^\d{4}-.*\.\d{6}Z$/),
    });

    await expectRes(req('PUT', '/v1/users/21/following/22', { auth: as(21) }), 200, { state: 'requested' });
    await expectRes(req('PUT', '/v1/users/21/following/22', { auth: as(21) }), 200, { state: 'requested' });
    const status = await req('GET', '/v1/users/21/following/22', { auth: as(21) });
    expect(status.json).toEqual({ state: 'requested', followed_at: expect.any(String) });
  });

  it('PUT refuses self (400), blocks either way (403), unknown users (404), other actors (403)', async () => {
    await expectRes(req('PUT', '/v1/users/23/following/23', { auth: as(23) }), 400, SELF);
    await expectRes(req('PUT', '/v1/users/24/blocks/23', { auth: as(24) }), 200, { state: 'blocking' });
    await expectRes(req('PUT', '/v1/users/23/following/24', { auth: as(23) }), 403, BLOCKED);
    await expectRes(req('PUT', '/v1/users/24/following/23', { auth: as(24) }), 403, BLOCKED);
    await expectRes(req('PUT', '/v1/users/23/following/777777', { auth: as(23) }), 404, notFound(777777));
    await expectRes(req('PUT', '/v1/users/20/following/23', { auth: as(23) }), 403, FORBIDDEN);
  });

  it('PUT over the following cap is a 409', async () => {
    await users([25], [26], [27]);
    const capped = r.variant({ maxFollowing: 1 });
    expect((await call(capped, 'PUT', '/v1/users/25/following/26', { auth: as(25) })).json).toEqual({
      state: 'following',
    });
    const over = await call(capped, 'PUT', '/v1/users/25/following/27', { auth: as(25) });
    expect([over.status, over.json]).toEqual([
      409,
      problem(409, 'following_cap', 'following limit of 1 reached'),
    ]);
    const again = await call(capped, 'PUT', '/v1/users/25/following/26', { auth: as(25) });
    expect([again.status, again.json]).toEqual([200, { state: 'following' }]);
  });

  it('DELETE unfollows or cancels a request, idempotently', async () => {
    await users([28], [29, true]);
    await adminOp('PUT', 28, 'following', 29, 1);
    await expectRes(req('DELETE', '/v1/users/28/following/29', { auth: as(28) }), 200, { state: 'none' });
    await expectRes(req('GET', '/v1/users/28/following/29', { auth: as(28) }), 200, { state: 'none' });
    await expectRes(req('DELETE', '/v1/users/28/following/29', { auth: as(28) }), 200, { state: 'none' });
    await expectRes(req('DELETE', '/v1/users/28/following/29', { auth: as(29) }), 403, FORBIDDEN);
    await expectRes(req('DELETE', '/v1/users/28/following/777777', { auth: as(28) }), 404, notFound(777777));
  });

  it('GET status is open to anyone who may see the lists', async () => {
    await users([30], [31, true], [32], [33]);
    await adminOp('PUT', 30, 'following', 32, 5);
    await adminOp('PUT', 31, 'following', 32, 6);
    await expectRes(req('GET', '/v1/users/30/following/32', { auth: as(33) }), 200, {
      state: 'following',
      followed_at: time(5),
    });
    await expectRes(req('GET', '/v1/users/31/following/32', { auth: as(31) }), 200, {
      state: 'following',
      followed_at: time(6),
    });
    await expectRes(req('GET', '/v1/users/31/following/32', { auth: as(33) }), 403, NOT_VISIBLE);
    await expectRes(req('GET', '/v1/users/30/following/777777', { auth: as(30) }), 404, notFound(777777));
    await expectRes(req('GET', '/v1/users/777777/following/30', { auth: as(30) }), 404, notFound(777777));
  });
});

describe('lists, cursors and contains', () => {
  // 40 is followed by 41 (k=1), 42 and 43 (k=2, a tie: larger id first), 44 (k=3); 41 follows 40, 42, 43.
  beforeAll(async () => {
    await users([40], [41], [42], [43], [44], [45]);
    await adminOp('PUT', 41, 'following', 40, 1);
    await adminOp('PUT', 42, 'following', 40, 2);
    await adminOp('PUT', 43, 'following', 40, 2);
    await adminOp('PUT', 44, 'following', 40, 3);
    await adminOp('PUT', 41, 'following', 42, 4);
    await adminOp('PUT', 41, 'following', 43, 5);
  });

  it('followers: newest first, ties by larger id, paged to the end', async () => {
    await expectRes(req('GET', '/v1/users/40/followers', { auth: as(45) }), 200, {
      items: [item(44, 3), item(43, 2), item(42, 2), item(41, 1)],
      next_cursor: null,
      prev_cursor: null,
    });
    const p1 = await req('GET', '/v1/users/40/followers?limit=2', { auth: as(45) });
    expect(p1.json).toEqual({
      items: [item(44, 3), item(43, 2)],
      next_cursor: expect.any(String),
      prev_cursor: null,
    });
    const cursor = p1.json.next_cursor as string;
    const p2 = await req('GET', `/v1/users/40/followers?limit=2&cursor=${encodeURIComponent(cursor)}`, {
      auth: as(45),
    });
    const p2Items = (p2.json as { items: unknown[] }).items;
    expect(p2Items).toEqual([item(42, 2), item(41, 1)]);
    if (p2.json.next_cursor !== null) {
      await expectRes(
        req(
          'GET',
          `/v1/users/40/followers?limit=2&cursor=${encodeURIComponent(p2.json.next_cursor as string)}`,
          {
            auth: as(45),
          },
        ),
        200,
        { items: [], next_cursor: null, prev_cursor: expect.any(String) },
      );
    }
  });

  it('following: newest first', async () => {
    await expectRes(req('GET', '/v1/users/41/following', { auth: as(45) }), 200, {
      items: [item(43, 5), item(42, 4), item(40, 1)],
      next_cursor: null,
      prev_cursor: null,
    });
  });

  it('a cursor is valid only for its own list; altered cursors are a 400', async () => {
    const p1 = await req('GET', '/v1/users/40/followers?limit=1', { auth: as(45) });
    const cursor = p1.json.next_cursor as string;
    const invalid = problem(
      400,
      'invalid_cursor',
      'the cursor is malformed, altered or belongs to another list',
    );
    const q = (c: string) => `?limit=1&cursor=${encodeURIComponent(c)}`;
    await expectRes(req('GET', `/v1/users/40/following${q(cursor)}`, { auth: as(45) }), 400, invalid);
    await expectRes(req('GET', `/v1/users/41/followers${q(cursor)}`, { auth: as(45) }), 400, invalid);
    const flipped = `${cursor.slice(0, -2)}${cursor.at(-2) === 'A' ? 'B' : 'A'}${cursor.at(-1)}`;
    await expectRes(req('GET', `/v1/users/40/followers${q(flipped)}`, { auth: as(45) }), 400, invalid);
    await expectRes(req('GET', `/v1/users/40/followers${q('not-a-cursor')}`, { auth: as(45) }), 400, invalid);
  });

  it('limit outside 1–200 is a 400', async () => {
    for (const limit of ['0', '201', '-1', 'ten', '1.5']) {
      const res = await req('GET', `/v1/users/40/followers?limit=${limit}`, { auth: as(45) });
      expect([res.status, res.json.code, (res.json.errors as { path: string }[])[0]?.path]).toEqual([
        400,
        'validation_failed',
        'query.limit',
      ]);
    }
  });

  it('contains: subset in request order, own subject or admin only, ≤1000 ids', async () => {
    await expectRes(
      req('POST', '/v1/users/41/following/contains', {
        auth: as(41),
        body: { ids: ['43', '44', '40', '999999'] },
      }),
      200,
      { ids: ['43', '40'] },
    );
    await expectRes(
      req('POST', '/v1/users/40/followers/contains', { auth: admin, body: { ids: ['41', '45', '44'] } }),
      200,
      { ids: ['41', '44'] },
    );
    await expectRes(
      req('POST', '/v1/users/40/followers/contains', { auth: as(41), body: { ids: ['41'] } }),
      403,
      FORBIDDEN,
    );
    await expectRes(
      req('POST', '/v1/users/777777/following/contains', { auth: admin, body: { ids: ['41'] } }),
      404,
      notFound(777777),
    );
    const many = Array.from({ length: 1001 }, (_, i) => String(i + 1));
    await expectRes(
      req('POST', '/v1/users/41/following/contains', { auth: as(41), body: { ids: many } }),
      400,
      problem(400, 'validation_failed', 'invalid body', {
        errors: [{ path: 'body.ids', message: 'Too big: expected array to have <=1000 items' }],
      }),
    );
    await expectRes(
      req('POST', '/v1/users/41/following/contains', { auth: as(41), body: { ids: ['1', '0'] } }),
      400,
      problem(400, 'validation_failed', 'invalid body', {
        errors: [{ path: 'body.ids.1', message: ID_MESSAGE }],
      }),
    );
  });
});

describe('followers', () => {
  beforeAll(async () => {
    await users([50], [51], [52], [53], [54]);
    // 54 follows 51 (k=1), 52 (k=2), 53 (k=3); 51, 52, 53 follow 50.
    for (const [s, t, k] of [
      [54, 51, 1],
      [54, 52, 2],
      [54, 53, 3],
      [51, 50, 4],
      [52, 50, 5],
      [53, 50, 6],
    ] as const) {
      await adminOp('PUT', s, 'following', t, k);
    }
  });

  it('followed-by: people the viewer follows who follow id', async () => {
    await expectRes(req('GET', '/v1/users/50/followed-by?limit=2', { auth: as(54) }), 200, {
      sample: [
        { id: '53', username: 'u53' },
        { id: '52', username: 'u52' },
      ],
      total: 3,
    });
    await expectRes(req('GET', '/v1/users/50/followed-by', { auth: as(51) }), 200, { sample: [], total: 0 });
    await expectRes(req('GET', '/v1/users/777777/followed-by', { auth: as(51) }), 404, notFound(777777));
  });

  it('counts are visible like the lists', async () => {
    await expectRes(req('GET', '/v1/users/50/counts', { auth: as(54) }), 200, {
      followers: 3,
      following: 0,
      exact: false,
      as_of: null,
    });
    await expectRes(req('GET', '/v1/users/54/counts', { auth: as(50) }), 200, {
      followers: 0,
      following: 3,
      exact: false,
      as_of: null,
    });
    await expectRes(req('GET', '/v1/users/777777/counts', { auth: as(50) }), 404, notFound(777777));
  });

  it('DELETE removes a follower (idempotent; owner only)', async () => {
    await expectRes(req('DELETE', '/v1/users/50/followers/52', { auth: as(52) }), 403, FORBIDDEN);
    await expectRes(req('DELETE', '/v1/users/50/followers/52', { auth: as(50) }), 200, { state: 'none' });
    await expectRes(req('DELETE', '/v1/users/50/followers/52', { auth: as(50) }), 200, { state: 'none' });
    await expectRes(req('GET', '/v1/users/50/followers', { auth: as(50) }), 200, {
      items: [item(53, 6), item(51, 4)],
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('GET', '/v1/users/50/counts', { auth: as(50) }), 200, {
      followers: 2,
      following: 0,
      exact: false,
      as_of: null,
    });
    await expectRes(req('DELETE', '/v1/users/50/followers/777777', { auth: as(50) }), 404, notFound(777777));
  });

  it('scan: slices are disjoint and cover every follower; admin only', async () => {
    const ids = new Set<string>();
    let total = 0;
    for (const slice of [0, 1, 2]) {
      let cursor: string | null = null;
      do {
        const q: string = `slice=${slice}&slices=3&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const res = await req('GET', `/v1/users/54/followers/scan?${q}`, { auth: admin });
        expect(res.status).toBe(200);
        for (const id of res.json.ids as string[]) ids.add(id);
        total += (res.json.ids as string[]).length;
        cursor = res.json.next_cursor as string | null;
      } while (cursor);
    }
    expect(total).toBe(0);
    await expectRes(req('GET', '/v1/users/50/followers/scan?slices=1&limit=1000', { auth: admin }), 200, {
      ids: expect.arrayContaining(['51', '53']),
      next_cursor: null,
    });
    const all: string[] = [];
    for (const slice of [0, 1]) {
      const res = await req('GET', `/v1/users/50/followers/scan?slice=${slice}&slices=2&limit=1000`, {
        auth: admin,
      });
      all.push(...(res.json.ids as string[]));
    }
    expect(all.sort()).toEqual(['51', '53']);
    await expectRes(
      req('GET', '/v1/users/50/followers/scan', { auth: as(50) }),
      403,
      problem(403, 'forbidden', 'this call needs the graph:admin scope'),
    );
    await expectRes(
      req('GET', '/v1/users/50/followers/scan?slice=2&slices=2', { auth: admin }),
      400,
      problem(400, 'validation_failed', 'invalid query', {
        errors: [{ path: 'query.slice', message: 'must be less than slices' }],
      }),
    );
    for (const q of ['slices=0', 'slices=1025', 'limit=1001', 'slice=-1']) {
      const res = await req('GET', `/v1/users/50/followers/scan?${q}`, { auth: admin });
      expect([res.status, res.json.code]).toEqual([400, 'validation_failed']);
    }
    await expectRes(req('GET', '/v1/users/777777/followers/scan', { auth: admin }), 404, notFound(777777));
  });
});

describe('activity: last_active_at and scans with active_since', () => {
  // Followers 171–178 of 170; 171, 173, 175 active at k = 20; 172 at k = 5; 176 deactivated with activity
  // at k = 30; 174, 177, 178 never reported.
  beforeAll(async () => {
    await users([170], [171], [172], [173], [174], [175], [176], [177], [178]);
    for (let f = 171; f <= 178; f++) await adminOp('PUT', f, 'following', 170, f);
  });
  const report = (id: number, k: number, extra: Record<string, unknown> = {}) =>
    req('PUT', `/v1/users/${id}`, { auth: admin, body: { last_active_at: time(k), ...extra } });
  const user = (id: number, lastActive: string | null, o: { private?: boolean; state?: string } = {}) => ({
    id: String(id),
    username: `u${id}`,
    private: o.private ?? false,
    state: o.state ?? 'active',
    hide_lists: false,
    last_active_at: lastActive,
  });
  /** Every slice of a scan of 170's followers, pages of `limit`: the ids each slice returned. */
  async function scan(slices: number, limit: number, since: string | null) {
    const out: string[][] = [];
    for (let slice = 0; slice < slices; slice++) {
      const ids: string[] = [];
      let cursor: string | null = null;
      do {
        const q: string =
          `slice=${slice}&slices=${slices}&limit=${limit}` +
          (since ? `&active_since=${encodeURIComponent(since)}` : '') +
          (cursor ? `&cursor=${encodeURIComponent(cursor)}` : '');
        const res = await req('GET', `/v1/users/170/followers/scan?${q}`, { auth: admin });
        expect(res.status).toBe(200);
        ids.push(...(res.json.ids as string[]));
        cursor = res.json.next_cursor as string | null;
      } while (cursor);
      out.push(ids);
    }
    return out;
  }

  it('PUT records the latest activity (any arrival order), GET shows it to graph:admin only', async () => {
    await expectRes(report(171, 20), 200, user(171, time(20)));
    await expectRes(report(171, 3), 200, user(171, time(20))); // an older report arriving late
    await expectRes(report(173, 20, { private: false }), 200, user(173, time(20)));
    await expectRes(report(175, 21), 200, user(175, time(21)));
    await expectRes(report(172, 5), 200, user(172, time(5)));
    await expectRes(report(176, 30), 200, user(176, time(30)));
    await expectRes(
      req('PUT', '/v1/users/176', { auth: admin, body: { state: 'deactivated' } }),
      200,
      user(176, time(30), { state: 'deactivated' }),
    );
    const asAdmin = await req('GET', '/v1/users/171', { auth: admin });
    expect([asAdmin.status, asAdmin.json.last_active_at, asAdmin.json.state]).toEqual([
      200,
      time(20),
      'active',
    ]);
    const asUser = await req('GET', '/v1/users/171', { auth: as(172) });
    expect([asUser.status, 'last_active_at' in asUser.json, 'state' in asUser.json]).toEqual([
      200,
      false,
      false,
    ]);
    // Errors: unknown account, a non-admin token, a bad time, a time ahead of the clock.
    await expectRes(report(777_778, 1), 404, notFound(777_778));
    await expectRes(
      req('PUT', '/v1/users/171', { auth: as(171), body: { last_active_at: time(1) } }),
      403,
      problem(403, 'forbidden', 'this call needs the graph:admin scope'),
    );
    const bad = await req('PUT', '/v1/users/171', { auth: admin, body: { last_active_at: 'yesterday' } });
    expect([bad.status, bad.json.errors]).toEqual([
      400,
      [
        {
          path: 'body.last_active_at',
          message: 'an RFC 3339 time with at most 6 fraction digits, e.g. 2026-11-30T04:31:18.123456Z',
        },
      ],
    ]);
    await expectRes(
      req('PUT', '/v1/users/171', { auth: admin, body: { last_active_at: '2999-01-01T00:00:00Z' } }),
      400,
      problem(400, 'validation_failed', 'last_active_at: a time not in the future', {
        errors: [{ path: 'last_active_at', message: 'a time not in the future' }],
      }),
    );
    await expectRes(
      req('GET', '/v1/users/171', { auth: admin }),
      200,
      expect.objectContaining({ last_active_at: time(20) }),
    );
  });

  it('a scan with active_since returns exactly the active members, each once across the slices', async () => {
    const sorted = (xs: string[]) => [...xs].sort();
    // Without active_since: every active (not deactivated) follower.
    expect(sorted((await scan(1, 1000, null)).flat())).toEqual([
      '171',
      '172',
      '173',
      '174',
      '175',
      '177',
      '178',
    ]);
    for (const [slices, limit] of [
      [1, 1000],
      [1, 1],
      [3, 2],
      [7, 1],
    ] as const) {
      // Active since k = 10: 171, 173, 175 (172 is older, 174/177/178 never reported, 176 deactivated).
      const parts = await scan(slices, limit, time(10));
      expect([slices, limit, sorted(parts.flat())]).toEqual([slices, limit, ['171', '173', '175']]);
      // The slices' coverage is the unfiltered scan's, minus the inactive.
      const all = await scan(slices, limit, null);
      expect(parts.map(sorted)).toEqual(
        all.map((ids) => sorted(ids.filter((id) => ['171', '173', '175'].includes(id)))),
      );
    }
    expect(sorted((await scan(2, 3, time(21))).flat())).toEqual(['175']);
    expect(sorted((await scan(2, 3, time(1))).flat())).toEqual(['171', '172', '173', '175']);
    const bad = await req('GET', '/v1/users/170/followers/scan?active_since=x', { auth: admin });
    expect([bad.status, bad.json.errors]).toEqual([
      400,
      [
        {
          path: 'query.active_since',
          message: 'an RFC 3339 time with at most 6 fraction digits, e.g. 2026-11-30T04:31:18.123456Z',
        },
      ],
    ]);
  });
});

describe('requests (private accounts)', () => {
  beforeAll(async () => {
    await users([60, true], [61], [62], [63]);
    await adminOp('PUT', 61, 'following', 60, 1);
    await adminOp('PUT', 62, 'following', 60, 2);
  });

  it('lists incoming requests to the owner only', async () => {
    await expectRes(req('GET', '/v1/users/60/requests', { auth: as(60) }), 200, {
      items: [item(62, 2), item(61, 1)],
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('GET', '/v1/users/60/requests', { auth: as(61) }), 403, FORBIDDEN);
  });

  it('accept makes the requester a follower; double accept is 200; no request is 404', async () => {
    await expectRes(req('POST', '/v1/users/60/requests/61/accept', { auth: as(61) }), 403, FORBIDDEN);
    await expectRes(req('POST', '/v1/users/60/requests/61/accept', { auth: as(60) }), 200, {
      state: 'following',
    });
    await expectRes(req('POST', '/v1/users/60/requests/61/accept', { auth: as(60) }), 200, {
      state: 'following',
    });
    await expectRes(
      req('POST', '/v1/users/60/requests/63/accept', { auth: as(60) }),
      404,
      problem(404, 'no_pending_request', 'no pending follow request from this account'),
    );
    await expectRes(
      req('POST', '/v1/users/60/requests/777777/accept', { auth: as(60) }),
      404,
      notFound(777777),
    );
    const status = await req('GET', '/v1/users/61/following/60', { auth: as(61) });
    expect(status.json).toEqual({ state: 'following', followed_at: expect.any(String) });
  });

  it('decline removes the request', async () => {
    await expectRes(req('POST', '/v1/users/60/requests/62/decline', { auth: as(60) }), 200, {
      state: 'none',
    });
    await expectRes(req('POST', '/v1/users/60/requests/62/decline', { auth: as(60) }), 200, {
      state: 'none',
    });
    await expectRes(req('GET', '/v1/users/60/requests', { auth: as(60) }), 200, {
      items: [],
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('GET', '/v1/users/62/following/60', { auth: as(62) }), 200, { state: 'none' });
  });
});

describe('visibility', () => {
  // 70 private, followed (accepted) by 71; 72 a stranger; 73 blocked by 70; 74 public, blocks 72.
  beforeAll(async () => {
    await users([70, true], [71], [72], [73], [74], [75]);
    await adminOp('PUT', 71, 'following', 70, 1);
    await req('POST', '/v1/users/70/requests/71/accept', { auth: as(70) });
    await adminOp('PUT', 75, 'following', 74, 3);
    await adminOp('PUT', 70, 'blocks', 73, 4);
    await adminOp('PUT', 74, 'blocks', 72, 5);
  });

  const listsOf = (id: number) => [
    `/v1/users/${id}/followers`,
    `/v1/users/${id}/following`,
    `/v1/users/${id}/counts`,
  ];

  it('private account: owner and accepted followers see the lists; others get 403', async () => {
    for (const path of listsOf(70)) {
      expect((await req('GET', path, { auth: as(70) })).status).toBe(200);
      expect((await req('GET', path, { auth: as(71) })).status).toBe(200);
      await expectRes(req('GET', path, { auth: as(72) }), 403, NOT_VISIBLE);
    }
    await expectRes(req('GET', '/v1/users/70/followers', { auth: as(71) }), 200, {
      items: [{ id: '71', username: 'u71', followed_at: expect.any(String) }],
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('GET', '/v1/users/70', { auth: as(72) }), 200, {
      id: '70',
      username: 'u70',
      private: true,
      counts: null,
      relationship: {
        following: 'none',
        followed_by: false,
        blocking: false,
        muting: false,
        restricting: false,
      },
    });
  });

  it('public account: any authenticated caller sees the lists', async () => {
    await expectRes(req('GET', '/v1/users/74/followers', { auth: as(71) }), 200, {
      items: [item(75, 3)],
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('GET', '/v1/users/74/counts', { auth: as(71) }), 200, {
      followers: 1,
      following: 0,
      exact: false,
      as_of: null,
    });
  });

  it('blocked by the owner: 404 for the profile, lists, counts and followed-by', async () => {
    for (const [owner, viewer] of [
      [70, 73],
      [74, 72],
    ] as const) {
      for (const path of [...listsOf(owner), `/v1/users/${owner}`, `/v1/users/${owner}/followed-by`]) {
        await expectRes(req('GET', path, { auth: as(viewer) }), 404, notFound(owner));
      }
      await expectRes(
        req('GET', `/v1/users/${owner}/following/71`, { auth: as(viewer) }),
        404,
        notFound(owner),
      );
    }
  });

  it('owner-private lists (blocks, mutes, close friends, requests) are 403 to others', async () => {
    for (const seg of ['blocks', 'mutes', 'close-friends', 'restricts', 'requests']) {
      await expectRes(req('GET', `/v1/users/74/${seg}`, { auth: as(75) }), 403, FORBIDDEN);
    }
  });
});

describe('blocks, mutes, close friends', () => {
  beforeAll(async () => {
    await users([80], [81], [82, true], [83]);
    await adminOp('PUT', 80, 'following', 81, 1);
    await adminOp('PUT', 81, 'following', 80, 2);
    await adminOp('PUT', 80, 'following', 82, 3);
  });

  it('block removes follows both ways and requests, forbids follows, and unblock restores nothing', async () => {
    await expectRes(req('GET', '/v1/users/80/counts', { auth: as(80) }), 200, {
      followers: 1,
      following: 1,
      exact: false,
      as_of: null,
    });
    await expectRes(req('PUT', '/v1/users/80/blocks/81', { auth: as(80) }), 200, { state: 'blocking' });
    await expectRes(req('PUT', '/v1/users/80/blocks/81', { auth: as(80) }), 200, { state: 'blocking' });
    await expectRes(req('PUT', '/v1/users/82/blocks/80', { auth: as(82) }), 200, { state: 'blocking' });
    await expectRes(req('GET', '/v1/users/80/counts', { auth: as(80) }), 200, {
      followers: 0,
      following: 0,
      exact: false,
      as_of: null,
    });
    await expectRes(req('GET', '/v1/users/80/followers', { auth: as(80) }), 200, {
      items: [],
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('GET', '/v1/users/80/following', { auth: as(80) }), 200, {
      items: [],
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('GET', '/v1/users/82/requests', { auth: as(82) }), 200, {
      items: [],
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('PUT', '/v1/users/81/following/80', { auth: as(81) }), 403, BLOCKED);
    await expectRes(req('PUT', '/v1/users/80/following/81', { auth: as(80) }), 403, BLOCKED);
    await expectRes(req('GET', '/v1/users/80/followers', { auth: as(81) }), 404, notFound(80));
    await expectRes(req('PUT', '/v1/users/80/blocks/80', { auth: as(80) }), 400, SELF);
    await expectRes(req('PUT', '/v1/users/80/blocks/81', { auth: as(81) }), 403, FORBIDDEN);
    await expectRes(req('PUT', '/v1/users/80/blocks/777777', { auth: as(80) }), 404, notFound(777777));

    const blocks = await req('GET', '/v1/users/80/blocks', { auth: as(80) });
    expect(blocks.json).toEqual({
      items: [{ id: '81', username: 'u81', followed_at: expect.any(String) }],
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('DELETE', '/v1/users/80/blocks/81', { auth: as(80) }), 200, { state: 'none' });
    await expectRes(req('DELETE', '/v1/users/80/blocks/81', { auth: as(80) }), 200, { state: 'none' });
    await expectRes(req('GET', '/v1/users/80/blocks', { auth: as(80) }), 200, {
      items: [],
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('GET', '/v1/users/80/following/81', { auth: as(80) }), 200, { state: 'none' });
    await expectRes(req('PUT', '/v1/users/81/following/80', { auth: as(81) }), 200, { state: 'following' });
  });

  it('mute keeps the follow; close friends is an owner list', async () => {
    await adminOp('PUT', 83, 'following', 81, 10);
    await adminOp('PUT', 83, 'mutes', 81, 11);
    await expectRes(req('PUT', '/v1/users/83/mutes/81', { auth: as(83) }), 200, { state: 'muting' });
    await expectRes(req('GET', '/v1/users/83/following/81', { auth: as(83) }), 200, {
      state: 'following',
      followed_at: time(10),
    });
    await expectRes(req('GET', '/v1/users/83/mutes', { auth: as(83) }), 200, {
      items: [item(81, 11)],
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('DELETE', '/v1/users/83/mutes/81', { auth: as(83) }), 200, { state: 'none' });
    await expectRes(req('GET', '/v1/users/83/mutes', { auth: as(83) }), 200, {
      items: [],
      next_cursor: null,
      prev_cursor: null,
    });

    await adminOp('PUT', 83, 'close-friends', 80, 12);
    await expectRes(req('PUT', '/v1/users/83/close-friends/80', { auth: as(83) }), 200, {
      state: 'close_friend',
    });
    await expectRes(req('GET', '/v1/users/83/close-friends', { auth: as(83) }), 200, {
      items: [item(80, 12)],
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('DELETE', '/v1/users/83/close-friends/80', { auth: as(83) }), 200, { state: 'none' });
    await expectRes(req('GET', '/v1/users/83/close-friends', { auth: as(83) }), 200, {
      items: [],
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('PUT', '/v1/users/83/mutes/83', { auth: as(83) }), 400, SELF);
    await expectRes(req('DELETE', '/v1/users/83/close-friends/80', { auth: as(80) }), 403, FORBIDDEN);
  });
});

describe('positions, idempotency, limits and operations on the real store', () => {
  beforeAll(async () => {
    await users([90], [91], [92]);
  });

  it('Graph-Position: an older replayed unfollow never overrides a newer follow, whatever the order', async () => {
    await adminOp('PUT', 90, 'following', 91, 20);
    await adminOp('DELETE', 90, 'following', 91, 10);
    await expectRes(req('GET', '/v1/users/90/following/91', { auth: as(90) }), 200, {
      state: 'following',
      followed_at: time(20),
    });
  });

  it('Idempotency-Key replays the receipt, even after the graph changed; another request → 409', async () => {
    const key = { 'Idempotency-Key': 'follow-92-once' };
    const first = await req('PUT', '/v1/users/90/following/92', { auth: as(90), headers: key });
    expect([first.status, first.json, first.headers.get('idempotent-replayed')]).toEqual([
      200,
      { state: 'following' },
      null,
    ]);
    await expectRes(req('DELETE', '/v1/users/90/following/92', { auth: as(90) }), 200, { state: 'none' });
    const again = await req('PUT', '/v1/users/90/following/92', { auth: as(90), headers: key });
    expect([again.status, again.json, again.headers.get('idempotent-replayed')]).toEqual([
      200,
      { state: 'following' },
      'true',
    ]);
    await expectRes(req('GET', '/v1/users/90/following/92', { auth: as(90) }), 200, { state: 'none' });
    await expectRes(
      req('DELETE', '/v1/users/90/following/92', { auth: as(90), headers: key }),
      409,
      problem(409, 'idempotency_key_reused', 'this Idempotency-Key was used for a different request'),
    );
    const other = await req('PUT', '/v1/users/91/following/92', { auth: as(91), headers: key });
    expect([other.status, other.headers.get('idempotent-replayed')]).toEqual([200, null]);
  });

  it('Idempotency-Key on a call with a body: PUT user replays its 201', async () => {
    const o = { auth: admin, headers: { 'Idempotency-Key': 'create-93' }, body: { username: 'u93' } };
    await expectRes(req('PUT', '/v1/users/93', o), 201, {
      id: '93',
      username: 'u93',
      private: false,
      state: 'active',
      hide_lists: false,
      last_active_at: null,
    });
    const again = await req('PUT', '/v1/users/93', o);
    expect([again.status, again.json, again.headers.get('idempotent-replayed')]).toEqual([
      201,
      { id: '93', username: 'u93', private: false, state: 'active', hide_lists: false, last_active_at: null },
      'true',
    ]);
    await expectRes(
      req('PUT', '/v1/users/93', { ...o, body: { username: 'u93', private: true } }),
      409,
      problem(409, 'idempotency_key_reused', 'this Idempotency-Key was used for a different request'),
    );
  });

  it('rate limit: 429 with Retry-After on mutations', async () => {
    const limited = r.variant({ rateLimitPerMinute: 2 });
    const go = () => call(limited, 'PUT', '/v1/users/92/mutes/91', { auth: as(92) });
    expect([(await go()).status, (await go()).status]).toEqual([200, 200]);
    const third = await go();
    expect([third.status, third.headers.get('retry-after'), third.json]).toEqual([
      429,
      '30',
      problem(429, 'rate_limited', 'at most 2 changes per minute; retry later'),
    ]);
  });

  it('metrics carry route patterns and database latency', async () => {
    const text = (await req('GET', '/metrics')).text;
    expect(text).toMatch(
      /flocklist_http_requests_total\{method="GET",route="\/v1\/users\/:id\/followers",status="200"\} \d+/,
    );
    expect(text).toMatch(/flocklist_db_query_duration_seconds_count\{op="[^"]+",outcome="ok"\} \d+/);
    expect(text).toMatch(
      /flocklist_list_bucket_fetches_per_page_count\{relation="follows",kind="page"\} \d+/,
    );
  });

  it('an unreachable database is a 503 with Retry-After', async () => {
    const dead = createCqlClient({
      contactPoints: ['127.0.0.1:1'],
      localDataCenter: 'datacenter1',
      consistency: 'localOne',
      requestTimeoutMs: 500,
    });
    try {
      const registry = new Registry();
      const metrics = createHttpMetrics(registry);
      const store = new CassandraGraphStore(dead, {
        onQuery: (name, seconds, ok) => metrics.recorder.observeQuery(name, seconds, ok),
      });
      const { GraphService } = await import('../../src/graph/graph-service.js');
      const { BucketedListService } = await import('../../src/lists/list-service.js');
      const lists = new BucketedListService({
        store,
        cursorSecret: 'x'.repeat(16),
        bucketThresholds: [50_000],
      });
      const { app } = buildTestApp({
        graph: new GraphService({ store, lists, maxFollowing: 10 }),
        receipts: store,
        registry,
        metrics,
      });
      const res = await call(app, 'GET', '/v1/users/1', { auth: as(1) });
      expect([res.status, res.headers.get('retry-after'), res.json]).toEqual([
        503,
        '1',
        problem(503, 'unavailable', 'the database is unavailable; retry later'),
      ]);
      const text = await (await app.request('/metrics')).text();
      expect(text).toMatch(/flocklist_db_query_duration_seconds_count\{op="getUser",outcome="error"\} 1\n/);
    } finally {
      await dead.shutdown();
    }
  });
});
