/**
 * Every list route refuses query parameters it does not know. Regression: `GET …/followers?
 * direction=newer` used to ignore `direction` and page the other way; now the page routes know
 * `direction`, `since` and `until` (the API contract, Part 2) and hand them to the domain, while the other
 * routes with a `limit` (followed-by, scan) still refuse them. The routes come from the app's own
 * OpenAPI document (every GET with a `limit` query parameter), so a new list route is covered
 * without touching this file.
 */
import { describe, expect, it } from 'vitest';
import type { EventFeed, GraphApi } from '../../src/graph/contracts.js';
import { problemType } from '../../src/http/errors.js';
import { TIME_MESSAGE } from '../../src/http/times.js';
import { bearer, buildTestApp, call, stubGraph } from './support/app.js';

/** Answers every read a list route makes with an empty page, so known queries reach 200. */
const emptyGraph: Partial<GraphApi> = {
  getUser: async (id) =>
    ({ id, username: `u${id}`, private: false }) as Awaited<ReturnType<GraphApi['getUser']>>,
  getUsers: async () => new Map(),
  assertCanViewLists: async () => {},
  assertCanViewProfile: async () => {},
  listPage: async (list, limit, cursor, options) => {
    calls.push({ list: list.relation, limit, cursor, options });
    return { items: [], nextCursor: null };
  },
  scanPage: async () => ({ ids: [], nextCursor: null }),
  followedBy: async () => ({ sample: [], total: 0 }),
  setPage: async () => ({ items: [], nextCursor: null }),
  search: async () => ({ items: [], nextCursor: null }),
  suggestions: async () => [],
};

const calls: unknown[] = [];
/** The change feed (`/v1/events` takes a `limit` too), empty. */
const emptyFeed: EventFeed = {
  read: async (after) => ({ items: [], next: after ?? 'start' }),
  subscribe: () => () => undefined,
};
const { app } = buildTestApp({ graph: stubGraph(emptyGraph), feed: emptyFeed });
/** The routes that answer a list page (they take direction / since / until). */
const PAGE_ROUTES = [
  '/v1/users/1/followers',
  '/v1/users/1/following',
  '/v1/users/1/requests',
  '/v1/users/1/requests/outgoing',
  '/v1/users/1/blocks',
  '/v1/users/1/mutes',
  '/v1/users/1/close-friends',
  '/v1/users/1/restricts',
];
const admin = bearer(1, { admin: true });

interface Operation {
  parameters?: { name: string; in: string }[];
}

async function listRoutes(): Promise<{ path: string }[]> {
  const doc = (await call(app, 'GET', '/openapi.json')).json as {
    paths: Record<string, { get?: Operation }>;
  };
  return Object.entries(doc.paths).flatMap(([path, ops]) => {
    const query = (ops.get?.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
    return query.includes('limit') ? [{ path: path.replace('{id}', '1') }] : [];
  });
}

/** A valid query of a list route: `limit=1`, and the prefix a search route requires. */
const known = (path: string): Record<string, string> =>
  path.endsWith('/search') ? { limit: '1', q: 'a' } : { limit: '1' };

describe('list routes refuse unknown query parameters', () => {
  it('covers every list route of the contract', async () => {
    expect((await listRoutes()).map((r) => r.path).sort()).toEqual(
      [
        '/v1/users/1/followers',
        '/v1/users/1/following',
        '/v1/users/1/requests',
        '/v1/users/1/requests/outgoing',
        '/v1/users/1/blocks',
        '/v1/users/1/mutes',
        '/v1/users/1/close-friends',
        '/v1/users/1/restricts',
        '/v1/users/1/followed-by',
        '/v1/users/1/followers/scan',
        '/v1/users/1/followers/search',
        '/v1/users/1/following/search',
        '/v1/users/1/mutuals',
        '/v1/users/1/followers/not-followed-back',
        '/v1/users/1/suggestions',
        '/v1/events',
      ].sort(),
    );
  });

  const invalidQuery = (errors: { path: string; message: string }[]) => ({
    type: problemType('validation_failed'),
    title: 'Request validation failed',
    status: 400,
    detail: 'invalid query',
    code: 'validation_failed',
    request_id: 'req-1',
    errors,
  });

  it('every page route passes direction, since and until to the domain and answers prev_cursor', async () => {
    for (const path of PAGE_ROUTES) {
      calls.length = 0;
      const q = 'limit=3&direction=newer&since=2026-11-30T00:00:00Z&until=2026-11-30T01:00:00.5%2B01:00';
      const r = await call(app, 'GET', `${path}?${q}`, { auth: admin });
      expect([path, r.status, r.json]).toEqual([
        path,
        200,
        { items: [], next_cursor: null, prev_cursor: null },
      ]);
      expect(calls).toEqual([
        {
          list: expect.any(String),
          limit: 3,
          cursor: null,
          options: { direction: 'newer', since: 1_795_996_800_000_000n, until: 1_795_996_800_500_000n },
        },
      ]);
      calls.length = 0;
      await call(app, 'GET', `${path}?limit=2`, { auth: admin });
      expect(calls).toEqual([
        {
          list: expect.any(String),
          limit: 2,
          cursor: null,
          // No direction named: the domain's default decides (and the first-page cache serves it).
          options: { since: null, until: null },
        },
      ]);
    }
  });

  it('the OpenAPI document declares direction, since and until on every page route, and prev_cursor on ListPage', async () => {
    const doc = (await call(app, 'GET', '/openapi.json')).json as {
      paths: Record<string, { get?: Operation }>;
      components: { schemas: Record<string, { required?: string[]; properties: Record<string, unknown> }> };
    };
    for (const path of PAGE_ROUTES) {
      const params = doc.paths[path.replace('/1/', '/{id}/')]?.get?.parameters ?? [];
      expect([path, params.filter((p) => p.in === 'query').map((p) => p.name)]).toEqual([
        path,
        ['limit', 'cursor', 'direction', 'since', 'until'],
      ]);
    }
    const listPage = doc.components.schemas.ListPage!;
    expect([Object.keys(listPage.properties), listPage.required]).toEqual([
      ['items', 'next_cursor', 'prev_cursor'],
      ['items', 'next_cursor', 'prev_cursor'],
    ]);
  });

  it('direction=sideways is a 400 naming direction', async () => {
    const r = await call(app, 'GET', '/v1/users/1/followers?direction=sideways', { auth: admin });
    expect([r.status, r.headers.get('content-type'), r.json]).toEqual([
      400,
      'application/problem+json; charset=utf-8',
      invalidQuery([{ path: 'query.direction', message: expect.stringContaining('older') }]),
    ]);
  });

  it('a bad time is a 400 naming the parameter; since >= until is a 400 naming until', async () => {
    const bad = await call(app, 'GET', '/v1/users/1/followers?since=garbage', { auth: admin });
    expect([bad.status, bad.json]).toEqual([
      400,
      invalidQuery([{ path: 'query.since', message: TIME_MESSAGE }]),
    ]);
    const bad2 = await call(app, 'GET', '/v1/users/1/mutes?until=2026-02-30T00:00:00Z', { auth: admin });
    expect([bad2.status, bad2.json]).toEqual([
      400,
      invalidQuery([{ path: 'query.until', message: TIME_MESSAGE }]),
    ]);
    for (const [since, until] of [
      ['2026-11-30T00:00:00Z', '2026-11-30T00:00:00Z'],
      ['2026-11-30T00:00:01Z', '2026-11-30T00:00:00.999999Z'],
    ]) {
      const q = new URLSearchParams({ since: since!, until: until! });
      const r = await call(app, 'GET', `/v1/users/1/followers?${q}`, { auth: admin });
      expect([r.status, r.json]).toEqual([
        400,
        invalidQuery([{ path: 'query.until', message: 'a time later than since' }]),
      ]);
    }
  });

  it('followed-by, scan and suggestions refuse direction, since and until; the set queries refuse direction', async () => {
    const others = (await listRoutes()).map((r) => r.path).filter((p) => !PAGE_ROUTES.includes(p));
    expect(others.sort()).toEqual([
      '/v1/events',
      '/v1/users/1/followed-by',
      '/v1/users/1/followers/not-followed-back',
      '/v1/users/1/followers/scan',
      '/v1/users/1/followers/search',
      '/v1/users/1/following/search',
      '/v1/users/1/mutuals',
      '/v1/users/1/suggestions',
    ]);
    const refused = (path: string) =>
      path.endsWith('/mutuals') || path.endsWith('/not-followed-back')
        ? ['direction']
        : ['direction', 'since', 'until'];
    for (const path of others) {
      for (const unknown of refused(path)) {
        const q = new URLSearchParams({ ...known(path), [unknown]: 'x' });
        const r = await call(app, 'GET', `${path}?${q}`, { auth: admin });
        expect([path, unknown, r.status, r.json.errors]).toEqual([
          path,
          unknown,
          400,
          [{ path: 'query', message: `Unrecognized key: "${unknown}"` }],
        ]);
      }
    }
  });

  it('every list route: an unknown parameter next to a known one is a 400 naming it; the known one alone is a 200', async () => {
    for (const { path } of await listRoutes()) {
      for (const unknown of ['Limit', 'limit[]', 'Direction', 'since[]']) {
        const q = new URLSearchParams({ ...known(path), [unknown]: 'x' });
        const r = await call(app, 'GET', `${path}?${q}`, { auth: admin });
        expect([path, unknown, r.status, r.json.code, r.json.errors]).toEqual([
          path,
          unknown,
          400,
          'validation_failed',
          [{ path: 'query', message: `Unrecognized key: "${unknown}"` }],
        ]);
      }
      const ok = await call(app, 'GET', `${path}?${new URLSearchParams(known(path))}`, { auth: admin });
      expect([path, ok.status]).toEqual([path, 200]);
    }
  });

  it('names every unknown parameter of one request', async () => {
    const r = await call(app, 'GET', '/v1/users/1/mutes?Since=a&until_=b', { auth: admin });
    expect([r.status, r.json.errors]).toEqual([
      400,
      [{ path: 'query', message: 'Unrecognized keys: "Since", "until_"' }],
    ]);
  });
});
