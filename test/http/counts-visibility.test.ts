/**
 * `GET /v1/users/{id}` and `GET /v1/users/{id}/counts` apply one visibility rule to the counts:
 * where `/counts` is a 403, the profile shows `"counts": null`. In-process, on the
 * domain over the in-memory store.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { BucketedListService } from '../../src/lists/list-service.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { bearer, buildTestApp, call } from './support/app.js';

const [owner, follower, stranger, admin] = [1n, 2n, 3n, 9n];
// No reconciler runs here: the written followers list was never reconciled.
const COUNTS = { followers: 1, following: 0, exact: false, as_of: null };

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
  for (const [id, username] of [
    [owner, 'owner'],
    [follower, 'follower'],
    [stranger, 'stranger'],
  ] as const) {
    await graph.putUser({ id, username });
  }
  await graph.follow(follower, owner);
  app = buildTestApp({ graph, receipts: store }).app;
});

/** Through the service, as the account service would (its caches drop the row before it answers). */
async function setOwner(o: { private: boolean; hideLists: boolean }) {
  await graph.putUser({ id: owner, private: o.private, hideLists: o.hideLists });
}

/** [profile status, profile counts, /counts status, /counts body] as `viewer` sees `owner`. */
async function seen(viewer: bigint) {
  const auth = bearer(viewer, { admin: viewer === admin });
  const profile = await call(app, 'GET', `/v1/users/${owner}`, { auth });
  const counts = await call(app, 'GET', `/v1/users/${owner}/counts`, { auth });
  return [
    profile.status,
    profile.json.counts,
    counts.status,
    counts.status === 200 ? counts.json : counts.json.code,
  ];
}

const visible = [200, COUNTS, 200, COUNTS];
const hidden = [200, null, 403, 'not_visible'];

describe('counts visibility on the profile and on /counts', () => {
  it('a public account shows its counts to everybody', async () => {
    await setOwner({ private: false, hideLists: false });
    expect(await Promise.all([owner, follower, stranger, admin].map(seen))).toEqual([
      visible,
      visible,
      visible,
      visible,
    ]);
  });
  it('a private account hides its counts from non-followers on both routes', async () => {
    await setOwner({ private: true, hideLists: false });
    expect(await Promise.all([owner, follower, stranger, admin].map(seen))).toEqual([
      visible,
      visible,
      hidden,
      visible,
    ]);
  });
  it('hide_lists hides the counts from everybody but the owner on both routes', async () => {
    await setOwner({ private: false, hideLists: true });
    expect(await Promise.all([owner, follower, stranger, admin].map(seen))).toEqual([
      visible,
      hidden,
      hidden,
      visible,
    ]);
  });
});
