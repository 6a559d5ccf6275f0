/**
 * `GET /v1/users/{id}/followed-by` answers like the account's lists (the API contract, Part 3, rules settled
 * by review): on an account whose lists the viewer may not see — private and not followed by the
 * viewer, or `hide_lists` — it is the 403 of the lists, not a sample and a total of the account's
 * followers. In-process, on the domain over the in-memory store.
 *
 * The cast: M follows the owner O; O, the approved follower F, the stranger S and the admin's own
 * account A all follow M, so every viewer's answer, where allowed, names M.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { BucketedListService } from '../../src/lists/list-service.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { bearer, buildTestApp, call, problem } from './support/app.js';

const [O, F, S, M, A] = [1n, 2n, 3n, 4n, 9n];

let store: MemoryGraphStore;
let app: ReturnType<typeof buildTestApp>['app'];
let graph: GraphService;

beforeEach(async () => {
  store = new MemoryGraphStore();
  const lists = new BucketedListService({
    store,
    cursorSecret: 'cursor-secret-0123456789abcdef',
    bucketThresholds: [1000],
  });
  graph = new GraphService({ store, lists, maxFollowing: 10 });
  for (const id of [O, F, S, M, A]) await graph.putUser({ id, username: `u${id}` });
  for (const [a, b] of [
    [M, O],
    [F, O],
    [O, M],
    [F, M],
    [S, M],
    [A, M],
  ] as const)
    await graph.follow(a, b);
  app = buildTestApp({ graph, receipts: store }).app;
});

/** Through the service, as the account service would (its caches drop the row before it answers). */
async function setOwner(o: { private: boolean; hideLists: boolean }) {
  await graph.putUser({ id: O, private: o.private, hideLists: o.hideLists });
}

/** [status, body] of followed-by on O as `viewer` sees it. */
async function seen(viewer: bigint) {
  const auth = bearer(viewer, { admin: viewer === A });
  const res = await call(app, 'GET', `/v1/users/${O}/followed-by`, { auth });
  return [res.status, res.json];
}

const NAMES_M = [200, { sample: [{ id: String(M), username: `u${M}` }], total: 1 }];
const NOT_VISIBLE = [403, problem(403, 'not_visible', 'this list is not visible to you')];

describe('followed-by follows the visibility of the lists', () => {
  it('a public account: everybody gets the sample and the total', async () => {
    await setOwner({ private: false, hideLists: false });
    expect(await Promise.all([O, F, S, A].map(seen))).toEqual([NAMES_M, NAMES_M, NAMES_M, NAMES_M]);
  });

  it('a private account: 403 to a non-follower; the owner, an approved follower and an admin get the answer', async () => {
    await setOwner({ private: true, hideLists: false });
    expect(await Promise.all([O, F, S, A].map(seen))).toEqual([NAMES_M, NAMES_M, NOT_VISIBLE, NAMES_M]);
  });

  it('hide_lists: 403 to everybody but the owner, followers included; an admin gets the answer', async () => {
    await setOwner({ private: false, hideLists: true });
    expect(await Promise.all([O, F, S, A].map(seen))).toEqual([NAMES_M, NOT_VISIBLE, NOT_VISIBLE, NAMES_M]);
  });
});
