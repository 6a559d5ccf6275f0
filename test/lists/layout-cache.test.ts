import type { LRUCache } from 'lru-cache';
import { describe, expect, it } from 'vitest';
import { BucketedListService } from '../../src/lists/list-service.js';
import type { ListKey } from '../../src/model/types.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';

const following = (userId: bigint): ListKey => ({ userId, relation: 'follows', direction: 'out' });
/** The lists whose directory is cached (pages read the directory; layouts share its bound), least recently used first. */
const cacheKeys = (s: BucketedListService) => [
  ...(s as unknown as { directories: LRUCache<string, object> }).directories.rkeys(),
];

describe('layout cache', () => {
  it('the layout cache stays bounded when 10x its size of lists are read', async () => {
    const lists = new BucketedListService({
      store: new MemoryGraphStore(),
      cursorSecret: 'cursor-secret-0123456789abcdef',
      bucketThresholds: [1000],
      layoutCacheMaxEntries: 100,
    });
    for (let u = 1n; u <= 1000n; u++) await lists.page(following(u), 10, null);
    expect(cacheKeys(lists)).toEqual(Array.from({ length: 100 }, (_, i) => `${901 + i}|follows|out`));
  });
  it('a cache hit makes a layout the most recently used, so hot lists stay cached', async () => {
    const lists = new BucketedListService({
      store: new MemoryGraphStore(),
      cursorSecret: 'cursor-secret-0123456789abcdef',
      bucketThresholds: [1000],
      layoutCacheMaxEntries: 3,
    });
    for (const u of [1n, 2n, 3n, 1n, 4n]) await lists.page(following(u), 10, null);
    expect(cacheKeys(lists)).toEqual(['3|follows|out', '1|follows|out', '4|follows|out']);
  });
});
