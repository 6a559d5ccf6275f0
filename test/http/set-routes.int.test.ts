/**
 * Mutuals, not-followed-back, following export and import over HTTP on the real node: happy
 * paths with whole pages, errors (cursor, limit, body) and security per route, and the export →
 * import round trip (1,200 follows: three export pages of 500, the last partial, and twelve
 * import chunks; 7,500, the default cap, with `SOAK=1`) with the RSS growth while streaming
 * printed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { formatTime } from '../../src/http/times.js';
import { nowPosition } from '../../src/model/clock.js';
import type { UserId } from '../../src/model/types.js';
import { knob } from '../support/soak.js';
import { bearer } from './support/app.js';
import { loadUsers, readNdjson } from './support/ndjson.js';
import { type RealApp, realApp } from './support/real-app.js';
import {
  admin,
  as,
  FORBIDDEN,
  item,
  NOT_VISIBLE,
  notFound,
  problem,
  scenario,
  time,
} from './support/scenario.js';

/** Follows in the export → import round trip: the default following cap with `SOAK=1`. */
const ROUND_TRIP = knob('SET_ROUND_TRIP_FOLLOWS', 7500, 1200);

let r: RealApp;
const { req, expectRes, users, adminOp } = scenario(() => r);

beforeAll(async () => {
  r = await realApp('http_sets');
});
afterAll(async () => {
  await r?.close();
});

const INVALID_CURSOR = problem(
  400,
  'invalid_cursor',
  'the cursor is malformed, altered or belongs to another list',
);
const q = (limit: number, cursor?: string | null) =>
  `?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;

describe('GET /v1/users/{id}/mutuals and /followers/not-followed-back', () => {
  // 300 follows 301 (k1), 302 (k2), 303 (k3), 304 (k4); 301, 302, 304, 305 follow 300 (k5..k8).
  // Following (4) ≤ followers (4): following drives; mutuals newest follow first: 304, 302, 301.
  // Not-followed-back, newest follower first: 305.
  beforeAll(async () => {
    await users([300], [301], [302], [303], [304], [305], [306]);
    for (const [t, k] of [
      [301, 1],
      [302, 2],
      [303, 3],
      [304, 4],
    ])
      await adminOp('PUT', 300, 'following', t as number, k as number);
    for (const [s, k] of [
      [301, 5],
      [302, 6],
      [304, 7],
      [305, 8],
    ])
      await adminOp('PUT', s as number, 'following', 300, k as number);
  });

  it('mutuals: whole page, then limit 1 walked with the cursor', async () => {
    await expectRes(req('GET', '/v1/users/300/mutuals', { auth: as(306) }), 200, {
      items: [item(304, 4), item(302, 2), item(301, 1)],
      next_cursor: null,
      prev_cursor: null,
    });
    const seen: unknown[] = [];
    let cursor: string | null = null;
    do {
      const res = await req('GET', `/v1/users/300/mutuals${q(1, cursor)}`, { auth: as(300) });
      expect(res.status).toBe(200);
      seen.push(...(res.json.items as unknown[]));
      cursor = res.json.next_cursor as string | null;
    } while (cursor);
    expect(seen).toEqual([item(304, 4), item(302, 2), item(301, 1)]);
  });

  it('not-followed-back: whole page for the owner and for an admin', async () => {
    for (const auth of [as(300), admin]) {
      await expectRes(req('GET', '/v1/users/300/followers/not-followed-back', { auth }), 200, {
        items: [item(305, 8)],
        next_cursor: null,
        prev_cursor: null,
      });
    }
  });

  it('errors: bad, foreign and cross-route cursors 400 invalid_cursor; limit out of range 400', async () => {
    const m = await req('GET', `/v1/users/300/mutuals${q(1)}`, { auth: as(300) });
    const mutualsCursor = m.json.next_cursor as string;
    const list = await req('GET', `/v1/users/300/followers${q(1)}`, { auth: as(300) });
    const listCursor = list.json.next_cursor as string;
    expect([typeof mutualsCursor, typeof listCursor]).toEqual(['string', 'string']);
    const flipped = `${mutualsCursor.slice(0, -2)}${mutualsCursor.at(-2) === 'A' ? 'B' : 'A'}${mutualsCursor.at(-1)}`;
    for (const [path, cursor] of [
      ['/v1/users/300/followers/not-followed-back', mutualsCursor],
      ['/v1/users/301/mutuals', mutualsCursor],
      ['/v1/users/300/mutuals', listCursor],
      ['/v1/users/300/mutuals', flipped],
      ['/v1/users/300/mutuals', 'garbage!'],
      ['/v1/users/300/followers', mutualsCursor],
    ] as const) {
      await expectRes(req('GET', `${path}${q(1, cursor)}`, { auth: admin }), 400, INVALID_CURSOR);
    }
    for (const path of ['/v1/users/300/mutuals', '/v1/users/300/followers/not-followed-back']) {
      for (const limit of ['0', '201', 'x']) {
        const res = await req('GET', `${path}?limit=${limit}`, { auth: as(300) });
        expect([path, limit, res.status, res.json.code]).toEqual([path, limit, 400, 'validation_failed']);
      }
      const unknown = await req('GET', `${path}?direction=newer`, { auth: as(300) });
      expect([unknown.status, unknown.json.errors]).toEqual([
        400,
        [{ path: 'query', message: 'Unrecognized key: "direction"' }],
      ]);
      const badTime = await req('GET', `${path}?since=x`, { auth: as(300) });
      expect([badTime.status, badTime.json.errors]).toEqual([
        400,
        [
          {
            path: 'query.since',
            message: 'an RFC 3339 time with at most 6 fraction digits, e.g. 2026-11-30T04:31:18.123456Z',
          },
        ],
      ]);
      const empty = await req(
        'GET',
        `${path}?since=${encodeURIComponent(time(5))}&until=${encodeURIComponent(time(5))}`,
        {
          auth: as(300),
        },
      );
      expect([empty.status, empty.json.errors]).toEqual([
        400,
        [{ path: 'query.until', message: 'a time later than since' }],
      ]);
    }
  });

  it('since / until: mutuals and not-followed-back keep only driving rows in [since, until)', async () => {
    const range = (a: number, b: number) =>
      `since=${encodeURIComponent(time(a))}&until=${encodeURIComponent(time(b))}`;
    // Following drives mutuals (304 k4, 302 k2, 301 k1): [k2, k4) keeps 302 only.
    await expectRes(req('GET', `/v1/users/300/mutuals?${range(2, 4)}`, { auth: as(300) }), 200, {
      items: [item(302, 2)],
      next_cursor: null,
      prev_cursor: null,
    });
    // Not-followed-back drives from followers: 305 followed at k8.
    await expectRes(
      req('GET', `/v1/users/300/followers/not-followed-back?${range(1, 8)}`, { auth: as(300) }),
      200,
      {
        items: [],
        next_cursor: null,
        prev_cursor: null,
      },
    );
    await expectRes(
      req('GET', `/v1/users/300/followers/not-followed-back?${range(8, 9)}`, { auth: as(300) }),
      200,
      {
        items: [item(305, 8)],
        next_cursor: null,
        prev_cursor: null,
      },
    );
  });

  it('a first-batch cursor replayed with other since / until is 400 invalid_cursor', async () => {
    const range = (a: number, b: number) =>
      `since=${encodeURIComponent(time(a))}&until=${encodeURIComponent(time(b))}`;
    // Mutuals in [k1, k5): 304, 302, 301. One item ends the page inside the first driving batch.
    const first = await req('GET', `/v1/users/300/mutuals?limit=1&${range(1, 5)}`, { auth: as(300) });
    expect([first.status, first.json.items, typeof first.json.next_cursor]).toEqual([
      200,
      [item(304, 4)],
      'string',
    ]);
    const cursor = encodeURIComponent(first.json.next_cursor as string);
    for (const other of ['', `&${range(1, 4)}`, `&${range(2, 5)}`, `&since=${encodeURIComponent(time(1))}`]) {
      await expectRes(
        req('GET', `/v1/users/300/mutuals?limit=1&cursor=${cursor}${other}`, { auth: as(300) }),
        400,
        INVALID_CURSOR,
      );
    }
    await expectRes(
      req('GET', `/v1/users/300/mutuals?limit=1&cursor=${cursor}&${range(1, 5)}`, { auth: as(300) }),
      200,
      { items: [item(302, 2)], next_cursor: expect.any(String), prev_cursor: null },
    );
  });

  it('security: not-followed-back is owner-only (403); mutuals follow list visibility (403 private, 404 blocked)', async () => {
    await expectRes(
      req('GET', '/v1/users/300/followers/not-followed-back', { auth: as(301) }),
      403,
      FORBIDDEN,
    );
    const anon = await req('GET', '/v1/users/300/mutuals');
    expect([anon.status, anon.json.code]).toEqual([401, 'unauthorized']);
    await expectRes(req('GET', '/v1/users/404406/mutuals', { auth: as(300) }), 404, notFound(404406));
    // 310 private, followed (accepted) by 311; 312 a stranger; 313 blocked by 310.
    await users([310, true], [311], [312], [313]);
    await adminOp('PUT', 311, 'following', 310, 10);
    expect((await req('POST', '/v1/users/310/requests/311/accept', { auth: as(310) })).status).toBe(200);
    await adminOp('PUT', 310, 'following', 311, 11);
    await adminOp('PUT', 310, 'blocks', 313, 12);
    await expectRes(req('GET', '/v1/users/310/mutuals', { auth: as(312) }), 403, NOT_VISIBLE);
    await expectRes(req('GET', '/v1/users/310/mutuals', { auth: as(313) }), 404, notFound(310));
    const follower = await req('GET', '/v1/users/310/mutuals', { auth: as(311) });
    expect([follower.status, (follower.json.items as { id: string }[]).map((i) => i.id)]).toEqual([
      200,
      ['311'],
    ]);
  });
});

describe('GET /v1/users/{id}/following/export and POST /v1/users/{id}/following/import', () => {
  it('export: NDJSON of every follow; another subject 403, unknown 404', async () => {
    await users([400], [401], [402], [403]);
    await adminOp('PUT', 400, 'following', 401, 1);
    await adminOp('PUT', 400, 'following', 402, 2);
    const res = await r.app.request('/v1/users/400/following/export', {
      headers: { Authorization: as(400) },
    });
    expect([res.status, res.headers.get('content-type')]).toEqual([
      200,
      'application/x-ndjson; charset=utf-8',
    ]);
    expect(await res.text()).toBe(`${JSON.stringify(item(402, 2))}\n${JSON.stringify(item(401, 1))}\n`);
    await expectRes(req('GET', '/v1/users/400/following/export', { auth: as(401) }), 403, FORBIDDEN);
    await expectRes(
      req('GET', '/v1/users/404407/following/export', { auth: as(404407) }),
      404,
      notFound(404407),
    );
    const unknown = await req('GET', '/v1/users/400/following/export?limit=1', { auth: as(400) });
    expect([unknown.status, unknown.json.errors]).toEqual([
      400,
      [{ path: 'query', message: 'Unrecognized key: "limit"' }],
    ]);
    const empty = await req('GET', '/v1/users/403/following/export', { auth: as(403) });
    expect([empty.status, empty.text]).toEqual([200, '']);
  });

  it('import: one result per line in order, every outcome; re-posting changes nothing', async () => {
    // 410 imports: 411 public, 412 private, 413 blocks 410, 414 already followed, 415 unknown.
    await users([410], [411], [412, true], [413], [414]);
    await adminOp('PUT', 413, 'blocks', 410, 1);
    await adminOp('PUT', 410, 'following', 414, 2);
    const body = [
      '{"id":"411"}',
      '{"id":"412","username":"ignored"}',
      '{"id":"413"}',
      '{"id":"414"}',
      '{"id":"415"}',
      '{"id":"410"}',
      'not json',
      '{"id":7}',
      '',
      '[1]',
      '{"id":"411"}',
      '',
    ].join('\n');
    const post = () =>
      req('POST', '/v1/users/410/following/import', {
        auth: as(410),
        body,
        headers: { 'Content-Type': 'application/x-ndjson' },
      });
    const first = await post();
    const idError = 'id: a positive 64-bit integer as a decimal string without leading zeros';
    expect([first.status, first.headers.get('content-type'), readNdjson(first.text)]).toEqual([
      200,
      'application/x-ndjson; charset=utf-8',
      [
        { line: 1, id: '411', result: 'following' },
        { line: 2, id: '412', result: 'requested' },
        { line: 3, id: '413', result: 'blocked' },
        { line: 4, id: '414', result: 'already_following' },
        { line: 5, id: '415', result: 'unknown_user' },
        { line: 6, id: '410', result: 'self' },
        { line: 7, result: 'invalid', error: 'not JSON' },
        { line: 8, result: 'invalid', error: idError },
        { line: 9, result: 'invalid', error: 'empty line' },
        { line: 10, result: 'invalid', error: 'not a JSON object' },
        { line: 11, id: '411', result: 'already_following' },
      ],
    ]);
    const following = await req('GET', '/v1/users/410/following', { auth: as(410) });
    const second = await post();
    expect(readNdjson(second.text).map((l) => (l as { result: string }).result)).toEqual([
      'already_following',
      'already_requested',
      'blocked',
      'already_following',
      'unknown_user',
      'self',
      'invalid',
      'invalid',
      'invalid',
      'invalid',
      'already_following',
    ]);
    expect((await req('GET', '/v1/users/410/following', { auth: as(410) })).json).toEqual(following.json);
  });

  it('import: over the cap per line (its token given back); another subject 403; over 1 MiB 413', async () => {
    await users([420], [421], [422], [423]);
    await adminOp('PUT', 420, 'following', 421, 1);
    const capped = r.variant({ maxFollowing: 1, rateLimitPerMinute: 1 });
    const post = (auth: string, body: string) =>
      capped.request('/v1/users/420/following/import', {
        method: 'POST',
        headers: { Authorization: auth, 'Content-Type': 'application/x-ndjson', 'X-Request-Id': 'req-1' },
        body,
      });
    const res = await post(as(420), '{"id":"421"}\n{"id":"422"}\r\n{"id":"423"}');
    expect([res.status, readNdjson(await res.text())]).toEqual([
      200,
      [
        { line: 1, id: '421', result: 'already_following' },
        { line: 2, id: '422', result: 'over_cap' },
        { line: 3, id: '423', result: 'over_cap' },
      ],
    ]);
    // One token a minute, yet both over_cap lines ran: each refused follow gave its token back
    // (the API contract, Part 3: only lines that write are charged). A re-post answers the same, no
    // Retry-After.
    const again = await post(as(420), '{"id":"421"}\n{"id":"422"}\n');
    expect([again.status, again.headers.get('retry-after'), readNdjson(await again.text())]).toEqual([
      200,
      null,
      [
        { line: 1, id: '421', result: 'already_following' },
        { line: 2, id: '422', result: 'over_cap' },
      ],
    ]);
    await expectRes(
      req('POST', '/v1/users/420/following/import', { auth: as(421), body: '{"id":"422"}\n' }),
      403,
      FORBIDDEN,
    );
    // One line padded with spaces (JSON allows them): just over 1 MiB is a 413, just under is read.
    const padded = (bytes: number) => {
      const line = '{"id":"421"}';
      return `${line}${' '.repeat(bytes - line.length - 1)}\n`;
    };
    await expectRes(
      req('POST', '/v1/users/420/following/import', { auth: as(420), body: padded(1024 * 1024 + 1) }),
      413,
      problem(413, 'payload_too_large', 'the request body exceeds 1048576 bytes'),
    );
    const ok = await req('POST', '/v1/users/420/following/import', {
      auth: as(420),
      body: padded(1024 * 1024),
    });
    expect([ok.status, readNdjson(ok.text)]).toEqual([
      200,
      [{ line: 1, id: '421', result: 'already_following' }],
    ]);
    // The 64 KiB limit still holds on every other route.
    const huge = await req('POST', '/v1/users/420/relationships', {
      auth: as(420),
      body: `{"ids":[]}${' '.repeat(65 * 1024)}`,
    });
    expect([huge.status, huge.json]).toEqual([
      413,
      problem(413, 'payload_too_large', 'the request body exceeds 65536 bytes'),
    ]);
  });

  it(`${ROUND_TRIP.toLocaleString('en')} follows: export streams them all (RSS growth printed), import into a fresh account reproduces them, re-posting changes nothing`, async () => {
    const N = ROUND_TRIP;
    // The default following cap (`GRAPH_MAX_FOLLOWING`) is 7,500, the soak size; the app here uses it.
    expect(loadConfig({}).graph.maxFollowing).toBe(7500);
    expect(N).toBeLessThanOrEqual(7500);
    const owner = 500n;
    const fresh = 501n;
    const first = 1_000_000n;
    const targets: UserId[] = Array.from({ length: N }, (_, i) => first + BigInt(i));
    const started = Date.now();
    await loadUsers(r.store, [owner, fresh, ...targets]);
    const origin = nowPosition() - 1_000_000_000n;
    let next = 0;
    const worker = async () => {
      while (next < N) {
        const i = next++;
        await r.graph.follow(owner, targets[i] as UserId, { position: origin + BigInt(i) * 10n });
      }
    };
    await Promise.all(Array.from({ length: 24 }, worker));
    console.log(`${N} follows written in ${Date.now() - started} ms`);

    const res = await r.app.request(`/v1/users/${owner}/following/export`, {
      headers: { Authorization: bearer(owner) },
    });
    expect(res.status).toBe(200);
    const base = process.memoryUsage().rss;
    let peak = base;
    let text = '';
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      peak = Math.max(peak, process.memoryUsage().rss);
    }
    console.log(
      `export of ${N} follows: ${text.length} bytes; RSS at start ${(base / 2 ** 20).toFixed(1)} MiB, ` +
        `peak growth while streaming ${((peak - base) / 2 ** 20).toFixed(1)} MiB`,
    );
    const lines = readNdjson(text) as { id: string; username: string; followed_at: string }[];
    // One bucket (under the first growth threshold): newest follow first.
    const expected = targets
      .map((id, i) => ({
        id: id.toString(),
        username: `u${id}`,
        followed_at: formatTime(origin + BigInt(i) * 10n),
      }))
      .reverse();
    expect(lines.length).toBe(N);
    expect(lines).toEqual(expected);

    const importStarted = Date.now();
    const imported = await req('POST', `/v1/users/${fresh}/following/import`, {
      auth: bearer(fresh),
      body: text,
    });
    console.log(`import of ${N} lines: ${Date.now() - importStarted} ms`);
    const results = readNdjson(imported.text) as { line: number; id: string; result: string }[];
    expect([imported.status, results.length]).toEqual([200, N]);
    expect(results).toEqual(lines.map((l, i) => ({ line: i + 1, id: l.id, result: 'following' })));
    const ids = async (u: bigint) => {
      const out: string[] = [];
      await r.graph.walkFollowing(u, async (items) => {
        out.push(...items.map((i) => i.id.toString()));
      });
      return out.sort();
    };
    expect(await ids(fresh)).toEqual(await ids(owner));
    const again = await req('POST', `/v1/users/${fresh}/following/import`, {
      auth: bearer(fresh),
      body: text,
    });
    const repeat = readNdjson(again.text) as { result: string }[];
    expect([again.status, repeat.length, new Set(repeat.map((x) => x.result))]).toEqual([
      200,
      N,
      new Set(['already_following']),
    ]);
    expect(await ids(fresh)).toEqual(await ids(owner));
  }, 600_000);
});
