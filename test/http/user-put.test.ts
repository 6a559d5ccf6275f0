/**
 * `PUT /v1/users/{id}` under per-field writes, over HTTP (the API contract, Part 4, "Account
 * writes"): bad input is a 400 problem, an empty body on an existing account changes nothing and
 * emits nothing, and `user.updated` names the fields a change made (as the body names them).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { BucketedListService } from '../../src/lists/list-service.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { bearer, buildTestApp, call, problem } from './support/app.js';

let store: MemoryGraphStore;
let app: ReturnType<typeof buildTestApp>['app'];
const admin = bearer(1, { admin: true });

beforeAll(async () => {
  store = new MemoryGraphStore();
  const lists = new BucketedListService({ store, cursorSecret: 'x'.repeat(32), bucketThresholds: [1e9] });
  const graph = new GraphService({ store, lists, maxFollowing: 1000, registry: false });
  app = buildTestApp({ graph }).app;
  expect((await call(app, 'PUT', '/v1/users/7', { auth: admin, body: { username: 'ada' } })).status).toBe(
    201,
  );
});

/** The `user.updated` rows of the feed, as the fields each names. */
async function updates(): Promise<unknown[]> {
  const rows = await store.readEventRows(null, BigInt(Date.now()) * 1000n + 3_600_000_000n, 1000);
  return rows.filter((r) => r.user).map((r) => r.fields);
}

describe('PUT /v1/users/{id} per field', () => {
  it('an empty body: 200 with the row unchanged and no event on an existing account; 400 on a new one', async () => {
    const r = await call(app, 'PUT', '/v1/users/7', { auth: admin, body: {} });
    expect([r.status, r.json]).toEqual([
      200,
      { id: '7', username: 'ada', private: false, state: 'active', hide_lists: false, last_active_at: null },
    ]);
    expect(await updates()).toEqual([]);
    const created = await call(app, 'PUT', '/v1/users/8', { auth: admin, body: {} });
    expect([created.status, created.json]).toEqual([
      400,
      problem(400, 'validation_failed', 'username: is required to create a user', {
        errors: [{ path: 'username', message: 'is required to create a user' }],
      }),
    ]);
  });

  it('an explicit null is a 400, naming the field', async () => {
    const r = await call(app, 'PUT', '/v1/users/7', { auth: admin, body: { private: null } });
    expect(r.status).toBe(400);
    expect((r.json as { errors: { path: string }[] }).errors.map((e) => e.path)).toEqual(['body.private']);
  });

  it('user.updated names the fields a change made, as the body names them', async () => {
    const r = await call(app, 'PUT', '/v1/users/7', {
      auth: admin,
      body: { username: 'ada', hide_lists: true, private: false },
    });
    expect(r.status).toBe(200);
    expect(await updates()).toEqual([['hideLists']]);
  });
});
