/**
 * Privacy on writes as on reads (the API contract, Part 4): a follow received after a switch to
 * private was acknowledged on *another* instance answers `requested`, after a deactivation 404, after
 * a block 403, although the receiving instance holds the account's row in its user cache (TTL 1 s)
 * from just before. The write path reads the other account fresh (`WritePathDeps.users`). Two
 * instances share one memory store, caches and registries on; the follow is sent before any
 * timer of the receiving instance can run (its feed poll would drop the entry within 250 ms).
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { GraphService } from '../../../src/graph/graph-service.js';
import { BlockedError, UserNotFoundError } from '../../../src/model/errors.js';
import { MemoryGraphStore } from '../../support/memory/graph-store.js';
import { SingleBucketLists } from '../support/single-bucket-lists.js';

const [T, X] = [1n, 2n];
let store: MemoryGraphStore;
let a: GraphService;
let b: GraphService;

const instance = () =>
  new GraphService({ store, lists: new SingleBucketLists(store), maxFollowing: 100, countLeaseMs: 0 });

beforeEach(async () => {
  store = new MemoryGraphStore();
  a = instance();
  b = instance();
  await a.putUser({ id: T, username: 'target' });
  await a.putUser({ id: X, username: 'x' });
  // B holds both rows in its user cache: public, active.
  expect((await b.getUser(T)).private).toBe(false);
  expect((await b.getUsers([T, X])).size).toBe(2);
});

describe('a follow through B right after a change acknowledged by A', () => {
  it('a switch to private: requested, and nothing in the lists', async () => {
    await a.putUser({ id: T, private: true });
    expect(await b.follow(X, T)).toMatchObject({ state: 'requested' });
    expect(await store.listBucket({ userId: T, relation: 'follows', direction: 'in' }, 1, null, 10)).toEqual(
      [],
    );
    await Promise.all([a.settleAccountTasks(), b.settleAccountTasks()]);
  });

  it('a deactivation: 404 (the account is not found)', async () => {
    await a.putUser({ id: T, state: 'deactivated' });
    await expect(b.follow(X, T)).rejects.toBeInstanceOf(UserNotFoundError);
    await Promise.all([a.settleAccountTasks(), b.settleAccountTasks()]);
  });

  it('a block: 403', async () => {
    await a.block(T, X);
    await expect(b.follow(X, T)).rejects.toBeInstanceOf(BlockedError);
  });
});
