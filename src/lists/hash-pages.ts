/**
 * Pages and scan slices of a list still in hash buckets (`BucketLayout`): lists grown before time
 * buckets existed, until `jobs migrate-lists` moves them (`list-migration.ts`), and the dual-write
 * phase of that migration. `list-service.ts` dispatches here by the list's row mode.
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
 * Two directions (the API contract, Part 2). `older` pages continue from a `nextCursor` exactly
 * as above (the per-bucket ceilings are the fast path). A `newer` page goes back from a
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
 * it lies in between), so the cursor resumes exactly after the last item shown. The work budget
 * (`pageBudget` in `list-service.ts`) stops a page's rounds as its module note says.
 *
 * Scans: slices of the rank space (`scan-slices.ts`), each reading whole buckets where it owns
 * them and rank-filtered rows where a bucket is shared.
 */
import { bucketCode } from '../model/buckets.js';
import type { BucketLayout, ListEntry, ListKey, Position } from '../model/types.js';
import type { ListStore } from '../ports/list-store.js';
import type { ListPage, MemberFilter, ScanPage } from './contracts.js';
import type { CursorCodec, PageCursor, ScanPosition, TimeBounds } from './cursor/cursor-codec.js';
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
  RANK_SPACE,
  rankOf,
  sliceIndexes,
  sliceRange,
} from './cursor/scan-slices.js';
import { keyAbove, keyBelow, MIN_ID, toItem } from './page-keys.js';

export interface HashPageInput {
  store: Pick<ListStore, 'listBucket' | 'listBucketNewer'>;
  codec: CursorCodec;
  list: ListKey;
  /** The list's current layout (readers' `buckets`). */
  layout: BucketLayout;
  /** The decoded cursor, or null for the first page. */
  cursor: PageCursor | null;
  limit: number;
  newer: boolean;
  since: Position | null;
  until: Position | null;
  exclude: MemberFilter | undefined;
  /** Rows after which no further round starts (the first always runs). */
  budget: number;
}

/** One page of a hash-bucketed list by a k-way merge of its buckets (see the module note). */
export async function hashPage({
  store,
  codec,
  list,
  layout,
  cursor: c,
  limit,
  newer,
  since,
  until,
  exclude,
  budget,
}: HashPageInput): Promise<{ page: ListPage; buckets: number; budgetHit: boolean; stats: PageStats }> {
  const bounds: TimeBounds | undefined = since === null && until === null ? undefined : { since, until };
  const buckets = c ? Math.max(c.buckets, layout.buckets) : layout.buckets;
  const codes = Array.from({ length: buckets }, (_, b) => bucketCode(buckets, b));
  const open = (): BucketState[] =>
    Array.from({ length: buckets }, () => ({ exhausted: false, ceiling: null }));
  // A cursor of a smaller layout: each bucket inherits its parent's state (see the module note).
  const inherited = c ? Array.from({ length: buckets }, (_, b) => c.states[b & (c.buckets - 1)]!) : open();
  const stats: PageStats = { queries: 0, rowsRead: 0, buckets: 0, rounds: 0 };
  let budgetHit = false;
  const seal = (direction: 'older' | 'newer', after: ListEntry, gapUs: number, states = open()) =>
    codec.encodePage({
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
      exclude: exclude,
      toList: negate,
      fetch: async (code, from, n) => {
        const start = negate(from ?? negate(c.after));
        const rows =
          until === null
            ? await store.listBucketNewer(list, code, start, n)
            : await store.listBucketNewer(list, code, start, n, until);
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
      exclude: exclude,
      toList: (e) => e,
      fetch:
        since === null
          ? (code, from, n) => store.listBucket(list, code, from, n)
          : (code, from, n) => store.listBucket(list, code, from, n, since),
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
  return { page, buckets, budgetHit, stats };
}

export interface HashScanInput {
  store: Pick<ListStore, 'listBucket'>;
  codec: CursorCodec;
  list: ListKey;
  layout: BucketLayout;
  slice: number;
  requestedSlices: number;
  /** `ScanOptions.pinnedBuckets`, validated by the caller. */
  pinned: number | undefined;
  limit: number;
  cursor: string | null;
  exclude: MemberFilter | undefined;
}

/**
 * One slice of a scan of a hash-bucketed list (`ListService.scan`); `buckets` null when the slice
 * owns nothing under the pinned layout (nothing read).
 */
export async function hashScan({
  store,
  codec,
  list,
  layout,
  slice,
  requestedSlices,
  pinned,
  limit,
  cursor,
  exclude,
}: HashScanInput): Promise<{ page: ScanPage; buckets: number | null; stats: PageStats | null }> {
  const slices = effectiveSlices(requestedSlices, pinned);
  if (slice >= slices) {
    // Owns nothing under the pinned layout; a cursor here can only be forged or misrouted.
    if (cursor) codec.decodeScan(cursor, list, slice, requestedSlices);
    return { page: { ids: [], nextCursor: null }, buckets: null, stats: null };
  }
  let buckets = layout.buckets;
  let nextIndex: number;
  const pending: ScanPosition[] = [];
  if (cursor) {
    const c = codec.decodeScan(cursor, list, slice, slices);
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
    const rows = await store.listBucket(list, p.code, p.after, size);
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
  const skip = exclude && ids.length > 0 ? await exclude(ids) : null;
  const kept = skip && skip.size > 0 ? ids.filter((id) => !skip.has(id)) : ids;
  const done = pending.length === 0 && nextIndex >= endIndex;
  const nextCursor = done ? null : codec.encodeScan({ list, slice, slices, buckets, nextIndex, pending });
  return { page: { ids: kept, nextCursor }, buckets, stats };
}

/** The key space in which ascending list order is descending (what `mergePage` walks). */
const negate = (e: ListEntry): ListEntry => ({ createdAt: -e.createdAt, otherId: -e.otherId });

/** A merge state between the two key spaces (a ceiling in one is a floor in the other). */
const negateState = (s: BucketState): BucketState =>
  s.ceiling === null ? s : { exhausted: s.exhausted, ceiling: -s.ceiling };

/** Mean µs between consecutive entries (newest first); 0 when unknown. */
function spacing(items: readonly ListEntry[]): number {
  if (items.length < 2) return 0;
  return Number(items[0]!.createdAt - items.at(-1)!.createdAt) / (items.length - 1);
}

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
