/**
 * Online migration of a hash-bucketed list to time buckets (issue 19), one list at a time.
 *
 * Design note — the protocol (it mirrors growth's, `list-growth.ts`; the modes are `RowMode` of
 * `model/time-buckets.ts`):
 *
 * 1. Plan. Walk the hash list oldest first (a k-way merge of its N buckets by `created_at`, read
 *    upward with `listBucketNewer`, `planPageSize` rows per bucket in memory: a 9M list at N = 64
 *    holds 64,000 rows, never the list) and feed the `created_at`s to `DirectoryPlanner`, the
 *    streaming form of `planDirectory` (same rule, property-tested against it; it keeps only the
 *    boundaries). Then one compare-and-set on the directory adds the planned boundaries, sets mode
 *    `dual` and records the progress `{ from: N, copiedThrough: 0 }` (`ListStore.getListMigration`,
 *    two static cells of the directory partition, cql/020). From now on writers write each row to
 *    its time bucket and its hash bucket (`writeCodes`); readers still read hash.
 *    The planned boundaries all lie at or before the newest row planned, i.e. in the past: that is
 *    safe here, unlike for a live list, because no writer places a row by them before it reads
 *    the `dual` directory (a `hash` writer ignores the directory), and from then on every writer
 *    places by the same, fixed boundaries (no bucket closes before mode `time`).
 * 2. Wait `settleMs` (directory cache TTL plus the longest write in flight; also on resume), so
 *    no writer still acts on the `hash` directory: every row written after the wait is in both
 *    layouts. Without this wait a writer holding the cached `hash` directory could add a row to a
 *    hash bucket after its copy, and the time buckets would never have it (the regression test
 *    `a follow by a writer still on the hash directory …` pins this).
 * 3. Copy each hash bucket `b` page by page with `copyBucketPage` into the time bucket that holds
 *    each row's `created_at`; the copy keeps every row's write time, so a concurrent unfollow (a
 *    newer write time, sent to both layouts) wins whichever lands last. After each bucket one
 *    compare-and-set records `copiedThrough = b + 1`, so a crashed job resumes at the first bucket
 *    not yet copied (re-copying is idempotent for the same reason).
 * 4. Flip to `flipped`: readers read the time buckets, writers still write both (a reader whose
 *    cached directory still says `dual` reads hash, which stays complete). A page cursor's
 *    boundary is a list key, so a walk started on hash pages continues on time pages exactly
 *    after its last item (`time-pages.ts`). Wait `settleMs`.
 * 5. Set `time`: writers stop writing hash. Wait `settleMs` (writers holding `flipped` finish).
 * 6. Drop the N hash partitions of the list rows with a partition tombstone above every version
 *    written so far (as growth's drop does), then clear the progress. `edges_in` stays hash
 *    bucketed by the layout and is not touched. A crash between 5 and 6 resumes at 6: the
 *    progress is still set.
 *
 * Many runners, one winner: every step (progress included) is a compare-and-set on the
 * directory's version from the version this runner last wrote, so two runners never interleave;
 * the loser stops with `MigrationConflictError`. The directory does not change otherwise while a
 * migration runs: no bucket closes before mode `time` (`closeBucketIfFull`).
 *
 * Growth. A list migrates at one hash layout N. `ListService.growTo` does not start a growth on a
 * `dual` or `flipped` list; a migration refuses (`MigrationBlockedError`, retry later) a list whose
 * layout is growing when it starts, and re-checks the layout after its first settle: a growth
 * that read the `hash` directory just before step 1 (its check and its first layout step are a
 * few reads apart, well inside `settleMs`) shows by then, and the migration stops the same way.
 * Such a growth is then never finished (`growTo` returns for `dual`), so the list stays in
 * `dual` with both layouts written; see the report: it needs an operator (or a later change that
 * lets a migration finish a started growth).
 *
 * Rolling deploys. An instance of the previous version writes only hash codes: it never reads the
 * directory. If it writes during steps 2–3 after the copy passed that row's hash bucket, the row
 * (or its deletion) never reaches the time buckets, and after the flip the member is lost (or a
 * removed member comes back). So: **finish the rolling deploy before running `migrate-lists`; no
 * instance of the previous version may write while any list migrates.** A mixed fleet is safe
 * while no migration runs (a `hash` list is written to its hash codes by both versions).
 *
 * Rejected: reading both layouts during the copy (a superset read doubles the hottest list's
 * queries for the whole copy, and needs a dedupe in the merge); planning from a newest-first walk
 * (the boundaries count from the oldest row, so it would need the total first, i.e. two walks).
 */

import { bucketCode } from '../model/buckets.js';
import { nowPosition, wallClockVersion } from '../model/clock.js';
import {
  bucketFor,
  FIRST_TIME_BUCKET,
  type RowMode,
  rowMode,
  TIME_BUCKET_BASE,
  type TimeBucket,
} from '../model/time-buckets.js';
import type { ListEntry, ListKey, Position } from '../model/types.js';
import type { ListStore } from '../ports/list-store.js';

/**
 * Layout cache TTL (2,000 ms) plus the longest write in flight (5,000 ms), the list service's
 * defaults (`ListServiceOptions.layoutCacheTtlMs`, `writeGraceMs`): the settle of a deployment
 * that keeps them.
 */
export const DEFAULT_MIGRATION_SETTLE_MS = 7_000;

export interface MigrationOptions {
  /** Directory cache TTL plus the longest write in flight, in ms (see the module note). */
  settleMs: number;
  /** Rows per closed time bucket in the plan (the list service's `timeBucketRows`). */
  bucketRows: number;
  /** Rows per copy page. Default 1,000. */
  copyPageSize?: number;
  /** Rows read per hash bucket per round of the planning walk. Default 1,000. */
  planPageSize?: number;
  /** Injected for tests. */
  sleep?: (ms: number) => Promise<void>;
  /** µs since the epoch, for the drop's tombstone version; default the system clock. */
  clock?: () => Position;
  /** Told after every step (a log line per bucket; a test that kills the job at a step). */
  onProgress?: (p: MigrationStep) => void | Promise<void>;
}

export type MigrationStep =
  | { step: 'planned'; from: number; rows: number; buckets: number }
  | { step: 'copied'; from: number; bucket: number; rows: number }
  | { step: 'flipped'; from: number }
  | { step: 'finalized'; from: number }
  | { step: 'dropped'; from: number };

/** What `migrateList` found or did. */
export type MigrationResult =
  | { outcome: 'migrated'; from: number; buckets: number }
  | { outcome: 'already-time' };

/** Another runner changed the directory under this migration; it stopped without writing. */
export class MigrationConflictError extends Error {
  override name = 'MigrationConflictError' as const;
  constructor(
    readonly list: ListKey,
    readonly expectedVersion: number,
    readonly step: string,
  ) {
    super(
      `directory of ${list.userId} ${list.relation}/${list.direction} changed during migration (step ${step}, expected version ${expectedVersion})`,
    );
  }
}

/** The list cannot migrate now (its layout is growing); nothing was copied. Retry later. */
export class MigrationBlockedError extends Error {
  override name = 'MigrationBlockedError' as const;
  constructor(
    readonly list: ListKey,
    readonly reason: string,
  ) {
    super(`cannot migrate ${list.userId} ${list.relation}/${list.direction} now: ${reason}`);
  }
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Migrates `list` from its hash buckets to time buckets, or finishes a migration a previous run
 * started (from its stored mode and progress). Idempotent and resumable; a list already in time
 * buckets with nothing pending is left alone (`already-time`). Throws `MigrationConflictError`
 * when another runner moved the directory, `MigrationBlockedError` when the list's layout grows.
 */
export async function migrateList(
  store: ListStore,
  list: ListKey,
  o: MigrationOptions,
): Promise<MigrationResult> {
  const sleep = o.sleep ?? defaultSleep;
  let directory = await store.getDirectory(list);
  const layout = await store.getLayout(list);
  let progress = await store.getListMigration(list);
  let mode: RowMode = rowMode(directory, layout);
  let version = directory.version;
  if (mode === 'time' && !progress) return { outcome: 'already-time' };

  const cas = async (step: string, change: Parameters<ListStore['updateDirectory']>[2]) => {
    if (!(await store.updateDirectory(list, version, change))) {
      throw new MigrationConflictError(list, version, step);
    }
    version++;
  };

  if (mode === 'hash') {
    if (layout.growingTo !== null) throw new MigrationBlockedError(list, 'its layout is growing');
    if (directory.buckets.length > 1) {
      throw new MigrationBlockedError(list, 'a hash list with time boundaries (not written by this version)');
    }
    const planner = new DirectoryPlanner(o.bucketRows);
    for await (const c of createdAtsOldestFirst(store, list, layout.buckets, o.planPageSize ?? 1000)) {
      planner.add(c);
    }
    const planned = planner.buckets();
    progress = { from: layout.buckets, copiedThrough: 0 };
    await cas('plan', {
      add: planned.filter((b) => b.start !== null),
      mode: 'dual',
      migration: progress,
    });
    directory = { mode: 'dual', version, buckets: planned };
    mode = 'dual';
    await o.onProgress?.({
      step: 'planned',
      from: progress.from,
      rows: planner.rows,
      buckets: planned.length,
    });
  }
  if (!progress) throw new MigrationBlockedError(list, `mode ${mode} without migration progress`);
  const from = progress.from;

  if (mode === 'dual') {
    // Also on resume: the mode may have been set a moment before the crash.
    await sleep(o.settleMs);
    const now = await store.getLayout(list);
    if (now.buckets !== from || now.growingTo !== null) {
      throw new MigrationBlockedError(list, `its layout moved to ${JSON.stringify(now)} (a growth started)`);
    }
    const pageSize = o.copyPageSize ?? 1000;
    const target = (row: ListEntry) => bucketFor(directory, row.createdAt).id;
    for (let b = progress.copiedThrough; b < from; b++) {
      let after: ListEntry | null = null;
      let rows = 0;
      do {
        const page = await store.copyBucketPage(list, bucketCode(from, b), after, pageSize, target);
        rows += page.copied;
        after = page.last;
      } while (after);
      await cas(`copied ${b}`, { migration: { from, copiedThrough: b + 1 } });
      await o.onProgress?.({ step: 'copied', from, bucket: b, rows });
    }
    await cas('flip', { mode: 'flipped' });
    mode = 'flipped';
  }
  if (mode === 'flipped') {
    await o.onProgress?.({ step: 'flipped', from });
    await sleep(o.settleMs);
    await cas('finalize', { mode: 'time' });
    await o.onProgress?.({ step: 'finalized', from });
    await sleep(o.settleMs);
  }
  await dropHashRows(store, list, from, (o.clock ?? nowPosition)());
  await clearProgress(store, list, from);
  await o.onProgress?.({ step: 'dropped', from });
  const final = await store.getDirectory(list);
  return { outcome: 'migrated', from, buckets: final.buckets.length };
}

async function dropHashRows(store: ListStore, list: ListKey, buckets: number, now: Position): Promise<void> {
  // List rows carry pair-fold versions (≈ position × 1024), far above wall-clock µs.
  const version = wallClockVersion(now);
  for (let b = 0; b < buckets; b++) await store.dropBucket(list, bucketCode(buckets, b), version);
}

/**
 * Clears the progress of a finished drop. In mode `time` buckets may close meanwhile (bumping the
 * version), so a lost compare-and-set is retried while the progress is still this migration's.
 */
async function clearProgress(store: ListStore, list: ListKey, from: number): Promise<void> {
  for (;;) {
    const [directory, progress] = await Promise.all([store.getDirectory(list), store.getListMigration(list)]);
    if (progress?.from !== from) return;
    if (await store.updateDirectory(list, directory.version, { migration: null })) return;
  }
}

/**
 * The `created_at`s of a hash list, oldest first: a k-way merge of its buckets read upward
 * (`listBucketNewer`), `pageSize` rows per bucket at a time. Rows sharing a `created_at` come out
 * together in any order (the plan keeps them in one bucket whatever their ids).
 */
export async function* createdAtsOldestFirst(
  store: Pick<ListStore, 'listBucketNewer'>,
  list: ListKey,
  buckets: number,
  pageSize: number,
): AsyncGenerator<Position> {
  const floor: ListEntry = { createdAt: -(1n << 63n), otherId: -(1n << 63n) };
  interface Head {
    code: number;
    rows: ListEntry[];
    at: number;
    done: boolean;
  }
  const refill = async (h: Head) => {
    const last = h.rows.at(-1) ?? floor;
    h.rows = await store.listBucketNewer(list, h.code, last, pageSize);
    h.at = 0;
    h.done = h.rows.length < pageSize;
  };
  const heads: Head[] = [];
  for (let b = 0; b < buckets; b++) {
    const h: Head = { code: bucketCode(buckets, b), rows: [], at: 0, done: false };
    await refill(h);
    if (h.rows.length > 0) heads.push(h);
  }
  const heap = new MinHeap<Head>((a, b) => a.rows[a.at]!.createdAt < b.rows[b.at]!.createdAt);
  for (const h of heads) heap.push(h);
  for (let h = heap.pop(); h; h = heap.pop()) {
    yield h.rows[h.at]!.createdAt;
    h.at++;
    if (h.at >= h.rows.length) {
      if (h.done) continue;
      await refill(h);
      if (h.rows.length === 0) continue;
    }
    heap.push(h);
  }
}

/**
 * `planDirectory` fed one `created_at` at a time (oldest first), holding only the boundaries:
 * the same rule (a boundary at the `created_at` of every `bucketRows`-th row from the oldest,
 * rows sharing a `created_at` kept in one bucket), so a 9M list is planned without holding it.
 */
export class DirectoryPlanner {
  private readonly starts: { start: Position; base: number }[] = [];
  private inBucket = 0;
  private last: Position | null = null;
  /** Rows added so far. */
  rows = 0;

  constructor(private readonly bucketRows: number) {
    if (!Number.isInteger(bucketRows) || bucketRows < 1)
      throw new RangeError('bucketRows must be a positive integer');
  }

  add(createdAt: Position): void {
    if (this.last !== null && createdAt < this.last)
      throw new RangeError('created_at values must come oldest first');
    if (this.inBucket >= this.bucketRows && createdAt !== this.last) {
      this.starts.push({ start: createdAt, base: this.rows });
      this.inBucket = 0;
    }
    this.inBucket++;
    this.rows++;
    this.last = createdAt;
  }

  /** The planned buckets, newest first, ending with the implicit first bucket (as `planDirectory`). */
  buckets(): TimeBucket[] {
    const buckets: TimeBucket[] = this.starts.map((s, i) => ({
      id: TIME_BUCKET_BASE + i,
      start: s.start,
      base: s.base,
    }));
    return [...buckets.reverse(), { id: FIRST_TIME_BUCKET, start: null, base: 0 }];
  }
}

/** A binary min-heap by `less`. */
class MinHeap<T> {
  private readonly items: T[] = [];
  constructor(private readonly less: (a: T, b: T) => boolean) {}

  push(item: T): void {
    const a = this.items;
    a.push(item);
    for (let i = a.length - 1; i > 0; ) {
      const p = (i - 1) >> 1;
      if (!this.less(a[i]!, a[p]!)) break;
      [a[i], a[p]] = [a[p]!, a[i]!];
      i = p;
    }
  }

  pop(): T | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last !== undefined) {
      a[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && this.less(a[l]!, a[m]!)) m = l;
        if (r < a.length && this.less(a[r]!, a[m]!)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m]!, a[i]!];
        i = m;
      }
    }
    return top;
  }
}
