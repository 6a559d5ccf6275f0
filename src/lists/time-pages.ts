/**
 * Pages and scan slices of a time-bucketed list (`model/time-buckets.ts`).
 *
 * Design note. A list's time buckets cover disjoint, ordered `created_at` ranges, so the list in
 * order is the buckets' rows concatenated, newest bucket first: no merge. An older page starts in
 * the bucket that holds its boundary (the cursor's last item, or `until`), reads it from there with
 * `LIMIT need + 1`, and moves to the next older bucket only when the page is not full; a newer page
 * reads upward from its boundary (the clustering order reversed) and moves to newer buckets the
 * same way. The boundary is a list key `(created_at, other_id)`, so a cursor resumes exactly past
 * it whatever buckets were added or split since it was issued. `since` stops an older page at the
 * bucket that holds it; `until` stops a newer one.
 *
 * The extra row says whether the list goes on: an older page returns a null cursor only once it
 * read the oldest bucket in range to its end, and a full page whose last fetch ended with it (rows
 * skipped by the member filter, or a bucket's last row) fetches one more row to know, so the last
 * page of a list says it is the last.
 *
 * The member filter and the work budget are those of `list-service.ts`: each round's rows go
 * through the filter once; a round that lost rows to the filter doubles the next fetch (up to the
 * budget left); once the rows read reach the budget the page stops short with a cursor past the
 * last row read. The first round always runs.
 *
 * Every bucket read is bounded by the bucket's range (`upperOf`): a split parent keeps its moved
 * rows until the split deletes them (`bucket-split.ts`), and they must not show twice. An older
 * read of bucket `i` starts no newer than `(upper, MIN_ID)`; a newer read stops below `upper`.
 * Without splits every row lies in its bucket's range and the bound changes nothing.
 *
 * Scans: slice `s` of `S` owns the buckets whose owner key (`ownerKeyOf`) is `s` modulo `S` and
 * reads them group by group (the buckets sharing a key), each group newest bucket first, each
 * bucket in clustering order within its range. Keys are stable (a bucket's key never changes, a
 * split's children take their parent's, and boundaries are only added), so slices started at
 * different moments agree, every row is read by exactly one slice, and a bucket opened mid-scan
 * belongs to exactly one slice, which reads it if it opened before that slice finished. A group
 * covers one contiguous time range (the parent's before its split), read newest first, so the
 * position `{ key, after }` means "the group's rows older than `after`" whichever of parent or
 * children holds them: a cursor taken in a parent before a split's flip resumes in the child that
 * holds `after` after it, exactly (the children hold exactly the parent's rows of their ranges).
 */
import { bucketIndexFor, type Directory, ownerKeyOf, upperOf } from '../model/time-buckets.js';
import type { ListEntry, ListKey, Position } from '../model/types.js';
import type { ListStore } from '../ports/list-store.js';
import type { MemberFilter } from './contracts.js';

type Reader = Pick<ListStore, 'listBucket' | 'listBucketNewer'>;

/** Per-page cost, for metrics and tests. */
export interface PageStats {
  /** Bucket queries issued. */
  queries: number;
  /** Rows returned by those queries (kept or not). */
  rowsRead: number;
  /** Distinct buckets queried. */
  buckets: number;
  /** Sequential rounds of queries: what page latency follows. */
  rounds: number;
}

export interface TimeRead {
  store: Reader;
  list: ListKey;
  directory: Directory;
  /** Items wanted after filtering. */
  want: number;
  /** No round starts once `stats.rowsRead` reaches this (the first always runs). */
  budget: number;
  stats: PageStats;
  exclude?: MemberFilter | undefined;
}

export interface TimeReadResult {
  /** Kept items in read order (older: newest first; newer: oldest first). */
  items: ListEntry[];
  /** The last row read (kept or skipped): where the next page of this direction resumes. */
  last: ListEntry | null;
  /** True when nothing lies past `last` in this direction (within the bounds). */
  done: boolean;
  budgetHit: boolean;
}

/** Rows of the bucket at `index` strictly past `from` in the read's direction, at most `n`. */
type Fetch = (index: number, from: ListEntry | null, n: number) => Promise<ListEntry[]>;

/** The smallest id: `(t, MIN_ID)` lies below every key at time `t`. */
const MIN_ID = -(1n << 63n);

/**
 * An older read's start in the bucket at `index`: `from`, or `(upper, MIN_ID)` when that is older
 * (rows at or past the bucket's upper end are not its own; see the module note).
 */
export function olderStart(directory: Directory, index: number, from: ListEntry | null): ListEntry | null {
  const upper = upperOf(directory, index);
  if (upper === null || (from !== null && from.createdAt < upper)) return from;
  return { createdAt: upper, otherId: MIN_ID };
}

/**
 * Reads toward older rows from `after` (exclusive; null: the newest), stopping at `since`
 * (inclusive bound, µs) when given.
 */
export function readOlder(
  o: TimeRead & { after: ListEntry | null; since: Position | null },
): Promise<TimeReadResult> {
  const { directory, since } = o;
  const start = o.after ? bucketIndexFor(directory, o.after.createdAt) : 0;
  const fetch: Fetch = (index, from, n) => {
    const id = directory.buckets[index]?.id as number;
    const start = olderStart(directory, index, from);
    return since === null
      ? o.store.listBucket(o.list, id, start, n)
      : o.store.listBucket(o.list, id, start, n, since);
  };
  return read(o, o.after, start, fetch, (i) => {
    const b = directory.buckets[i];
    // The oldest bucket, or one that holds `since`: nothing older is in range.
    if (i + 1 >= directory.buckets.length || (since !== null && b?.start != null && b.start <= since))
      return null;
    return i + 1;
  });
}

/** Reads toward newer rows from `after` (exclusive), below `until` (µs) when given. */
export function readNewer(
  o: TimeRead & { after: ListEntry; until: Position | null },
): Promise<TimeReadResult> {
  const { directory, until } = o;
  const start = bucketIndexFor(directory, o.after.createdAt);
  const fetch: Fetch = (index, from, n) => {
    const id = directory.buckets[index]?.id as number;
    const boundary = from ?? o.after;
    const upper = upperOf(directory, index);
    const below = upper === null ? until : until === null || upper < until ? upper : until;
    return below === null
      ? o.store.listBucketNewer(o.list, id, boundary, n)
      : o.store.listBucketNewer(o.list, id, boundary, n, below);
  };
  return read(o, o.after, start, fetch, (i) => {
    if (i === 0) return null;
    const newer = directory.buckets[i - 1];
    // Every row of the next newer bucket is at or past `until`.
    if (until !== null && newer?.start != null && newer.start >= until) return null;
    return i - 1;
  });
}

async function read(
  o: TimeRead,
  after: ListEntry | null,
  startIndex: number,
  fetch: Fetch,
  next: (index: number) => number | null,
): Promise<TimeReadResult> {
  const items: ListEntry[] = [];
  let from = after;
  let last: ListEntry | null = null;
  let index = startIndex;
  let size = 0;
  let skipped = false;
  o.stats.buckets++;
  for (;;) {
    const need = o.want - items.length;
    if (o.stats.rounds > 0) {
      const left = o.budget - o.stats.rowsRead;
      // A full page out of budget is not short: it just does not know whether more follows.
      if (left <= 0) return { items, last, done: false, budgetHit: need > 0 };
      // A full page only asks whether one more row exists.
      size = need === 0 ? 1 : skipped ? Math.max(need + 1, Math.min(2 * size, left)) : need + 1;
    } else {
      size = need + 1;
    }
    const rows = await fetch(index, from, size);
    o.stats.queries++;
    o.stats.rounds++;
    o.stats.rowsRead += rows.length;
    const skip = o.exclude && rows.length > 0 ? await o.exclude(rows.map((r) => r.otherId)) : null;
    skipped = false;
    for (const row of rows) {
      // A row past a full page: the list goes on.
      if (items.length === o.want) return { items, last, done: false, budgetHit: false };
      from = row;
      last = row;
      if (skip?.has(row.otherId)) skipped = true;
      else items.push(row);
    }
    if (rows.length < size) {
      // This bucket is exhausted past `from`.
      const following = next(index);
      if (following === null) return { items, last, done: true, budgetHit: false };
      index = following;
      o.stats.buckets++;
    }
    // Full, but whether anything follows is not known yet (the fetch ended exactly at the page's
    // end, or in a bucket's last row): the next round fetches one row to say, so a null cursor is
    // the end and a page that is the end says so.
  }
}

/** Where a time scan slice stands: the bucket (by owner key) in progress and the row it read last. */
export interface TimeScanPosition {
  key: number;
  after: ListEntry | null;
}

/**
 * One page of a scan slice (see the module note): up to `limit` ids from the slice's buckets at
 * and after `pos`, and the position after them (null once the slice's last bucket is read).
 */
export async function scanTimeSlice(
  store: Pick<ListStore, 'listBucket'>,
  list: ListKey,
  directory: Directory,
  slice: number,
  slices: number,
  limit: number,
  pos: TimeScanPosition,
  stats: PageStats,
): Promise<{ ids: bigint[]; next: TimeScanPosition | null }> {
  // Directory order is newest first, so each group's buckets stay newest first.
  const owned = directory.buckets
    .map((b, index) => ({ index, key: ownerKeyOf(b) }))
    .filter((b) => b.key % slices === slice && b.key >= pos.key)
    .sort((a, b) => a.key - b.key || a.index - b.index);
  const ids: bigint[] = [];
  let key = owned[0]?.key;
  let after = key === pos.key ? pos.after : null;
  for (const bucket of owned) {
    if (bucket.key !== key) {
      key = bucket.key;
      after = null;
    }
    const range = directory.buckets[bucket.index] as (typeof directory.buckets)[number];
    // Buckets of the group newer than `after` hold nothing past it.
    if (after !== null && range.start !== null && after.createdAt < range.start) continue;
    const need = limit - ids.length;
    const rows = await store.listBucket(list, range.id, olderStart(directory, bucket.index, after), need);
    stats.queries++;
    stats.rounds++;
    stats.rowsRead += rows.length;
    for (const r of rows) ids.push(r.otherId);
    const last = rows.at(-1);
    if (last) after = last;
    // The page is full: resume in this group after its last row (the next read may find none).
    if (rows.length === need) return { ids, next: { key: bucket.key, after } };
    stats.buckets++;
    // The group goes on below this bucket's start.
    if (range.start !== null) after = { createdAt: range.start, otherId: MIN_ID };
  }
  return { ids, next: null };
}
