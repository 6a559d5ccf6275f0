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
 */
import { bucketCodeOf, readBucketCodes, writeBucketCodes } from './buckets.js';
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

/** The id the next added bucket takes. */
export function nextBucketId(directory: Directory): number {
  return Math.max(TIME_BUCKET_BASE - 1, ...directory.buckets.map((b) => b.id)) + 1;
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
  const time = bucketFor(directory, entry.createdAt).id;
  if (mode === 'time') return [time];
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
