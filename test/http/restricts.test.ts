/**
 * Restrict over HTTP, on the domain over the memory store: the three routes' happy path
 * and errors (exact statuses and problem bodies), and the hidden/visible matrix — the owner sees
 * `restricting: true` in its relationships, its profile view and its list; the restricted account
 * (its own token), a third party and everyone else see nothing of it anywhere.
 *
 * The matrix is differential: two worlds built by the same steps on the same injected clock, one
 * where the owner O restricts T and one where it does not, then every operation of the OpenAPI
 * document is called as T and as X with every combination of O, T and X in its path, twice over
 * (the mutations among them change both worlds alike, so the second pass reads after them). Every
 * answer's status and body must be the same in both worlds (times to the second, cursors present
 * or not): a difference would be the restrict showing through a relationship flag, a list, a count,
 * an error or the profile. Two restrict-free worlds are first checked to agree, so a difference is
 * the restrict's; reading the reverse edge into `restricting` (a leak) fails it.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { formatTime } from '../../src/http/times.js';
import { BucketedListService } from '../../src/lists/list-service.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { bearer, buildTestApp, call, problem } from './support/app.js';
import { NO_RELATIONSHIP } from './support/scenario.js';

const [O, T, X, W] = [21n, 22n, 23n, 24n];
const P0 = 1_796_000_000_000_000n;
/** The start of step `k` (a second apart); the clock counts µs up from there. */
const at = (k: number) => P0 + BigInt(k) * 1_000_000n;
const admin = bearer(1, { admin: true });

const FORBIDDEN = problem(403, 'forbidden', "a token may act only on its own subject's relationships");
const SELF = problem(400, 'self_relation', 'an account cannot follow, block, mute or list itself');
const notFound = (id: bigint | number) => problem(404, 'user_not_found', `user ${id} not found`);
const INVALID_CURSOR = problem(
  400,
  'invalid_cursor',
  'the cursor is malformed, altered or belongs to another list',
);
/** A list item written at step `k` (its position is a few clock reads into the step). */
const item = (id: bigint, k: number) => ({
  id: String(id),
  username: `u${id}`,
  followed_at: expect.stringMatching(new RegExp(`^${formatTime(at(k)).slice(0, 23)}\\d{3}Z$`)),
});

/**
 * A world: O, T, X (private) and W; T and O follow each other, X follows O (accepted), O follows X
 * and has T as a close friend, W follows T. With `restrict`, O restricts T at step 20 (a step the
 * other world skips, so both run the same clock from then on).
 */
async function world(restrict: boolean) {
  let now = at(0);
  const store = new MemoryGraphStore();
  const lists = new BucketedListService({
    store,
    cursorSecret: 'cursor-secret-0123456789abcdef',
    bucketThresholds: [1000],
  });
  const graph = new GraphService({
    store,
    lists,
    maxFollowing: 100,
    clock: () => now++,
    setCursorSecret: 'set-cursor-secret-0123456789abcdef',
  });
  const step = async (k: number, f: () => Promise<unknown>) => {
    now = at(k);
    await f();
  };
  await step(1, async () => {
    for (const id of [O, T, X, W]) await graph.putUser({ id, username: `u${id}`, private: id === X });
  });
  await step(2, () => graph.follow(T, O));
  await step(3, () => graph.follow(O, T));
  await step(4, () => graph.follow(O, X));
  await step(5, () => graph.acceptRequest(X, O));
  await step(6, () => graph.follow(X, O));
  await step(7, () => graph.addCloseFriend(O, T));
  await step(8, () => graph.follow(W, T));
  if (restrict) await step(20, () => graph.restrict(O, T));
  await graph.settleAccountTasks();
  const { app } = buildTestApp({ graph, receipts: store });
  return { app, graph, store, setNow: (k: number) => (now = at(k)) };
}

type World = Awaited<ReturnType<typeof world>>;

describe('restricts routes: happy path and errors', () => {
  let w: World;
  beforeAll(async () => {
    w = await world(false);
  });
  const req = (method: string, path: string, auth: string) => call(w.app, method, path, { auth });
  const res = async (method: string, path: string, auth: string) => {
    const r = await req(method, path, auth);
    return [r.status, r.json];
  };

  it('put_restricts / delete_restricts / list_restricts: restrict, repeat, list and page, unrestrict; follows, close friends and counts untouched', async () => {
    const owner = bearer(O);
    const before = await res('GET', `/v1/users/${O}`, owner);
    w.setNow(30);
    expect(await res('PUT', `/v1/users/${O}/restricts/${T}`, owner)).toEqual([200, { state: 'restricting' }]);
    w.setNow(31);
    expect(await res('PUT', `/v1/users/${O}/restricts/${T}`, owner)).toEqual([200, { state: 'restricting' }]);
    w.setNow(32);
    expect(await res('PUT', `/v1/users/${O}/restricts/${W}`, admin)).toEqual([200, { state: 'restricting' }]);
    expect(await res('GET', `/v1/users/${O}/restricts`, owner)).toEqual([
      200,
      { items: [item(W, 32), item(T, 30)], next_cursor: null, prev_cursor: null },
    ]);
    // Paged like the others: limit 1, then the cursor.
    const first = await req('GET', `/v1/users/${O}/restricts?limit=1`, owner);
    expect(first.json).toMatchObject({ items: [item(W, 32)], prev_cursor: null });
    const next = (first.json as { next_cursor: string }).next_cursor;
    expect(await res('GET', `/v1/users/${O}/restricts?limit=1&cursor=${next}`, owner)).toEqual([
      200,
      { items: [item(T, 30)], next_cursor: null, prev_cursor: expect.any(String) },
    ]);
    // Nothing else moved: the follows both ways, the close friend, the counts.
    expect(await res('GET', `/v1/users/${O}/following/${T}`, owner)).toEqual([
      200,
      { state: 'following', followed_at: item(O, 3).followed_at },
    ]);
    expect(await res('GET', `/v1/users/${T}/following/${O}`, bearer(T))).toEqual([
      200,
      { state: 'following', followed_at: item(O, 2).followed_at },
    ]);
    expect(await res('GET', `/v1/users/${O}/close-friends`, owner)).toEqual([
      200,
      { items: [item(T, 7)], next_cursor: null, prev_cursor: null },
    ]);
    const profile = await res('GET', `/v1/users/${O}`, owner);
    expect(profile).toEqual(before);

    w.setNow(40);
    expect(await res('DELETE', `/v1/users/${O}/restricts/${T}`, owner)).toEqual([200, { state: 'none' }]);
    expect(await res('DELETE', `/v1/users/${O}/restricts/${T}`, owner)).toEqual([200, { state: 'none' }]);
    expect(await res('DELETE', `/v1/users/${O}/restricts/${W}`, owner)).toEqual([200, { state: 'none' }]);
    expect(await res('GET', `/v1/users/${O}/restricts`, owner)).toEqual([
      200,
      { items: [], next_cursor: null, prev_cursor: null },
    ]);
  });

  it('errors: 401 without a token, 403 for another subject, 400 self and bad ids, 404 unknown accounts, 400 bad cursor and limit', async () => {
    const owner = bearer(O);
    const noToken = await call(w.app, 'PUT', `/v1/users/${O}/restricts/${T}`);
    expect([noToken.status, noToken.json]).toEqual([
      401,
      problem(401, 'unauthorized', 'no authorization included in request'),
    ]);
    for (const [method, path] of [
      ['PUT', `/v1/users/${O}/restricts/${T}`],
      ['DELETE', `/v1/users/${O}/restricts/${T}`],
      ['GET', `/v1/users/${O}/restricts`],
    ] as const) {
      // The restricted account and a third party alike: the same 403, restrict or not.
      expect(await res(method, path, bearer(T))).toEqual([403, FORBIDDEN]);
      expect(await res(method, path, bearer(X))).toEqual([403, FORBIDDEN]);
    }
    expect(await res('PUT', `/v1/users/${O}/restricts/${O}`, owner)).toEqual([400, SELF]);
    expect(await res('DELETE', `/v1/users/${O}/restricts/${O}`, owner)).toEqual([400, SELF]);
    expect(await res('PUT', `/v1/users/${O}/restricts/777777`, owner)).toEqual([404, notFound(777777)]);
    expect(await res('DELETE', `/v1/users/${O}/restricts/777777`, owner)).toEqual([404, notFound(777777)]);
    expect(await res('GET', '/v1/users/777777/restricts', admin)).toEqual([404, notFound(777777)]);
    const badId = await res('PUT', `/v1/users/${O}/restricts/abc`, owner);
    expect(badId[0]).toBe(400);
    expect(badId[1]).toMatchObject({ code: 'validation_failed', status: 400 });
    expect(await res('GET', `/v1/users/${O}/restricts?cursor=forged`, owner)).toEqual([400, INVALID_CURSOR]);
    expect(await res('GET', `/v1/users/${O}/restricts?limit=0`, owner)).toEqual([
      400,
      problem(400, 'validation_failed', 'invalid query', {
        errors: [{ path: 'query.limit', message: 'Too small: expected number to be >=1' }],
      }),
    ]);
    // A cursor of another list (O's close friends) is refused on the restricts list.
    w.setNow(50);
    await w.graph.addCloseFriend(O, W);
    const cf = await req('GET', `/v1/users/${O}/close-friends?limit=1`, owner);
    const foreign = (cf.json as { next_cursor: string }).next_cursor;
    expect(await res('GET', `/v1/users/${O}/restricts?cursor=${foreign}`, owner)).toEqual([
      400,
      INVALID_CURSOR,
    ]);
  });
});

/** Every operation of the document as `{ operationId, method, path }`. */
async function operationsOf(app: World['app']) {
  const doc = (await call(app, 'GET', '/openapi.json')).json as {
    paths: Record<string, Record<string, { operationId: string }>>;
  };
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({
      operationId: op.operationId,
      method: method.toUpperCase(),
      path,
    })),
  );
}

/** A body for every operation that takes one: the ids name all three accounts. */
const BODY: Record<string, (id: bigint, other: bigint) => { type: string; text: string }> = {
  putUser: (id) => ({ type: 'application/json', text: JSON.stringify({ username: `u${id}` }) }),
  followingContains: () => ({ type: 'application/json', text: `{"ids":["${O}","${T}","${X}","${W}"]}` }),
  followersContains: () => ({ type: 'application/json', text: `{"ids":["${O}","${T}","${X}","${W}"]}` }),
  relationships: () => ({ type: 'application/json', text: `{"ids":["${O}","${T}","${X}","${W}"]}` }),
  importFollowing: (_id, other) => ({ type: 'application/x-ndjson', text: `{"id":"${other}"}\n` }),
};

/**
 * A body with the µs of its times and its opaque cursors blanked: a step's writes read the clock a
 * varying number of times (background tasks read it too), so times agree only to the step's second,
 * and cursors carry positions. Whether a cursor is there still counts.
 */
const normalized = (text: string) =>
  text
    .replace(/(T\d{2}:\d{2}:\d{2})\.\d{6}Z/g, '$1.µZ')
    .replace(/"(next|prev)_cursor":"[^"]+"/g, '"$1_cursor":"…"');

/** `[viewer, operationId, path, status, body]` of every operation as `viewer`, ids from the cast. */
async function sweep(
  w: World,
  viewers: bigint[],
  ops: Awaited<ReturnType<typeof operationsOf>>,
  step0: number,
) {
  const out: [string, string, string, number, string][] = [];
  let k = step0;
  for (const viewer of viewers)
    for (const op of ops) {
      if (op.operationId === 'streamEvents') continue; // an open stream; its 403 is the same as listEvents'
      for (const id of [O, T, X])
        for (const other of op.path.split('{').length > 2 ? [O, T, X, W] : [W]) {
          const path = op.path.replace(/\{(\w+)\}/g, (_m, name: string) =>
            String(name === 'id' ? id : other),
          );
          const body = BODY[op.operationId]?.(id, other);
          w.setNow(k++);
          const r = await call(w.app, op.method, path, {
            auth: bearer(viewer),
            ...(body ? { body: body.text, headers: { 'Content-Type': body.type } } : {}),
          });
          out.push([String(viewer), op.operationId, `${op.method} ${path}`, r.status, normalized(r.text)]);
        }
    }
  return out;
}

describe('restrict is hidden from everyone but its owner', () => {
  let plain: World;
  let plainAgain: World;
  let restricted: World;
  beforeAll(async () => {
    [plain, plainAgain, restricted] = [await world(false), await world(false), await world(true)];
  });

  it('the owner sees it: restricting in relationships, in its view of the profile, and its list', async () => {
    const owner = bearer(O);
    const rel = await call(restricted.app, 'POST', `/v1/users/${O}/relationships`, {
      auth: owner,
      body: { ids: [String(T), String(X)] },
    });
    expect(rel.json).toEqual({
      items: [
        {
          ...NO_RELATIONSHIP,
          id: String(T),
          following: true,
          followed_by: true,
          close_friend: true,
          restricting: true,
        },
        { ...NO_RELATIONSHIP, id: String(X), following: true, followed_by: true },
      ],
    });
    const profile = await call(restricted.app, 'GET', `/v1/users/${T}`, { auth: owner });
    expect((profile.json as { relationship: unknown }).relationship).toEqual({
      following: 'following',
      followed_by: true,
      blocking: false,
      muting: false,
      restricting: true,
    });
    const list = await call(restricted.app, 'GET', `/v1/users/${O}/restricts`, { auth: owner });
    expect(list.json).toEqual({ items: [item(T, 20)], next_cursor: null, prev_cursor: null });
    // The same reads in the world without it.
    const plainRel = await call(plain.app, 'POST', `/v1/users/${O}/relationships`, {
      auth: owner,
      body: { ids: [String(T)] },
    });
    expect((plainRel.json as { items: { restricting: boolean }[] }).items[0]?.restricting).toBe(false);
  });

  it('the restricted account (its own token) and a third party see nothing of it on any operation, before and after their own writes', async () => {
    const ops = await operationsOf(plain.app);
    expect(ops.length).toBeGreaterThan(30);
    const viewers = [T, X];
    // Two passes: the second reads after the first pass's writes (follows, blocks, imports, …).
    const base = [...(await sweep(plain, viewers, ops, 100)), ...(await sweep(plain, viewers, ops, 5_000))];
    const again = [
      ...(await sweep(plainAgain, viewers, ops, 100)),
      ...(await sweep(plainAgain, viewers, ops, 5_000)),
    ];
    expect(again).toEqual(base); // the worlds are deterministic: a difference below is the restrict
    const got = [
      ...(await sweep(restricted, viewers, ops, 100)),
      ...(await sweep(restricted, viewers, ops, 5_000)),
    ];
    expect(got.filter((r, i) => JSON.stringify(r) !== JSON.stringify(base[i]))).toEqual([]);
    expect(got).toHaveLength(base.length);
    // The sweep did reach the places the restrict could show: T's relationships with O, O's
    // profile seen by T, O's lists and counts, and T's attempts on O's restricts list.
    const statusOf = (viewer: bigint, p: string) =>
      got.filter(([v, , path]) => v === String(viewer) && path === p).map(([, , , status]) => status);
    expect(statusOf(T, `POST /v1/users/${T}/relationships`)).toEqual([200, 200]);
    expect(statusOf(T, `GET /v1/users/${O}`)).toEqual([200, 200]);
    expect(statusOf(T, `GET /v1/users/${O}/counts`)).toEqual([200, 200]);
    expect(statusOf(T, `GET /v1/users/${O}/followers`)).toEqual([200, 200]);
    expect(statusOf(T, `GET /v1/users/${O}/restricts`)).toEqual([403, 403]);
    expect(statusOf(X, `GET /v1/users/${O}/restricts`)).toEqual([403, 403]);
    // And the restrict is still there at the end (the sweep's writes did not clear it).
    const list = await call(restricted.app, 'GET', `/v1/users/${O}/restricts`, { auth: bearer(O) });
    expect((list.json as { items: { id: string }[] }).items.map((i) => i.id)).toEqual([String(T)]);
  });

  it('export and import carry no restricts, like mutes: the owner’s export and import answer the same with and without it', async () => {
    const run = async (w: World) => {
      w.setNow(60);
      const exported = await call(w.app, 'GET', `/v1/users/${O}/following/export`, { auth: bearer(O) });
      w.setNow(61);
      const imported = await call(w.app, 'POST', `/v1/users/${O}/following/import`, {
        auth: bearer(O),
        body: `{"id":"${T}"}\n{"id":"${W}"}\n`,
        headers: { 'Content-Type': 'application/x-ndjson' },
      });
      return [exported.status, normalized(exported.text), imported.status, normalized(imported.text)];
    };
    // Fresh worlds: the sweep above had T and X block O.
    const [withIt, without] = [await run(await world(true)), await run(await world(false))];
    expect(withIt).toEqual(without);
    expect(withIt[1]).toContain(`"id":"${T}"`);
    expect(withIt[1]).not.toContain('restrict');
  });
});
