/**
 * `jobs index-search` (`src/jobs/index-search.ts`) on the in-memory store: follows rows written
 * before search (no search rows; some without a username) get their search rows at each row's own
 * write time, so a later unfollow still deletes them; a crashed run resumes from its last page
 * with its totals; a re-run changes nothing.
 */
import { describe, expect, it } from 'vitest';
import { INDEX_SEARCH_JOB, indexSearch } from '../../src/jobs/index-search.js';
import { SEARCH_END, type SearchRow } from '../../src/model/search.js';
import type { ListKey, UserId } from '../../src/model/types.js';
import type { GraphStore } from '../../src/ports/graph-store.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';

const O = 1n;
const followers: ListKey = { userId: O, relation: 'follows', direction: 'in' };
const following: ListKey = { userId: O, relation: 'follows', direction: 'out' };

/** O's lists as a release before search left them: rows without search rows, some without names. */
async function legacy(): Promise<MemoryGraphStore> {
  const store = new MemoryGraphStore();
  const user = (id: UserId, username: string) =>
    store.putUser({ id, username, private: false, state: 'active', hideLists: false });
  await user(O, 'owner');
  await user(11n, 'Ann');
  await user(12n, 'bob');
  await user(14n, 'Anna');
  // A put without a name writes no search row; the name cell set apart (a pre-search rename) neither.
  const put = (list: ListKey, createdAt: bigint, otherId: UserId, version: bigint) =>
    store.writeEdges([], [{ list, bucketCodes: [1], entry: { createdAt, otherId }, op: 'put' }], version);
  await put(followers, 100n, 11n, 10n);
  await put(followers, 200n, 12n, 20n);
  await store.setListUsernames(
    followers,
    1,
    [{ entry: { createdAt: 200n, otherId: 12n }, version: 20n }],
    'Bob',
  );
  await put(followers, 300n, 13n, 30n); // no user row: skipped
  await put(following, 400n, 14n, 40n);
  return store;
}

async function searchRows(store: GraphStore, list: ListKey, prefix: string): Promise<SearchRow[]> {
  return store.listSearchRows(list, prefix, { lower: '', otherId: 0n }, SEARCH_END, 100);
}

const ann = { lower: 'ann', otherId: 11n, username: 'Ann', createdAt: 100n };
const bob = { lower: 'bob', otherId: 12n, username: 'Bob', createdAt: 200n };
const anna = { lower: 'anna', otherId: 14n, username: 'Anna', createdAt: 400n };

describe('jobs index-search', () => {
  it('index-search: writes each row’s search row at the row’s write time (names from the row, else the user row); a later unfollow deletes it', async () => {
    const store = await legacy();
    expect(await searchRows(store, followers, 'an')).toEqual([]);
    expect(await indexSearch(store, { users: [O] })).toEqual({ users: 1, rows: 3 });
    expect([
      await searchRows(store, followers, 'an'),
      await searchRows(store, followers, 'bo'),
      await searchRows(store, following, 'an'),
    ]).toEqual([[ann], [bob], [anna]]);
    expect((await store.readPairHistory(O, 12n)).indexedNames).toEqual(new Map([[12n, 'Bob']]));
    // Written at the row's version: a delete at that version (an unfollow's is at or above) wins.
    await store.writeEdges(
      [],
      [
        {
          list: followers,
          bucketCodes: [1],
          entry: { createdAt: 100n, otherId: 11n },
          op: 'delete',
          searchNames: ['Ann'],
        },
      ],
      10n,
    );
    expect(await searchRows(store, followers, 'an')).toEqual([]);
    expect((await store.getSweepProgress(INDEX_SEARCH_JOB))?.done).toBe(true);
  });

  it('index-search: a crashed run resumes from its last committed page with its totals; a re-run changes nothing', async () => {
    const store = await legacy();
    let writes = 0;
    const crashing = new Proxy(store, {
      get(target, prop) {
        const v = Reflect.get(target, prop, target) as unknown;
        if (prop === 'writeSearchRows')
          return async (...a: unknown[]) => {
            if (++writes === 2) throw new Error('injected crash');
            return (v as (...a: unknown[]) => Promise<void>).apply(target, a);
          };
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const seen: number[] = [];
    await expect(
      indexSearch(crashing, { users: [O], pageSize: 1, onProgress: (p) => seen.push(p.rows) }),
    ).rejects.toThrow('injected crash');
    // Newest first: 13 (no user row, nothing written), bob, then ann's write fails.
    expect(seen).toEqual([0, 1]);
    expect(
      await indexSearch(store, { users: [O], pageSize: 1, onProgress: (p) => seen.push(p.rows) }),
    ).toEqual({
      users: 1,
      rows: 3,
    });
    // The resumed run starts at the page that failed (ann), not from the start.
    expect(seen).toEqual([0, 1, 2, 3]);
    expect([await searchRows(store, followers, 'an'), await searchRows(store, followers, 'bo')]).toEqual([
      [ann],
      [bob],
    ]);
    // A run stopped between two users resumes with the next one, not from the first.
    await store.putUser({ id: 2n, username: 'two', private: false, state: 'active', hideLists: false });
    let calls = 0;
    const stopping = new Proxy(store, {
      get(target, prop) {
        const v = Reflect.get(target, prop, target) as unknown;
        if (prop === 'putSweepProgress')
          return async (...a: unknown[]) => {
            await (v as (...a: unknown[]) => Promise<void>).apply(target, a);
            // Commits: O's followers page, its following page, O done (stop there).
            if (++calls === 3) throw new Error('stopped');
          };
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    await expect(indexSearch(stopping, { users: [O, 2n], restart: true })).rejects.toThrow('stopped');
    const listed: bigint[] = [];
    const walking = new Proxy(store, {
      get(target, prop) {
        const v = Reflect.get(target, prop, target) as unknown;
        // A walk reads its list's directory once, first.
        if (prop === 'getDirectory')
          return async (list: ListKey) => {
            listed.push(list.userId);
            return (v as (l: ListKey) => Promise<unknown>).call(target, list);
          };
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    expect(await indexSearch(walking, { users: [O, 2n] })).toEqual({ users: 2, rows: 3 });
    expect([...new Set(listed)]).toEqual([2n]);
    expect(await indexSearch(store, { users: [O], restart: true })).toEqual({ users: 1, rows: 3 });
    expect([
      await searchRows(store, followers, 'an'),
      await searchRows(store, followers, 'bo'),
      await searchRows(store, following, 'an'),
    ]).toEqual([[ann], [bob], [anna]]);
  });
});
