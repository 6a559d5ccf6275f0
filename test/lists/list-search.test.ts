/**
 * A search page's reads (`src/lists/list-search.ts`) on the in-memory store: one request for a
 * query of two or more characters, one per partition visited for one character (empty ones
 * included, at most 39), and the short-page rule: a page whose rows-read budget runs out past
 * excluded members comes back short with a cursor that resumes after the last row read.
 */
import { describe, expect, it } from 'vitest';
import { CursorCodec } from '../../src/lists/cursor/cursor-codec.js';
import { searchPage } from '../../src/lists/list-search.js';
import { EMPTY_SEARCH_LAYOUT } from '../../src/model/search.js';
import type { ListKey, UserId } from '../../src/model/types.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';

const list: ListKey = { userId: 1n, relation: 'follows', direction: 'in' };
const codec = new CursorCodec('list-search-secret-0123456789');

async function withMembers(names: [UserId, string][]): Promise<MemoryGraphStore> {
  const store = new MemoryGraphStore();
  await store.writeEdges(
    [],
    names.map(([otherId, username], i) => ({
      list,
      bucketCodes: [1],
      entry: { createdAt: 100n + BigInt(i), otherId, username },
      op: 'put' as const,
    })),
    10n,
  );
  return store;
}

describe('search pages', () => {
  it('cost: one request for 2+ characters; for one, one per partition visited until the page is full', async () => {
    const store = await withMembers([
      [2n, 'a'],
      [3n, 'a_b'],
      [4n, 'azz'],
      [5n, 'ab'],
    ]);
    const deps = { store, codec, budget: 1000, layout: EMPTY_SEARCH_LAYOUT };
    const two = await searchPage(deps, list, 'AZ', 10, null);
    expect([two.page.items.map((i) => i.id), two.page.nextCursor, two.stats]).toEqual([
      [4n],
      null,
      { queries: 1, rowsRead: 1, budgetHit: false },
    ]);
    // 'a', 'a.', 'a0'…'a9', 'a_', 'aa', 'ab' (full with the look-ahead after a, a_b, ab: stops there).
    const one = await searchPage(deps, list, 'a', 2, null);
    expect([one.page.items.map((i) => i.id), one.stats]).toEqual([
      [2n, 3n],
      { queries: 15, rowsRead: 3, budgetHit: false },
    ]);
    const rest = await searchPage(deps, list, 'a', 2, one.page.nextCursor);
    expect([rest.page.items.map((i) => i.id), rest.page.nextCursor, rest.stats.queries]).toEqual([
      [5n, 4n],
      null,
      // From 'a_' (the cursor's partition) to the last: 'a_', then 'aa' … 'az'.
      27,
    ]);
  });

  it('a page whose budget runs out past excluded members is short, with a cursor that resumes after the last row read', async () => {
    const names: [UserId, string][] = Array.from({ length: 12 }, (_, i) => [
      BigInt(10 + i),
      `bo${i.toString().padStart(2, '0')}`,
    ]);
    const store = await withMembers(names);
    const hidden = new Set(names.slice(0, 9).map(([id]) => id));
    const exclude = async (ids: readonly UserId[]) => new Set(ids.filter((id) => hidden.has(id)));
    const deps = { store, codec, budget: 5, layout: EMPTY_SEARCH_LAYOUT };
    const first = await searchPage(deps, list, 'bo', 2, null, exclude);
    expect([first.page.items, first.stats]).toEqual([[], { queries: 2, rowsRead: 5, budgetHit: true }]);
    expect(first.page.nextCursor).not.toBeNull();
    const second = await searchPage(deps, list, 'bo', 2, first.page.nextCursor, exclude);
    // Four more hidden rows and one shown spend the next budget of five: short again.
    expect([second.page.items.map((i) => i.id), second.stats.budgetHit]).toEqual([[19n], true]);
    const third = await searchPage(deps, list, 'bo', 2, second.page.nextCursor, exclude);
    expect([third.page.items.map((i) => i.id), third.page.nextCursor]).toEqual([[20n, 21n], null]);
  });
});
