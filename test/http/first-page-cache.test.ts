/**
 * The first-page cache reached over HTTP: `GET /v1/users/{id}/followers` without a cursor, bounds
 * or a direction other than the default (older) is served by `GraphCaches.firstPage`, and a
 * follow acknowledged on this instance shows in the next page at once. The route names no default
 * direction (`route-kit.ts`): the list engine's is the one. On the memory store, the size hint
 * lowered to 1 so a two-member list is "large".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { BucketedListService } from '../../src/lists/list-service.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { bearer, buildTestApp, call } from './support/app.js';

let graph: GraphService;
let app: ReturnType<typeof buildTestApp>['app'];
const admin = bearer(1, { admin: true });

beforeAll(async () => {
  const store = new MemoryGraphStore();
  const lists = new BucketedListService({ store, cursorSecret: 'x'.repeat(32), bucketThresholds: [1e9] });
  graph = new GraphService({ store, lists, maxFollowing: 1000, caches: { pageMinListSize: 1 } });
  app = buildTestApp({ graph }).app;
  for (const [id, name] of [
    [11n, 'ada'],
    [12n, 'bo'],
    [13n, 'cy'],
  ] as const)
    expect(
      (await call(app, 'PUT', `/v1/users/${id}`, { auth: admin, body: { username: name } })).status,
    ).toBe(201);
  expect((await call(app, 'PUT', '/v1/users/11/following/12', { auth: bearer(11) })).status).toBe(200);
});

afterAll(() => graph.caches.close());

const ids = (r: Awaited<ReturnType<typeof call>>) =>
  (r.json as { items: { id: string }[] }).items.map((i) => i.id);

describe('first pages over HTTP', () => {
  it('a plain first page and one naming direction=older are cache hits; newer, a cursor or bounds are not', async () => {
    const pages = graph.caches.pages.stats;
    const first = await call(app, 'GET', '/v1/users/12/followers', { auth: bearer(11) });
    expect(first.status).toBe(200);
    expect(ids(first)).toEqual(['11']);
    // The first read learns the list's size hint; the second fills the entry.
    await call(app, 'GET', '/v1/users/12/followers', { auth: bearer(11) });
    const before = { ...pages };
    const again = await call(app, 'GET', '/v1/users/12/followers', { auth: bearer(11) });
    const named = await call(app, 'GET', '/v1/users/12/followers?direction=older', { auth: bearer(11) });
    expect(again.json).toEqual(first.json);
    expect(named.json).toEqual(first.json);
    expect({ hits: pages.hits - before.hits, misses: pages.misses - before.misses }).toEqual({
      hits: 2,
      misses: 0,
    });
    const mid = { ...pages };
    const newer = await call(app, 'GET', '/v1/users/12/followers?direction=newer', { auth: bearer(11) });
    const bounded = await call(app, 'GET', '/v1/users/12/followers?since=2020-01-01T00:00:00Z', {
      auth: bearer(11),
    });
    expect([newer.status, bounded.status]).toEqual([200, 200]);
    expect({ hits: pages.hits - mid.hits, misses: pages.misses - mid.misses }).toEqual({
      hits: 0,
      misses: 0,
    });
  });

  it('a follow acknowledged here shows in the next cached first page at once', async () => {
    await call(app, 'GET', '/v1/users/12/followers', { auth: bearer(11) });
    expect((await call(app, 'PUT', '/v1/users/13/following/12', { auth: bearer(13) })).status).toBe(200);
    const page = await call(app, 'GET', '/v1/users/12/followers', { auth: bearer(11) });
    expect(ids(page)).toEqual(['13', '11']);
  });
});
