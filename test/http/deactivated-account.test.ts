/**
 * A deactivated account is the 404 of an unknown user on every route, for everyone, its own token
 * included; only a graph:admin caller sees it, on `GET`/`PUT /v1/users/{id}` (the API contract, Part 3,
 * "Rules settled by review"; the account gate in `src/http/route-kit.ts`). Swept over every
 * operation of the operation list (`operations.ts`, held equal to the app's OpenAPI document
 * here), on the domain over the in-memory store.
 *
 * The cast: D (deactivated) follows and is followed by O, has a pending request from R (D is
 * private) and mutes and restricts R, so every owner read of D would have something to show.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { BucketedListService } from '../../src/lists/list-service.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { OPERATION_TESTS } from './operations.js';
import { bearer, buildTestApp, call, problem } from './support/app.js';

const [D, O, R] = [7n, 8n, 9n];
const admin = bearer(1, { admin: true });

/** A valid body for every operation that takes one (the gate answers before it is read). */
const BODY: Record<string, { type: string; text: string }> = {
  putUser: { type: 'application/json', text: '{"username":"u7"}' },
  followingContains: { type: 'application/json', text: '{"ids":["8"]}' },
  followersContains: { type: 'application/json', text: '{"ids":["8"]}' },
  relationships: { type: 'application/json', text: '{"ids":["8"]}' },
  importFollowing: { type: 'application/x-ndjson', text: '{"id":"8"}\n' },
};

let graph: GraphService;
let app: ReturnType<typeof buildTestApp>['app'];
let operations: { operationId: string; method: string; path: string }[];

beforeAll(async () => {
  const store = new MemoryGraphStore();
  const lists = new BucketedListService({
    store,
    cursorSecret: 'cursor-secret-0123456789abcdef',
    bucketThresholds: [1000],
  });
  graph = new GraphService({ store, lists, maxFollowing: 10 });
  for (const id of [D, O, R]) await graph.putUser({ id, username: `u${id}` });
  await graph.follow(D, O);
  await graph.follow(O, D);
  await graph.putUser({ id: D, private: true });
  expect(await graph.follow(R, D)).toMatchObject({ state: 'requested' });
  await graph.mute(D, R);
  await graph.restrict(D, R);
  await graph.putUser({ id: D, state: 'deactivated' });
  await graph.settleAccountTasks();
  app = buildTestApp({ graph, receipts: store }).app;
  const doc = (await call(app, 'GET', '/openapi.json')).json as {
    paths: Record<string, Record<string, { operationId: string }>>;
  };
  operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({
      operationId: op.operationId,
      method: method.toUpperCase(),
      path,
    })),
  );
});

/** The operations on no account (the change feed, graph:admin only): the gate has nothing to check. */
const NOT_ON_AN_ACCOUNT = ['listEvents', 'streamEvents'];
const onAnAccount = () => operations.filter((op) => !NOT_ON_AN_ACCOUNT.includes(op.operationId));

/** `[operationId, status, body]` of every operation with `{id}` = `id`, every other id `other`. */
async function sweep(auth: string, id: bigint, other: bigint, skip: string[] = []) {
  const out: [string, number, unknown][] = [];
  for (const op of onAnAccount()) {
    if (skip.includes(op.operationId)) continue;
    const path = op.path.replace(/\{(\w+)\}/g, (_m, name: string) => String(name === 'id' ? id : other));
    const body = BODY[op.operationId];
    const res = await call(app, op.method, path, {
      auth,
      ...(body ? { body: body.text, headers: { 'Content-Type': body.type } } : {}),
    });
    out.push([op.operationId, res.status, res.json]);
  }
  return out;
}

const notFound = (id: bigint) => problem(404, 'user_not_found', `user ${id} not found`);
const everyOperation = (status: number, body: unknown, skip: string[] = []) =>
  onAnAccount()
    .filter((op) => !skip.includes(op.operationId))
    .map((op) => [op.operationId, status, body]);

describe('a deactivated account answers 404 on every route', () => {
  it('the sweep covers exactly the operation list', () => {
    expect(operations.map((op) => op.operationId).sort()).toEqual(Object.keys(OPERATION_TESTS).sort());
    expect(
      operations.filter((op) => !op.path.startsWith('/v1/users/{id}')).map((op) => op.operationId),
    ).toEqual(NOT_ON_AN_ACCOUNT);
  });

  it('its own token gets the 404 on every route (its requests, export, blocks, relationships, …)', async () => {
    expect(await sweep(bearer(D), D, O)).toEqual(everyOperation(404, notFound(D)));
  });

  it('another account gets the 404 on every route (an owner-only route too: no 403 telling it exists)', async () => {
    expect(await sweep(bearer(O), D, O)).toEqual(everyOperation(404, notFound(D)));
  });

  it('its own token gets the 404 naming it on every route of another account (its followees in followed-by, its relationship on a profile)', async () => {
    expect(await sweep(bearer(D), O, R)).toEqual(everyOperation(404, notFound(D)));
  });

  it('graph:admin gets the 404 on every route but GET/PUT /v1/users/{id}, which show it with its state', async () => {
    const own = ['getUser', 'putUser'];
    expect(await sweep(admin, D, O, own)).toEqual(everyOperation(404, notFound(D), own));
    const profile = await call(app, 'GET', `/v1/users/${D}`, { auth: admin });
    expect([profile.status, profile.json]).toEqual([
      200,
      {
        id: '7',
        username: 'u7',
        private: true,
        counts: expect.objectContaining({ followers: 1, following: 1 }),
        relationship: {
          following: 'none',
          followed_by: false,
          blocking: false,
          muting: false,
          restricting: false,
        },
        state: 'deactivated',
        last_active_at: null,
      },
    ]);
    const put = await call(app, 'PUT', `/v1/users/${D}`, { auth: admin, body: { username: 'u7' } });
    expect([put.status, put.json]).toEqual([
      200,
      {
        id: '7',
        username: 'u7',
        private: true,
        state: 'deactivated',
        hide_lists: false,
        last_active_at: null,
      },
    ]);
  });

  it('after reactivation its own token reads its lists again (the sweep above refused real reads)', async () => {
    await graph.putUser({ id: D, state: 'active' });
    await graph.settleAccountTasks();
    const requests = await call(app, 'GET', `/v1/users/${D}/requests`, { auth: bearer(D) });
    expect([requests.status, requests.json]).toEqual([
      200,
      {
        items: [{ id: '9', username: 'u9', followed_at: expect.any(String) }],
        next_cursor: null,
        prev_cursor: null,
      },
    ]);
    const profile = await call(app, 'GET', `/v1/users/${D}`, { auth: bearer(D) });
    expect([profile.status, (profile.json as { state?: unknown }).state]).toEqual([200, undefined]);
  });
});
