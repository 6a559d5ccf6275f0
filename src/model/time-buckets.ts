/**
 * Time-ordered list buckets: where a list row lives, as a function of its `created_at` and the
 * list's bucket directory.
 *
 * Design note. A list's rows are split into buckets that cover disjoint, ordered `created_at`
 * ranges. The directory records each bucket's `start` (µs); a bucket covers `[start, next start)`.
 * The oldest bucket is implicit: id `FIRST_TIME_BUCKET` (1) from the beginning of time, so a list
 * that never closed a bucket has no directory row and reads one partition, and every list written
 * before time buckets with one hash bucket (code 1) is already a valid time-bucketed list. Later
 * buckets take ids from `TIME_BUCKET_BASE` (4096) up, above every hash bucket code (`N | b` ≤ 2047),
 * so a list migrating from hash buckets can hold both layouts' rows at once.
 *
 * Boundaries are only ever added, and only `lead` ahead of the adder's clock (see
 * `list-service.ts`): every writer's cached directory holds a boundary before any row at or past
 * it is written, so writers agree on a row's bucket without coordination. `created_at` of a live
 * write is its op's position (the writer's clock, within the clock bound of the database's), and
 * an admin replay or import writes an old `created_at` into the old bucket that covers it.
 *
 * How lists are read while a list migrates from hash buckets: `RowMode` (see `rowMode`).
 *
 * Splits (`lists/reshape/bucket-split.ts`). A closed bucket overfilled by old-time writes is split: its
 * range gets boundaries in the past, each opening a child bucket with a new id. While a split is
 * pending (`Directory.split`) writers write a row of a moved sub-range to the parent and to its
 * child (`timeCodes`); once the boundaries are in the directory a bucket may still hold stale rows
 * past its range (the parent's moved rows until they are deleted), so readers bound every bucket
 * read by its range (`upperOf`). Children inherit their parent's scan owner key (`owner`).
 */
import { bucketCodeOf, readBucketCodes, writeBucketCodes } from './buckets.js';
import type { SearchLayout } from './search.js';
import type { BucketLayout, ListEntry, Position } from './types.js';

/** The implicit oldest bucket of every list (also the hash code of a one-bucket layout). */
export const FIRST_TIME_BUCKET = 1;
/** The first id of a bucket opened by a boundary; ids grow by one per bucket of the list. */
export const TIME_BUCKET_BASE = 4096;

/** One bucket: rows with `start ≤ created_at <` the next newer bucket's start. */
export interface TimeBucket {
  id: number;
  /** µs; null for the implicit first bucket (from the beginning of time). */
  start: Position | null;
  /** The list's approximate size when the bucket was added (its fill is `size − base`). */
  base: number;
  /** Scan owner key when not `ownerKey(id)`: a split's child keeps its parent's (see `ownerKeyOf`). */
  owner?: number;
}

/**
 * A split of closed bucket `bucket` in progress (`lists/reshape/bucket-split.ts`), kept on the directory.
 * `starts` (ascending, inside the bucket's range) open the children `ids` (same order); the parent
 * keeps the sub-range below `starts[0]`. Stages: `dual` (recorded; writers write a moved row to
 * parent and child; readers read the parent), `flipped` (the boundaries are in the directory:
 * readers read the children; writers still write both), `finalized` (writers write the children
 * only; the parent's moved rows wait for their range tombstone). Cleared once they are deleted.
 */
export interface PendingSplit {
  bucket: number;
  starts: Position[];
  ids: number[];
  stage: 'dual' | 'flipped' | 'finalized';
  /** Children copied and verified so far (the copy resumes at this child). */
  copied: number;
}

/**
 * How a list's rows are laid out:
 * - `hash`: rows in the hash buckets of the list's layout (lists grown before time buckets);
 * - `dual`: a migration copies hash rows into time buckets; readers read hash, writers write both;
 * - `flipped`: the copy is complete; readers read time buckets, writers still write both;
 * - `time`: time buckets only.
 */
export type RowMode = 'hash' | 'dual' | 'flipped' | 'time';

/** A list's bucket directory, newest bucket first; the last entry is always the first bucket. */
export interface Directory {
  /** Stored mode; null when never set (then the layout decides, see `rowMode`). */
  mode: RowMode | null;
  /** Bumped by every change (the compare-and-set token); 0 for a list without a directory. */
  version: number;
  buckets: TimeBucket[];
  /** The split in progress, if any (absent or null: none). */
  split?: PendingSplit | null;
  /**
   * Follows lists: how the list's search rows are partitioned (`model/search.ts`); absent: never
   * split (`EMPTY_SEARCH_LAYOUT`). Kept in the directory's partition, so the placement read that a
   * write already makes brings it.
   */
  search?: SearchLayout;
}

export const EMPTY_DIRECTORY: Directory = {
  mode: null,
  version: 0,
  buckets: [{ id: FIRST_TIME_BUCKET, start: null, base: 0 }],
};

/**
 * The mode in force: the stored one, else `time` for a one-bucket layout (its code-1 rows are the
 * first time bucket) and `hash` for a list that grew before time buckets. A time list whose
 * inverse-edge layout grows has its mode stored first (`list-service.ts`), so the layout cannot
 * turn it back into a hash list.
 */
export function rowMode(directory: Directory, layout: BucketLayout): RowMode {
  return directory.mode ?? (layout.buckets > 1 ? 'hash' : 'time');
}

/** Index (newest first) of the bucket that holds `createdAt`. */
export function bucketIndexFor(directory: Directory, createdAt: Position): number {
  const i = directory.buckets.findIndex((b) => b.start === null || b.start <= createdAt);
  return i < 0 ? directory.buckets.length - 1 : i;
}

/** The bucket that holds `createdAt`. */
export function bucketFor(directory: Directory, createdAt: Position): TimeBucket {
  return directory.buckets[bucketIndexFor(directory, createdAt)] as TimeBucket;
}

/** The id the next added bucket takes (above a pending split's children too). */
export function nextBucketId(directory: Directory): number {
  const ids = [...directory.buckets.map((b) => b.id), ...(directory.split?.ids ?? [])];
  return Math.max(TIME_BUCKET_BASE - 1, ...ids) + 1;
}

/**
 * The exclusive upper end (µs) of the range of the bucket at `index` (newest first): the next
 * newer bucket's start; null for the newest. Rows of its partition at or past it are not its own
 * (a split parent's moved rows) and readers skip them.
 */
export function upperOf(directory: Directory, index: number): Position | null {
  return index <= 0 ? null : (directory.buckets[index - 1]?.start ?? null);
}

/** Scan owner key of a bucket of the directory: its stored `owner`, else `ownerKey(id)`. */
export function ownerKeyOf(bucket: TimeBucket): number {
  return bucket.owner ?? ownerKey(bucket.id);
}

/**
 * The time-bucket partitions a row at `createdAt` is written to: its bucket by the directory and,
 * while a split before `finalized` covers it, both the parent and the child of its sub-range.
 */
export function timeCodes(directory: Directory, createdAt: Position): number[] {
  const own = bucketFor(directory, createdAt).id;
  const split = directory.split;
  if (!split || split.stage === 'finalized') return [own];
  const child = splitChildFor(split, createdAt);
  if (child === null) return [own];
  // `own` is the parent (before the flip) or the child (after): the row goes to both.
  const parentIndex = directory.buckets.findIndex((b) => b.id === split.bucket);
  const upper = parentIndex < 0 ? null : upperOfParent(directory, parentIndex, split);
  if (upper !== null && createdAt >= upper) return [own];
  return [...new Set([own, split.bucket, child])];
}

/** The parent's upper end: the start of the first bucket newer than it that is not its child. */
function upperOfParent(directory: Directory, parentIndex: number, split: PendingSplit): Position | null {
  for (let i = parentIndex - 1; i >= 0; i--) {
    const b = directory.buckets[i]!;
    if (!split.ids.includes(b.id)) return b.start;
  }
  return null;
}

/** The child of `split` whose sub-range holds `createdAt`, or null (the parent keeps it). */
export function splitChildFor(split: PendingSplit, createdAt: Position): number | null {
  let child: number | null = null;
  split.starts.forEach((start, i) => {
    if (start <= createdAt) child = split.ids[i] ?? null;
  });
  return child;
}

/**
 * Stable scan-ownership key of a bucket: 0 for the first bucket, then 1, 2, … in the order
 * buckets were added. Scan slice `s` of `S` owns the buckets whose key is `s` modulo `S`.
 */
export function ownerKey(bucketId: number): number {
  return bucketId === FIRST_TIME_BUCKET ? 0 : bucketId - TIME_BUCKET_BASE + 1;
}

/**
 * A directory for rows already known (a bulk load, a migration): walking `createdAts` newest
 * first, a boundary at the `created_at` of every `bucketRows`-th row from the oldest, so each
 * closed bucket holds `bucketRows` rows (rows sharing a `created_at` stay in one bucket) and the
 * newest bucket holds the rest. Returns the buckets newest first, ids in time order.
 */
export function planDirectory(createdAtsOldestFirst: Iterable<Position>, bucketRows: number): TimeBucket[] {
  if (!Number.isInteger(bucketRows) || bucketRows < 1)
    throw new RangeError('bucketRows must be a positive integer');
  const starts: { start: Position; base: number }[] = [];
  let inBucket = 0;
  let seen = 0;
  let last: Position | null = null;
  for (const c of createdAtsOldestFirst) {
    if (last !== null && c < last) throw new RangeError('created_at values must come oldest first');
    if (inBucket >= bucketRows && c !== last) {
      starts.push({ start: c, base: seen });
      inBucket = 0;
    }
    inBucket++;
    seen++;
    last = c;
  }
  const buckets: TimeBucket[] = [{ id: FIRST_TIME_BUCKET, start: null, base: 0 }];
  starts.forEach((s, i) => {
    buckets.push({ id: TIME_BUCKET_BASE + i, start: s.start, base: s.base });
  });
  return buckets.reverse();
}

/**
 * The partitions that hold a list's rows for readers: the hash layout's buckets until a migration
 * flips, then the time buckets, newest first.
 */
export function readCodes(layout: BucketLayout, directory: Directory): number[] {
  const mode = rowMode(directory, layout);
  return mode === 'hash' || mode === 'dual' ? readBucketCodes(layout) : directory.buckets.map((b) => b.id);
}

/**
 * Every partition a writer writes (or deletes) `entry` in: its time bucket, its hash bucket(s), or
 * both while a migration runs.
 */
export function writeCodes(layout: BucketLayout, directory: Directory, entry: ListEntry): number[] {
  const mode = rowMode(directory, layout);
  if (mode === 'time') return timeCodes(directory, entry.createdAt);
  const time = bucketFor(directory, entry.createdAt).id;
  const hash = writeBucketCodes(layout, entry.otherId);
  return mode === 'hash' ? hash : [time, ...hash];
}

/** The partition readers find `entry` in (see `readCodes`). */
export function readCodeOf(layout: BucketLayout, directory: Directory, entry: ListEntry): number {
  const mode = rowMode(directory, layout);
  return mode === 'hash' || mode === 'dual'
    ? bucketCodeOf(layout.buckets, entry.otherId)
    : bucketFor(directory, entry.createdAt).id;
}
