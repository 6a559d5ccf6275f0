import { describe, expect, it } from 'vitest';
import { type WalkCursor, walkList } from '../../src/lists/list-walker.js';
import { bucketFor } from '../../src/model/time-buckets.js';
import type { ListEntry, ListKey } from '../../src/model/types.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';

const list: ListKey = { userId: 7n, relation: 'follows', direction: 'in' };

/** 23 rows in four time buckets (boundaries at 105, 112 and 118). */
async function fourBucketList() {
  const store = new MemoryGraphStore();
  await store.updateDirectory(list, 0, {
    add: [105n, 112n, 118n].map((start, i) => ({ id: 4096 + i, start, base: 6 * (i + 1) })),
  });
  const directory = await store.getDirectory(list);
  const rows = Array.from({ length: 23 }, (_, i) => ({
    list,
    entry: { createdAt: 100n + BigInt(i), otherId: 1000n + BigInt(i) },
  }));
  await store.writeEdges(
    [],
    rows.map((r) => ({
      ...r,
      bucketCodes: [bucketFor(directory, r.entry.createdAt).id],
      op: 'put' as const,
    })),
    1n,
  );
  return { store, ids: rows.map((r) => r.entry.otherId).sort() };
}

describe('walkList', () => {
  it('visits every row of every bucket once, handing each page the cursor after it', async () => {
    const { store, ids } = await fourBucketList();
    const seen: bigint[] = [];
    const cursors: (WalkCursor | null)[] = [];
    const n = await walkList(
      store,
      list,
      (page, _code, next) => {
        seen.push(...page.map((e) => e.otherId));
        cursors.push(next);
      },
      { pageSize: 3 },
    );
    expect(n).toBe(23);
    expect([...seen].sort()).toEqual(ids);
    expect(cursors.at(-1)).toBeNull();
    expect(cursors.slice(0, -1).every((c) => c !== null)).toBe(true);
  });

  it('resumes from any committed cursor without losing or repeating a row', async () => {
    const { store, ids } = await fourBucketList();
    const cursors: (WalkCursor | null)[] = [];
    const pages: ListEntry[][] = [];
    await walkList(
      store,
      list,
      (page, _c, next) => {
        pages.push(page);
        cursors.push(next);
      },
      { pageSize: 4 },
    );
    for (const [i, from] of cursors.entries()) {
      if (from === null) continue;
      const rest: bigint[] = [];
      await walkList(store, list, (page) => void rest.push(...page.map((e) => e.otherId)), {
        pageSize: 4,
        from,
      });
      const before = pages
        .slice(0, i + 1)
        .flat()
        .map((e) => e.otherId);
      expect([...before, ...rest].sort()).toEqual(ids);
    }
  });

  it('starts over when the cursor names a bucket the directory does not hold', async () => {
    const { store, ids } = await fourBucketList();
    const seen: bigint[] = [];
    await walkList(store, list, (page) => void seen.push(...page.map((e) => e.otherId)), {
      from: { bucketCode: 2, after: null },
    });
    expect([...seen].sort()).toEqual(ids);
  });
});
