/**
 * The read caches through the service on the memory store: hits, read-your-writes, the
 * read-through race (a store that parks the reader between its read and its store), invalidation
 * from another instance's feed events, expiry without events, the first-page cache and the metrics.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { GraphCaches } from '../../../src/graph/caches/graph-caches.js';
import { GraphService } from '../../../src/graph/graph-service.js';
import { registerCacheMetrics } from '../../../src/http/metrics.js';
import { BucketedListService } from '../../../src/lists/list-service.js';
import { SINGLE_BUCKET } from '../../../src/model/buckets.js';
import type { UserId } from '../../../src/model/types.js';
import type { GraphStore } from '../../../src/ports/graph-store.js';
import { MemoryGraphStore } from '../../support/memory/graph-store.js';
import { mulberry32 } from '../../support/random.js';
import { heldStore } from '../support/parked-reads.js';
import { SingleBucketLists } from '../support/single-bucket-lists.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function service(store: GraphStore, o: Partial<ConstructorParameters<typeof GraphService>[0]> = {}) {
  const graph = new GraphService({
    store,
    lists: new SingleBucketLists(store),
    maxFollowing: 100,
    countLeaseMs: 0,
    ...o,
  });
  return graph;
}

describe('read caches through the service', () => {
  it('a warm status, relationship and user read touch no store; a follow is seen at once by the instance that made it', async () => {
    const memory = new MemoryGraphStore();
    const h = heldStore(memory);
    const graph = await service(h.store);
    for (const id of [1n, 2n]) await graph.putUser({ id, username: `u${id}` });
    expect(await graph.getFollowStatus(1n, 2n)).toEqual({ state: 'none' });
    h.calls.clear();
    expect(await graph.getFollowStatus(1n, 2n)).toEqual({ state: 'none' });
    expect((await graph.getUser(2n)).username).toBe('u2');
    expect([...h.calls]).toEqual([]);
    await graph.follow(1n, 2n);
    expect((await graph.getFollowStatus(1n, 2n)).state).toBe('following');
    expect(await graph.relationship(2n, 1n)).toMatchObject({ followedBy: true });
    h.calls.clear();
    expect(await graph.relationship(2n, 1n)).toMatchObject({ followedBy: true });
    expect(await graph.contains(2n, 'follows', 'in', [1n])).toEqual([1n]);
    expect(
      h.reads('getPairEdges') + h.reads('getEdgesIn') + h.reads('getEdgesOut') + h.reads('getEdgesOutOf'),
    ).toBe(0);
    await graph.putUser({ id: 2n, private: true });
    expect((await graph.getUser(2n)).private).toBe(true);
    graph.feed.close();
  });

  it('the read-through race: a status read parked between its read and its store while a follow lands stores nothing', async () => {
    const memory = new MemoryGraphStore();
    const h = heldStore(memory);
    const graph = await service(h.store);
    for (const id of [1n, 2n]) await graph.putUser({ id, username: `u${id}` });
    const held = h.park('getEdgesOutOf');
    const reader = graph.getFollowStatus(1n, 2n);
    await held.atRead; // the reader has the old edge state (none) in hand …
    await graph.follow(1n, 2n); // … the writer changes it and invalidates …
    held.release(); // … then the reader goes on to store what it read
    expect(await reader).toEqual({ state: 'none' });
    expect((await graph.getFollowStatus(1n, 2n)).state).toBe('following');
    expect(graph.caches.edges.stats.refused).toBeGreaterThan(0);
    graph.feed.close();
  });

  it('the same race on a user row: a deactivation during a parked read is enforced on the next read', async () => {
    const memory = new MemoryGraphStore();
    const h = heldStore(memory);
    const graph = await service(h.store);
    for (const id of [1n, 2n]) await graph.putUser({ id, username: `u${id}` });
    const held = h.park('getUser');
    const reader = graph.getUser(2n);
    await held.atRead;
    await graph.putUser({ id: 2n, state: 'deactivated' });
    held.release();
    expect((await reader).state).toBe('active');
    expect((await graph.getUser(2n)).state).toBe('deactivated');
    await expect(graph.assertCanViewProfile(1n, 2n)).rejects.toThrow();
    graph.feed.close();
  });

  it("another instance's follow, block and private flip reach this one's caches through the feed's tail", async () => {
    const memory = new MemoryGraphStore();
    const a = await service(memory, { feedPollMs: 20 });
    const b = await service(memory, { feedPollMs: 20, caches: { ttlMs: 2000 } });
    for (const id of [1n, 2n]) await a.putUser({ id, username: `u${id}` });
    const seen = async (check: () => Promise<boolean>) => {
      const start = performance.now();
      while (!(await check())) {
        if (performance.now() - start > 1500) return null;
        await sleep(5);
      }
      return performance.now() - start;
    };
    expect((await b.getFollowStatus(1n, 2n)).state).toBe('none');
    await a.follow(1n, 2n);
    expect(await seen(async () => (await b.getFollowStatus(1n, 2n)).state === 'following')).not.toBeNull();
    await b.assertCanViewProfile(1n, 2n);
    await a.block(2n, 1n);
    expect(
      await seen(() =>
        b.assertCanViewProfile(1n, 2n).then(
          () => false,
          () => true,
        ),
      ),
    ).not.toBeNull();
    expect((await b.getUser(2n)).private).toBe(false);
    await a.putUser({ id: 2n, private: true });
    expect(await seen(async () => (await b.getUser(2n)).private)).not.toBeNull();
    // Without the tail (a missed event), entries still expire within the TTL.
    const c = await service(memory, { feedTail: false, caches: { ttlMs: 200 } });
    expect((await c.getUser(2n)).hideLists).toBe(false);
    await a.putUser({ id: 2n, hideLists: true });
    expect((await c.getUser(2n)).hideLists).toBe(false);
    const waited = await seen(async () => (await c.getUser(2n)).hideLists);
    expect(waited).not.toBeNull();
    expect(waited as number).toBeLessThan(400);
    for (const g of [a, b, c]) g.feed.close();
  });

  it('counts: an exact count is served from memory until a follow drops it; an inexact one is not kept', async () => {
    const memory = new MemoryGraphStore();
    const h = heldStore(memory);
    const graph = await service(h.store);
    for (const id of [1n, 2n]) await graph.putUser({ id, username: `u${id}` });
    expect((await graph.counts(2n)).followers).toBe(0);
    h.calls.clear();
    expect((await graph.counts(2n)).followers).toBe(0);
    expect([...h.calls]).toEqual([]);
    await graph.follow(1n, 2n);
    const after = await graph.counts(2n);
    expect(after.followers).toBe(1);
    expect(after.exact).toBe(false);
    h.calls.clear();
    await graph.counts(2n);
    expect(h.reads('getCountSync')).toBe(2);
    graph.feed.close();
  });

  it('the first page of a large list is kept per limit and dropped by an edge event of the list', async () => {
    const memory = new MemoryGraphStore();
    const h = heldStore(memory);
    const graph = await service(h.store, { caches: { pageMinListSize: 2 } });
    for (const id of [1n, 2n, 3n, 4n]) await graph.putUser({ id, username: `u${id}` });
    await graph.follow(2n, 1n);
    await graph.follow(3n, 1n);
    const list = { userId: 1n, relation: 'follows' as const, direction: 'in' as const };
    const ids = async () => (await graph.listPage(list, 10, null)).items.map((m) => m.id);
    expect(await ids()).toEqual([3n, 2n]);
    await sleep(10); // the size hint is read in the background
    expect(await ids()).toEqual([3n, 2n]);
    h.calls.clear();
    expect(await ids()).toEqual([3n, 2n]);
    expect(h.reads('listBucket')).toBe(0);
    await graph.follow(4n, 1n);
    expect(await ids()).toEqual([4n, 3n, 2n]);
    graph.feed.close();
  });

  it.each([
    ['the one-bucket test lists', (_: GraphStore): BucketedListService | undefined => undefined],
    [
      'the real list service (time buckets, signed cursors)',
      (store: GraphStore): BucketedListService | undefined =>
        new BucketedListService({
          store,
          cursorSecret: 'patch-test-secret-0123456789abcdef',
          bucketThresholds: [3],
        }),
    ],
  ] as const)(
    'a follow patches the cached first page in place (no list read), and every patched page equals a fresh read, cursor included (%s)',
    async (_name, makeLists) => {
      const seed = Number(process.env.SEED ?? Math.floor(Math.random() * 2 ** 31));
      console.log(`first-page patch: seed=${seed} (replay: SEED=${seed})`);
      const rand = mulberry32(seed);
      const memory = new MemoryGraphStore();
      const h = heldStore(memory);
      const real = makeLists(h.store);
      const realFresh = makeLists(memory);
      const graph = await service(h.store, {
        caches: { pageMinListSize: 2 },
        ...(real ? { lists: real } : {}),
      });
      const fresh = await service(memory, { caches: false, ...(realFresh ? { lists: realFresh } : {}) });
      const owner = 1n;
      const people = Array.from({ length: 12 }, (_, i) => BigInt(i + 2));
      for (const id of [owner, ...people]) await graph.putUser({ id, username: `u${id}` });
      for (const id of people.slice(0, 6)) await graph.follow(id, owner);
      const list = { userId: owner, relation: 'follows' as const, direction: 'in' as const };
      const LIMIT = 4;
      await graph.listPage(list, LIMIT, null);
      await sleep(10); // the size hint is read in the background
      let patched = 0;
      let follows = 0;
      for (let step = 0; step < 60; step++) {
        await graph.listPage(list, LIMIT, null); // cached before the change
        const who = people[Math.floor(rand() * people.length)] as UserId;
        const following = (await fresh.getFollowStatus(who, owner)).state === 'following';
        if (following) await graph.unfollow(who, owner);
        else {
          await graph.follow(who, owner);
          follows++;
        }
        h.calls.clear();
        const cached = await graph.listPage(list, LIMIT, null);
        const listReads = [...h.calls].filter(
          ([n]) => /^list(Bucket|Time|Directory|Layout)?/.test(n) && n !== 'listDirty',
        );
        if (listReads.length === 0) patched++;
        const want = await fresh.listPage(list, LIMIT, null);
        expect({ step, who, following, page: cached }).toEqual({ step, who, following, page: want });
      }
      console.log(`first-page patch: ${patched}/60 changes served without a list read (${follows} follows)`);
      // A live follow is newer than the whole page and its member's row is cached (the follow read
      // it): each one was patched; an unfollow drops the page.
      expect(patched).toBe(follows);
      graph.feed.close();
      fresh.feed.close();
    },
  );

  it('the race on a first page: a page read parked while a follow patches the cached page stores nothing', async () => {
    const memory = new MemoryGraphStore();
    const h = heldStore(memory);
    const graph = await service(h.store, { caches: { pageMinListSize: 2, ttlMs: 2000 } });
    for (const id of [1n, 2n, 3n, 4n]) await graph.putUser({ id, username: `u${id}` });
    await graph.follow(2n, 1n);
    await graph.follow(3n, 1n);
    const list = { userId: 1n, relation: 'follows' as const, direction: 'in' as const };
    const ids = async () => (await graph.listPage(list, 10, null)).items.map((m) => m.id);
    await ids();
    await sleep(10); // the size hint is read in the background
    graph.caches.pages.clear();
    const held = h.park('listBucket');
    const reader = ids();
    await held.atRead; // the reader holds [3, 2] …
    await graph.follow(4n, 1n); // … a follow lands (no entry to patch: it only fences the key) …
    held.release(); // … and the reader's store is refused
    expect(await reader).toEqual([3n, 2n]);
    expect(await ids()).toEqual([4n, 3n, 2n]);
    expect(graph.caches.pages.stats.refused).toBe(1);
    graph.feed.close();
  });

  it('followed-by from the cached following list: warm it reads nothing; a follow, an unfollow and a member’s follow are seen at once here and through the tail elsewhere; a parked list read stores nothing', async () => {
    const memory = new MemoryGraphStore();
    const h = heldStore(memory);
    const graph = await service(h.store, { feedPollMs: 20 });
    const other = await service(memory, { feedPollMs: 20, caches: { ttlMs: 2000 } });
    const [V, X] = [1n, 9n];
    for (const id of [1n, 2n, 3n, 4n, 5n, 9n]) await graph.putUser({ id, username: `u${id}` });
    for (const f of [2n, 3n, 4n]) await graph.follow(V, f);
    for (const f of [2n, 3n]) await graph.follow(f, X);
    const ids = async (g: GraphService) => {
      const r = await g.followedBy(V, X, 10);
      return { sample: r.sample.map((m) => m.id), total: r.total };
    };
    expect(await ids(graph)).toEqual({ sample: [3n, 2n], total: 2 });
    h.calls.clear();
    expect(await ids(graph)).toEqual({ sample: [3n, 2n], total: 2 });
    expect([...h.calls]).toEqual([]);
    expect(await ids(other)).toEqual({ sample: [3n, 2n], total: 2 });
    await graph.unfollow(V, 3n);
    expect(await ids(graph)).toEqual({ sample: [2n], total: 1 });
    await graph.follow(4n, X);
    expect(await ids(graph)).toEqual({ sample: [4n, 2n], total: 2 });
    const seen = async (want: unknown) => {
      const start = performance.now();
      while (JSON.stringify(await ids(other), (_k, v) => (typeof v === 'bigint' ? String(v) : v)) !== want) {
        if (performance.now() - start > 1500) return null;
        await sleep(5);
      }
      return performance.now() - start;
    };
    expect(await seen(JSON.stringify({ sample: ['4', '2'], total: 2 }))).not.toBeNull();
    // The race: the whole-list read parked after it read while V follows 5 (who follows X).
    await graph.follow(5n, X);
    graph.caches.following.invalidate(V);
    const held = h.park('listBucket');
    const reader = ids(graph);
    await held.atRead;
    await graph.follow(V, 5n);
    held.release();
    expect(await reader).toEqual({ sample: [4n, 2n], total: 2 });
    expect(graph.caches.following.stats.refused).toBeGreaterThan(0);
    expect(await ids(graph)).toEqual({ sample: [5n, 4n, 2n], total: 3 });
    expect(await seen(JSON.stringify({ sample: ['5', '4', '2'], total: 3 }))).not.toBeNull();
    for (const g of [graph, other]) g.feed.close();
  });

  it('every cache holds at most its entries; sizes of 0 turn caches off', async () => {
    const memory = new MemoryGraphStore();
    const graph = await service(memory, { caches: { users: 3 } });
    const ids: UserId[] = [1n, 2n, 3n, 4n, 5n];
    for (const id of ids) await graph.putUser({ id, username: `u${id}` });
    await graph.getUsers(ids);
    expect(graph.caches.users.snapshot().size).toBe(3);
    // The following cache is bounded by ids held: 3 ids hold one list of 2, never a list of 4.
    const lists = await service(memory, { caches: { following: 3 } });
    const follows = [
      [1n, [2n, 3n]],
      [2n, [3n, 4n]],
      [3n, [1n, 2n, 4n, 5n]],
    ] as const;
    for (const [v, fs] of follows) for (const f of fs) await lists.follow(v, f);
    for (const [v] of follows) await lists.followedBy(v, 5n, 10);
    expect([lists.caches.following.peek(1n), lists.caches.following.peek(3n)]).toEqual([
      undefined,
      undefined,
    ]);
    expect(lists.caches.following.peek(2n)?.ids).toEqual(BigInt64Array.from([4n, 3n]));
    expect(lists.caches.following.snapshot().size).toBe(1);
    const off = await service(memory, { caches: false });
    await off.getUsers(ids);
    expect(off.caches.stats().users.size).toBe(0);
    expect(off.caches.enabled).toBe(false);
    for (const g of [graph, off, lists]) g.feed.close();
  });

  it('metrics: flocklist_cache_*{cache} report each cache', async () => {
    const memory = new MemoryGraphStore();
    const caches = new GraphCaches({ store: memory });
    await memory.putUser({ id: 1n, username: 'u1', private: false, state: 'active', hideLists: false });
    await caches.reader.getUser(1n);
    await caches.reader.getUser(1n);
    const registry = new Registry();
    registerCacheMetrics(registry, () => caches.stats());
    const text = await registry.metrics();
    expect(text).toContain('flocklist_cache_hits_total{cache="users"} 1');
    expect(text).toContain('flocklist_cache_misses_total{cache="users"} 1');
    expect(text).toContain('flocklist_cache_entries{cache="users"} 1');
    expect(text).toContain('flocklist_cache_misses_total{cache="edges"} 0');
  });

  it('an inverse read never answers a forward probe: a block whose inverse row is missing still blocks visibility reads', async () => {
    // The inverse copy of A's block of V is missing (the drift the repair sweep exists for).
    class Drifted extends MemoryGraphStore {
      override async getEdgesIn(...a: Parameters<MemoryGraphStore['getEdgesIn']>) {
        const found = await super.getEdgesIn(...a);
        if (a[1] === 'blocks') found.clear();
        return found;
      }
    }
    const store = new Drifted();
    const graph = await service(store);
    const [A, V] = [1n, 2n];
    await graph.putUser({ id: A, username: 'a' });
    await graph.putUser({ id: V, username: 'v' });
    await graph.block(A, V);
    const reader = graph.caches.reader;
    // An inverse probe (who among [A] blocks V) finds nothing and caches that answer...
    expect([...(await reader.getEdgesIn(V, 'blocks', [A], SINGLE_BUCKET)).keys()]).toEqual([]);
    // ...which the forward probe (does A block V), asked next, must not take.
    expect([...(await reader.getEdgesOut(A, 'blocks', [V])).keys()]).toEqual([V]);
    graph.caches.close();
  });
});
