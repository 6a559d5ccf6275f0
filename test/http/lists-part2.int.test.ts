/**
 * The Part 2 list reads on the real node: outgoing requests, `prev_cursor` / `direction`, and
 * `since` / `until`, with whole pages compared.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RealApp, realApp } from './support/real-app.js';
import { admin, as, FORBIDDEN, item, notFound, problem, scenario, time } from './support/scenario.js';

let r: RealApp;
const { req, expectRes, users, adminOp } = scenario(() => r);

beforeAll(async () => {
  r = await realApp('http_lists_part2');
});
afterAll(async () => {
  await r?.close();
});

describe('GET /v1/users/{id}/requests/outgoing', () => {
  it('lists pending requests newest first; an accepted or cancelled one leaves the list', async () => {
    await users([200], [201, true], [202, true], [203, true], [204]);
    await adminOp('PUT', 200, 'following', 201, 1);
    await adminOp('PUT', 200, 'following', 202, 2);
    await adminOp('PUT', 200, 'following', 203, 3);
    await adminOp('PUT', 200, 'following', 204, 4); // public: a follow, not a request
    await expectRes(req('GET', '/v1/users/200/requests/outgoing', { auth: as(200) }), 200, {
      items: [item(203, 3), item(202, 2), item(201, 1)],
      next_cursor: null,
      prev_cursor: null,
    });
    const accepted = await req('POST', '/v1/users/202/requests/200/accept', { auth: as(202) });
    expect(accepted.status).toBe(200);
    await adminOp('DELETE', 200, 'following', 201, 5);
    await expectRes(req('GET', '/v1/users/200/requests/outgoing?limit=1', { auth: as(200) }), 200, {
      items: [item(203, 3)],
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('GET', '/v1/users/200/requests/outgoing', { auth: admin }), 200, {
      items: [item(203, 3)],
      next_cursor: null,
      prev_cursor: null,
    });
  });

  it('security: no token 401, another subject 403, unknown id 404', async () => {
    await users([210], [211]);
    const anon = await req('GET', '/v1/users/210/requests/outgoing');
    expect([anon.status, anon.json.code]).toEqual([401, 'unauthorized']);
    await expectRes(req('GET', '/v1/users/210/requests/outgoing', { auth: as(211) }), 403, FORBIDDEN);
    await expectRes(
      req('GET', '/v1/users/404405/requests/outgoing', { auth: as(404405) }),
      404,
      notFound(404405),
    );
    const bad = await req('GET', '/v1/users/210/requests/outgoing?limit=0', { auth: as(210) });
    expect([bad.status, bad.json.code]).toEqual([400, 'validation_failed']);
  });
});

const INVALID_CURSOR = problem(
  400,
  'invalid_cursor',
  'the cursor is malformed, altered or belongs to another list',
);
const q = (o: Record<string, string | null | undefined>) =>
  new URLSearchParams(
    Object.entries(o).filter((e): e is [string, string] => typeof e[1] === 'string'),
  ).toString();

describe('two-way paging and since/until on the lists', () => {
  // 300's followers: 301..312 at steps 1..12, 305 and 306 both at step 5 (a tie: larger id first).
  const followers = [301, 302, 303, 304, 305, 306, 307, 308, 309, 310, 311, 312];
  const stepOf = (id: number) => (id <= 305 ? id - 300 : id - 301);
  const newestFirst = [...followers].sort((a, b) => stepOf(b) - stepOf(a) || b - a);
  beforeAll(async () => {
    await users([300], [320], ...followers.map((id) => [id] as [number]));
    for (const id of followers) await adminOp('PUT', id, 'following', 300, stepOf(id));
    await adminOp('PUT', 300, 'following', 320, 1);
  });

  const page = (path: string, o: Record<string, string | null | undefined>) =>
    req('GET', `${path}?${q(o)}`, { auth: as(300) });

  /** Walks forward to the end and back; returns the item ids of each page. */
  async function bothWays(path: string, o: Record<string, string>) {
    const forward: string[][] = [];
    let cursor: string | null = null;
    let prev: string | null = null;
    do {
      const r = await page(path, { ...o, cursor });
      expect(r.status).toBe(200);
      if (forward.length === 0) expect(r.json.prev_cursor).toBeNull();
      forward.push((r.json.items as { id: string }[]).map((i) => i.id));
      cursor = r.json.next_cursor as string | null;
      prev = r.json.prev_cursor as string | null;
    } while (cursor);
    const backward: string[][] = [];
    while (prev) {
      const r = await page(path, { ...o, cursor: prev, direction: 'newer' });
      expect(r.status).toBe(200);
      backward.push((r.json.items as { id: string }[]).map((i) => i.id));
      prev = r.json.prev_cursor as string | null;
    }
    return { forward, backward };
  }

  const chunk = (ids: number[], n: number) =>
    Array.from({ length: Math.ceil(ids.length / n) }, (_, i) => ids.slice(i * n, i * n + n).map(String));

  it('followers: forward with next_cursor, back with prev_cursor and direction=newer, the same pages', async () => {
    const { forward, backward } = await bothWays('/v1/users/300/followers', { limit: '5' });
    const expected = chunk(newestFirst, 5);
    expect(forward.filter((p, i) => p.length > 0 || i === 0)).toEqual(expected);
    const walked = forward.at(-1)!.length === 0 ? expected : expected.slice(0, -1);
    expect(backward).toEqual([...walked].reverse());
  });

  it('followers with since/until: whole pages of [since, until), both ways', async () => {
    // [step 3, step 10): 303, 304, 306, 305, 307, 308, 309, 310 — newest first.
    const since = time(3);
    const until = time(10);
    const inRange = newestFirst.filter((id) => stepOf(id) >= 3 && stepOf(id) < 10);
    expect(inRange).toEqual([310, 309, 308, 307, 306, 305, 304, 303]);
    const first = await page('/v1/users/300/followers', { limit: '3', since, until });
    expect([first.status, first.json]).toEqual([
      200,
      {
        items: [item(310, 9), item(309, 8), item(308, 7)],
        next_cursor: expect.any(String),
        prev_cursor: null,
      },
    ]);
    const { forward, backward } = await bothWays('/v1/users/300/followers', { limit: '3', since, until });
    expect(forward.filter((p) => p.length > 0)).toEqual(chunk(inRange, 3));
    expect(backward).toEqual(chunk(inRange, 3).slice(0, -1).reverse());
    // One bound alone.
    const recent = await page('/v1/users/300/followers', { since: time(11) });
    expect([recent.status, recent.json]).toEqual([
      200,
      { items: [item(312, 11)], next_cursor: null, prev_cursor: null },
    ]);
    const old = await page('/v1/users/300/followers', { until: time(2) });
    expect([old.status, old.json]).toEqual([
      200,
      { items: [item(301, 1)], next_cursor: null, prev_cursor: null },
    ]);
  });

  it('following and blocks answer prev_cursor too', async () => {
    const r = await page('/v1/users/300/following', {});
    expect([r.status, r.json]).toEqual([
      200,
      { items: [item(320, 1)], next_cursor: null, prev_cursor: null },
    ]);
    const b = await page('/v1/users/300/blocks', { direction: 'newer', since: time(1) });
    expect([b.status, b.json]).toEqual([200, { items: [], next_cursor: null, prev_cursor: null }]);
  });

  it('cursor misuse is a 400 invalid_cursor: other direction, other bounds, other list', async () => {
    const p1 = await page('/v1/users/300/followers', { limit: '2', since: time(2) });
    const p2 = await page('/v1/users/300/followers', {
      limit: '2',
      since: time(2),
      cursor: p1.json.next_cursor as string,
    });
    const prev = p2.json.prev_cursor as string;
    const next = p2.json.next_cursor as string;
    expect([typeof prev, typeof next]).toEqual(['string', 'string']);
    for (const [path, o] of [
      ['/v1/users/300/followers', { cursor: prev, since: time(2) }],
      ['/v1/users/300/followers', { cursor: next, since: time(2), direction: 'newer' }],
      ['/v1/users/300/followers', { cursor: prev, direction: 'newer' }],
      ['/v1/users/300/followers', { cursor: next, since: time(2), until: time(9) }],
      ['/v1/users/300/following', { cursor: prev, since: time(2), direction: 'newer' }],
      ['/v1/users/301/followers', { cursor: prev, since: time(2), direction: 'newer' }],
    ] as const) {
      const r = await req('GET', `${path}?${q(o)}`, { auth: admin });
      expect([path, o, r.status, r.json]).toEqual([path, o, 400, INVALID_CURSOR]);
    }
    const back = await page('/v1/users/300/followers', { since: time(2), cursor: prev, direction: 'newer' });
    expect([
      back.status,
      (back.json.items as { id: string }[]).map((i) => i.id),
      back.json.prev_cursor,
    ]).toEqual([200, ['312', '311'], null]);
  });

  it('bad direction or time is a 400 naming the parameter; since >= until is a 400', async () => {
    const sideways = await page('/v1/users/300/followers', { direction: 'sideways' });
    expect([
      sideways.status,
      sideways.json.code,
      (sideways.json.errors as { path: string }[]).map((e) => e.path),
    ]).toEqual([400, 'validation_failed', ['query.direction']]);
    const garbage = await page('/v1/users/300/followers', { since: 'garbage' });
    expect([
      garbage.status,
      garbage.json.code,
      (garbage.json.errors as { path: string }[]).map((e) => e.path),
    ]).toEqual([400, 'validation_failed', ['query.since']]);
    const empty = await page('/v1/users/300/requests', { since: time(5), until: time(5) });
    expect([empty.status, empty.json.errors]).toEqual([
      400,
      [{ path: 'query.until', message: 'a time later than since' }],
    ]);
  });
});
