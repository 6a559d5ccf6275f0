/**
 * `GET /v1/users/{id}/followers/search?q` and `/following/search` (the API contract, Part 3): the
 * members whose username starts with `q`, case-insensitive, in (lowercased name, id) order, paged by
 * a cursor bound to the list and `q`; the list routes' visibility; deactivated members left out. On
 * the domain over the in-memory store (the store contract runs the search rows on the real node).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { BucketedListService } from '../../src/lists/list-service.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { bearer, buildTestApp, call, problem } from './support/app.js';

const OWNER = 100n;
const STRANGER = 200n;
/** Followers of OWNER by id and name; OWNER follows the first three back. */
const NAMED: [bigint, string][] = [
  [1n, 'Ada'],
  [2n, 'adam'],
  [3n, 'ADRIAN_1'],
  [4n, 'ad.x'],
  [5n, 'bob'],
  [6n, 'a'],
  [7n, 'Adan'],
];

let app: ReturnType<typeof buildTestApp>['app'];
let graph: GraphService;

const get = async (path: string, sub: bigint = OWNER) => {
  const r = await call(app, 'GET', path, { auth: bearer(sub) });
  return { status: r.status, body: r.json };
};
const item = (id: bigint) => {
  const name = NAMED.find(([i]) => i === id)?.[1];
  return { id: id.toString(), username: name, followed_at: expect.any(String) };
};
const page = (ids: bigint[], next: 'more' | null) => ({
  status: 200,
  body: { items: ids.map(item), next_cursor: next === 'more' ? expect.any(String) : null },
});

beforeAll(async () => {
  const store = new MemoryGraphStore();
  const lists = new BucketedListService({
    store,
    cursorSecret: 'cursor-secret-0123456789abcdef',
    bucketThresholds: [1000],
  });
  graph = new GraphService({ store, lists, maxFollowing: 100 });
  await graph.putUser({ id: OWNER, username: 'owner' });
  await graph.putUser({ id: STRANGER, username: 'stranger' });
  for (const [id, username] of NAMED) {
    await graph.putUser({ id, username });
    await graph.follow(id, OWNER);
  }
  for (const [id] of NAMED.slice(0, 3)) await graph.follow(OWNER, id);
  app = buildTestApp({ graph, receipts: store }).app;
});

describe('GET /v1/users/{id}/followers/search and /following/search', () => {
  it('search: prefix matches in username order, case-insensitive, paged through the cursor to the end', async () => {
    const base = `/v1/users/${OWNER}/followers/search`;
    // ad.x < ada < adam < adan < adrian_1 (lowercased, byte order).
    const first = await get(`${base}?q=AD&limit=2`);
    expect(first).toEqual(page([4n, 1n], 'more'));
    const cursor = (first.body as { next_cursor: string }).next_cursor;
    const second = await get(`${base}?q=aD&limit=2&cursor=${cursor}`);
    expect(second).toEqual(page([2n, 7n], 'more'));
    const third = await get(
      `${base}?q=ad&limit=2&cursor=${(second.body as { next_cursor: string }).next_cursor}`,
    );
    expect(third).toEqual(page([3n], null));
    // One character spans the name `a` itself and every two-character prefix after it.
    expect(await get(`${base}?q=A`)).toEqual(page([6n, 4n, 1n, 2n, 7n, 3n], null));
    expect(await get(`${base}?q=adam`)).toEqual(page([2n], null));
    expect(await get(`${base}?q=zz`)).toEqual(page([], null));
    expect(await get(`/v1/users/${OWNER}/following/search?q=a`)).toEqual(page([1n, 2n, 3n], null));
  });

  it('search: a bad q (missing, empty, 31 characters, a character outside usernames) is a 400 naming q', async () => {
    const base = `/v1/users/${OWNER}/followers/search`;
    const invalid = (message: string) => ({
      status: 400,
      body: problem(400, 'validation_failed', 'invalid query', { errors: [{ path: 'query.q', message }] }),
    });
    const rule = '1 to 30 of A-Z a-z 0-9 . _';
    expect([
      await get(`${base}?q=`),
      await get(`${base}?q=${'a'.repeat(31)}`),
      await get(`${base}?q=a-b`),
      await get(`${base}?q=%C3%A9`),
    ]).toEqual([invalid(rule), invalid(rule), invalid(rule), invalid(rule)]);
    expect(await get(base)).toEqual(invalid('Invalid input: expected string, received undefined'));
    expect(await get(`${base}?q=${'a'.repeat(30)}`)).toEqual(page([], null));
  });

  it('search: a cursor of another q or another list is a 400 invalid_cursor', async () => {
    const first = await get(`/v1/users/${OWNER}/followers/search?q=ad&limit=1`);
    const cursor = (first.body as { next_cursor: string }).next_cursor;
    const refused = {
      status: 400,
      body: problem(400, 'invalid_cursor', 'the cursor is malformed, altered or belongs to another list'),
    };
    expect([
      await get(`/v1/users/${OWNER}/followers/search?q=ada&cursor=${cursor}`),
      await get(`/v1/users/${OWNER}/followers/search?q=a&cursor=${cursor}`),
      await get(`/v1/users/${OWNER}/following/search?q=ad&cursor=${cursor}`),
      await get(`/v1/users/${OWNER}/followers?cursor=${cursor}`),
    ]).toEqual([refused, refused, refused, refused]);
    // The same q in another case is the same query.
    expect(await get(`/v1/users/${OWNER}/followers/search?q=AD&limit=1&cursor=${cursor}`)).toEqual(
      page([1n], 'more'),
    );
  });

  it('search: a private account’s lists are 403 to a stranger, like the list routes; the owner sees them', async () => {
    await graph.putUser({ id: OWNER, private: true });
    try {
      const list = await get(`/v1/users/${OWNER}/followers`, STRANGER);
      expect(list.status).toBe(403);
      expect(await get(`/v1/users/${OWNER}/followers/search?q=a`, STRANGER)).toEqual(list);
      expect(await get(`/v1/users/${OWNER}/following/search?q=a`, STRANGER)).toEqual(list);
      expect(await get(`/v1/users/${OWNER}/following/search?q=a`)).toEqual(page([1n, 2n, 3n], null));
    } finally {
      await graph.putUser({ id: OWNER, private: false });
    }
  });

  it('search: a deactivated member is left out, and back once reactivated', async () => {
    await graph.putUser({ id: 2n, state: 'deactivated' });
    try {
      expect(await get(`/v1/users/${OWNER}/followers/search?q=ada`)).toEqual(page([1n, 7n], null));
    } finally {
      await graph.putUser({ id: 2n, state: 'active' });
    }
    expect(await get(`/v1/users/${OWNER}/followers/search?q=ada`)).toEqual(page([1n, 2n, 7n], null));
  });
});
