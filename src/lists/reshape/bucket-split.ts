/**
 * Splitting an overfilled closed time bucket, one list at a time: the reshape protocol
 * (`reshape.ts`, its steps and their invariant) with time ranges as what moves. Admin replays
 * and imports land rows in old time, so a closed bucket can grow past the partition bound; this
 * job splits its range into sub-ranges with new bucket ids. The plan is the directory's
 * `PendingSplit` (`model/time-buckets.ts`). Parent X covers `[s, e)`, closed (`e` at or before
 * the clock).
 *
 * - Plan. Walk X's rows oldest first (`listBucketNewer`, bounded below `e`) through the streaming
 *   `DirectoryPlanner`: a boundary at the `created_at` of every `bucketRows`-th row, so X keeps
 *   `[s, b1)` (its oldest `bucketRows` rows, in place) and children with new ids (`nextBucketId`
 *   of the directory the compare-and-set succeeds on, which counts a pending split's ids too) take
 *   `[b1, b2)`, …, `[bk, e)`. Writers place a row (or its deletion) in `[b1, e)` in X and its
 *   child (`timeCodes`) while the split is `dual` or `flipped`.
 * - Copy: X's rows of the child's range go to the child with `copyBucketPage` (a username keeps
 *   its own write time). Verify: a lockstep walk of X's range and the child.
 * - Flip: the compare-and-set adds the children to the directory, each with X's scan owner key.
 *   Readers read each child for its range and X only below `b1` (every bucket read is bounded by
 *   its range, `time-pages.ts`, so X's moved rows, still there, never show twice).
 * - Clean-up: one range tombstone (`created_at >= b1`) at a wall-clock version above every row
 *   written (`wallClockVersion`).
 *
 * Why X keeps its oldest sub-range instead of every sub-range taking a new id (and X dropped
 * whole): X's directory row is keyed by its start, and the first bucket has none (it is
 * implicit), so replacing X would need a second kind of directory change; a range tombstone costs
 * the same as a partition tombstone to readers bounded by the range.
 *
 * Page cursors are list keys, whichever bucket issued them, so a walk continues exactly across
 * the flip. Scans: children share X's owner key, so the slice that owned X owns them; its position
 * `{ key, after }` in X resumes, after the flip, in the child that holds `after` (the group of one
 * key is read newest bucket first, each bounded by its range; `scanTimeSlice`).
 *
 * One split per list at a time; a list mid-migration is not split. Limits. Between the flip and
 * the delete, list-walker jobs that read whole partitions (`readCodes`) see X's moved rows beside
 * the children's copies: a reconcile in that window over-counts (by at most the moved rows) until
 * its next run.
 */

import { nowPosition, wallClockVersion } from '../../model/clock.js';
import {
  type Directory,
  nextBucketId,
  ownerKeyOf,
  type PendingSplit,
  splitChildFor,
  type TimeBucket,
  upperOf,
} from '../../model/time-buckets.js';
import type { ListEntry, ListKey, Position } from '../../model/types.js';
import type { ListStore } from '../../ports/list-store.js';
import { DirectoryPlanner } from '../directory-planner.js';
import { MIN_ID } from '../page-keys.js';
import {
  lockstepMismatches,
  type Reshape,
  ReshapeConflictError,
  type ReshapeMoves,
  type ReshapeOptions,
  type ReshapeStep,
  runReshape,
} from './reshape.js';

/** The steps of a bucket split; partitions are named by bucket id. */
export type SplitStep = ReshapeStep<number>;

export interface SplitOptions extends ReshapeOptions<SplitStep> {
  /** Rows per sub-range (the list service's `timeBucketRows`). */
  bucketRows: number;
}

export type SplitResult =
  | { outcome: 'split'; bucket: number; children: number[] }
  | { outcome: 'too-small'; bucket: number; rows: number };

/** The list or bucket cannot be split now (why in the message); nothing was written. */
export class SplitBlockedError extends Error {
  override name = 'SplitBlockedError' as const;
  constructor(
    readonly list: ListKey,
    readonly reason: string,
  ) {
    super(`cannot split in ${list.userId} ${list.relation}/${list.direction}: ${reason}`);
  }
}

const FLOOR: ListEntry = { createdAt: MIN_ID, otherId: MIN_ID };

type SplitStore = Pick<
  ListStore,
  | 'getDirectory'
  | 'getLayout'
  | 'updateDirectory'
  | 'listBucket'
  | 'listBucketNewer'
  | 'copyBucketPage'
  | 'deleteBucketRange'
>;

const listName = (list: ListKey) => `${list.userId} ${list.relation}/${list.direction}`;

/** The split's record: the directory's `split`, written by version; the flip adds the children. */
function bucketSplitKind(store: SplitStore, list: ListKey): Reshape<Directory, PendingSplit | null> {
  return {
    read: () => store.getDirectory(list),
    stateOf: (d) => d.split ?? null,
    same: sameSplit,
    write: (d, next) => {
      const flip = next?.stage === 'flipped' && d.split?.stage === 'dual';
      return store.updateDirectory(list, d.version, {
        split: next,
        ...(flip ? { add: childrenOf(d, next) } : {}),
      });
    },
    conflict: (step) => new ReshapeConflictError(`split state of ${listName(list)} changed (step ${step})`),
    markOf: (s) => s,
    at: (s, mark) => ({ ...(s as PendingSplit), ...mark }),
    cleared: () => null,
  };
}

/** The children's directory entries: each with X's base and scan owner key. */
function childrenOf(d: Directory, s: PendingSplit): TimeBucket[] {
  const parent = d.buckets.find((b) => b.id === s.bucket) as TimeBucket;
  const owner = ownerKeyOf(parent);
  return s.ids.map((id, i) => ({
    id,
    start: s.starts[i] as Position,
    base: parent.base,
    owner,
  }));
}

/**
 * Rows of the bucket at `index` within its range (what a reader sees of it), counted by reading
 * keys `pageSize` at a time.
 */
export async function countBucketRows(
  store: Pick<ListStore, 'listBucket'>,
  list: ListKey,
  directory: Directory,
  index: number,
  pageSize = 1000,
): Promise<number> {
  const bucket = directory.buckets[index];
  if (!bucket) throw new RangeError(`no bucket at index ${index}`);
  const upper = upperOf(directory, index);
  let after: ListEntry | null = upper === null ? null : { createdAt: upper, otherId: MIN_ID };
  let rows = 0;
  for (;;) {
    const page = await store.listBucket(list, bucket.id, after, pageSize);
    rows += page.length;
    if (page.length < pageSize) return rows;
    after = page.at(-1) as ListEntry;
  }
}

/**
 * Splits bucket `bucket` of `list` (or, with a split already pending on the list, finishes that
 * one, whatever `bucket` says). Idempotent and resumable from any step; returns `too-small` when
 * the bucket's rows give no boundary. Throws `SplitBlockedError` for a list not in mode `time`,
 * mid-migration, or a bucket that is not closed; `ReshapeConflictError` when another runner moved
 * the split; `ReshapeVerificationError` when a child keeps differing from its parent's range.
 */
export async function splitBucket(
  store: SplitStore,
  list: ListKey,
  bucket: number | null,
  o: SplitOptions,
): Promise<SplitResult> {
  const clock = o.clock ?? nowPosition;
  const pageSize = o.pageSize ?? 1000;
  const directory = await store.getDirectory(list);
  let plan: { next: (d: Directory) => PendingSplit; rows: number } | null = null;

  if (!directory.split) {
    if (bucket === null) throw new SplitBlockedError(list, 'no split pending and no bucket named');
    if (directory.mode !== null && directory.mode !== 'time') {
      throw new SplitBlockedError(list, 'the list is not (only) in time buckets');
    }
    const index = directory.buckets.findIndex((b) => b.id === bucket);
    const upper = upperOf(directory, index);
    if (index < 0) throw new SplitBlockedError(list, `no bucket ${bucket}`);
    if (upper === null || upper > clock())
      throw new SplitBlockedError(list, `bucket ${bucket} is not closed`);
    const planner = new DirectoryPlanner(o.bucketRows);
    let from = FLOOR;
    for (;;) {
      const page = await store.listBucketNewer(list, bucket, from, pageSize, upper);
      for (const r of page) planner.add(r.createdAt);
      if (page.length < pageSize) break;
      from = page.at(-1) as ListEntry;
    }
    const planned = planner.buckets().filter((b) => b.start !== null);
    if (planned.length === 0) return { outcome: 'too-small', bucket, rows: planner.rows };
    const starts = planned.map((b) => b.start as Position).reverse();
    const lowest = (directory.buckets[index] as TimeBucket).start;
    if (lowest !== null && starts[0]! <= lowest) throw new RangeError('a split boundary at the parent start');
    plan = {
      rows: planner.rows,
      // Ids from the directory the compare-and-set succeeds on (a bucket may close meanwhile).
      next: (d) => {
        const first = nextBucketId(d);
        return {
          bucket,
          starts,
          ids: starts.map((_, i) => first + i),
          stage: 'dual',
          copied: 0,
        };
      },
    };
  }

  const moves = (state: PendingSplit | null, d: Directory): ReshapeMoves<number, { rows: number }> => {
    const s = state as PendingSplit;
    const parentId = s.bucket;
    const parentIndex = d.buckets.findIndex((b) => b.id === parentId);
    if (parentIndex < 0)
      throw new SplitBlockedError(list, `split parent ${parentId} is not in the directory`);
    // X's upper end: the first newer bucket that is not one of its children.
    let parentUpper: Position | null = null;
    for (let i = parentIndex - 1; i >= 0; i--) {
      const b = d.buckets[i] as TimeBucket;
      if (!s.ids.includes(b.id)) {
        parentUpper = b.start;
        break;
      }
    }
    if (parentUpper === null)
      throw new SplitBlockedError(list, `split parent ${parentId} is the newest bucket`);
    const end = parentUpper;
    const range = (c: number) => [s.starts[c] as Position, s.starts[c + 1] ?? end] as const;
    const target = (row: ListEntry) => splitChildFor(s, row.createdAt) ?? parentId;
    return {
      parent: parentId,
      children: s.ids,
      copy: async (c) => ({
        rows: await copyRange(store, list, parentId, ...range(c), pageSize, target),
      }),
      verify: (c) => compareRange(store, list, parentId, s.ids[c] as number, ...range(c), pageSize),
      describe: (c) => `child ${s.ids[c]} of ${listName(list)}`,
      cleanUp: () =>
        store.deleteBucketRange(list, parentId, s.starts[0] as Position, wallClockVersion(clock())),
    };
  };

  const done = await runReshape(bucketSplitKind(store, list), directory, plan, moves, o);
  return { outcome: 'split', bucket: done.parent, children: done.children };
}

/** Copies the parent's rows in `[lo, hi)` to their children; returns how many were copied. */
async function copyRange(
  store: Pick<ListStore, 'copyBucketPage'>,
  list: ListKey,
  parent: number,
  lo: Position,
  hi: Position,
  pageSize: number,
  target: (row: ListEntry) => number,
): Promise<number> {
  let after: ListEntry | null = { createdAt: hi, otherId: MIN_ID };
  let rows = 0;
  while (after && after.createdAt >= lo) {
    // A page may reach below `lo`: those rows are the parent's own and are copied onto themselves.
    const page: { copied: number; last: ListEntry | null } = await store.copyBucketPage(
      list,
      parent,
      after,
      pageSize,
      target,
    );
    rows += page.copied;
    after = page.last;
  }
  return rows;
}

/** Keys in exactly one of the parent's `[lo, hi)` and the child (a lockstep walk, newest first). */
function compareRange(
  store: Pick<ListStore, 'listBucket'>,
  list: ListKey,
  parent: number,
  child: number,
  lo: Position,
  hi: Position,
  pageSize: number,
): Promise<number> {
  const reader = (code: number) => {
    let after: ListEntry | null = { createdAt: hi, otherId: MIN_ID };
    let buffer: ListEntry[] = [];
    let done = false;
    return async (): Promise<ListEntry | null> => {
      if (buffer.length === 0 && !done) {
        buffer = await store.listBucket(list, code, after, pageSize, lo);
        done = buffer.length < pageSize;
        after = buffer.at(-1) ?? after;
      }
      return buffer.shift() ?? null;
    };
  };
  return lockstepMismatches(reader(parent), reader(child), compareKeys);
}

/** List order (newest first): negative when `a` comes first. */
function compareKeys(a: ListEntry, b: ListEntry): number {
  if (a.createdAt !== b.createdAt) return a.createdAt > b.createdAt ? -1 : 1;
  if (a.otherId !== b.otherId) return a.otherId > b.otherId ? -1 : 1;
  return 0;
}

function sameSplit(a: PendingSplit | null, b: PendingSplit | null): boolean {
  if (a === null || b === null) return a === b;
  return (
    a.bucket === b.bucket &&
    a.stage === b.stage &&
    a.copied === b.copied &&
    a.ids.join() === b.ids.join() &&
    a.starts.join() === b.starts.join()
  );
}

/** A closed bucket over `limit` rows: what `splitBuckets` splits. */
export interface OverfilledBucket {
  bucket: number;
  rows: number;
}

/**
 * The closed buckets of `list` (a range ending at or before the clock) holding more than `limit`
 * rows within their ranges, oldest first.
 */
export async function overfilledBuckets(
  store: Pick<ListStore, 'getDirectory' | 'listBucket'>,
  list: ListKey,
  limit: number,
  now: Position,
  pageSize = 1000,
): Promise<OverfilledBucket[]> {
  const directory = await store.getDirectory(list);
  const out: OverfilledBucket[] = [];
  for (let i = directory.buckets.length - 1; i >= 1; i--) {
    const upper = upperOf(directory, i);
    if (upper === null || upper > now) continue;
    const rows = await countBucketRows(store, list, directory, i, pageSize);
    if (rows > limit) out.push({ bucket: (directory.buckets[i] as TimeBucket).id, rows });
  }
  return out;
}
