/**
 * Self-reconciling counts: the reconciler that recounts only the list buckets writers marked
 * dirty, run inside the service every interval (`startDirtyReconciler`) or once as
 * `npm run jobs -- reconcile-dirty`.
 *
 * Design note. The counter of a list is `sum(shards) + correction`. Before its append, a writer
 * marks every list bucket its op may change dirty, dated a lease ahead of its clock (`until`): its
 * promise that the append, the rows and the increments the mark covers are complete by then
 * (`markBeforeWrite` in `src/graph/pair/count-step.ts`; a writer that overruns marks again at its clock once its
 * increments are done, one that fails marks again a lease ahead). A pass, per shard of the mark
 * table:
 *
 *   1. reads the marks (each with its write time `v`) and notes `asOf` = now;
 *   2. per list with a mark `v ≤ asOf` (a list whose marks are all later is left to a later pass),
 *      reads the shards' sum `S` and the kept per-bucket counts, then recounts each marked bucket
 *      (mapped onto the current read layout if the list grew since the mark) and every read
 *      bucket that has no count yet;
 *   3. writes `correction = Σ bucket counts − S`, the recounted buckets, and `asOf`;
 *   4. clears each mark with `v ≤ asOf` at its own write time `v`; a mark dated after `asOf` stays.
 *
 * Why a racing write cannot be lost: a mark with `v ≤ asOf` covers writes complete by `v`, before
 * step 1, so step 2's reads (`S` and the rows, both after `asOf`) see their rows and increments;
 * clearing at `v` leaves a newer mark standing. A mark with `v > asOf` may cover a write still in
 * flight (a pass that began before its increment): the pass leaves it, and a pass after `v`
 * recounts its bucket. Alone on its list it is not recounted now (every write a follow makes is
 * recounted once, not twice); beside a due mark its bucket is recounted with the list's, so the
 * correction is not computed from a count that lacks a write whose increment `S` already holds.
 * An in-flight write may still land between the reads of step 2 and leave the correction off by
 * one until that later pass; its mark keeps the list `exact: false` meanwhile. A writer that dies after its mark leaves it standing until such a pass, which then
 * sees every write that landed. (This relies on the writers' and the reconciler's clocks each
 * being within the clock bound S of the database's, which the clock guard enforces: the lease is
 * 2S, so a mark dated by a clock S behind lies past the start of a pass by a clock S ahead that
 * began before it. A write landing later than its lease
 * and its failure re-mark, e.g. a batchlog replay of a batch whose writer then crashed, escapes
 * the marks; the repair sweep finds it.)
 *
 * Rejected: marking after the increment (the first design). A write whose edge batch timed out
 * after it was applied, whose increment was lost, or whose process died in between left its row
 * counted nowhere and no mark, and its retry (whose first read already showed the edge) counted
 * nothing: `exact: true` and one short, forever. Marking before the increment at the clock then:
 * a pass that began after the mark but before the increment cleared it and missed the increment.
 *
 * Why two reconcilers may race: the correction is a plain cell, not a counter delta; both compute
 * `truth − S` from a consistent enough view (the argument above holds for each), and whichever
 * writes last wins. The earlier design added `counted − counter` to a shard, which two racing
 * reconcilers would apply twice.
 *
 * Cost: a bucket is recounted at most once per pass however many writes marked it, so a
 * celebrity followed every second costs one recount of one bucket (≤ ~140k rows at the largest
 * layout) per interval, not one per write; `maxRowsPerPass` bounds a pass, leaving the rest of
 * the marks for the next one. Rejected: recounting the whole list (a 9M-row read per interval).
 * A pass recounts `concurrency` lists at once (8): a recount is ~10 round trips of small reads and
 * writes, so one list at a time left a backlog of 16,000 recounts after 10,000 follows draining at
 * ~250 lists/s on a loaded machine (`bench:all-in`, A2).
 *
 * Members whose account is deactivated are not counted. A pass reads every shard's marks first,
 * then (at the first member it meets) the registry of deactivated accounts once, and confirms
 * only the members the registry names against their user rows (`registryFilter` in
 * `graph/account-state.ts`). A flip whose marks this pass read finished its registry write before
 * those marks were written, so the pass sees it. Before the registry, every member's user row
 * was read: 140,625 point reads to recount one bucket of a 9M list.
 */

import { registryFilter } from '../graph/accounts/account-state.js';
import type { WriteClock } from '../graph/pair/clock-guard.js';
import type { MemberFilter } from '../lists/contracts.js';
import { countBuckets } from '../lists/list-walker.js';
import { bucketCode, readBucketCodes } from '../model/buckets.js';
import { nowPosition } from '../model/clock.js';
import type { BucketLayout, ListKey, Position } from '../model/types.js';
import { type CountStore, DIRTY_SHARDS } from '../ports/count-store.js';
import type { ListStore } from '../ports/list-store.js';
import type { DirtyMark } from '../ports/records.js';
import type { UserStore } from '../ports/user-store.js';

export interface ReconcileDirtyOptions {
  /** Marks read per shard per pass (default 1000). */
  marksPerShard?: number;
  /**
   * Stop taking new lists once this many rows were counted in the pass (default 2,000,000; with
   * `concurrency`, the lists already under way finish).
   */
  maxRowsPerPass?: number;
  /** Lists recounted at once (default 8): a backlog of small lists drains in round trips overlapped. */
  concurrency?: number;
  /** Rows per `listBucket` read (default 5000). */
  pageSize?: number;
  /** Told after each reconciled list. */
  onList?: (r: DirtyListResult) => void;
  /** The pass's clock (µs; default `nowPosition`): marks dated after it stay. */
  now?: () => Position;
  /**
   * Refuses the pass while this process's clock is not known to be within the clock bound (the
   * pass clears marks by its clock, so a clock too far ahead could clear a write in flight).
   */
  clockGuard?: WriteClock;
}

export interface DirtyListResult {
  list: ListKey;
  /** Bucket codes recounted. */
  recounted: number[];
  /** The served count after the pass: Σ bucket counts. */
  counted: number;
  /** Served count before minus after (what the counter had drifted by, sign as `counted − before`). */
  drift: number;
  asOf: Position;
}

export interface DirtyPassResult {
  lists: number;
  buckets: number;
  rows: number;
  /** Σ |drift| corrected. */
  absDrift: number;
  /** Marks left for a later pass because the pass hit `maxRowsPerPass`. */
  deferred: number;
  /** Marks left for a later pass because they, and every other mark of their list, are from its future. */
  early: number;
}

/** The stores the reconciler uses. */
export type ReconcileDirtyStore = CountStore &
  Pick<ListStore, 'getLayout' | 'getDirectory' | 'listBucket'> &
  Pick<UserStore, 'getUsers' | 'listDeactivated'>;

/** Buckets this many codes wide: a code `N | b` (N a power of two, b < N) has layout N. */
const layoutOfCode = (code: number) => 2 ** Math.floor(Math.log2(code));

/**
 * The read-layout bucket codes that hold the rows a mark on `code` (of whatever layout was in
 * force when it was written) stands for: the code itself, its split halves if the list grew, or
 * the bucket it merged into.
 */
export function readCodesFor(code: number, layout: BucketLayout): number[] {
  const n = layoutOfCode(code);
  const b = code - n;
  const r = layout.buckets;
  if (r <= n) return [bucketCode(r, b % r)];
  const out: number[] = [];
  for (let x = b; x < r; x += n) out.push(bucketCode(r, x));
  return out;
}

const listId = (l: ListKey) => `${l.userId}|${l.relation}|${l.direction}`;

/**
 * Writes a recount of `list` (`counted` rows in all, `buckets` the buckets recounted) as of
 * `asOf` into both copies of its counts: each copy's correction is `counted` minus that copy's
 * own shard sum, since the two copies' counters differ (the account tables' start at the release
 * that added them; see `CountStore`). The sums are read now (after the count) unless `sums` gives
 * them as read after `asOf` (the reconciler's, read with the layout: see the note at the top).
 */
export async function recordRecount(
  store: Pick<CountStore, 'getCountSync' | 'getUserCountSync' | 'putCountSync' | 'putUserCountSync'>,
  list: ListKey,
  counted: number,
  asOf: Position,
  buckets: ReadonlyMap<number, number>,
  sums?: { lists: number; users: number },
): Promise<void> {
  const [lists, users] = sums
    ? [{ shardSum: sums.lists }, { shardSum: sums.users }]
    : await Promise.all([store.getCountSync(list), store.getUserCountSync(list)]);
  await Promise.all([
    store.putCountSync(list, { correction: counted - lists.shardSum, asOf, buckets }),
    store.putUserCountSync(list, { correction: counted - users.shardSum, asOf, buckets }),
  ]);
}

/**
 * Recounts the marked buckets of one list and writes its correction; then clears the marks dated
 * at or before `asOf` (later ones may cover writes still in flight). `exclude` names the
 * deactivated members; make it after the marks were read (default: a fresh `registryFilter`).
 *
 * The per-bucket counts it keeps are the account tables' (`getUserCountSync`): a bucket they do
 * not hold yet is recounted, so the first pass over a list after the release that added them
 * recounts the whole list, and both copies are written from the same recount (`recordRecount`).
 */
export async function reconcileDirtyList(
  store: ReconcileDirtyStore,
  list: ListKey,
  marks: readonly DirtyMark[],
  asOf: Position,
  pageSize = 5000,
  exclude: MemberFilter = registryFilter(store),
): Promise<DirtyListResult & { rows: number }> {
  const [layout, before, kept] = await Promise.all([
    store.getLayout(list),
    store.getCountSync(list),
    store.getUserCountSync(list),
  ]);
  const codes = readBucketCodes(layout);
  const todo = new Set<number>();
  for (const m of marks) for (const c of readCodesFor(m.bucketCode, layout)) todo.add(c);
  for (const c of codes) if (!kept.buckets.has(c)) todo.add(c);
  // One read per marked hash bucket, or one walk of a time-bucketed list for all of them.
  const recounted = await countBuckets(
    store,
    list,
    [...todo].sort((x, y) => x - y),
    pageSize,
    exclude,
  );
  let rows = 0;
  for (const n of recounted.values()) rows += n;
  const counted = codes.reduce((sum, c) => sum + (recounted.get(c) ?? kept.buckets.get(c) ?? 0), 0);
  await recordRecount(store, list, counted, asOf, recounted, {
    lists: before.shardSum,
    users: kept.shardSum,
  });
  await Promise.all(marks.filter((m) => m.version <= asOf).map((m) => store.clearDirty(m)));
  return {
    list,
    recounted: [...recounted.keys()],
    counted,
    drift: counted - (before.shardSum + before.correction),
    asOf,
    rows,
  };
}

/** One pass over every shard of the mark table. Safe to run concurrently with writers and itself. */
export async function reconcileDirty(
  store: ReconcileDirtyStore,
  o: ReconcileDirtyOptions = {},
): Promise<DirtyPassResult> {
  o.clockGuard?.assertWritable();
  const total: DirtyPassResult = { lists: 0, buckets: 0, rows: 0, absDrift: 0, deferred: 0, early: 0 };
  const maxRows = o.maxRowsPerPass ?? 2_000_000;
  // Every shard's marks (at most DIRTY_SHARDS × marksPerShard) before the registry is read.
  const shards: { asOf: Position; byList: Map<string, { list: ListKey; marks: DirtyMark[] }> }[] = [];
  for (let shard = 0; shard < DIRTY_SHARDS; shard++) {
    const asOf = (o.now ?? nowPosition)();
    const marks = await store.listDirty(shard, o.marksPerShard ?? 1000);
    const byList = new Map<string, { list: ListKey; marks: DirtyMark[] }>();
    for (const m of marks) {
      const k = listId(m.list);
      const g = byList.get(k) ?? { list: m.list, marks: [] };
      g.marks.push(m);
      byList.set(k, g);
    }
    shards.push({ asOf, byList });
  }
  const exclude = registryFilter(store);
  const due: { asOf: Position; list: ListKey; marks: DirtyMark[] }[] = [];
  for (const { asOf, byList } of shards) {
    for (const { list, marks } of byList.values()) {
      // Every mark from the pass's future (writes maybe in flight): a pass after them recounts the
      // list and clears them; recounting it now too would be a second recount of the same writes.
      if (marks.every((m) => m.version > asOf)) total.early += marks.length;
      else due.push({ asOf, list, marks });
    }
  }
  // Lists are independent: `concurrency` of them at once, each its own reads and writes in order.
  let next = 0;
  const recountNext = async (): Promise<void> => {
    for (let item = due[next++]; item; item = due[next++]) {
      if (total.rows >= maxRows) {
        total.deferred += item.marks.length;
        continue;
      }
      const r = await reconcileDirtyList(store, item.list, item.marks, item.asOf, o.pageSize, exclude);
      total.lists++;
      total.buckets += r.recounted.length;
      total.rows += r.rows;
      total.absDrift += Math.abs(r.drift);
      const { rows: _, ...result } = r;
      o.onList?.(result);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, o.concurrency ?? 8) }, recountNext));
  return total;
}

export interface DirtyReconcilerHandle {
  /** Stops scheduling passes and waits for a running one to finish. */
  stop(): Promise<void>;
  /**
   * Tells the reconciler a mark was written (by this process): the next pass comes `intervalMs`
   * after the last one ended, however long the idle wait had grown.
   */
  nudge(): void;
}

/**
 * Runs `reconcileDirty` every `intervalMs` (measured from the end of one pass to the start of the
 * next, so passes never overlap within a process) until stopped. Errors are reported and the
 * next pass runs as scheduled.
 *
 * With `idleMaxMs` above `intervalMs`, a pass that found no list doubles the wait before the next,
 * up to `idleMaxMs`, and a pass that found one (or an error) or a `nudge` sets it back: an idle
 * instance lists the 8 shards of marks twice a minute instead of every interval. Every instance runs
 * a reconciler and nudges its own on each mark it writes, so a mark is still recounted an interval
 * after its lease by the instance that wrote it; the others' waits bound it when that one dies.
 */
export function startDirtyReconciler(
  store: ReconcileDirtyStore,
  o: ReconcileDirtyOptions & {
    intervalMs: number;
    /** The longest wait after passes that found nothing (default `intervalMs`: no growth). */
    idleMaxMs?: number;
    onPass?: (r: DirtyPassResult, ms: number) => void;
    onError?: (e: unknown) => void;
  },
): DirtyReconcilerHandle {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let passing = false;
  /** A mark written while a pass ran (after its reads, maybe): the next wait is the interval. */
  let nudgedInPass = false;
  const idleMaxMs = Math.max(o.intervalMs, o.idleMaxMs ?? o.intervalMs);
  let waitMs = o.intervalMs;
  /** When the last pass ended (or the reconciler started), `performance.now()` ms. */
  let endedMs = performance.now();
  const arm = (ms: number) => {
    clearTimeout(timer);
    timer = setTimeout(pass, ms);
    timer.unref();
  };
  const pass = () => {
    passing = true;
    running = (async () => {
      const started = performance.now();
      try {
        // Not `o.onPass?.(await …)`: an absent callback would skip evaluating the pass itself.
        const result = await reconcileDirty(store, o);
        o.onPass?.(result, performance.now() - started);
        const idle = result.lists === 0 && result.early === 0 && result.deferred === 0;
        waitMs = idle ? Math.min(idleMaxMs, waitMs * 2) : o.intervalMs;
      } catch (e) {
        o.onError?.(e);
        waitMs = o.intervalMs;
      }
    })().finally(() => {
      if (nudgedInPass) waitMs = o.intervalMs;
      nudgedInPass = false;
      passing = false;
      endedMs = performance.now();
      if (!stopped) arm(waitMs);
    });
  };
  arm(waitMs);
  return {
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
    nudge: () => {
      if (stopped) return;
      if (passing) nudgedInPass = true;
      else if (waitMs !== o.intervalMs) {
        waitMs = o.intervalMs;
        arm(Math.max(0, endedMs + o.intervalMs - performance.now()));
      }
    },
  };
}
