/**
 * A list whose directory holds a mode of the retired hash-bucket engine (`hash`, `dual`,
 * `flipped`) is refused, read or written, with `LegacyListModeError` (HTTP 409
 * `legacy_list_mode`); nothing infers `hash` from a grown inverse-edge layout any more.
 */
import { describe, expect, it } from 'vitest';
import { toApiError } from '../../src/http/errors.js';
import { BucketedListService } from '../../src/lists/list-service.js';
import type { LegacyListModeError } from '../../src/model/errors.js';
import { EMPTY_DIRECTORY, LEGACY_LIST_MODES, rowMode } from '../../src/model/time-buckets.js';
import { followersOf } from '../support/list-fixtures.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';

const service = (store: MemoryGraphStore) =>
  new BucketedListService({
    store,
    cursorSecret: 'legacy-mode-secret-0123456789',
    bucketThresholds: [1000],
    layoutCacheTtlMs: 0,
  });

describe('a stored legacy list mode', () => {
  it('rowMode refuses hash, dual and flipped, and reads an unset or time mode as time', () => {
    expect(
      LEGACY_LIST_MODES.map((mode) => {
        try {
          return rowMode({ ...EMPTY_DIRECTORY, mode });
        } catch (e) {
          return [(e as Error).name, (e as LegacyListModeError).mode];
        }
      }),
    ).toEqual([
      ['LegacyListModeError', 'hash'],
      ['LegacyListModeError', 'dual'],
      ['LegacyListModeError', 'flipped'],
    ]);
    expect([rowMode(EMPTY_DIRECTORY), rowMode({ ...EMPTY_DIRECTORY, mode: 'time' })]).toEqual([
      'time',
      'time',
    ]);
  });

  it('the list service refuses its pages, scans and placement; the edge answers 409 legacy_list_mode', async () => {
    const store = new MemoryGraphStore();
    const list = followersOf(42n);
    await store.updateDirectory(list, 0, { mode: 'hash' });
    const lists = service(store);
    const thrown = await Promise.all([
      lists.page(list, 10, null).catch((e: unknown) => e),
      lists.scan(list, 0, 1, 10, null).catch((e: unknown) => e),
      lists.placement(list).catch((e: unknown) => e),
    ]);
    expect(
      thrown.map((e) => {
        const a = toApiError(e);
        return [(e as Error).name, a.status, a.code];
      }),
    ).toEqual(Array(3).fill(['LegacyListModeError', 409, 'legacy_list_mode']));
  });

  it('a grown inverse-edge layout without a stored mode is a time-bucketed list (read from its time buckets)', async () => {
    const store = new MemoryGraphStore();
    const list = followersOf(43n);
    const entry = { createdAt: 1_800_000_000_000_000n, otherId: 7n };
    await store.putLayout(list, { buckets: 16, growingTo: null, copiedThrough: 0 });
    const lists = service(store);
    const { codes } = await lists.placement(list);
    await store.writeEdges([], [{ list, bucketCodes: codes(entry), entry, op: 'put' }], 1n);
    expect(codes(entry)).toEqual([1]);
    expect(await lists.page(list, 10, null)).toEqual({
      items: [{ id: 7n, createdAt: entry.createdAt }],
      nextCursor: null,
      prevCursor: null,
    });
  });
});
