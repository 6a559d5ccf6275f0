/**
 * Error cases of the operations whose integration tests cover only the happy path and the
 * security rule (every operation has happy-path, error and security coverage; see
 * `operations.ts`). On a stub graph: each domain error the operation can meet leaves as its own
 * whole problem body, and the graph received exactly the call the route should make.
 */
import { describe, expect, it, vi } from 'vitest';
import type { GraphApi } from '../../src/graph/contracts.js';
import {
  InvalidCursorError,
  NoPendingRequestError,
  SelfFollowError,
  UserNotFoundError,
} from '../../src/model/errors.js';
import { bearer, buildTestApp, call, problem, stubGraph } from './support/app.js';

const OWNER = 7n;
const owner = bearer(OWNER);
const admin = bearer(1, { admin: true });
const user = (id: bigint) =>
  ({ id, username: `u${id}`, private: false, state: 'active', hideLists: false }) as Awaited<
    ReturnType<GraphApi['getUser']>
  >;

const unknown = (id: bigint | number) => problem(404, 'user_not_found', `user ${id} not found`);
const SELF = problem(400, 'self_relation', 'an account cannot follow, block, mute or list itself');
const INVALID_CURSOR = problem(
  400,
  'invalid_cursor',
  'the cursor is malformed, altered or belongs to another list',
);

/** A graph whose `getUser` knows only `OWNER`, and whose list pages reject every cursor. */
function listGraph() {
  const listPage = vi.fn(async (_l: unknown, _n: number, cursor: string | null) => {
    if (cursor !== null) throw new InvalidCursorError('bad mac');
    return { items: [], nextCursor: null };
  });
  const getUser = vi.fn(async (id: bigint) => {
    if (id !== OWNER) throw new UserNotFoundError(id);
    return user(id);
  });
  return { listPage, getUser, graph: stubGraph({ listPage, getUser, getUsers: async () => new Map() }) };
}

/** An owner-only list route: unknown owner (admin caller) 404, altered cursor 400, limit 0 400. */
async function ownerListErrors(segment: string, relation: string) {
  const { graph, listPage } = listGraph();
  const { app } = buildTestApp({ graph });
  const got = [
    await call(app, 'GET', `/v1/users/777777/${segment}`, { auth: admin }),
    await call(app, 'GET', `/v1/users/7/${segment}?cursor=forged`, { auth: owner }),
    await call(app, 'GET', `/v1/users/7/${segment}?limit=0`, { auth: owner }),
  ].map((r) => [r.status, r.json]);
  expect(got).toEqual([
    [404, unknown(777777)],
    [400, INVALID_CURSOR],
    [
      400,
      problem(400, 'validation_failed', 'invalid query', {
        errors: [{ path: 'query.limit', message: 'Too small: expected number to be >=1' }],
      }),
    ],
  ]);
  expect(listPage.mock.calls.map((c) => [(c[0] as { relation: string }).relation, c[2]])).toEqual([
    [relation, 'forged'],
  ]);
}

/** A pair mutation: unknown target 404, self 400, each from the domain through the one map. */
async function pairMutationErrors(
  method: 'PUT' | 'DELETE' | 'POST',
  path: (target: string) => string,
  op: keyof GraphApi,
) {
  const fn = vi.fn(async (id: bigint, target: bigint) => {
    if (id === target) throw new SelfFollowError();
    throw new UserNotFoundError(target);
  });
  const { app } = buildTestApp({ graph: stubGraph({ [op]: fn }) });
  const got = [
    await call(app, method, path('777777'), { auth: owner }),
    await call(app, method, path('7'), { auth: owner }),
  ].map((r) => [r.status, r.json]);
  expect(got).toEqual([
    [404, unknown(777777)],
    [400, SELF],
  ]);
  expect(fn.mock.calls.map((c) => [c[0], c[1]])).toEqual([
    [OWNER, 777777n],
    [OWNER, OWNER],
  ]);
}

describe('listRequests errors', () => {
  it('listRequests: unknown owner 404, altered cursor 400 invalid_cursor, limit 0 400', async () => {
    await ownerListErrors('requests', 'requests');
  });
});

describe('declineRequest errors', () => {
  it('declineRequest: unknown requester 404, self 400', async () => {
    await pairMutationErrors('POST', (t) => `/v1/users/7/requests/${t}/decline`, 'declineRequest');
  });
  it('declineRequest: a domain NoPendingRequestError is the 404 no_pending_request', async () => {
    const { app } = buildTestApp({
      graph: stubGraph({
        declineRequest: async () => {
          throw new NoPendingRequestError();
        },
      }),
    });
    const r = await call(app, 'POST', '/v1/users/7/requests/8/decline', { auth: owner });
    expect([r.status, r.json]).toEqual([
      404,
      problem(404, 'no_pending_request', 'no pending follow request from this account'),
    ]);
  });
});

describe('typed edge errors (blocks, mutes, close friends, restricts)', () => {
  it('put_blocks / delete_blocks: unknown target 404, self 400', async () => {
    await pairMutationErrors('PUT', (t) => `/v1/users/7/blocks/${t}`, 'block');
    await pairMutationErrors('DELETE', (t) => `/v1/users/7/blocks/${t}`, 'unblock');
  });
  it('put_mutes / delete_mutes: unknown target 404, self 400', async () => {
    await pairMutationErrors('PUT', (t) => `/v1/users/7/mutes/${t}`, 'mute');
    await pairMutationErrors('DELETE', (t) => `/v1/users/7/mutes/${t}`, 'unmute');
  });
  it('put_close_friends / delete_close_friends: unknown target 404, self 400', async () => {
    await pairMutationErrors('PUT', (t) => `/v1/users/7/close-friends/${t}`, 'addCloseFriend');
    await pairMutationErrors('DELETE', (t) => `/v1/users/7/close-friends/${t}`, 'removeCloseFriend');
  });
  it('put_restricts / delete_restricts: unknown target 404, self 400', async () => {
    await pairMutationErrors('PUT', (t) => `/v1/users/7/restricts/${t}`, 'restrict');
    await pairMutationErrors('DELETE', (t) => `/v1/users/7/restricts/${t}`, 'unrestrict');
  });
  it('list_blocks / list_mutes / list_close_friends / list_restricts: unknown owner 404, altered cursor 400, limit 0 400', async () => {
    await ownerListErrors('blocks', 'blocks');
    await ownerListErrors('mutes', 'mutes');
    await ownerListErrors('close-friends', 'close_friends');
    await ownerListErrors('restricts', 'restricts');
  });
});

describe('pair mutation errors (following, followers, requests)', () => {
  it('unfollow: unknown target 404, self 400', async () => {
    await pairMutationErrors('DELETE', (t) => `/v1/users/7/following/${t}`, 'unfollow');
  });
  it('removeFollower: unknown follower 404, self 400', async () => {
    await pairMutationErrors('DELETE', (t) => `/v1/users/7/followers/${t}`, 'removeFollower');
  });
  it('acceptRequest: unknown requester 404, self 400', async () => {
    await pairMutationErrors('POST', (t) => `/v1/users/7/requests/${t}/accept`, 'acceptRequest');
  });
});
