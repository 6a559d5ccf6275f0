/**
 * Every list route refuses query parameters it does not know. Regression: `GET …/followers?
 * direction=newer` used to ignore `direction` and page the other way. The routes come from the
 * app's own OpenAPI document (every GET with a `limit` query parameter), so a new list route is
 * covered without touching this file.
 */
import { describe, expect, it } from 'vitest';
import type { GraphApi } from '../../src/graph/contracts.js';
import { problemType } from '../../src/http/errors.js';
import { bearer, buildTestApp, call, stubGraph } from './support/app.js';

/** Answers every read a list route makes with an empty page, so known queries reach 200. */
const emptyGraph: Partial<GraphApi> = {
  getUser: async (id) =>
    ({ id, username: `u${id}`, private: false }) as Awaited<ReturnType<GraphApi['getUser']>>,
  getUsers: async () => new Map(),
  assertCanViewLists: async () => {},
  assertCanViewProfile: async () => {},
  listPage: async () => ({ items: [], nextCursor: null }),
  scanPage: async () => ({ ids: [], nextCursor: null }),
  followedBy: async () => ({ sample: [], total: 0 }),
  suggestions: async () => [],
};

const { app } = buildTestApp({ graph: stubGraph(emptyGraph) });
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
        '/v1/users/1/followed-by',
        '/v1/users/1/followers/scan',
        '/v1/users/1/suggestions',
      ].sort(),
    );
  });

  it('direction=newer on followers is a 400, not a page in the other order', async () => {
    const r = await call(app, 'GET', '/v1/users/1/followers?direction=newer', { auth: admin });
    expect([r.status, r.headers.get('content-type'), r.json]).toEqual([
      400,
      'application/problem+json; charset=utf-8',
      {
        type: problemType('validation_failed'),
        title: 'Request validation failed',
        status: 400,
        detail: 'invalid query',
        code: 'validation_failed',
        request_id: 'req-1',
        errors: [{ path: 'query', message: 'Unrecognized key: "direction"' }],
      },
    ]);
  });

  it('every list route: an unknown parameter next to a known one is a 400 naming it; the known one alone is a 200', async () => {
    for (const { path } of await listRoutes()) {
      for (const unknown of ['direction', 'since', 'until', 'Limit', 'limit[]']) {
        const q = new URLSearchParams({ limit: '1', [unknown]: 'x' });
        const r = await call(app, 'GET', `${path}?${q}`, { auth: admin });
        expect([path, unknown, r.status, r.json.code, r.json.errors]).toEqual([
          path,
          unknown,
          400,
          'validation_failed',
          [{ path: 'query', message: `Unrecognized key: "${unknown}"` }],
        ]);
      }
      const ok = await call(app, 'GET', `${path}?limit=1`, { auth: admin });
      expect([path, ok.status]).toEqual([path, 200]);
    }
  });

  it('names every unknown parameter of one request', async () => {
    const r = await call(app, 'GET', '/v1/users/1/mutes?since=a&until=b', { auth: admin });
    expect([r.status, r.json.errors]).toEqual([
      400,
      [{ path: 'query', message: 'Unrecognized keys: "since", "until"' }],
    ]);
  });
});
