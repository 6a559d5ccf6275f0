/**
 * Cutting an overfilled search partition into name ranges (issue 23, "partitions bounded at
 * celebrity size even for common prefixes"), one follows list at a time. The ranges and the cut in
 * progress are the list's `SearchLayout` (`model/search.ts`), kept in its directory.
 *
 * Design note — the protocol (a sibling of `bucket-split.ts`, on names instead of times). Parent
 * range P covers `[s, e)` in partition `s`.
 *
 * 1. Plan. Walk P's rows in name order: a boundary at the name of every `rangeRows`-th row (above
 *    the previous one), so P keeps `[s, b1)` and children `b1 … bk` take `[b1, b2)`, …,
 *    `[bk, e)`, each its own partition keyed by its first name. One compare-and-set records
 *    `{ parent: s, starts, stage: dual, copied: 0 }` on the directory. From then on a writer that
 *    places a name in `[b1, e)` writes it to P and to its child (`searchWritePartitions`);
 *    readers still read P alone, which stays complete.
 * 2. Settle (`settleMs`: the directory cache TTL plus the longest write in flight; also on
 *    resume), so every write after it reaches both P and the child.
 * 3. Copy, child by child: P's rows of the child's range go to the child with `copySearchRows`,
 *    each cell at its own write time, so a delete sent to both wins whichever lands last, and a
 *    rename's tagged name keeps winning at its time. Then verify: a lockstep walk of P's range and
 *    the child must find the same keys; a mismatch (a dual write between the two reads) re-copies
 *    and re-verifies, up to `verifyAttempts`, then stops with `SearchCutVerificationError` (a
 *    re-run resumes at that child). A compare-and-set records `copied = c + 1`.
 * 4. Flip: one compare-and-set adds the starts to the layout and sets stage `flipped`. Readers now
 *    read each child for its range and P only below `b1` (every read is bounded by its range, so
 *    P's moved rows, still there, never show twice); a reader whose cached directory predates the
 *    flip reads P whole, which writers keep complete. Settle.
 * 5. Finalize: stage `finalized`; writers write the children only. Settle (writers holding
 *    `flipped` finish; no write reaches P's moved range any more).
 * 6. Delete P's moved rows with one range tombstone (`lower_username >= b1`) at a wall-clock
 *    version above every row written (`wallClockVersion` a minute ahead: positions run ahead of
 *    their clocks), then clear the cut.
 *
 * Many runners, one winner: every step is a compare-and-set from the directory this runner read,
 * retried while the stored cut is exactly what this runner last wrote (a time bucket closing
 * meanwhile bumps the version and is harmless); any other cut state stops the runner with
 * `SearchCutConflictError`. One cut per list at a time.
 *
 * Bound. A range is cut when it holds more than `2 × rangeRows` rows, into ranges of `rangeRows`
 * (250,000 by default: about 15 MiB of search rows; the measured row is 59 B on disk). Between
 * runs of the job a range grows by the follows it gains; names are unique per account, so a
 * range can always be cut until each holds one name. The job's cost is a read of every search row
 * of each list over `2 × rangeRows` members (smaller lists cannot hold an overfilled range and
 * are skipped on their count), plus a copy of the rows it moves.
 */

import { nowPosition, wallClockVersion } from '../../model/clock.js';
import {
  compareSearchKeys,
  rangesOfBase,
  SEARCH_ALPHABET,
  type SearchKey,
  type SearchRange,
  type SearchSplit,
  searchLayoutOf,
  searchPrefix,
} from '../../model/search.js';
import type { ListKey, Position } from '../../model/types.js';
import type { ListStore, SearchStore } from '../../ports/store.js';
import { MIN_ID } from '../page-keys.js';

export interface SearchCutOptions {
  /** Directory cache TTL plus the longest write in flight, in ms (see the module note). */
  settleMs: number;
  /** Rows per range after a cut; a range over twice this is cut. */
  rangeRows: number;
  /** Rows per read and copy page. Default 1,000. */
  pageSize?: number;
  /** Copy-and-verify rounds per child before giving up. Default 3. */
  verifyAttempts?: number;
  /** Injected for tests. */
  sleep?: (ms: number) => Promise<void>;
  /** µs since the epoch (the tombstone's version); default the system clock. */
  clock?: () => Position;
  /**
   * How far ahead of the clock the tombstone is dated, ms (default 60,000): above the version of
   * every write issued before the cut was finalized, whose positions may run ahead of their
   * clocks (the pair protocol's bound, 5 s, plus clock skew). No write reaches the moved range of
   * the parent after that, so the margin costs nothing.
   */
  tombstoneLeadMs?: number;
  /** Told after every step (a log line each; a test that kills the job at a step). */
  onProgress?: (p: SearchCutStep) => void | Promise<void>;
}

export type SearchCutStep =
  | { step: 'planned'; parent: string; rows: number; children: string[] }
  | { step: 'copied'; parent: string; child: string; rows: number }
  | { step: 'flipped'; parent: string }
  | { step: 'finalized'; parent: string }
  | { step: 'deleted'; parent: string };

/** Another runner changed the list's cut state; nothing more was written. */
export class SearchCutConflictError extends Error {
  override name = 'SearchCutConflictError' as const;
  constructor(
    readonly list: ListKey,
    readonly step: string,
  ) {
    super(`search cut of ${list.userId} ${list.direction} changed (step ${step})`);
  }
}

/** A child kept differing from its parent's range after every copy round; re-run to retry. */
export class SearchCutVerificationError extends Error {
  override name = 'SearchCutVerificationError' as const;
  constructor(
    readonly list: ListKey,
    readonly child: string,
    readonly mismatches: number,
  ) {
    super(`search range ${child} of ${list.userId} ${list.direction}: ${mismatches} rows differ`);
  }
}

export type SearchCutStore = Pick<ListStore, 'getDirectory' | 'updateDirectory'> &
  Pick<SearchStore, 'listSearchRows' | 'copySearchRows' | 'deleteSearchRange'>;

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Every base partition in name order: each one-character name's, then its 38 two-character ones. */
export const SEARCH_BASES: readonly string[] = SEARCH_ALPHABET.flatMap((a) => [
  a,
  ...SEARCH_ALPHABET.map((b) => a + b),
]);

/** A range's rows in name order, `pageSize` at a time (one read each). */
async function* rangeRows(
  store: Pick<SearchStore, 'listSearchRows'>,
  list: ListKey,
  range: SearchRange,
  pageSize: number,
): AsyncGenerator<SearchKey[]> {
  let after: SearchKey = { lower: range.from, otherId: MIN_ID };
  for (;;) {
    const page = await store.listSearchRows(list, range.partition, after, range.to, pageSize);
    if (page.length > 0) yield page;
    if (page.length < pageSize) return;
    after = page.at(-1) as SearchKey;
  }
}

/** Boundaries cutting `range` into pieces of `rangeRows`, and its rows: one walk of the range. */
export async function planSearchCut(
  store: Pick<SearchStore, 'listSearchRows'>,
  list: ListKey,
  range: SearchRange,
  rows: number,
  pageSize = 1000,
): Promise<{ rows: number; starts: string[] }> {
  const starts: string[] = [];
  let seen = 0;
  for await (const page of rangeRows(store, list, range, pageSize)) {
    for (const r of page) {
      const last = starts.at(-1) ?? range.from;
      if (seen > 0 && seen % rows === 0 && r.lower > last) starts.push(r.lower);
      seen++;
    }
  }
  return { rows: seen, starts };
}

/**
 * Cuts `range` of `list` at `starts` (from `planSearchCut`), or, with a cut already pending on
 * the list, finishes that one (pass `null`). Resumable from any step. Throws
 * `SearchCutConflictError` when another runner moved the cut, `SearchCutVerificationError` when a
 * child keeps differing from its parent's range.
 */
export async function cutSearchRange(
  store: SearchCutStore,
  list: ListKey,
  plan: { range: SearchRange; starts: string[]; rows: number } | null,
  o: SearchCutOptions,
): Promise<{ parent: string; children: string[] }> {
  const sleep = o.sleep ?? defaultSleep;
  const clock = o.clock ?? nowPosition;
  const pageSize = o.pageSize ?? 1000;
  let directory = await store.getDirectory(list);
  let cut = searchLayoutOf(directory).split;

  /**
   * One step's compare-and-set from the stored cut `cut` to `next` (returned, for the caller to
   * keep as `cut`), retried while the stored cut is still `cut`; the plan is the step from none.
   */
  const step = async <T extends SearchSplit | null>(
    name: string,
    next: T,
    addStarts?: readonly string[],
  ): Promise<T> => {
    for (let attempt = 0; attempt < 20; attempt++) {
      const d = await store.getDirectory(list);
      const layout = searchLayoutOf(d);
      if (!sameCut(layout.split, cut)) throw new SearchCutConflictError(list, name);
      const starts = addStarts ? [...new Set([...layout.starts, ...addStarts])].sort() : layout.starts;
      if (await store.updateDirectory(list, d.version, { search: { starts, split: next } })) {
        directory = { ...d, version: d.version + 1, search: { starts, split: next } };
        return next;
      }
    }
    throw new SearchCutConflictError(list, name);
  };

  if (!cut) {
    if (!plan) throw new RangeError('no cut pending and no range named');
    if (plan.starts.length === 0) return { parent: plan.range.partition, children: [] };
    const planned: SearchSplit = {
      parent: plan.range.partition,
      starts: plan.starts,
      stage: 'dual',
      copied: 0,
    };
    // From no cut: another runner's cut stops this one with a conflict.
    cut = await step('plan', planned);
    await o.onProgress?.({
      step: 'planned',
      parent: planned.parent,
      rows: plan.rows,
      children: planned.starts,
    });
  }
  const parent = cut.parent;
  // P's upper end: the next range start of its base that is not one of its children.
  const moving = new Set(cut.starts);
  const before = searchLayoutOf(directory).starts.filter((s) => !moving.has(s));
  const own = rangesOfBase({ starts: before }, searchPrefix(parent)).find((r) => r.partition === parent);
  if (!own) throw new RangeError(`search range ${parent} is not in the layout`);
  const end = own.to;

  if (cut.stage === 'dual') {
    await sleep(o.settleMs);
    const s: SearchSplit = cut;
    for (let c = s.copied; c < s.starts.length; c++) {
      const child = s.starts[c] as string;
      const hi = s.starts[c + 1] ?? end;
      let rows = 0;
      let mismatches = 0;
      for (let round = 0; round < (o.verifyAttempts ?? 3); round++) {
        rows = await copyRange(store, list, parent, child, hi, pageSize);
        mismatches = await compareRange(store, list, parent, child, hi, pageSize);
        if (mismatches === 0) break;
        await sleep(o.settleMs);
      }
      if (mismatches > 0) throw new SearchCutVerificationError(list, child, mismatches);
      cut = await step(`copied ${c}`, { ...s, copied: c + 1 });
      await o.onProgress?.({ step: 'copied', parent, child, rows });
    }
    cut = await step('flip', { ...s, copied: s.starts.length, stage: 'flipped' as const }, s.starts);
  }
  if (cut.stage === 'flipped') {
    await o.onProgress?.({ step: 'flipped', parent });
    await sleep(o.settleMs);
    cut = await step('finalize', { ...cut, stage: 'finalized' as const });
    await o.onProgress?.({ step: 'finalized', parent });
  }
  const children = cut.starts;
  await sleep(o.settleMs);
  const lead = BigInt(Math.round((o.tombstoneLeadMs ?? 60_000) * 1000));
  await store.deleteSearchRange(list, parent, children[0] as string, wallClockVersion(clock() + lead));
  await step('clear', null);
  await o.onProgress?.({ step: 'deleted', parent });
  return { parent, children };
}

/** Copies the parent's rows in `[lo, hi)` to partition `lo`; returns how many were copied. */
async function copyRange(
  store: Pick<SearchStore, 'copySearchRows'>,
  list: ListKey,
  parent: string,
  lo: string,
  hi: string,
  pageSize: number,
): Promise<number> {
  let after: SearchKey | null = { lower: lo, otherId: MIN_ID };
  let rows = 0;
  while (after) {
    const page: { copied: number; last: SearchKey | null } = await store.copySearchRows(
      list,
      parent,
      lo,
      after,
      hi,
      pageSize,
    );
    rows += page.copied;
    after = page.copied < pageSize ? null : page.last;
  }
  return rows;
}

/** Keys in exactly one of the parent's `[lo, hi)` and child `lo` (a lockstep walk). */
async function compareRange(
  store: Pick<SearchStore, 'listSearchRows'>,
  list: ListKey,
  parent: string,
  lo: string,
  hi: string,
  pageSize: number,
): Promise<number> {
  const reader = (partition: string) => {
    const pages = rangeRows(store, list, { partition, from: lo, to: hi }, pageSize);
    let buffer: SearchKey[] = [];
    return async (): Promise<SearchKey | null> => {
      if (buffer.length === 0) {
        const next = await pages.next();
        buffer = next.done ? [] : [...next.value];
      }
      return buffer.shift() ?? null;
    };
  };
  const a = reader(parent);
  const b = reader(lo);
  let x = await a();
  let y = await b();
  let mismatches = 0;
  while (x || y) {
    const order = !x ? 1 : !y ? -1 : compareSearchKeys(x, y);
    if (order <= 0) x = await a();
    if (order >= 0) y = await b();
    if (order !== 0) mismatches++;
  }
  return mismatches;
}

function sameCut(a: SearchSplit | null, b: SearchSplit | null): boolean {
  if (a === null || b === null) return a === b;
  return (
    a.parent === b.parent &&
    a.stage === b.stage &&
    a.copied === b.copied &&
    a.starts.join() === b.starts.join()
  );
}

/** What `cutOverfilledRanges` did to one list. */
export interface SearchCutSummary {
  /** Ranges measured (read through). */
  ranges: number;
  /** Ranges cut (a resumed cut counts once). */
  cuts: number;
}

/**
 * Finishes a cut left pending on `list`, then measures every range of its search partitions and
 * cuts each one over `2 × rangeRows` rows. Each range is read once; a range just cut is not
 * measured again in the same run.
 */
export async function cutOverfilledRanges(
  store: SearchCutStore,
  list: ListKey,
  o: SearchCutOptions & {
    /** Told of each range measured over the bound, before it is cut. */
    onOverfilled?: (range: SearchRange, rows: number) => void;
    /** Told after each range measured (progress). */
    onMeasured?: (range: SearchRange, rows: number) => void;
  },
): Promise<SearchCutSummary> {
  const summary: SearchCutSummary = { ranges: 0, cuts: 0 };
  if (searchLayoutOf(await store.getDirectory(list)).split) {
    await cutSearchRange(store, list, null, o);
    summary.cuts++;
  }
  const layout = searchLayoutOf(await store.getDirectory(list));
  for (const base of SEARCH_BASES) {
    for (const range of rangesOfBase(layout, base)) {
      summary.ranges++;
      const plan = await planSearchCut(store, list, range, o.rangeRows, o.pageSize ?? 1000);
      o.onMeasured?.(range, plan.rows);
      if (plan.rows <= 2 * o.rangeRows || plan.starts.length === 0) continue;
      o.onOverfilled?.(range, plan.rows);
      await cutSearchRange(store, list, { range, ...plan }, o);
      summary.cuts++;
    }
  }
  return summary;
}
