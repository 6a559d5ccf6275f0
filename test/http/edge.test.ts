/**
 * The HTTP edge without a database: ids, problem mapping, authentication, body limit, rate
 * limit, idempotency, request ids, the OpenAPI document and metrics, on a stubbed `GraphApi`.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { fromDomainError, problemType, toApiError } from '../../src/http/errors.js';
import { parseUserId } from '../../src/http/ids.js';
import { createLogger } from '../../src/http/logger.js';
import { TokenBucketLimiter } from '../../src/http/rate-limit.js';
import { ID_MESSAGE } from '../../src/http/schemas.js';
import { tokenCommand } from '../../src/jobs/commands/token.js';
import { mintToken } from '../../src/jobs/token.js';
import {
  BlockedError,
  type DomainError,
  FollowingCapError,
  HiddenError,
  InvalidCursorError,
  NoPendingRequestError,
  NotVisibleError,
  SelfFollowError,
  StoreUnavailableError,
  UserNotFoundError,
  UsernameTakenError,
} from '../../src/model/errors.js';
import { bearer, buildTestApp, call, MapReceipts, stubGraph, TEST_SECRET } from './support/app.js';

const problem = (status: number, code: string, title: string, detail: string, extra: object = {}) => ({
  type: problemType(code as never),
  title,
  status,
  detail,
  code,
  request_id: 'req-1',
  ...extra,
});

describe('user ids', () => {
  it.each([
    ['1', 1n],
    ['42', 42n],
    ['9223372036854775807', 9223372036854775807n],
  ])('accepts %s', (raw, id) => expect(parseUserId(raw)).toBe(id));
  it.each([
    '0',
    '-1',
    '01',
    '1e3',
    '9223372036854775808',
    '12345678901234567890',
    'abc',
    '',
    ' 1',
    '1 ',
    '+1',
    '1.0',
    '０',
    "1'--",
  ])('rejects %j', (raw) => expect(parseUserId(raw)).toBeNull());
});

describe('problem mapping', () => {
  const cases: [DomainError, number, string][] = [
    [new UserNotFoundError(5n), 404, 'user_not_found'],
    [new HiddenError(5n), 404, 'user_not_found'],
    [new SelfFollowError(), 400, 'self_relation'],
    [new BlockedError(), 403, 'blocked'],
    [new FollowingCapError(7500), 409, 'following_cap'],
    [new NoPendingRequestError(), 404, 'no_pending_request'],
    [new NotVisibleError(), 403, 'not_visible'],
    [new InvalidCursorError('bad mac'), 400, 'invalid_cursor'],
  ];
  it.each(cases)('%s → %i %s', (err, status, code) => {
    const e = fromDomainError(err);
    expect([e.status, e.code]).toEqual([status, code]);
  });
  it('hides a block behind exactly the unknown-user problem', () => {
    const a = fromDomainError(new HiddenError(7n));
    const b = fromDomainError(new UserNotFoundError(7n));
    expect([a.code, a.detail, a.status]).toEqual([b.code, b.detail, b.status]);
  });
  it('maps store errors and unknown errors without leaking messages', () => {
    const u = toApiError(
      new StoreUnavailableError('NoHostAvailableError: 127.0.0.1:9042 SELECT * FROM x'),
      2,
    );
    expect([u.status, u.detail, u.extra.headers]).toEqual([
      503,
      'the database is unavailable; retry later',
      { 'Retry-After': '2' },
    ]);
    expect(toApiError(new UsernameTakenError('bob')).status).toBe(409);
    const x = toApiError(new TypeError('Cannot read properties of undefined (reading "execute")'));
    expect([x.status, x.detail]).toEqual([500, 'an unexpected error occurred']);
  });
});

describe('rate limiter', () => {
  it('allows perMinute at once, then refills continuously', () => {
    let now = 0;
    const l = new TokenBucketLimiter(3, () => now);
    expect([l.take('a').ok, l.take('a').ok, l.take('a').ok]).toEqual([true, true, true]);
    expect(l.take('a')).toEqual({ ok: false, retryAfterSeconds: 20, remaining: 0 });
    expect(l.take('b').ok).toBe(true);
    now += 20_000;
    expect(l.take('a').ok).toBe(true);
    expect(l.take('a').ok).toBe(false);
  });
  it('bounds its memory', () => {
    const l = new TokenBucketLimiter(10, () => 0, 100);
    for (let i = 0; i < 1000; i++) l.take(String(i));
    expect((l as unknown as { buckets: Map<string, unknown> }).buckets.size).toBeLessThanOrEqual(100);
  });
});

const alice = 1n;
const bob = 2n;
const counts = vi.fn(async () => ({ followers: 3, following: 4, exact: true, asOf: 1_796_000_000_123_456n }));

function countsApp(extra: Parameters<typeof buildTestApp>[0] extends infer O ? Partial<O> : never = {}) {
  return buildTestApp({
    graph: stubGraph({ counts, assertCanViewLists: async () => {}, getUser: async () => userRecord(1n) }),
    ...extra,
  });
}

function userRecord(id: bigint) {
  return { id, username: `u${id}`, private: false, state: 'active' as const, hideLists: false };
}

describe('authentication', () => {
  const { app } = countsApp();
  const unauthorized = (detail: string) => problem(401, 'unauthorized', 'Unauthorized', detail);
  const sign = (header: object, payload: object, secret = TEST_SECRET) => {
    const h = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
    return `${h}.${createHmac('sha256', secret).update(h).digest('base64url')}`;
  };
  const now = Math.floor(Date.now() / 1000);

  it('accepts a valid bearer token', async () => {
    const r = await call(app, 'GET', '/v1/users/1/counts', { auth: bearer(alice) });
    expect([r.status, r.json]).toEqual([
      200,
      { followers: 3, following: 4, exact: true, as_of: '2026-11-30T00:53:20.123456Z' },
    ]);
    expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
  });
  it.each([
    ['missing', undefined, 'no authorization included in request'],
    ['basic scheme', 'Basic YWxpY2U6cHc=', 'invalid credentials structure'],
    ['token scheme', `Token ${mintToken({ sub: '1' }, TEST_SECRET)}`, 'invalid credentials structure'],
    ['garbage', 'Bearer abc', 'token malformed'],
    [
      'bad signature',
      `Bearer ${mintToken({ sub: '1' }, 'another-secret-0123456789')}`,
      'token signature invalid',
    ],
    [
      'expired',
      `Bearer ${mintToken({ sub: '1', expiresInSeconds: 10 }, TEST_SECRET, now - 3600)}`,
      'token expired',
    ],
    [
      'not yet valid',
      `Bearer ${mintToken({ sub: '1', extra: { nbf: now + 3600 } }, TEST_SECRET)}`,
      'token not yet valid',
    ],
    [
      'alg none',
      `Bearer ${sign({ alg: 'none', typ: 'JWT' }, { sub: '1' }).replace(/[^.]+$/, '')}`,
      'token header invalid',
    ],
    [
      'alg HS512 header',
      `Bearer ${sign({ alg: 'HS512', typ: 'JWT' }, { sub: '1' })}`,
      'token algorithm not accepted',
    ],
    [
      'alg RS256 header',
      `Bearer ${sign({ alg: 'RS256', typ: 'JWT' }, { sub: '1' })}`,
      'token algorithm not accepted',
    ],
    ['sub 0', `Bearer ${mintToken({ sub: '0' }, TEST_SECRET)}`, 'token subject must be a user id'],
    [
      'sub numeric',
      `Bearer ${sign({ alg: 'HS256', typ: 'JWT' }, { sub: 1, exp: now + 600 })}`,
      'token subject must be a user id',
    ],
    ['oversized', `Bearer ${'a'.repeat(5000)}`, 'authorization header too long'],
  ])('%s → 401', async (_name, auth, detail) => {
    const r = await call(app, 'GET', '/v1/users/1/counts', auth ? { auth } : {});
    expect([r.status, r.json]).toEqual([401, unauthorized(detail)]);
    expect(r.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    expect(r.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });
});

describe('token lifetime claims', () => {
  const { app } = countsApp();
  const now = Math.floor(Date.now() / 1000);
  const get = (token: string) => call(app, 'GET', '/v1/users/1/counts', { auth: `Bearer ${token}` });
  const refused = (detail: string) => [401, problem(401, 'unauthorized', 'Unauthorized', detail)];

  it('a token without exp is refused', async () => {
    const noExp = mintToken({ sub: '1', extra: { exp: undefined } }, TEST_SECRET);
    const r = await get(noExp);
    expect([r.status, r.json]).toEqual(refused('token has no expiry (exp)'));
  });
  it('a token with a non-numeric exp is refused', async () => {
    const r = await get(mintToken({ sub: '1', extra: { exp: 'never' } }, TEST_SECRET));
    expect([r.status, r.json]).toEqual(refused('token expired'));
  });
  it('a few seconds of clock skew are tolerated on exp, nbf and iat', async () => {
    const issuedInTheFuture = mintToken({ sub: '1', expiresInSeconds: 600 }, TEST_SECRET, now + 2);
    const notBeforeSoon = mintToken({ sub: '1', extra: { nbf: now + 2 } }, TEST_SECRET);
    const justExpired = mintToken({ sub: '1', expiresInSeconds: 10 }, TEST_SECRET, now - 12);
    const statuses = [];
    for (const t of [issuedInTheFuture, notBeforeSoon, justExpired]) statuses.push((await get(t)).status);
    expect(statuses).toEqual([200, 200, 200]);
  });
  it('beyond the leeway exp, nbf and iat still refuse the token', async () => {
    const cases: [string, string][] = [
      [mintToken({ sub: '1', expiresInSeconds: 600 }, TEST_SECRET, now + 30), 'token issued in the future'],
      [mintToken({ sub: '1', extra: { nbf: now + 30 } }, TEST_SECRET), 'token not yet valid'],
      [mintToken({ sub: '1', expiresInSeconds: 10 }, TEST_SECRET, now - 30), 'token expired'],
    ];
    for (const [token, detail] of cases) {
      const r = await get(token);
      expect([r.status, r.json]).toEqual(refused(detail));
    }
  });
  it('mintToken always sets exp (the token CLI never makes an everlasting token)', () => {
    const payload = (t: string) => JSON.parse(Buffer.from(t.split('.')[1]!, 'base64url').toString());
    expect(payload(mintToken({ sub: '1' }, TEST_SECRET, 1000))).toEqual({ sub: '1', iat: 1000, exp: 4600 });
    expect(() => tokenCommand.run(['--sub', '1', '--exp', '0'])).toThrow('--exp must be a positive integer');
  });
});

describe('times with microseconds', () => {
  const _users = async (ids: readonly bigint[]) => new Map(ids.map((id) => [id, userRecord(id)]));
  it('followed_at shows microseconds, so two follows in the same millisecond keep their order', async () => {
    const listPage = vi.fn(async () => ({
      items: [
        { id: 7n, createdAt: 1_796_000_000_123_456n, username: 'u7' },
        { id: 8n, createdAt: 1_796_000_000_123_001n, username: 'u8' },
        { id: 9n, createdAt: 1_796_000_000_000_000n, username: 'u9' },
      ],
      nextCursor: null,
    }));
    const { app } = buildTestApp({
      graph: stubGraph({ listPage, assertCanViewLists: async () => {} }),
    });
    const r = await call(app, 'GET', '/v1/users/1/followers', { auth: bearer(alice) });
    expect([r.status, r.json]).toEqual([
      200,
      {
        items: [
          { id: '7', username: 'u7', followed_at: '2026-11-30T00:53:20.123456Z' },
          { id: '8', username: 'u8', followed_at: '2026-11-30T00:53:20.123001Z' },
          { id: '9', username: 'u9', followed_at: '2026-11-30T00:53:20.000000Z' },
        ],
        next_cursor: null,
        prev_cursor: null,
      },
    ]);
  });
  it('a position beyond the Date range renders without a 500', async () => {
    const getFollowStatus = vi.fn(async () => ({
      state: 'following' as const,
      since: 9_223_372_036_854_775_807n,
    }));
    const { app } = buildTestApp({
      graph: stubGraph({ getFollowStatus, getUser: async (id) => userRecord(id) }),
    });
    const r = await call(app, 'GET', '/v1/users/1/following/2', { auth: bearer(alice) });
    expect([r.status, r.json]).toEqual([
      200,
      { state: 'following', followed_at: '9999-12-31T23:59:59.999999Z' },
    ]);
  });
});

describe('object-level authorization', () => {
  it('a token acting for another user gets 403', async () => {
    const follow = vi.fn();
    const { app } = buildTestApp({ graph: stubGraph({ follow }) });
    const r = await call(app, 'PUT', '/v1/users/2/following/3', { auth: bearer(alice) });
    expect([r.status, r.json]).toEqual([
      403,
      problem(403, 'forbidden', 'Forbidden', "a token may act only on its own subject's relationships"),
    ]);
    expect(follow).not.toHaveBeenCalled();
  });
  it('Graph-Position needs graph:admin, and is passed through for admins', async () => {
    const follow = vi.fn(async () => ({
      state: 'following' as const,
      changed: true,
      position: 5n,
      duplicate: false,
    }));
    const { app } = buildTestApp({ graph: stubGraph({ follow }) });
    const denied = await call(app, 'PUT', '/v1/users/1/following/2', {
      auth: bearer(alice),
      headers: { 'Graph-Position': '123' },
    });
    expect(denied.status).toBe(403);
    const bad = await call(app, 'PUT', '/v1/users/1/following/2', {
      auth: bearer(9, { admin: true }),
      headers: { 'Graph-Position': '12x' },
    });
    expect([bad.status, bad.json]).toEqual([
      400,
      problem(400, 'validation_failed', 'Request validation failed', 'invalid Graph-Position header', {
        errors: [{ path: 'header.graph-position', message: 'a positive 64-bit integer (µs)' }],
      }),
    ]);
    const ok = await call(app, 'PUT', '/v1/users/1/following/2', {
      auth: bearer(9, { admin: true }),
      headers: { 'Graph-Position': '1796000000000000' },
    });
    expect([ok.status, ok.json]).toEqual([200, { state: 'following' }]);
    expect(follow).toHaveBeenCalledWith(1n, 2n, { position: 1796000000000000n });
  });
});

describe('validation', () => {
  const { app } = countsApp();
  it.each(['0', '-1', '01', '1e3', '12345678901234567890', 'abc', '9223372036854775808'])(
    'path id %j → 400 with a field error',
    async (id) => {
      const r = await call(app, 'GET', `/v1/users/${encodeURIComponent(id)}/counts`, { auth: bearer(alice) });
      expect([r.status, r.json]).toEqual([
        400,
        problem(400, 'validation_failed', 'Request validation failed', 'invalid path', {
          errors: [{ path: 'path.id', message: ID_MESSAGE }],
        }),
      ]);
    },
  );
  it('limit above the maximum → 400', async () => {
    const { app } = buildTestApp({ graph: stubGraph({ assertCanViewLists: async () => {} }) });
    const r = await call(app, 'GET', '/v1/users/1/followers?limit=201', { auth: bearer(alice) });
    expect([r.status, r.json]).toEqual([
      400,
      problem(400, 'validation_failed', 'Request validation failed', 'invalid query', {
        errors: [{ path: 'query.limit', message: 'Too big: expected number to be <=200' }],
      }),
    ]);
  });
  it('unknown body keys are refused (mass assignment)', async () => {
    const { app } = buildTestApp({ graph: stubGraph() });
    const r = await call(app, 'PUT', '/v1/users/5', {
      auth: bearer(9, { admin: true }),
      body: { username: 'bob', private: false, role: 'admin' },
    });
    expect([r.status, r.json]).toEqual([
      400,
      problem(400, 'validation_failed', 'Request validation failed', 'invalid body', {
        errors: [{ path: 'body', message: 'Unrecognized key: "role"' }],
      }),
    ]);
  });
  it('malformed JSON → 400, wrong content type → 415', async () => {
    const { app } = buildTestApp({ graph: stubGraph() });
    const auth = bearer(9, { admin: true });
    const bad = await call(app, 'PUT', '/v1/users/5', { auth, body: '{"username":' });
    expect([bad.status, bad.json]).toEqual([
      400,
      problem(400, 'malformed_request', 'Malformed request', 'the request body is not valid JSON'),
    ]);
    const media = await call(app, 'PUT', '/v1/users/5', {
      auth,
      body: 'username=bob',
      headers: { 'Content-Type': 'text/plain' },
    });
    expect([media.status, media.json]).toEqual([
      415,
      problem(415, 'unsupported_media_type', 'Unsupported media type', 'send the body as application/json'),
    ]);
  });
  it('unknown routes answer problem+json 404', async () => {
    const { app } = buildTestApp({ graph: stubGraph() });
    const r = await call(app, 'GET', '/v1/nothing', { auth: bearer(alice) });
    expect([r.status, r.json]).toEqual([404, problem(404, 'not_found', 'Not found', 'no such resource')]);
  });
});

describe('body limit', () => {
  const { app } = buildTestApp({ graph: stubGraph(), bodyLimitBytes: 1024 });
  const big = JSON.stringify({ ids: Array.from({ length: 300 }, (_, i) => String(i + 1)) });
  const expected = problem(
    413,
    'payload_too_large',
    'Payload too large',
    'the request body exceeds 1024 bytes',
  );
  it('refuses a large body with Content-Length', async () => {
    const r = await call(app, 'POST', '/v1/users/1/following/contains', { auth: bearer(alice), body: big });
    expect([r.status, r.json]).toEqual([413, expected]);
  });
  it('refuses a large chunked body without Content-Length', async () => {
    const chunks = [big.slice(0, 700), big.slice(700)];
    const stream = new ReadableStream<Uint8Array>({
      pull(ctl) {
        const next = chunks.shift();
        if (next === undefined) ctl.close();
        else ctl.enqueue(new TextEncoder().encode(next));
      },
    });
    const res = await app.request('/v1/users/1/following/contains', {
      method: 'POST',
      headers: { Authorization: bearer(alice), 'Content-Type': 'application/json', 'X-Request-Id': 'req-1' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect([res.status, await res.json()]).toEqual([413, expected]);
  });
});

describe('rate limit on mutations', () => {
  it('429 with Retry-After past the per-user budget; reads and admins are exempt', async () => {
    const unfollow = vi.fn(async () => ({
      state: 'none' as const,
      changed: false,
      position: 1n,
      duplicate: false,
    }));
    const { app } = buildTestApp({
      graph: stubGraph({ unfollow, counts, assertCanViewLists: async () => {} }),
      rateLimitPerMinute: 2,
      now: () => 0,
    });
    const auth = bearer(alice);
    expect((await call(app, 'DELETE', '/v1/users/1/following/2', { auth })).status).toBe(200);
    expect((await call(app, 'DELETE', '/v1/users/1/following/2', { auth })).status).toBe(200);
    const limited = await call(app, 'DELETE', '/v1/users/1/following/2', { auth });
    expect([limited.status, limited.headers.get('retry-after'), limited.json]).toEqual([
      429,
      '30',
      problem(429, 'rate_limited', 'Too many requests', 'at most 2 changes per minute; retry later'),
    ]);
    expect((await call(app, 'GET', '/v1/users/1/counts', { auth })).status).toBe(200);
    expect((await call(app, 'DELETE', '/v1/users/2/following/1', { auth: bearer(bob) })).status).toBe(200);
    const admin = bearer(9, { admin: true });
    for (let i = 0; i < 5; i++) {
      expect((await call(app, 'DELETE', '/v1/users/1/following/2', { auth: admin })).status).toBe(200);
    }
  });
});

describe('idempotency', () => {
  function setup() {
    let n = 0;
    const follow = vi.fn(async () => {
      n++;
      return {
        state: (n === 1 ? 'following' : 'requested') as 'following' | 'requested',
        changed: true,
        position: 1n,
      };
    });
    const receipts = new MapReceipts();
    const { app } = buildTestApp({ graph: stubGraph({ follow }), receipts });
    return { app, follow, receipts };
  }

  it('a retry with the same key replays the first outcome without calling the domain', async () => {
    const { app, follow } = setup();
    const o = { auth: bearer(alice), headers: { 'Idempotency-Key': 'k-1' } };
    const first = await call(app, 'PUT', '/v1/users/1/following/2', o);
    const again = await call(app, 'PUT', '/v1/users/1/following/2', o);
    expect([first.status, first.json, first.headers.get('idempotent-replayed')]).toEqual([
      200,
      { state: 'following' },
      null,
    ]);
    expect([again.status, again.json, again.headers.get('idempotent-replayed')]).toEqual([
      200,
      { state: 'following' },
      'true',
    ]);
    expect(follow).toHaveBeenCalledTimes(1);
  });
  it('the same key for another request is a 409; keys are scoped to the acting user', async () => {
    const { app, follow } = setup();
    const key = { 'Idempotency-Key': 'k-2' };
    await call(app, 'PUT', '/v1/users/1/following/2', { auth: bearer(alice), headers: key });
    const other = await call(app, 'PUT', '/v1/users/1/following/3', { auth: bearer(alice), headers: key });
    expect([other.status, other.json]).toEqual([
      409,
      problem(
        409,
        'idempotency_key_reused',
        'Idempotency key reused',
        'this Idempotency-Key was used for a different request',
      ),
    ]);
    const bobs = await call(app, 'PUT', '/v1/users/2/following/1', { auth: bearer(bob), headers: key });
    expect([bobs.status, bobs.headers.get('idempotent-replayed')]).toEqual([200, null]);
    expect(follow).toHaveBeenCalledTimes(2);
  });
  it('concurrent calls with one key run the domain once', async () => {
    const { app, follow } = setup();
    const o = { auth: bearer(alice), headers: { 'Idempotency-Key': 'k-3' } };
    const rs = await Promise.all([1, 2, 3].map(() => call(app, 'PUT', '/v1/users/1/following/2', o)));
    expect(rs.map((r) => [r.status, r.json])).toEqual([1, 2, 3].map(() => [200, { state: 'following' }]));
    expect(follow).toHaveBeenCalledTimes(1);
  });
  it('refusals leave no receipt; invalid keys are a 400', async () => {
    const follow = vi.fn(async () => {
      throw new BlockedError();
    });
    const receipts = new MapReceipts();
    const { app } = buildTestApp({ graph: stubGraph({ follow }), receipts });
    const r = await call(app, 'PUT', '/v1/users/1/following/2', {
      auth: bearer(alice),
      headers: { 'Idempotency-Key': 'k-4' },
    });
    expect([r.status, receipts.map.size]).toEqual([403, 0]);
    for (const key of ['x'.repeat(129), 'tab\there', 'é']) {
      const bad = await call(app, 'PUT', '/v1/users/1/following/2', {
        auth: bearer(alice),
        headers: { 'Idempotency-Key': key },
      });
      expect([bad.status, bad.json.code]).toEqual([400, 'validation_failed']);
    }
  });
});

describe('operations', () => {
  it('store unavailable → 503 with Retry-After and no driver text', async () => {
    const { app } = buildTestApp({
      graph: stubGraph({
        assertCanViewLists: async () => {
          throw new StoreUnavailableError('All host(s) tried for query failed (127.0.0.1:9042: timeout)');
        },
      }),
    });
    const r = await call(app, 'GET', '/v1/users/1/counts', { auth: bearer(alice) });
    expect([r.status, r.headers.get('retry-after'), r.json]).toEqual([
      503,
      '1',
      problem(503, 'unavailable', 'Service unavailable', 'the database is unavailable; retry later'),
    ]);
  });
  it('an unexpected error is a bare 500 problem', async () => {
    const { app } = buildTestApp({
      graph: stubGraph({
        assertCanViewLists: async () => {
          throw new Error('SELECT * FROM follows WHERE user_id = 1');
        },
      }),
    });
    const r = await call(app, 'GET', '/v1/users/1/counts', { auth: bearer(alice) });
    expect([r.status, r.json]).toEqual([
      500,
      problem(500, 'internal', 'Internal server error', 'an unexpected error occurred'),
    ]);
  });
  it('healthz, readyz, request ids', async () => {
    let ready = true;
    const { app } = buildTestApp({ graph: stubGraph(), ready: async () => ready });
    expect((await call(app, 'GET', '/healthz')).json).toEqual({ status: 'pass' });
    expect((await call(app, 'GET', '/readyz')).status).toBe(200);
    ready = false;
    const notReady = await call(app, 'GET', '/readyz');
    expect([notReady.status, notReady.json]).toEqual([503, { status: 'fail' }]);
    const echoed = await call(app, 'GET', '/healthz', { headers: { 'X-Request-Id': 'abc-123' } });
    expect(echoed.headers.get('x-request-id')).toBe('abc-123');
    for (const bad of ['x'.repeat(129), 'a b', 'a\u0001b']) {
      const r = await call(app, 'GET', '/healthz', { headers: { 'X-Request-Id': bad } });
      expect(r.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
  });
  it('logs one JSON line per request with the request id and actor, never the token', async () => {
    const lines: string[] = [];
    const logger = createLogger('info', { write: (l: string) => void lines.push(l) });
    const { app } = buildTestApp({
      graph: stubGraph({
        counts,
        assertCanViewLists: async () => {
          throw new Error('boom');
        },
      }),
      logger,
    });
    const auth = bearer(alice);
    await call(app, 'GET', '/v1/users/1/counts', { auth, headers: { 'X-Request-Id': 'log-1' } });
    const logged = lines.join('');
    expect(logged).not.toContain(auth.slice(7));
    const access = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'request');
    expect(access).toMatchObject({ request_id: 'log-1', method: 'GET', status: 500, actor: '1' });
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual(['unhandled error', 'request']);
  });
  it('serves an OpenAPI 3.1 document with every /v1 operation and the docs page', async () => {
    const { app } = buildTestApp({ graph: stubGraph() });
    const doc = (await call(app, 'GET', '/openapi.json')).json as {
      openapi: string;
      paths: Record<string, Record<string, unknown>>;
    };
    expect(doc.openapi).toBe('3.1.0');
    const ops = Object.entries(doc.paths).flatMap(([p, m]) =>
      Object.keys(m).map((k) => `${k.toUpperCase()} ${p}`),
    );
    expect(ops.sort()).toEqual(
      [
        'PUT /v1/users/{id}',
        'GET /v1/users/{id}',
        'PUT /v1/users/{id}/following/{target}',
        'DELETE /v1/users/{id}/following/{target}',
        'GET /v1/users/{id}/following/{target}',
        'GET /v1/users/{id}/following',
        'POST /v1/users/{id}/following/contains',
        'POST /v1/users/{id}/relationships',
        'GET /v1/users/{id}/followers',
        'POST /v1/users/{id}/followers/contains',
        'DELETE /v1/users/{id}/followers/{follower}',
        'GET /v1/users/{id}/followers/scan',
        'GET /v1/users/{id}/followers/search',
        'GET /v1/users/{id}/following/search',
        'GET /v1/users/{id}/followed-by',
        'GET /v1/users/{id}/counts',
        'GET /v1/users/{id}/requests',
        'GET /v1/users/{id}/requests/outgoing',
        'GET /v1/users/{id}/suggestions',
        'POST /v1/users/{id}/requests/{requester}/accept',
        'POST /v1/users/{id}/requests/{requester}/decline',
        'PUT /v1/users/{id}/blocks/{target}',
        'DELETE /v1/users/{id}/blocks/{target}',
        'GET /v1/users/{id}/blocks',
        'PUT /v1/users/{id}/mutes/{target}',
        'DELETE /v1/users/{id}/mutes/{target}',
        'GET /v1/users/{id}/mutes',
        'PUT /v1/users/{id}/close-friends/{target}',
        'DELETE /v1/users/{id}/close-friends/{target}',
        'GET /v1/users/{id}/close-friends',
        'PUT /v1/users/{id}/restricts/{target}',
        'DELETE /v1/users/{id}/restricts/{target}',
        'GET /v1/users/{id}/restricts',
        'GET /v1/users/{id}/mutuals',
        'GET /v1/users/{id}/followers/not-followed-back',
        'GET /v1/users/{id}/following/export',
        'POST /v1/users/{id}/following/import',
        'GET /v1/events',
        'GET /v1/events/stream',
      ].sort(),
    );
    const docs = await app.request('/docs');
    expect([docs.status, (await docs.text()).includes('swagger-ui')]).toEqual([200, true]);
  });
  it('counts requests per route pattern in /metrics', async () => {
    const { app } = countsApp();
    await call(app, 'GET', '/v1/users/1/counts', { auth: bearer(alice) });
    await call(app, 'GET', '/v1/users/abc/counts', { auth: bearer(alice) });
    const text = (await call(app, 'GET', '/metrics')).text;
    expect(text).toContain(
      'flocklist_http_requests_total{method="GET",route="/v1/users/:id/counts",status="200"} 1',
    );
    expect(text).toContain(
      'flocklist_http_requests_total{method="GET",route="/v1/users/:id/counts",status="400"} 1',
    );
    expect(text).toContain('flocklist_http_request_duration_seconds_bucket');
  });
});
