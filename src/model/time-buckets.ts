/**
 * Time-ordered list buckets: where a list row lives, as a function of its `created_at` and the
 * list's bucket directory.
 *
 * Design note. A list's rows are split into buckets that cover disjoint, ordered `created_at`
 * ranges. The directory records each bucket's `start` (µs); a bucket covers `[start, next start)`.
 * The oldest bucket is implicit: id `FIRST_TIME_BUCKET` (1) from the beginning of time, so a list
 * that never closed a bucket has no directory row and reads one partition. Later buckets take ids
 * from `TIME_BUCKET_BASE` (4096) up, above every code of an inverse-edge layout (`N | b` ≤ 2047).
 *
 * Boundaries are only ever added, and only `lead` ahead of the adder's clock (see
 * `list-service.ts`): every writer's cached directory holds a boundary before any row at or past
 * it is written, so writers agree on a row's bucket without coordination. `created_at` of a live
 * write is its op's position (the writer's clock, within the clock bound of the database's), and
 * an admin replay or import writes an old `created_at` into the old bucket that covers it.
 *
 * Every list's rows are in time buckets. A directory written by the retired hash-bucket engine
 * may still hold one of its modes (`LegacyListMode`); `rowMode` refuses it (`LegacyListModeError`)
 * rather than guess where the rows are. Nothing infers a mode from the inverse-edge layout: a list
 * whose `edges_in` layout grew is still a time-bucketed list.
 *
 * Splits (`lists/reshape/bucket-split.ts`). A closed bucket overfilled by old-time writes is split: its
 * range gets boundaries in the past, each opening a child bucket with a new id. While a split is
 * pending (`Directory.split`) writers write a row of a moved sub-range to the parent and to its
 * child (`timeCodes`); once the boundaries are in the directory a bucket may still hold stale rows
 * past its range (the parent's moved rows until they are deleted), so readers bound every bucket
 * read by its range (`upperOf`). Children inherit their parent's scan owner key (`owner`).
 */
import { LegacyListModeError } from './errors.js';
import type { SearchLayout } from './search.js';
import type { ListEntry, Position } from './types.js';

/** The implicit oldest bucket of every list (also the code of a one-bucket inverse-edge layout). */
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

/** How a list's rows are laid out: in time buckets, the one layout this version reads and writes. */
export type RowMode = 'time';

/**
 * The modes of the retired hash-bucket engine (hash buckets, and a hash → time migration's
 * `dual` and `flipped` steps). A directory may hold one only if something other than this version
 * wrote it; `rowMode` refuses it.
 */
export const LEGACY_LIST_MODES = ['hash', 'dual', 'flipped'] as const;
export type LegacyListMode = (typeof LEGACY_LIST_MODES)[number];

/** A mode as a directory stores it (read as text, so a legacy one can be found and refused). */
export type StoredListMode = RowMode | LegacyListMode;

/** A list's bucket directory, newest bucket first; the last entry is always the first bucket. */
export interface Directory {
  /** Stored mode; null when never set (a time-bucketed list, see `rowMode`). */
  mode: StoredListMode | null;
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
 * The mode in force: `time`, stored or not. Throws `LegacyListModeError` for a directory that
 * holds a mode of the retired hash-bucket engine: its rows may not be in time buckets at all, and
 * reading or writing them as if they were would lose members silently.
 */
export function rowMode(directory: Directory): RowMode {
  const mode = directory.mode ?? 'time';
  if (mode !== 'time') throw new LegacyListModeError(mode);
  return mode;
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
 * A directory for rows already known (a bulk load): walking `createdAts` newest
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

/** The partitions that hold a list's rows for readers: its time buckets, newest first. */
export function readCodes(directory: Directory): number[] {
  rowMode(directory);
  return directory.buckets.map((b) => b.id);
}

/**
 * Every partition a writer writes (or deletes) `entry` in: its time bucket, or parent and child
 * while a split covers it (`timeCodes`).
 */
export function writeCodes(directory: Directory, entry: ListEntry): number[] {
  rowMode(directory);
  return timeCodes(directory, entry.createdAt);
}

/** The partition readers find `entry` in (see `readCodes`). */
export function readCodeOf(directory: Directory, entry: ListEntry): number {
  rowMode(directory);
  return bucketFor(directory, entry.createdAt).id;
}
