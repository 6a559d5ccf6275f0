/**
 * Splitting an overfilled closed time bucket (issue 19, "Buckets close at a size"), one list at a
 * time. Admin replays and imports land rows in old time, so a closed bucket can grow past the
 * partition bound; this job cuts its range into sub-ranges with new bucket ids.
 *
 * Design note — the protocol (a sibling of `list-migration.ts`; the stages are `PendingSplit`'s in
 * `model/time-buckets.ts`). Parent X covers `[s, e)`, closed (`e` at or before the clock).
 *
 * 1. Plan. Walk X's rows oldest first (`listBucketNewer`, bounded below `e`) through the streaming
 *    `planDirectory` (`DirectoryPlanner`): a boundary at the `created_at` of every `bucketRows`-th
 *    row, so X keeps `[s, b1)` (its oldest `bucketRows` rows, in place) and children with new ids
 *    (`nextBucketId`, which counts a pending split's ids too) take `[b1, b2)`, …, `[bk, e)`. One
 *    compare-and-set records `{ bucket: X, starts, ids, stage: dual, copied: 0 }` on the
 *    directory. From then on a writer that places a row (or its deletion) in `[b1, e)` writes it
 *    to X and to its child (`timeCodes`); readers still read X alone, which stays complete.
 * 2. Settle (`settleMs`: the directory cache TTL plus the longest write in flight; also on resume),
 *    so every write after it reaches both X and the child.
 * 3. Copy, child by child: X's rows of the child's range go to the child with `copyBucketPage`
 *    (each row keeps its write time, so a concurrent delete, sent to both, wins whichever lands
 *    last; a username keeps its own). Then verify: a lockstep walk of X's range and the child
 *    must find the same keys. A mismatch (a dual write between the two reads) re-copies and
 *    re-verifies, up to `verifyAttempts`, then stops with `SplitVerificationError` (a re-run
 *    resumes at that child). A compare-and-set records `copied = c + 1`.
 * 4. Flip: one compare-and-set adds the boundaries to the directory (the children, each with X's
 *    scan owner key) and sets stage `flipped`. Readers now read each child for its range and X
 *    only below `b1` (every bucket read is bounded by its range, `time-pages.ts`, so X's moved
 *    rows, still there, never show twice); a reader whose cached directory predates the flip
 *    reads X whole, which writers keep complete. Settle.
 * 5. Finalize: stage `finalized`; writers write the children only. Settle (writers holding
 *    `flipped` finish; no write reaches X's moved range any more).
 * 6. Delete X's moved rows with one range tombstone (`created_at >= b1`) at a wall-clock version
 *    above every row written (`wallClockVersion`, as the migration's drop), then clear the split.
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
 * Many runners, one winner: every step is a compare-and-set from the directory this runner read,
 * retried while the stored split is exactly what this runner last wrote (a bucket closing
 * meanwhile bumps the version and is harmless); any other split state stops the runner with
 * `SplitConflictError`. One split per list at a time. A list mid-migration is not split.
 *
 * Limits. Between the flip and the delete, list-walker jobs that read whole partitions
 * (`readCodes`) see X's moved rows beside the children's copies: a reconcile in that window
 * over-counts (by at most the moved rows) until its next run.
 */

import { nowPosition, wallClockVersion } from '../../model/clock.js';
import {
  type Directory,
  nextBucketId,
  ownerKeyOf,
  type PendingSplit,
  rowMode,
  splitChildFor,
  type TimeBucket,
  upperOf,
} from '../../model/time-buckets.js';
import type { ListEntry, ListKey, Position } from '../../model/types.js';
import type { ListStore } from '../../ports/store.js';
import { DirectoryPlanner } from '../list-migration.js';

export interface SplitOptions {
  /** Directory cache TTL plus the longest write in flight, in ms (see the module note). */
  settleMs: number;
  /** Rows per sub-range (the list service's `timeBucketRows`). */
  bucketRows: number;
  /** Rows per read and copy page. Default 1,000. */
  pageSize?: number;
  /** Copy-and-verify rounds per child before giving up. Default 3. */
  verifyAttempts?: number;
  /** Injected for tests. */
  sleep?: (ms: number) => Promise<void>;
  /** µs since the epoch (closed-ness, the tombstone's version); default the system clock. */
  clock?: () => Position;
  /** Told after every step (a log line each; a test that kills the job at a step). */
  onProgress?: (p: SplitStep) => void | Promise<void>;
}

export type SplitStep =
  | { step: 'planned'; bucket: number; rows: number; children: number[] }
  | { step: 'copied'; bucket: number; child: number; rows: number }
  | { step: 'flipped'; bucket: number }
  | { step: 'finalized'; bucket: number }
  | { step: 'deleted'; bucket: number };

export type SplitResult =
  | { outcome: 'split'; bucket: number; children: number[] }
  | { outcome: 'too-small'; bucket: number; rows: number };

/** Another runner (or another split) changed the directory's split state; nothing was written. */
export class SplitConflictError extends Error {
  override name = 'SplitConflictError' as const;
  constructor(
    readonly list: ListKey,
    readonly step: string,
  ) {
    super(`split state of ${list.userId} ${list.relation}/${list.direction} changed (step ${step})`);
  }
}

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

/** A child kept differing from its parent's range after every copy round; re-run to retry. */
export class SplitVerificationError extends Error {
  override name = 'SplitVerificationError' as const;
  constructor(
    readonly list: ListKey,
    readonly child: number,
    readonly mismatches: number,
  ) {
    super(`child ${child} of ${list.userId} ${list.relation}/${list.direction}: ${mismatches} rows differ`);
  }
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const MIN_ID = -(1n << 63n);
const FLOOR: ListEntry = { createdAt: MIN_ID, otherId: MIN_ID };

type SplitStore = Pick<
  ListStore,
  | 'getDirectory'
  | 'getLayout'
  | 'getListMigration'
  | 'updateDirectory'
  | 'listBucket'
  | 'listBucketNewer'
  | 'copyBucketPage'
  | 'deleteBucketRange'
>;

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
 * mid-migration, or a bucket that is not closed; `SplitConflictError` when another runner moved
 * the split; `SplitVerificationError` when a child keeps differing from its parent's range.
 */
export async function splitBucket(
  store: SplitStore,
  list: ListKey,
  bucket: number | null,
  o: SplitOptions,
): Promise<SplitResult> {
  const sleep = o.sleep ?? defaultSleep;
  const clock = o.clock ?? nowPosition;
  const pageSize = o.pageSize ?? 1000;
  let directory = await store.getDirectory(list);
  let split = directory.split ?? null;

  /** One step's compare-and-set, retried while the stored split is still `split`. */
  const step = async (name: string, next: PendingSplit | null, add?: readonly TimeBucket[]) => {
    for (let attempt = 0; attempt < 20; attempt++) {
      const d = await store.getDirectory(list);
      if (!sameSplit(d.split ?? null, split)) throw new SplitConflictError(list, name);
      const change = { split: next, ...(add ? { add } : {}) };
      if (await store.updateDirectory(list, d.version, change)) {
        split = next;
        return;
      }
    }
    throw new SplitConflictError(list, name);
  };

  if (!split) {
    if (bucket === null) throw new SplitBlockedError(list, 'no split pending and no bucket named');
    const layout = await store.getLayout(list);
    if (rowMode(directory, layout) !== 'time' || (await store.getListMigration(list))) {
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
    const parent = directory.buckets[index] as TimeBucket;
    const lowest = parent.start;
    if (lowest !== null && starts[0]! <= lowest) throw new RangeError('a split boundary at the parent start');
    // Ids from the directory the compare-and-set succeeds on (a bucket may close meanwhile).
    for (let attempt = 0; ; attempt++) {
      const d = await store.getDirectory(list);
      if (d.split) throw new SplitConflictError(list, 'plan');
      const first = nextBucketId(d);
      const planned: PendingSplit = {
        bucket,
        starts,
        ids: starts.map((_, i) => first + i),
        stage: 'dual',
        copied: 0,
      };
      if (await store.updateDirectory(list, d.version, { split: planned })) {
        split = planned;
        directory = { ...d, version: d.version + 1, split: planned };
        break;
      }
      if (attempt >= 20) throw new SplitConflictError(list, 'plan');
    }
    await o.onProgress?.({ step: 'planned', bucket, rows: planner.rows, children: split.ids });
  }
  // With a split pending on the list it is finished first, whatever bucket was named.
  const parentId = split.bucket;
  const parentIndex = directory.buckets.findIndex((b) => b.id === parentId);
  const parent = directory.buckets[parentIndex];
  if (!parent) throw new SplitBlockedError(list, `split parent ${parentId} is not in the directory`);
  // X's upper end: the first newer bucket that is not one of its children.
  let parentUpper: Position | null = null;
  for (let i = parentIndex - 1; i >= 0; i--) {
    const b = directory.buckets[i] as TimeBucket;
    if (!split.ids.includes(b.id)) {
      parentUpper = b.start;
      break;
    }
  }
  if (parentUpper === null)
    throw new SplitBlockedError(list, `split parent ${parentId} is the newest bucket`);

  if (split.stage === 'dual') {
    await sleep(o.settleMs);
    const s: PendingSplit = split;
    const target = (row: ListEntry) => splitChildFor(s, row.createdAt) ?? parentId;
    for (let c = s.copied; c < s.ids.length; c++) {
      const child = s.ids[c] as number;
      const lo = s.starts[c] as Position;
      const hi = s.starts[c + 1] ?? parentUpper;
      let rows = 0;
      let mismatches = 0;
      for (let round = 0; round < (o.verifyAttempts ?? 3); round++) {
        rows = await copyRange(store, list, parentId, lo, hi, pageSize, target);
        mismatches = await compareRange(store, list, parentId, child, lo, hi, pageSize);
        if (mismatches === 0) break;
        await sleep(o.settleMs);
      }
      if (mismatches > 0) throw new SplitVerificationError(list, child, mismatches);
      await step(`copied ${c}`, { ...s, copied: c + 1 });
      await o.onProgress?.({ step: 'copied', bucket: parentId, child, rows });
    }
    const owner = ownerKeyOf(parent);
    const children: TimeBucket[] = s.ids.map((id, i) => ({
      id,
      start: s.starts[i] as Position,
      base: parent.base,
      owner,
    }));
    await step('flip', { ...s, copied: s.ids.length, stage: 'flipped' }, children);
  }
  if (split.stage === 'flipped') {
    await o.onProgress?.({ step: 'flipped', bucket: parentId });
    await sleep(o.settleMs);
    await step('finalize', { ...split, stage: 'finalized' });
    await o.onProgress?.({ step: 'finalized', bucket: parentId });
  }
  await sleep(o.settleMs);
  const moved = split.starts[0] as Position;
  const ids = split.ids;
  await store.deleteBucketRange(list, parentId, moved, wallClockVersion(clock()));
  await step('clear', null);
  await o.onProgress?.({ step: 'deleted', bucket: parentId });
  return { outcome: 'split', bucket: parentId, children: ids };
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
async function compareRange(
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
  const a = reader(parent);
  const b = reader(child);
  let x = await a();
  let y = await b();
  let mismatches = 0;
  while (x || y) {
    const order = !x ? 1 : !y ? -1 : compareKeys(x, y);
    if (order === 0) {
      x = await a();
      y = await b();
    } else if (order < 0) {
      mismatches++;
      x = await a();
    } else {
      mismatches++;
      y = await b();
    }
  }
  return mismatches;
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
