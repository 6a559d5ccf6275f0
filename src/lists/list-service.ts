/**
 * `ListService`: the list engine's one interface — pages, fan-out scans, where a row goes
 * (`placement`), the time-bucket directory and closing buckets at a size, and the trigger for the
 * inverse-edge layouts' online growth.
 *
 * Design note. Every list is read from time buckets (`time-pages.ts`: one partition per page, a
 * second only at a bucket boundary). The product card's merge cursor is honoured as its
 * one-bucket case: the buckets cover disjoint time ranges, so the list is already one ordered
 * sequence and needs no k-way merge, and the cursor is the merge cursor's boundary (the last key
 * emitted) with a single, open bucket state (`cursor-codec.ts`). The boundary is a list key, so a
 * walk resumes exactly past its last item whatever buckets close or split meanwhile. Cursors bind
 * direction and bounds: a prev cursor sent as a next cursor, or with other `since` / `until`, is
 * an `InvalidCursorError`. A list whose directory holds a mode of the retired hash-bucket engine
 * is refused, read or written (`rowMode`, `LegacyListModeError`).
 *
 * Layouts and directories are cached for `layoutCacheTtlMs`; a growth waits that long (plus
 * `writeGraceMs`) after announcing `growingTo`, and again before dropping the old buckets, and a
 * time bucket closes a lead ahead of the clock longer than the cache's age (`leadMs`). The caches
 * (and the sizes below) are LRUs of at most `layoutCacheMaxEntries` lists (`lru-cache`), so reading
 * many users' lists cannot grow them without limit. Evicting early is always safe: it only costs
 * one read.
 *
 * Growth (inverse-edge layouts) and closing (time buckets) are triggered by sizes writers read
 * after an insert (`noteSize`). A size read costs two statements per list, so `sizeCheckDue` skips
 * it while the inserts this process made since its last size read are under 1/`SIZE_CHECK_SHARE` of
 * the headroom to the next threshold (and the size is under a minute old). A single process
 * therefore still reads the size on the very insert that crosses a threshold; P processes writing
 * one list can pass it by about (P / `SIZE_CHECK_SHARE` − 1) × the headroom before one of them
 * reads, which the thresholds' margin under the partition bound absorbs.
 *
 * Work budget (the API contract, Part 3, "Any list or set page may come back short"). Skipped
 * members cost reads without filling the page: 3,000 deactivated followers at the head made one
 * `limit=1` page read 3,001 buckets and 3,002 user rows, a cost a sock-puppet run imposes on every
 * viewer. A page therefore starts no further round once it has read `pageBudget(limit)` rows
 * (`PAGE_BUDGET_PER_ITEM` = 10 per item asked, at least `PAGE_MIN_BUDGET` = 1,000) and answers what
 * it kept, possibly nothing, with a cursor at the last row read (older: `nextCursor`; newer:
 * `prevCursor`), past every skipped member. The first round always runs, so a page without skipped
 * members is never cut and every page makes progress. Why these numbers: a page stays full through
 * up to ~90% skipped members; the floor lets a `limit=1` page pass a thousand of them; and the
 * bound holds every other cost too: the filter reads at most the rows read, and a bucket query
 * returns rows or exhausts its bucket for the rest of the page. The last round may overrun the
 * budget by one round's overfetch.
 */

import type { LRUCache } from 'lru-cache';
import { MAX_LAYOUT_BUCKETS } from '../model/buckets.js';
import { nowPosition } from '../model/clock.js';
import { InvalidInputError } from '../model/errors.js';
import { boundedLru } from '../model/lru.js';
import { searchLayoutOf } from '../model/search.js';
import { type Directory, nextBucketId, rowMode, writeCodes } from '../model/time-buckets.js';
import { type BucketLayout, type ListEntry, type ListKey, listId, type Position } from '../model/types.js';
import type { ListStore } from '../ports/list-store.js';
import type { SearchStore } from '../ports/search-store.js';
import type { ListPage, ListService, PageOptions, RowPlacement, ScanOptions, ScanPage } from './contracts.js';
import { CursorCodec, type PageExpectation, type TimeBounds } from './cursor/cursor-codec.js';
import { type ListReadStats, type PageReads, timeListPage, timeListScan } from './list-pages.js';
import { searchPage } from './list-search.js';
import { type GrowthProgress, growList } from './reshape/list-growth.js';

export interface ListServiceOptions {
  /** The list rows, and the search rows search pages read. */
  store: ListStore & Pick<SearchStore, 'listSearchRows'>;
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
  /**
   * Rows at which a time-bucketed list closes its newest bucket (`model/time-buckets.ts`): a
   * writer that finds the newest bucket this full adds a boundary `boundaryLeadMs` ahead. Default
   * `DEFAULT_TIME_BUCKET_ROWS`.
   */
  timeBucketRows?: number;
  /**
   * How far ahead of its clock a new bucket boundary is placed. A writer places a row by its
   * `created_at` (its op's position) with a directory read at most `layoutCacheTtlMs` before; the
   * position may run ahead of the placing writer's clock by `positionLeadMs`, and the adder's and
   * the writer's clocks each lie within `clockSkewMs` of the database's. A boundary at least that
   * far ahead — TTL + position lead + 2 × skew — is in every writer's directory before any row at
   * or past it is placed (see `model/time-buckets.ts`). Default that sum (11 s).
   */
  boundaryLeadMs?: number;
  /** The clock bound between instances (the clock guard's), ms. Default 2,000. */
  clockSkewMs?: number;
  /** How far an op's position may run ahead of its writer's clock (the pair protocol's bound), ms. Default 5,000. */
  positionLeadMs?: number;
  /** Largest layout a list may grow to. Default and maximum 1,024. */
  maxBuckets?: number;
  /** Rows per growth copy page. Default 1,000. */
  growthCopyPageSize?: number;
  /** Rows a page of `limit` items may read before it stops short (default `pageBudget`). */
  pageBudget?: (limit: number) => number;
  /** Called once per page or scan page with its cost (e.g. for Prometheus). */
  onPage?: (s: ListReadStats) => void;
  /** Called when a background growth fails (it is retried on a later `noteSize`). */
  onGrowthError?: (list: ListKey, error: unknown) => void;
  /** Told after every growth step (started, each bucket copied, flipped, dropped). */
  onGrowthProgress?: (list: ListKey, p: GrowthProgress) => void;
  /** Injected for tests (growth waits). */
  sleep?: (ms: number) => Promise<void>;
  /** µs since the epoch (growth's tombstone versions); default the system clock. */
  clock?: () => Position;
  /** A monotonic clock (ms) for the ages of cached layouts and sizes; default `performance.now`. */
  monotonic?: () => number;
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
  maxBuckets = MAX_LAYOUT_BUCKETS,
): number {
  let buckets = 1;
  for (const t of thresholds) {
    if (size < t || buckets >= maxBuckets) break;
    buckets *= 2;
  }
  return buckets;
}

/**
 * Rows at which a time bucket closes by default: a 9M list in 36 buckets of about 13 MiB (the
 * chart in `docs/benchmarks.md`, `bench:buckets`, measured page cost against bucket size).
 */
export const DEFAULT_TIME_BUCKET_ROWS = 250_000;

/** The most slices a fan-out scan may be cut into. */
export const MAX_SLICES = 1024;

/** Rows a list page may read per item asked for before it stops short (see the module note). */
export const PAGE_BUDGET_PER_ITEM = 10;
/** The least rows-read budget of a list page. */
export const PAGE_MIN_BUDGET = 1000;

/** The rows-read budget of a list page of `limit` items: `max(10 × limit, 1000)`. */
export function pageBudget(limit: number): number {
  return Math.max(PAGE_BUDGET_PER_ITEM * limit, PAGE_MIN_BUDGET);
}

/** A writer reads a list's size once its inserts since the last read reach 1/this of the headroom. */
export const SIZE_CHECK_SHARE = 8;
/** A list's size read is reused for at most this long. */
export const SIZE_CHECK_MAX_AGE_MS = 60_000;

/** The next threshold above `size` that would grow the list, or null when none can. */
export function nextThreshold(
  size: number,
  thresholds: readonly number[],
  maxBuckets = MAX_LAYOUT_BUCKETS,
): number | null {
  const buckets = bucketsForSize(size, thresholds, maxBuckets);
  return buckets >= maxBuckets ? null : (thresholds[Math.log2(buckets)] ?? null);
}

export class BucketedListService implements ListService {
  private readonly store: ListStore & Pick<SearchStore, 'listSearchRows'>;
  private readonly codec: CursorCodec;
  private readonly ttlMs: number;
  private readonly maxBuckets: number;
  /** Layouts by list, with when they were read (an LRU; see the module note). */
  private readonly cache: LRUCache<string, { layout: BucketLayout; at: number }>;
  private readonly growing = new Map<string, Promise<void>>();
  /** Directories by list, with when they were read (an LRU like `cache`, same TTL). */
  private readonly directories: LRUCache<string, { directory: Directory; at: number }>;
  /** Bucket closes running in this process, by list. */
  private readonly closing = new Map<string, Promise<void>>();
  private readonly bucketRows: number;
  /** Per list: the size last read, when, and the inserts this process made since (LRU, as `cache`). */
  /**
   * Per list: the size last read, when, the inserts this process made since, and the size at which
   * its newest time bucket opened (`base`, null until a directory was seen) (LRU, as `cache`).
   */
  private readonly sized: LRUCache<
    string,
    { size: number; at: number; inserted: number; base: number | null }
  >;

  /** What a page or scan read needs of this service. */
  private reads(): PageReads {
    return { store: this.store, codec: this.codec, onPage: this.o.onPage };
  }

  /** The monotonic clock of cache ages (ms). */
  private now(): number {
    return (this.o.monotonic ?? performance.now.bind(performance))();
  }

  constructor(private readonly o: ListServiceOptions) {
    this.store = o.store;
    this.codec = new CursorCodec(o.cursorSecret);
    this.ttlMs = o.layoutCacheTtlMs ?? 2000;
    const max = Math.max(1, o.layoutCacheMaxEntries ?? 10_000);
    this.cache = boundedLru(max);
    this.sized = boundedLru(max);
    this.directories = boundedLru(max);
    this.bucketRows = o.timeBucketRows ?? DEFAULT_TIME_BUCKET_ROWS;
    if (!Number.isInteger(this.bucketRows) || this.bucketRows < 1) {
      throw new RangeError('timeBucketRows must be a positive integer');
    }
    this.maxBuckets = Math.min(o.maxBuckets ?? MAX_LAYOUT_BUCKETS, MAX_LAYOUT_BUCKETS);
  }

  /**
   * Newest-first page (created_at DESC, other_id DESC) of the list's time buckets (`time-pages.ts`);
   * `options` picks the direction, the time range and the member filter (see the module note).
   * Throws `InvalidCursorError` for a cursor not issued here for `list` with the same direction
   * and bounds, `InvalidInputError` for a limit below 1 or `since >= until`, `LegacyListModeError`
   * for a list stored by the retired hash-bucket engine.
   */
  async page(
    list: ListKey,
    limit: number,
    cursor: string | null,
    options: PageOptions = {},
  ): Promise<ListPage> {
    assertLimit(limit);
    const since = options.since ?? null;
    const until = options.until ?? null;
    if (since !== null && until !== null && since >= until) {
      throw new InvalidInputError('until', 'a time later than since');
    }
    const bounds: TimeBounds | undefined = since === null && until === null ? undefined : { since, until };
    const newer = options.direction === 'newer';
    const expect: PageExpectation = { direction: newer ? 'newer' : 'older', ...(bounds ? { bounds } : {}) };
    const directory = await this.directory(list);
    const c = cursor ? this.codec.decodePage(cursor, list, expect) : null;
    rowMode(directory);
    return timeListPage(this.reads(), {
      list,
      directory,
      limit,
      after: c?.after ?? null,
      newer,
      since,
      until,
      exclude: options.exclude,
      budget: (this.o.pageBudget ?? pageBudget)(limit),
    });
  }

  olderCursor(list: ListKey, last: ListEntry): string {
    return this.codec.encodePage({
      list,
      after: { createdAt: last.createdAt, otherId: last.otherId },
    });
  }

  /** A search page (`list-search.ts`), within the list pages' rows-read budget. */
  async search(
    list: ListKey,
    q: string,
    limit: number,
    cursor: string | null,
    options: Pick<PageOptions, 'exclude'> = {},
  ): Promise<ListPage> {
    assertLimit(limit);
    const budget = (this.o.pageBudget ?? pageBudget)(limit);
    const layout = searchLayoutOf(await this.directory(list));
    const { page } = await searchPage(
      { store: this.store, codec: this.codec, budget, layout },
      list,
      q,
      limit,
      cursor,
      options.exclude,
    );
    return page;
  }

  /**
   * One slice of a fan-out scan: `slices` (1..1024) disjoint slices cover every member exactly once
   * (slice `s` owns the time buckets whose owner key is `s` modulo `slices`, see `time-pages.ts`);
   * order within a slice is bucket by bucket, each in clustering order. Throws
   * `InvalidCursorError` for a cursor not issued for this list and slice, `InvalidInputError` for a
   * slice, slice count or limit out of range.
   */
  async scan(
    list: ListKey,
    slice: number,
    slices: number,
    limit: number,
    cursor: string | null,
    options: ScanOptions = {},
  ): Promise<ScanPage> {
    if (!Number.isInteger(slices) || slices < 1 || slices > MAX_SLICES) {
      throw new InvalidInputError('slices', `an integer from 1 to ${MAX_SLICES}`);
    }
    if (!Number.isInteger(slice) || slice < 0 || slice >= slices) {
      throw new InvalidInputError('slice', 'an integer from 0 to slices - 1');
    }
    assertLimit(limit);
    const directory = await this.directory(list);
    rowMode(directory);
    return timeListScan(this.reads(), {
      list,
      directory,
      slice,
      slices,
      limit,
      cursor,
      exclude: options.exclude,
    });
  }

  /**
   * Async iterator of id batches for in-process fan-out workers: one slice, resumable from any
   * batch's `cursor` (pass it as `cursor` to continue after a crash).
   */
  async *scanBatches(
    list: ListKey,
    o: {
      slice?: number;
      slices?: number;
      batchSize?: number;
      cursor?: string | null;
    } = {},
  ): AsyncGenerator<ScanBatch> {
    let cursor = o.cursor ?? null;
    do {
      const page = await this.scan(list, o.slice ?? 0, o.slices ?? 1, o.batchSize ?? 1000, cursor);
      cursor = page.nextCursor;
      if (page.ids.length > 0 || cursor === null) yield { ids: page.ids, cursor };
    } while (cursor !== null);
  }

  /**
   * Where `list`'s rows go now (`ListService`); layout and directory cached for `layoutCacheTtlMs`.
   * Throws `LegacyListModeError` for a list stored by the retired hash-bucket engine.
   */
  async placement(list: ListKey): Promise<RowPlacement> {
    const [layout, directory] = await Promise.all([this.layout(list), this.directory(list)]);
    rowMode(directory);
    return {
      layout,
      codes: (entry) => writeCodes(directory, entry),
      search: searchLayoutOf(directory),
    };
  }

  /** The list's time-bucket directory, cached for `layoutCacheTtlMs` (see `model/time-buckets.ts`). */
  async directory(list: ListKey): Promise<Directory> {
    const key = listId(list);
    const hit = this.directories.get(key);
    if (hit && this.ttlMs > 0 && this.now() - hit.at < this.ttlMs) return hit.directory;
    const directory = await this.store.getDirectory(list);
    if (this.ttlMs > 0) this.directories.set(key, { directory, at: this.now() });
    return directory;
  }

  /** The directory's change of mode or boundaries, then the fresh directory cached. */
  private async updateDirectory(
    list: ListKey,
    expected: Directory,
    change: Parameters<ListStore['updateDirectory']>[2],
  ): Promise<Directory> {
    await this.store.updateDirectory(list, expected.version, change);
    const fresh = await this.store.getDirectory(list);
    this.directories.set(listId(list), { directory: fresh, at: this.now() });
    return fresh;
  }

  /**
   * Closes the newest time bucket of `list` when it holds `bucketRows` rows by `size`: adds a
   * boundary `boundaryLeadMs` ahead of the clock (see `boundaryLeadMs`). A boundary already ahead
   * of the clock, or another runner's change (the compare-and-set fails), ends it.
   */
  private async closeBucketIfFull(list: ListKey, size: number): Promise<void> {
    const directory = await this.store.getDirectory(list);
    rowMode(directory);
    const newest = directory.buckets[0];
    const now = (this.o.clock ?? nowPosition)();
    // What `sizeCheckDue` measures the next close from.
    const noteBase = (base: number) => {
      const s = this.sized.peek(listId(list));
      if (s) s.base = base;
    };
    if (!newest) return;
    noteBase(newest.base);
    if (newest.start !== null && newest.start > now) return;
    if (size - newest.base < this.bucketRows) return;
    const start = now + BigInt(Math.round(this.leadMs() * 1000));
    const fresh = await this.updateDirectory(list, directory, {
      add: [{ id: nextBucketId(directory), start, base: size }],
    });
    noteBase(fresh.buckets[0]?.base ?? size);
  }

  /** The lead of a new boundary, ms (see `ListServiceOptions.boundaryLeadMs`). */
  leadMs(): number {
    return (
      this.o.boundaryLeadMs ?? this.ttlMs + (this.o.positionLeadMs ?? 5000) + 2 * (this.o.clockSkewMs ?? 2000)
    );
  }

  /** The list's layout now, for readers and writers (`ListService`); cached for `layoutCacheTtlMs`. */
  async currentLayout(list: ListKey): Promise<BucketLayout> {
    return this.layout(list);
  }

  /**
   * Whether the writer of `inserted` new rows in `list` should read its size for `noteSize` (see
   * the module note): yes for a list not sized here within `SIZE_CHECK_MAX_AGE_MS`, one whose cached
   * layout is growing, and once the inserts since the last size reach 1/`SIZE_CHECK_SHARE` of the
   * headroom to the next threshold.
   */
  sizeCheckDue(list: ListKey, inserted: number): boolean {
    const key = listId(list);
    const s = this.sized.peek(key);
    if (!s || this.now() - s.at > SIZE_CHECK_MAX_AGE_MS) return true;
    if (this.cache.peek(key)?.layout.growingTo != null) return true;
    s.inserted += inserted;
    const grow = nextThreshold(s.size, this.o.bucketThresholds, this.maxBuckets);
    const close = s.base === null ? null : s.base + this.bucketRows;
    const next = grow === null ? close : close === null ? grow : Math.min(grow, close);
    return next !== null && s.inserted * SIZE_CHECK_SHARE >= next - s.size;
  }

  /** Starts a background growth when `size` crossed the list's next threshold. Never throws. */
  noteSize(list: ListKey, size: number): void {
    try {
      const key = listId(list);
      const base = this.directories.peek(key)?.directory.buckets[0]?.base ?? this.sized.peek(key)?.base ?? 0;
      this.sized.set(key, { size, at: this.now(), inserted: 0, base });
      if (!this.closing.has(key) && size - base >= this.bucketRows) {
        const close = this.closeBucketIfFull(list, size)
          .catch((e: unknown) => this.o.onGrowthError?.(list, e))
          .finally(() => this.closing.delete(key));
        this.closing.set(key, close);
      }
      if (this.growing.has(key)) return;
      const target = bucketsForSize(size, this.o.bucketThresholds, this.maxBuckets);
      const cached = this.cache.peek(key)?.layout;
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
      rowMode(await this.store.getDirectory(list));
      const grown = await growList(this.store, list, {
        listRows: false,
        settleMs: this.ttlMs + (this.o.writeGraceMs ?? 5000),
        ...(this.o.growthCopyPageSize ? { copyPageSize: this.o.growthCopyPageSize } : {}),
        ...(this.o.sleep ? { sleep: this.o.sleep } : {}),
        ...(this.o.clock ? { clock: this.o.clock } : {}),
        onProgress: (p) => this.o.onGrowthProgress?.(list, p),
      });
      this.remember(key, grown);
    }
  }

  private async layout(list: ListKey): Promise<BucketLayout> {
    const key = listId(list);
    const hit = this.cache.get(key);
    if (hit && this.ttlMs > 0 && this.now() - hit.at < this.ttlMs) return hit.layout;
    const layout = await this.store.getLayout(list);
    if (this.ttlMs > 0) this.remember(key, layout);
    return layout;
  }

  /** Caches `layout` as the most recently used entry, evicting the least recently used past the bound. */
  private remember(key: string, layout: BucketLayout): void {
    this.cache.set(key, { layout, at: this.now() });
  }
}

function assertLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit < 1) throw new InvalidInputError('limit', 'a positive integer');
}
