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
 * LRU of at most `layoutCacheMaxEntries` lists (`lru-cache`: a hit makes the entry the most
 * recently used, an insert past the bound evicts the least recently used), so reading many users'
 * lists cannot grow it without limit. Evicting early is always safe: it only costs one
 * `getLayout` read.
 *
 * Growth is triggered by sizes writers read after an insert (`noteSize`). Reading the size on
 * every insert cost two of a follow's twenty statements per list; `sizeCheckDue` skips it while
 * the inserts this process made since its last size read are under 1/`SIZE_CHECK_SHARE` of the
 * headroom to the next threshold (and the size is under a minute old). A single process therefore
 * still reads the size on the very insert that crosses a threshold; P processes writing one list
 * can pass it by about (P / `SIZE_CHECK_SHARE` − 1) × the headroom before one of them reads, which
 * the thresholds' margin under the partition bound absorbs (a celebrity's lists are sized on
 * almost every insert near a threshold). The sizes share the layout cache's LRU bound.
 *
 * Two directions (the API contract, Part 2). `older` pages continue from a `nextCursor` exactly
 * as above (the per-bucket ceilings are the fast path; its cost is unchanged). A `newer` page goes back from a
 * `prevCursor`, whose boundary is the first (newest) item of the page it came from: every bucket
 * is read *upward* from strictly above the boundary (`listBucketNewer`, the clustering order
 * reversed) and merged by the same `mergePage` run in the negated key space — negating
 * `(created_at, other_id)` turns "ascending" into "descending", so the merge, its placeholders and
 * its fetch sizing need no second copy. It takes `limit + 1` items: the extra one says whether
 * anything newer is left (`prevCursor` null on reaching the newest, so a walk back ends exactly
 * at the first page) and is not shown; the rest are returned reversed, newest first. The cursors
 * a newer page issues carry a boundary only (every bucket "open"): its `nextCursor` continues
 * older below its last item, its `prevCursor` newer above its first. An older page's `prevCursor`
 * is likewise boundary-only, above its first item; the first page (no cursor) has none. An empty
 * page's cursors use the key just beside the boundary so the boundary item itself is not lost.
 * Cursors bind direction and bounds (see `cursor-codec.ts`): a prev cursor sent as a next cursor,
 * or with other `since` / `until`, is an `InvalidCursorError`.
 *
 * Time bounds `[since, until)` come from the clustering order, never from a scan: an older read
 * starts at `(until, MIN_ID)` (so the first row is the newest below `until`) and the store stops
 * each bucket at `since` (`listBucket(…, since)`); a newer read stops each bucket below `until`
 * (`listBucketNewer(…, until)`) and cannot go below `since` since it starts above an item that
 * was inside the range.
 *
 * The member filter (`PageOptions.exclude`) is applied to each merged batch, once per round: the
 * first round merges `limit` items, the filter drops the excluded ones, and the next round merges
 * on from the same boundary and states. A later round merges what the pass rate so far says the
 * missing items take (at most twice the previous round), so a run of skipped members costs a few
 * rounds, not one per member. A round that merges past the page's last kept item is cut there:
 * the boundary is that item and each bucket's state is the first row it contributed past the cut
 * (an exact head), or, for a bucket that contributed none, its state at the round's end (no row of
 * it lies in between), so the cursor resumes exactly after the last item shown.
 *
 * Work budget (the API contract, Part 3, "Any list or set page may come back short"). Skipped members cost
 * reads without filling the page: 3,000 deactivated followers at the head made one `limit=1` page
 * read 3,001 buckets and 3,002 user rows, a cost a sock-puppet run imposes on every viewer. A page
 * therefore starts no further round once it has read `pageBudget(limit)` rows (`PAGE_BUDGET_PER_ITEM`
 * = 10 per item asked, at least `PAGE_MIN_BUDGET` = 1,000) and answers what it kept, possibly
 * nothing, with a cursor at the last merged row (older: `nextCursor`; newer: `prevCursor`), past
 * every skipped member. The first round always runs, so a page without skipped members is never
 * cut and every page makes progress. Why these numbers: a page stays full through up to ~90%
 * skipped members; the floor lets a `limit=1` page pass a thousand of them; and the bound holds
 * every other cost too: the filter reads at most the rows merged (one user row each), and a bucket
 * query returns rows or exhausts its bucket for the rest of the page, so queries stay under rows +
 * buckets. The last round may overrun the budget by one round's overfetch (a row per bucket).
 */

import type { LRUCache } from 'lru-cache';
import { bucketCode } from '../model/buckets.js';
import { nowPosition } from '../model/clock.js';
import { InvalidInputError } from '../model/errors.js';
import { boundedLru } from '../model/lru.js';
import { type Directory, nextBucketId, type RowMode, rowMode, writeCodes } from '../model/time-buckets.js';
import type { BucketLayout, ListEntry, ListKey, Position } from '../model/types.js';
import { listId } from '../model/types.js';
import type { ListStore } from '../ports/store.js';
import type {
  ListItem,
  ListPage,
  ListService,
  MemberFilter,
  PageOptions,
  RowPlacement,
  ScanOptions,
  ScanPage,
} from './contracts.js';
import {
  CursorCodec,
  MAX_BUCKETS,
  type PageExpectation,
  type ScanPosition,
  type TimeBounds,
} from './cursor/cursor-codec.js';
import {
  type BucketState,
  type FetchBucket,
  type MergePageResult,
  mergePage,
  type PageStats,
} from './cursor/merge.js';
import {
  bucketAtIndex,
  effectiveSlices,
  indexInside,
  indexOfBucket,
  log2,
  MAX_SLICES,
  RANK_SPACE,
  rankOf,
  sliceIndexes,
  sliceRange,
} from './cursor/scan-slices.js';
import { type GrowthProgress, growList } from './list-growth.js';
import { readNewer, readOlder, scanTimeSlice } from './time-pages.js';

export interface ListServiceOptions {
  store: ListStore;
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

export interface ListReadStats extends PageStats {
  kind: 'page' | 'scan';
  list: ListKey;
  /** Items returned. */
  items: number;
  /** Buckets in the layout read. */
  layout: number;
  /** True when the page stopped at its work budget (short, with a cursor). */
  budgetHit: boolean;
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

/**
 * Rows at which a time bucket closes by default: a 9M list in 36 buckets of about 13 MiB (the
 * chart in the README, `bench:buckets`, measured page cost against bucket size).
 */
export const DEFAULT_TIME_BUCKET_ROWS = 250_000;

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
  maxBuckets = MAX_BUCKETS,
): number | null {
  const buckets = bucketsForSize(size, thresholds, maxBuckets);
  return buckets >= maxBuckets ? null : (thresholds[Math.log2(buckets)] ?? null);
}

export class BucketedListService implements ListService {
  private readonly store: ListStore;
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
    this.maxBuckets = Math.min(o.maxBuckets ?? MAX_BUCKETS, MAX_BUCKETS);
  }

  /**
   * Newest-first page (created_at DESC, other_id DESC) by a k-way merge of the list's buckets;
   * `options` picks the direction, the time range and the member filter (see the module note).
   * Throws `InvalidCursorError` for a cursor not issued here for `list` with the same direction
   * and bounds, `InvalidInputError` for a limit below 1 or `since >= until`.
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
    const [layout, directory] = await Promise.all([this.layout(list), this.directory(list)]);
    const c = cursor ? this.codec.decodePage(cursor, list, expect) : null;
    const mode = rowMode(directory, layout);
    if (mode === 'time' || mode === 'flipped') {
      return this.timePage(list, directory, limit, c?.after ?? null, newer, since, until, options.exclude);
    }
    const buckets = c ? Math.max(c.buckets, layout.buckets) : layout.buckets;
    const codes = Array.from({ length: buckets }, (_, b) => bucketCode(buckets, b));
    const open = (): BucketState[] =>
      Array.from({ length: buckets }, () => ({ exhausted: false, ceiling: null }));
    // A cursor of a smaller layout: each bucket inherits its parent's state (see the module note).
    const inherited = c ? Array.from({ length: buckets }, (_, b) => c.states[b & (c.buckets - 1)]!) : open();
    const stats: PageStats = { queries: 0, rowsRead: 0, buckets: 0, rounds: 0 };
    const budget = (this.o.pageBudget ?? pageBudget)(limit);
    let budgetHit = false;
    const seal = (direction: 'older' | 'newer', after: ListEntry, gapUs: number, states = open()) =>
      this.codec.encodePage({
        list,
        buckets,
        after,
        gapUs,
        states,
        ...(direction === 'newer' ? { direction } : {}),
        ...(bounds ? { bounds } : {}),
      });

    let page: ListPage;
    if (c && newer) {
      // Upward from the boundary, in the negated key space (floors become ceilings).
      const r = await collect({
        codes,
        states: inherited.map((st) => ({
          exhausted: st.exhausted,
          ceiling: st.ceiling === null ? null : -st.ceiling,
        })),
        after: negate(c.after),
        gapUs: c.gapUs,
        want: limit + 1,
        budget,
        stats,
        exclude: options.exclude,
        toList: negate,
        fetch: async (code, from, n) => {
          const start = negate(from ?? negate(c.after));
          const rows =
            until === null
              ? await this.store.listBucketNewer(list, code, start, n)
              : await this.store.listBucketNewer(list, code, start, n, until);
          return rows.map(negate);
        },
      });
      const shown = r.items.slice(0, limit).reverse();
      const newest = shown[0];
      const oldest = shown.at(-1);
      budgetHit = r.budgetHit;
      // Stopped by the budget: newer pages go on from the last row merged, past the skipped ones.
      const upFrom = r.budgetHit && r.after ? negate(r.after) : null;
      page = {
        items: shown.map(toItem),
        nextCursor: seal('older', oldest ?? keyAbove(c.after), r.gapUs),
        prevCursor: upFrom
          ? seal('newer', upFrom, r.gapUs, r.states.map(negateState))
          : r.items.length > limit && newest
            ? seal('newer', newest, r.gapUs)
            : null,
      };
    } else {
      const r = await collect({
        codes,
        states: inherited,
        after: c ? c.after : until !== null ? { createdAt: until, otherId: MIN_ID } : null,
        gapUs: c?.gapUs ?? 0,
        want: limit,
        budget,
        stats,
        exclude: options.exclude,
        toList: (e) => e,
        fetch:
          since === null
            ? (code, from, n) => this.store.listBucket(list, code, from, n)
            : (code, from, n) => this.store.listBucket(list, code, from, n, since),
      });
      const first = r.items[0];
      budgetHit = r.budgetHit;
      // From `(until, MIN_ID)` the merge would count the empty span below `until` as gaps between
      // rows (until=9999 would make every later page fetch limit + 1 rows from every bucket).
      const gapUs = c || until === null ? r.gapUs : spacing(r.items);
      page = {
        items: r.items.map(toItem),
        nextCursor: r.done || !r.after ? null : seal('older', r.after, gapUs, r.states),
        prevCursor: c ? seal('newer', first ?? keyBelow(c.after), r.gapUs) : null,
      };
    }
    this.o.onPage?.({ kind: 'page', list, items: page.items.length, layout: buckets, budgetHit, ...stats });
    return page;
  }

  /** A page of a time-bucketed list (`time-pages.ts`); cursors carry the boundary only. */
  private async timePage(
    list: ListKey,
    directory: Directory,
    limit: number,
    after: ListEntry | null,
    newer: boolean,
    since: Position | null,
    until: Position | null,
    exclude: MemberFilter | undefined,
  ): Promise<ListPage> {
    const bounds: TimeBounds | undefined = since === null && until === null ? undefined : { since, until };
    const stats: PageStats = { queries: 0, rowsRead: 0, buckets: 0, rounds: 0 };
    const budget = (this.o.pageBudget ?? pageBudget)(limit);
    const seal = (direction: 'older' | 'newer', at: ListEntry) =>
      this.codec.encodePage({
        list,
        buckets: 1,
        after: at,
        gapUs: 0,
        states: [{ exhausted: false, ceiling: null }],
        ...(direction === 'newer' ? { direction } : {}),
        ...(bounds ? { bounds } : {}),
      });
    const base = { store: this.store, list, directory, budget, stats, exclude };
    let page: ListPage;
    let budgetHit: boolean;
    if (after && newer) {
      const r = await readNewer({ ...base, after, until, want: limit + 1 });
      budgetHit = r.budgetHit;
      const shown = r.items.slice(0, limit).reverse();
      const newest = shown[0];
      page = {
        items: shown.map(toItem),
        nextCursor: seal('older', shown.at(-1) ?? keyAbove(after)),
        prevCursor:
          r.budgetHit && r.last
            ? seal('newer', r.last)
            : r.items.length > limit && newest
              ? seal('newer', newest)
              : null,
      };
    } else {
      const from = after ?? (until !== null ? { createdAt: until, otherId: MIN_ID } : null);
      const r = await readOlder({ ...base, after: from, since, want: limit });
      budgetHit = r.budgetHit;
      const resume = r.last ?? from;
      page = {
        items: r.items.map(toItem),
        nextCursor: r.done || !resume ? null : seal('older', resume),
        prevCursor: after ? seal('newer', r.items[0] ?? keyBelow(after)) : null,
      };
    }
    this.o.onPage?.({ kind: 'page', list, items: page.items.length, layout: 1, budgetHit, ...stats });
    return page;
  }

  /**
   * One scan slice of a time-bucketed list (`time-pages.ts`): the slice's buckets by owner key.
   * A hash-bucket scan cursor issued before the list migrated is refused (`InvalidCursorError`).
   */
  private async timeScan(
    list: ListKey,
    directory: Directory,
    slice: number,
    slices: number,
    limit: number,
    cursor: string | null,
    exclude: MemberFilter | undefined,
  ): Promise<ScanPage> {
    const pos = cursor ? this.codec.decodeTimeScan(cursor, list, slice, slices) : { key: 0, after: null };
    const stats: PageStats = { queries: 0, rowsRead: 0, buckets: 0, rounds: 0 };
    const r = await scanTimeSlice(this.store, list, directory, slice, slices, limit, pos, stats);
    const skip = exclude && r.ids.length > 0 ? await exclude(r.ids) : null;
    const kept = skip && skip.size > 0 ? r.ids.filter((id) => !skip.has(id)) : r.ids;
    this.o.onPage?.({ kind: 'scan', list, items: kept.length, layout: 1, budgetHit: false, ...stats });
    return {
      ids: kept,
      nextCursor: r.next ? this.codec.encodeTimeScan({ list, slice, slices, ...r.next }) : null,
    };
  }

  /**
   * One slice of a fan-out scan: `slices` (1..1024) disjoint slices cover every member exactly once
   * (see `scan-slices.ts`); order within a slice is bucket by bucket, each in clustering order.
   * Throws `InvalidCursorError` for a cursor not issued for this list and slice, `InvalidInputError`
   * for a slice, slice count or limit out of range.
   *
   * `options.pinnedBuckets` (a layout size the caller read once, e.g. `currentLayout(list)`, and
   * passes to every slice of the scan) caps the slices that own rows at `min(slices, pinned)`:
   * see `effectiveSlices` in `scan-slices.ts`. Slices at or above the cap are empty at once; the
   * others own whole buckets and read nothing they do not return. All slices of one scan must pass
   * the same value (and the same value again with their cursors).
   */
  async scan(
    list: ListKey,
    slice: number,
    requestedSlices: number,
    limit: number,
    cursor: string | null,
    options: ScanOptions = {},
  ): Promise<ScanPage> {
    if (!Number.isInteger(requestedSlices) || requestedSlices < 1 || requestedSlices > MAX_SLICES) {
      throw new InvalidInputError('slices', `an integer from 1 to ${MAX_SLICES}`);
    }
    if (!Number.isInteger(slice) || slice < 0 || slice >= requestedSlices) {
      throw new InvalidInputError('slice', 'an integer from 0 to slices - 1');
    }
    const pinned = options.pinnedBuckets;
    if (
      pinned !== undefined &&
      (!Number.isInteger(pinned) || pinned < 1 || pinned > MAX_BUCKETS || 2 ** log2(pinned) !== pinned)
    ) {
      throw new InvalidInputError('pinnedBuckets', `a power of two from 1 to ${MAX_BUCKETS}`);
    }
    assertLimit(limit);
    const [current, directory] = await Promise.all([this.layout(list), this.directory(list)]);
    const mode = rowMode(directory, current);
    if (mode === 'time' || mode === 'flipped') {
      return this.timeScan(list, directory, slice, requestedSlices, limit, cursor, options.exclude);
    }
    const slices = effectiveSlices(requestedSlices, pinned);
    if (slice >= slices) {
      // Owns nothing under the pinned layout; a cursor here can only be forged or misrouted.
      if (cursor) this.codec.decodeScan(cursor, list, slice, requestedSlices);
      return { ids: [], nextCursor: null };
    }
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
    // One filter call per scan page; the cursor already lies past the skipped members.
    const skip = options.exclude && ids.length > 0 ? await options.exclude(ids) : null;
    const kept = skip && skip.size > 0 ? ids.filter((id) => !skip.has(id)) : ids;
    this.o.onPage?.({ kind: 'scan', list, items: kept.length, layout: buckets, budgetHit: false, ...stats });
    const done = pending.length === 0 && nextIndex >= endIndex;
    const nextCursor = done
      ? null
      : this.codec.encodeScan({ list, slice, slices, buckets, nextIndex, pending });
    return { ids: kept, nextCursor };
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
      pinnedBuckets?: number;
    } = {},
  ): AsyncGenerator<ScanBatch> {
    let cursor = o.cursor ?? null;
    const options = o.pinnedBuckets === undefined ? {} : { pinnedBuckets: o.pinnedBuckets };
    do {
      const page = await this.scan(list, o.slice ?? 0, o.slices ?? 1, o.batchSize ?? 1000, cursor, options);
      cursor = page.nextCursor;
      if (page.ids.length > 0 || cursor === null) yield { ids: page.ids, cursor };
    } while (cursor !== null);
  }

  /** Where `list`'s rows go now (`ListService`); layout and directory cached for `layoutCacheTtlMs`. */
  async placement(list: ListKey): Promise<RowPlacement> {
    const [layout, directory] = await Promise.all([this.layout(list), this.directory(list)]);
    return { layout, codes: (entry) => writeCodes(layout, directory, entry) };
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
    const layout = await this.layout(list);
    if (rowMode(directory, layout) !== 'time') return;
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

  /** Sets `mode` on `list`'s directory (a migration's steps; a time list's first growth). */
  async setRowMode(list: ListKey, mode: RowMode, expected?: Directory): Promise<boolean> {
    const directory = expected ?? (await this.store.getDirectory(list));
    const applied = await this.store.updateDirectory(list, directory.version, { mode });
    const fresh = await this.store.getDirectory(list);
    this.directories.set(listId(list), { directory: fresh, at: this.now() });
    return applied;
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
      let directory = await this.store.getDirectory(list);
      const mode = rowMode(directory, layout);
      // A migration moves this list's rows; its inverse edges grow once it is done.
      if (mode === 'dual' || mode === 'flipped') return layout;
      if (mode === 'time' && directory.mode === null) {
        // Stored before the layout changes, so no reader or writer can take the grown layout for a
        // hash list's (`rowMode`); the growth's first settle passes before the layout flips.
        await this.setRowMode(list, 'time', directory);
        directory = await this.directory(list);
        if (rowMode(directory, layout) !== 'time') continue;
      }
      const grown = await growList(this.store, list, {
        listRows: mode === 'hash',
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

/** The smallest and largest ids: `(t, MIN_ID)` lies below every key at time `t`. */
const MIN_ID = -(1n << 63n);
const MAX_ID = (1n << 63n) - 1n;

/** The key space in which ascending list order is descending (what `mergePage` walks). */
const negate = (e: ListEntry): ListEntry => ({ createdAt: -e.createdAt, otherId: -e.otherId });

/** A merge state between the two key spaces (a ceiling in one is a floor in the other). */
const negateState = (s: BucketState): BucketState =>
  s.ceiling === null ? s : { exhausted: s.exhausted, ceiling: -s.ceiling };

/** The key just newer than `e`: an older read from it starts with `e` itself. */
const keyAbove = (e: ListEntry): ListEntry =>
  e.otherId === MAX_ID ? { createdAt: e.createdAt + 1n, otherId: MIN_ID } : { ...e, otherId: e.otherId + 1n };

/** The key just older than `e`: a newer read from it starts with `e` itself. */
const keyBelow = (e: ListEntry): ListEntry =>
  e.otherId === MIN_ID ? { createdAt: e.createdAt - 1n, otherId: MAX_ID } : { ...e, otherId: e.otherId - 1n };

/** Mean µs between consecutive entries (newest first); 0 when unknown. */
function spacing(items: readonly ListEntry[]): number {
  if (items.length < 2) return 0;
  return Number(items[0]!.createdAt - items.at(-1)!.createdAt) / (items.length - 1);
}

const toItem = (e: ListEntry): ListItem => ({
  id: e.otherId,
  createdAt: e.createdAt,
  ...(e.username === undefined ? {} : { username: e.username }),
});

interface CollectInput {
  codes: readonly number[];
  states: BucketState[];
  /** Boundary in the merge's key space. */
  after: ListEntry | null;
  gapUs: number;
  /** Items wanted after filtering. */
  want: number;
  /** No round starts once `stats.rowsRead` reaches this (the first always runs). */
  budget: number;
  stats: PageStats;
  exclude: MemberFilter | undefined;
  /** Merge key space → list keys (identity, or `negate` for newer pages). */
  toList: (e: ListEntry) => ListEntry;
  fetch: FetchBucket;
}

/**
 * Merges rounds until `want` items survive the member filter, the list ends, or the rows read
 * reach `budget` (see the module note). Returns the kept items (list keys, merge order) and the
 * boundary and states (merge key space) after the last item kept, or after the last item merged
 * when the page is not full; `done` when the list has nothing past that boundary, `budgetHit`
 * when the budget stopped the page.
 */
async function collect(o: CollectInput) {
  const items: ListEntry[] = [];
  let { states, after, gapUs } = o;
  let done = false;
  let budgetHit = false;
  let merged = 0;
  let size = 0;
  while (items.length < o.want) {
    const need = o.want - items.length;
    if (size === 0) {
      size = need;
    } else {
      const left = o.budget - o.stats.rowsRead;
      if (left <= 0) {
        budgetHit = true;
        break;
      }
      const expected = Math.ceil((need * merged) / Math.max(1, items.length));
      size = Math.max(1, Math.min(expected, 2 * size, left));
    }
    const r = await mergePage({ codes: o.codes, states, after, limit: size, gapUs, fetch: o.fetch });
    o.stats.queries += r.stats.queries;
    o.stats.rowsRead += r.stats.rowsRead;
    o.stats.buckets += r.stats.buckets; // summed over rounds: a bucket read in two rounds counts twice
    o.stats.rounds += r.stats.rounds;
    gapUs = r.gapUs;
    const batch = r.items.map(o.toList);
    const skip = o.exclude && batch.length > 0 ? await o.exclude(batch.map((e) => e.otherId)) : null;
    merged += batch.length;
    let cut = -1;
    for (let i = 0; i < batch.length && cut < 0; i++) {
      if (skip?.has(batch[i]!.otherId)) continue;
      items.push(batch[i]!);
      if (items.length === o.want) cut = i;
    }
    if (cut >= 0 && cut < batch.length - 1) {
      after = r.items[cut]!;
      states = statesAt(r, cut);
      break;
    }
    states = r.states;
    after = r.after;
    if (r.done || r.items.length < size) {
      done = true;
      break;
    }
  }
  return { items, after, states, gapUs, done, budgetHit };
}

/**
 * The bucket states at `r.items[cut]` rather than at the round's end: a bucket that contributed
 * rows past the cut has the first of them as its exact head; any other bucket has no row between
 * the cut and the round's end, so its end state holds at the cut too.
 */
function statesAt(r: MergePageResult, cut: number): BucketState[] {
  const states = r.states.map((s) => ({ ...s }));
  for (let i = r.items.length - 1; i > cut; i--) {
    states[r.sources[i]!] = { exhausted: false, ceiling: r.items[i]!.createdAt };
  }
  return states;
}

function assertLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit < 1) throw new InvalidInputError('limit', 'a positive integer');
}
