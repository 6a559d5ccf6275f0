/**
 * A page reads no member's user row (at most once before it): usernames come
 * from the list rows and deactivation from the in-memory registry: the filter that drops deactivated
 * members reads the rows, and the usernames come from that read. Counted per id on the memory
 * store, through HTTP, for a followers page both ways, a following page, a set query
 * (mutuals, not-followed-back), followed-by and the following export; every body is checked whole.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { BucketedListService } from '../../src/lists/list-service.js';
import type { UserId } from '../../src/model/types.js';
import type { GraphStore } from '../../src/ports/graph-store.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { bearer, buildTestApp, call } from './support/app.js';

const OWNER = 1n;
/** 60 accounts follow the owner (ids 100..159); the owner follows back 100..129; every 7th is deactivated. */
const FANS = Array.from({ length: 60 }, (_, i) => 100n + BigInt(i));
const FOLLOWED = FANS.slice(0, 30);
const HIDDEN = new Set(FANS.filter((_, i) => i % 7 === 3));
/** An account that every account the owner follows follows too (the followed-by case). */
const CELEB = 900n;
/** An account with no edge to the owner, reading the owner's (public) followers. */
const STRANGER = 950n;

/** `store` with the user rows it is asked for counted per id. */
function perIdReads(store: GraphStore) {
  const reads = new Map<UserId, number>();
  const calls: string[] = [];
  const count = (id: UserId) => reads.set(id, (reads.get(id) ?? 0) + 1);
  const wrapped = new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      if (/^(get|list)/.test(String(prop)) && prop !== 'getUsers' && prop !== 'getUser')
        return (...a: unknown[]) => {
          calls.push(String(prop));
          return (value as (...a: unknown[]) => unknown).apply(target, a);
        };
      if (prop === 'getUsers')
        return (ids: readonly UserId[]) => {
          calls.push(`getUsers:${ids.join(',')}`);
          for (const id of ids) count(id);
          return target.getUsers(ids);
        };
      if (prop === 'getUser')
        return (id: UserId) => {
          calls.push(`getUser:${id}`);
          count(id);
          return target.getUser(id);
        };
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
  return { store: wrapped, reads, calls };
}

describe('a page reads no member user row', () => {
  const memory = new MemoryGraphStore();
  const { store, reads, calls } = perIdReads(memory);
  const lists = new BucketedListService({
    store,
    cursorSecret: 'member-reads-secret-0123456789',
    bucketThresholds: [1e9],
  });
  // The reads a page costs without the read caches (their hits are counted in test/graph/caches).
  const graph = new GraphService({ store, lists, maxFollowing: 100, countLeaseMs: 0, caches: false });
  const { app } = buildTestApp({ graph, receipts: memory });
  const get = async (path: string) => {
    reads.clear();
    const r = await call(app, 'GET', path, { auth: bearer(OWNER) });
    // Members only: the caller and the account in the path are read by the gate and visibility.
    const members = [...reads].filter(([id]) => id !== OWNER && id !== CELEB);
    return {
      status: r.status,
      body: r.json ?? r.text,
      most: Math.max(0, ...members.map(([, n]) => n)),
      members: members.length,
    };
  };
  const wire = (ids: readonly UserId[]) =>
    ids.filter((id) => !HIDDEN.has(id)).map((id) => ({ id: `${id}`, username: `u${id}` }));

  beforeAll(async () => {
    await graph.putUser({ id: OWNER, username: 'owner' });
    for (const id of FANS) await graph.putUser({ id, username: `u${id}` });
    for (const id of FANS) await graph.follow(id, OWNER);
    for (const id of FOLLOWED) await graph.follow(OWNER, id);
    await graph.putUser({ id: CELEB, username: 'celeb' });
    await graph.putUser({ id: STRANGER, username: 'stranger' });
    for (const id of FOLLOWED) await graph.follow(id, CELEB);
    for (const id of HIDDEN) await graph.putUser({ id, state: 'deactivated' });
    await graph.settleAccountTasks();
    while (!graph.registry?.fresh()) await new Promise((r) => setTimeout(r, 20));
  });

  it('followers, newest first and direction=newer, and following', async () => {
    const strip = (b: unknown) => ({
      ...(b as { items: { id: string; username: string }[] }),
      items: (b as { items: { id: string; username: string }[] }).items.map(({ id, username }) => ({
        id,
        username,
      })),
    });
    const followers = await get(`/v1/users/${OWNER}/followers?limit=50`);
    const newestFirst = [...FANS].reverse();
    expect([followers.status, strip(followers.body).items, followers.most]).toEqual([
      200,
      wire(newestFirst).slice(0, 50),
      0,
    ]);
    const newer = await get(`/v1/users/${OWNER}/followers?limit=20&direction=newer`);
    expect([newer.status, strip(newer.body).items, newer.most]).toEqual([
      200,
      wire(newestFirst).slice(0, 20),
      0,
    ]);
    const following = await get(`/v1/users/${OWNER}/following?limit=50`);
    expect([following.status, strip(following.body).items, following.most]).toEqual([
      200,
      wire([...FOLLOWED].reverse()),
      0,
    ]);
  });

  it('a followers page of 50 (9 of the newest 59 deactivated) costs its list reads and no member user-row read', async () => {
    calls.length = 0;
    const r = await call(app, 'GET', `/v1/users/${OWNER}/followers?limit=50`, { auth: bearer(OWNER) });
    const page = r.json as { items: { id: string; username: string }[] };
    expect([r.status, page.items.map(({ id, username }) => ({ id, username }))]).toEqual([
      200,
      wire([...FANS].reverse()).slice(0, 50),
    ]);
    // The account gate reads the owner's row once (the visibility check takes the gate's row); the
    // rest is list reads: the one time bucket, 51 rows, then (9 of them deactivated) once more.
    expect(calls).toEqual(['getUsers:1', 'listBucket', 'listBucket']);
    // Another account's token: the gate reads the owner's row (the caller's own state comes from
    // the registry), visibility checks the owner's block of the viewer (one edge read), then the
    // same list reads: three partitions for a full page.
    calls.length = 0;
    const other = await call(app, 'GET', `/v1/users/${OWNER}/followers?limit=50`, { auth: bearer(STRANGER) });
    const otherPage = other.json as { items: { id: string; username: string }[] };
    expect([other.status, otherPage.items.map(({ id, username }) => ({ id, username }))]).toEqual([
      200,
      wire([...FANS].reverse()).slice(0, 50),
    ]);
    expect(calls).toEqual([`getUsers:${OWNER}`, 'getEdgesOut', 'listBucket', 'listBucket']);
  });

  it('set queries and followed-by', async () => {
    const mutuals = await get(`/v1/users/${OWNER}/mutuals?limit=50`);
    const ids = (b: unknown) =>
      (b as { items: { id: string; username: string }[] }).items.map(({ id, username }) => ({
        id,
        username,
      }));
    expect([mutuals.status, ids(mutuals.body), mutuals.most]).toEqual([
      200,
      wire([...FOLLOWED].reverse()),
      0,
    ]);
    const nfb = await get(`/v1/users/${OWNER}/followers/not-followed-back?limit=50`);
    expect([nfb.status, ids(nfb.body), nfb.most]).toEqual([200, wire(FANS.slice(30).reverse()), 0]);
    // Followed by: the accounts the owner follows that follow the celebrity, in the owner's order.
    const fb = await get(`/v1/users/${CELEB}/followed-by?limit=3`);
    const expected = wire([...FOLLOWED].reverse());
    expect([fb.status, fb.body, fb.most]).toEqual([
      200,
      { sample: expected.slice(0, 3), total: expected.length },
      0,
    ]);
  });

  it('the following export', async () => {
    const exp = await get(`/v1/users/${OWNER}/following/export`);
    const lines = String(exp.body)
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; username: string })
      .map(({ id, username }) => ({ id, username }))
      .sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
    expect([exp.status, lines, exp.most]).toEqual([200, wire(FOLLOWED), 0]);
  });
});
