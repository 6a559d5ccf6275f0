/**
 * Scan cursors held across a large growth (issue #8, cursor size): a slice's in-progress bucket
 * expands into one entry per sub-bucket of the new layout; the cursor must still fit
 * `MAX_CURSOR_LENGTH` (the HTTP limit) and the slice must still cover every member once.
 */
import { describe, expect, it } from 'vitest';
import { MAX_CURSOR_LENGTH } from '../../../src/lists/cursor/cursor-codec.js';
import { BucketedListService } from '../../../src/lists/list-service.js';
import { bucketCodeOf } from '../../../src/model/buckets.js';
import type { ListEntry, ListKey } from '../../../src/model/types.js';
import { MemoryGraphStore } from '../../support/memory/graph-store.js';

const list: ListKey = { userId: 1n, relation: 'follows', direction: 'in' };
const MEMBERS = 3000;

async function storeWithBothLayouts(layouts: number[]) {
  const store = new MemoryGraphStore();
  const rows: ListEntry[] = Array.from({ length: MEMBERS }, (_, i) => ({
    createdAt: 1_796_000_000_000_000n + BigInt(i) * 1000n,
    otherId: 5000n + BigInt(i),
  }));
  // Codes of different layouts never collide: one copy of the rows per layout.
  await store.writeEdges(
    [],
    layouts.flatMap((n) =>
      rows.map((entry) => ({
        list,
        bucketCodes: [bucketCodeOf(n, entry.otherId)],
        entry,
        op: 'put' as const,
      })),
    ),
    1n,
  );
  return store;
}

const service = (store: MemoryGraphStore) =>
  new BucketedListService({
    store,
    cursorSecret: 'cursor-secret-0123456789abcdef',
    bucketThresholds: [1e9],
    layoutCacheTtlMs: 0,
  });

describe('scan cursors across a growth (issue #8)', () => {
  it.each([
    [1, 1024, 0, 1],
    [2, 1024, 1, 3],
    [64, 1024, 5, 16],
  ])(
    'a scan cursor held across a growth from %i to %i buckets fits and covers the slice once (slice %i of %i)',
    async (from, to, slice, slices) => {
      const store = await storeWithBothLayouts([from, to]);
      // The hash engine's cursors across its growths (lists grown before time buckets): a list of
      // one bucket is a time list unless its directory says otherwise.
      await store.updateDirectory(list, 0, { mode: 'hash' });
      await store.putLayout(list, { buckets: from, growingTo: null, copiedThrough: 0 });
      const seen: bigint[] = [];
      const lengths: number[] = [];
      let page = await service(store).scan(list, slice, slices, 7, null);
      seen.push(...page.ids);
      await store.putLayout(list, { buckets: to, growingTo: null, copiedThrough: 0 });
      while (page.nextCursor !== null) {
        lengths.push(page.nextCursor.length);
        page = await service(store).scan(list, slice, slices, 7, page.nextCursor);
        seen.push(...page.ids);
      }
      const expected = await (async () => {
        const own: bigint[] = [];
        for await (const b of service(store).scanBatches(list, { slice, slices, batchSize: 1000 }))
          own.push(...b.ids);
        return own;
      })();
      const sort = (xs: bigint[]) => [...xs].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      expect({
        ids: sort(seen),
        longest: Math.max(...lengths) <= MAX_CURSOR_LENGTH ? 'fits' : Math.max(...lengths),
      }).toEqual({ ids: sort(expected), longest: 'fits' });
      expect(expected.length).toBeGreaterThan(MEMBERS / (slices + 1));
    },
  );
});
