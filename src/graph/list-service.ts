/**
 * `ListService`: bucketed list pages, fan-out scans, and the trigger for online growth.
 *
 * Design note. A page reads the layout `max(cursor's N, current N)`. Both are complete: a layout
 * becomes readers' `buckets` only after its copy finished (see `list-growth.ts`), and an old
 * layout is dropped only after every cached view of it has expired. Reading the larger one never
 * loses state because bucket `b` of N is exactly `b` ∪ `b + N` of 2N: each half inherits the
 * parent's ceiling (an upper bound stays an upper bound on a subset) and its exhausted flag (a
 * subset of nothing is nothing). Rows that appear behind the boundary during a walk can only be
 * growth copies of rows already in the parent, so the boundary-based walk returns each member
 * present throughout exactly once, in order. Refollows get a new, newer `created_at`, which is
 * ahead of the boundary, so a churned member is never returned twice.
 *
 * Layouts are cached for `layoutCacheTtlMs`; a growth waits that long (plus `writeGraceMs`)
 * after announcing `growingTo`, and again before dropping the old buckets. The cache is also an
 * LRU of at most `layoutCacheMaxEntries` lists (a `Map` kept in use order: a hit moves the entry
 * to the end, an insert past the bound drops the first), so reading many users' lists cannot
 * grow it without limit. Evicting early is always safe: it only costs one `getLayout` read.
 */

import { CursorCodec, MAX_BUCKETS, type ScanPosition } from '../cursor/cursor-codec.js';
import { type BucketState, mergePage, type PageStats } from '../cursor/merge.js';
import {
  bucketAtIndex,
  indexInside,
  indexOfBucket,
  log2,
  MAX_SLICES,
  RANK_SPACE,
  rankOf,
  sliceIndexes,
  sliceRange,
} from '../cursor/scan-slices.js';
import type { GraphStore } from '../store/store.js';
import type { BucketLayout, ListEntry, ListKey } from '../store/types.js';
import { listId } from '../store/types.js';
import { bucketCode } from './buckets.js';
import type { ListPage, ListService, ScanPage } from './contracts.js';
import { InvalidInputError } from './errors.js';
import { type GrowthProgress, growList } from './list-growth.js';

export interface ListServiceOptions {
  store: GraphStore;
  /** HMAC key for cursors; at least 16 characters. */
  cursorSecret: string;
  /** Index i: the list size at which a list grows to 2^(i+1) buckets (`config.graph.bucketThresholds`). */
  bucketThresholds: number[];
  /** How long a layout read may be reused. Default 2,000 ms; 0 disables the cache. */
  layoutCacheTtlMs?: number;
  /** Most lists whose layout is cached (least recently used evicted first). Default 10,000. */
  layoutCacheMaxEntries?: number;
  /** Longest write in flight, added to the cache TTL by growth waits. Default 5,000 ms. */
  writeGraceMs?: number;
  /** Largest layout a list may grow to. Default and maximum 1,024. */
  maxBuckets?: number;
  /** Rows per growth copy page. Default 1,000. */
  growthCopyPageSize?: number;
  /** Called once per page or scan page with its cost (e.g. for Prometheus). */
  onPage?: (s: ListReadStats) => void;
  /** Called when a background growth fails (it is retried on a later `noteSize`). */
  onGrowthError?: (list: ListKey, error: unknown) => void;
  /** Told after every growth step (started, each bucket copied, flipped, dropped). */
  onGrowthProgress?: (list: ListKey, p: GrowthProgress) => void;
  /** Injected for tests (growth waits). */
  sleep?: (ms: number) => Promise<void>;
}

export interface ListReadStats extends PageStats {
  kind: 'page' | 'scan';
  list: ListKey;
  /** Items returned. */
  items: number;
  /** Buckets in the layout read. */
  layout: number;
}

export interface ScanBatch {
  ids: bigint[];
  /** Resume point after this batch; null when the slice is finished. */
  cursor: string | null;
}

/** Number of buckets a list of `size` rows should have: 2^(thresholds reached), capped. */
export function bucketsForSize(
  size: number,
  thresholds: readonly number[],
  maxBuckets = MAX_BUCKETS,
): number {
  let buckets = 1;
  for (const t of thresholds) {
    if (size < t || buckets >= maxBuckets) break;
    buckets *= 2;
  }
  return buckets;
}

export class BucketedListService implements ListService {
  private readonly store: GraphStore;
  private readonly codec: CursorCodec;
  private readonly ttlMs: number;
  private readonly maxBuckets: number;
  private readonly cacheMaxEntries: number;
  /** In use order, least recently used first (see the module note). */
  private readonly cache = new Map<string, { layout: BucketLayout; at: number }>();
  private readonly growing = new Map<string, Promise<void>>();

  constructor(private readonly o: ListServiceOptions) {
    this.store = o.store;
    this.codec = new CursorCodec(o.cursorSecret);
    this.ttlMs = o.layoutCacheTtlMs ?? 2000;
    this.cacheMaxEntries = Math.max(1, o.layoutCacheMaxEntries ?? 10_000);
    this.maxBuckets = Math.min(o.maxBuckets ?? MAX_BUCKETS, MAX_BUCKETS);
  }

  /**
   * Newest-first page (created_at DESC, other_id DESC) by a k-way merge of the list's buckets.
   * Throws `InvalidCursorError` for a cursor not issued here for `list`, `InvalidInputError` for a
   * limit below 1.
   */
  async page(list: ListKey, limit: number, cursor: string | null): Promise<ListPage> {
    assertLimit(limit);
    const layout = await this.layout(list);
    let buckets = layout.buckets;
    let states: BucketState[];
    let after: ListEntry | null = null;
    let gapUs = 0;
    if (cursor) {
      const c = this.codec.decodePage(cursor, list);
      buckets = Math.max(c.buckets, layout.buckets);
      states = Array.from({ length: buckets }, (_, b) => c.states[b & (c.buckets - 1)]!);
      after = c.after;
      gapUs = c.gapUs;
    } else {
      states = Array.from({ length: buckets }, () => ({ exhausted: false, ceiling: null }));
    }
    const codes = Array.from({ length: buckets }, (_, b) => bucketCode(buckets, b));
    const r = await mergePage({
      codes,
      states,
      after,
      limit,
      gapUs,
      fetch: (code, from, n) => this.store.listBucket(list, code, from, n),
    });
    this.o.onPage?.({ kind: 'page', list, items: r.items.length, layout: buckets, ...r.stats });
    const nextCursor =
      r.done || r.items.length < limit || !r.after
        ? null
        : this.codec.encodePage({ list, buckets, after: r.after, gapUs: r.gapUs, states: r.states });
    return { items: r.items.map((e) => ({ id: e.otherId, createdAt: e.createdAt })), nextCursor };
  }

  /**
   * One slice of a fan-out scan: `slices` (1..1024) disjoint slices cover every member exactly once
   * (see `scan-slices.ts`); order within a slice is bucket by bucket, each in clustering order.
   * Throws `InvalidCursorError` for a cursor not issued for this list and slice, `InvalidInputError`
   * for a slice, slice count or limit out of range.
   */
  async scan(
    list: ListKey,
    slice: number,
    slices: number,
    limit: number,
    cursor: string | null,
  ): Promise<ScanPage> {
    if (!Number.isInteger(slices) || slices < 1 || slices > MAX_SLICES) {
      throw new InvalidInputError('slices', `an integer from 1 to ${MAX_SLICES}`);
    }
    if (!Number.isInteger(slice) || slice < 0 || slice >= slices) {
      throw new InvalidInputError('slice', 'an integer from 0 to slices - 1');
    }
    assertLimit(limit);
    const layout = await this.layout(list);
    let buckets = layout.buckets;
    let nextIndex: number;
    const pending: ScanPosition[] = [];
    if (cursor) {
      const c = this.codec.decodeScan(cursor, list, slice, slices);
      buckets = Math.max(c.buckets, layout.buckets);
      const scale = buckets / c.buckets;
      nextIndex = c.nextIndex * scale;
      // A pending code may name a bucket of any layout up to the cursor's (the codec merges
      // sibling buckets that share a position); it stands for its sub-buckets here, in rank order.
      for (const p of c.pending) {
        const layoutOfCode = 2 ** log2(p.code);
        const width = buckets / layoutOfCode;
        const first = indexOfBucket(p.code - layoutOfCode, layoutOfCode) * width;
        for (let j = first; j < first + width; j++)
          pending.push({ code: bucketCode(buckets, bucketAtIndex(j, buckets)), after: p.after });
      }
    } else {
      nextIndex = sliceIndexes(slice, slices, buckets)[0];
    }
    const [lo, hi] = sliceRange(slice, slices);
    const endIndex = sliceIndexes(slice, slices, buckets)[1];
    const stats: PageStats = { queries: 0, rowsRead: 0, buckets: 0, rounds: 0 };
    const ids: bigint[] = [];
    while (ids.length < limit) {
      if (pending.length === 0) {
        if (nextIndex >= endIndex) break;
        pending.push({ code: bucketCode(buckets, bucketAtIndex(nextIndex, buckets)), after: null });
        nextIndex++;
      }
      const p = pending[0]!;
      const j = indexOfBucket(p.code - buckets, buckets);
      const whole = indexInside(j, buckets, lo, hi);
      const need = limit - ids.length;
      const width = RANK_SPACE / buckets;
      const overlap = Math.min(hi, (j + 1) * width) - Math.max(lo, j * width);
      const size = whole ? need : Math.min(5000, Math.ceil((need * width) / Math.max(overlap, 1)));
      const rows = await this.store.listBucket(list, p.code, p.after, size);
      stats.queries++;
      stats.rounds++;
      stats.rowsRead += rows.length;
      if (p.after === null) stats.buckets++;
      let consumed = 0;
      for (const row of rows) {
        consumed++;
        p.after = row;
        if (!whole) {
          const rank = rankOf(row.otherId);
          if (rank < lo || rank >= hi) continue;
        }
        ids.push(row.otherId);
        if (ids.length === limit) break;
      }
      if (rows.length < size && consumed === rows.length) pending.shift();
    }
    this.o.onPage?.({ kind: 'scan', list, items: ids.length, layout: buckets, ...stats });
    const done = pending.length === 0 && nextIndex >= endIndex;
    const nextCursor = done
      ? null
      : this.codec.encodeScan({ list, slice, slices, buckets, nextIndex, pending });
    return { ids, nextCursor };
  }

  /**
   * Async iterator of id batches for in-process fan-out workers: one slice, resumable from any
   * batch's `cursor` (pass it as `cursor` to continue after a crash).
   */
  async *scanBatches(
    list: ListKey,
    o: { slice?: number; slices?: number; batchSize?: number; cursor?: string | null } = {},
  ): AsyncGenerator<ScanBatch> {
    let cursor = o.cursor ?? null;
    do {
      const page = await this.scan(list, o.slice ?? 0, o.slices ?? 1, o.batchSize ?? 1000, cursor);
      cursor = page.nextCursor;
      if (page.ids.length > 0 || cursor === null) yield { ids: page.ids, cursor };
    } while (cursor !== null);
  }

  /** The layout writers must use now; cached for `layoutCacheTtlMs`. */
  async layoutForWrite(list: ListKey): Promise<BucketLayout> {
    return this.layout(list);
  }

  /** Starts a background growth when `size` crossed the list's next threshold. Never throws. */
  noteSize(list: ListKey, size: number): void {
    try {
      const key = listId(list);
      if (this.growing.has(key)) return;
      const target = bucketsForSize(size, this.o.bucketThresholds, this.maxBuckets);
      const cached = this.cache.get(key)?.layout;
      if (cached && cached.buckets >= target && cached.growingTo === null) return;
      if (target <= 1) return;
      const run = this.growTo(list, target)
        .then(() => undefined)
        .catch((e: unknown) => this.o.onGrowthError?.(list, e))
        .finally(() => this.growing.delete(key));
      this.growing.set(key, run);
    } catch (e) {
      this.o.onGrowthError?.(list, e);
    }
  }

  /** The background growth of `list`, if one runs in this process (for jobs and tests). */
  growthOf(list: ListKey): Promise<void> | undefined {
    return this.growing.get(listId(list));
  }

  /** Grows `list` step by step until it has at least `target` buckets (resumes a started growth). */
  async growTo(list: ListKey, target: number): Promise<BucketLayout> {
    const key = listId(list);
    const capped = Math.min(target, this.maxBuckets);
    for (;;) {
      const layout = await this.store.getLayout(list);
      this.remember(key, layout);
      if (layout.growingTo === null && layout.buckets >= capped) return layout;
      const grown = await growList(this.store, list, {
        settleMs: this.ttlMs + (this.o.writeGraceMs ?? 5000),
        ...(this.o.growthCopyPageSize ? { copyPageSize: this.o.growthCopyPageSize } : {}),
        ...(this.o.sleep ? { sleep: this.o.sleep } : {}),
        onProgress: (p) => this.o.onGrowthProgress?.(list, p),
      });
      this.remember(key, grown);
    }
  }

  private async layout(list: ListKey): Promise<BucketLayout> {
    const key = listId(list);
    const hit = this.cache.get(key);
    if (hit && this.ttlMs > 0 && Date.now() - hit.at < this.ttlMs) {
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit.layout;
    }
    const layout = await this.store.getLayout(list);
    if (this.ttlMs > 0) this.remember(key, layout);
    return layout;
  }

  /** Caches `layout` as the most recently used entry, evicting the least recently used past the bound. */
  private remember(key: string, layout: BucketLayout): void {
    this.cache.delete(key);
    this.cache.set(key, { layout, at: Date.now() });
    while (this.cache.size > this.cacheMaxEntries) {
      const oldest = this.cache.keys().next();
      if (oldest.done) break;
      this.cache.delete(oldest.value);
    }
  }
}

function assertLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit < 1) throw new InvalidInputError('limit', 'a positive integer');
}
