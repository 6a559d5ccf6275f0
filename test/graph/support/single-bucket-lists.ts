/**
 * A test-only `ListService`: every list in one bucket, pages read straight from the store with an
 * unsigned cursor (search pages: the real `searchPage`). Stands in for the real list service (bucket merge, signed cursors, growth) in
 * the graph-service tests; never used by `src/`.
 */

import type {
  ListPage,
  ListService,
  MemberFilter,
  RowPlacement,
  ScanPage,
} from '../../../src/lists/contracts.js';
import { CursorCodec } from '../../../src/lists/cursor/cursor-codec.js';
import { searchPage } from '../../../src/lists/list-search.js';
import { SINGLE_BUCKET } from '../../../src/model/buckets.js';
import { InvalidCursorError } from '../../../src/model/errors.js';
import { searchLayoutOf } from '../../../src/model/search.js';
import type { BucketLayout, ListEntry, ListKey } from '../../../src/model/types.js';
import type { GraphStore } from '../../../src/ports/graph-store.js';

const SEARCH_CODEC = new CursorCodec('single-bucket-lists-search');

const encode = (e: ListEntry) => `${e.createdAt}:${e.otherId}`;

function decode(cursor: string | null): ListEntry | null {
  if (cursor === null) return null;
  const m = /^(\d+):(\d+)$/.exec(cursor);
  if (!m) throw new InvalidCursorError('malformed');
  return { createdAt: BigInt(m[1] as string), otherId: BigInt(m[2] as string) };
}

export class SingleBucketLists implements ListService {
  /** Every `noteSize` call, for assertions. */
  readonly noted: { list: ListKey; size: number }[] = [];

  constructor(private readonly store: GraphStore) {}

  async page(list: ListKey, limit: number, cursor: string | null): Promise<ListPage> {
    const rows = await this.store.listBucket(list, 1, decode(cursor), limit + 1);
    const items = rows.slice(0, limit).map((e) => ({ id: e.otherId, createdAt: e.createdAt }));
    const last = rows.length > limit ? rows[limit - 1] : undefined;
    return { items, nextCursor: last ? encode(last) : null };
  }

  olderCursor(_list: ListKey, last: ListEntry): string {
    return encode(last);
  }

  /** The real search page over the store's search rows (a fixed key; no work budget). */
  async search(
    list: ListKey,
    q: string,
    limit: number,
    cursor: string | null,
    options: { exclude?: MemberFilter } = {},
  ): Promise<ListPage> {
    const layout = searchLayoutOf(await this.store.getDirectory(list));
    const deps = { store: this.store, codec: SEARCH_CODEC, budget: Number.MAX_SAFE_INTEGER, layout };
    return (await searchPage(deps, list, q, limit, cursor, options.exclude)).page;
  }

  async scan(
    list: ListKey,
    slice: number,
    _slices: number,
    limit: number,
    cursor: string | null,
  ): Promise<ScanPage> {
    if (slice !== 0) return { ids: [], nextCursor: null };
    const page = await this.page(list, limit, cursor);
    return { ids: page.items.map((i) => i.id), nextCursor: page.nextCursor };
  }

  /** Every row in partition 1 (the one-bucket layout's code, the first time bucket). */
  async placement(list: ListKey): Promise<RowPlacement> {
    const search = searchLayoutOf(await this.store.getDirectory(list));
    return { layout: SINGLE_BUCKET, codes: () => [1], search };
  }

  async currentLayout(_list: ListKey): Promise<BucketLayout> {
    return SINGLE_BUCKET;
  }

  /** Always: the `noted` sizes are what tests assert. */
  sizeCheckDue(_list: ListKey, _inserted: number): boolean {
    return true;
  }

  noteSize(list: ListKey, size: number): void {
    this.noted.push({ list, size });
  }
}
