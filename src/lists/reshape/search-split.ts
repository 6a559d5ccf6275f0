/**
 * Splitting an overfilled search partition into name ranges, one follows list at a time: the
 * reshape protocol (`reshape.ts`, its steps and their invariant) with name ranges as what moves,
 * so partitions stay bounded at celebrity size even for common prefixes. The ranges and the split
 * in progress are the list's `SearchLayout` (`model/search.ts`), kept in its directory. Parent
 * range P covers `[s, e)` in partition `s`.
 *
 * - Plan. Walk P's rows in name order: a boundary at the name of every `rangeRows`-th row (above
 *   the previous one), so P keeps `[s, b1)` and children `b1 … bk` take `[b1, b2)`, …, `[bk, e)`,
 *   each its own partition keyed by its first name. Writers place a name in `[b1, e)` in P and its
 *   child (`searchWritePartitions`) while the split is `dual` or `flipped`.
 * - Copy: P's rows of the child's range go to the child with `copySearchRows`, each cell at its own
 *   write time (a rename's tagged name keeps winning at its time). Verify: a lockstep walk of P's
 *   range and the child.
 * - Flip: the compare-and-set adds the starts to the layout. Readers read each child for its range
 *   and P only below `b1` (every read is bounded by its range, so P's moved rows, still there,
 *   never show twice).
 * - Clean-up: one range tombstone (`lower_username >= b1`) at a wall-clock version a minute ahead
 *   (`tombstoneLeadMs`: positions run ahead of their clocks).
 *
 * One split per list at a time. Bound. A range is split when it holds more than `2 × rangeRows`
 * rows, into ranges of `rangeRows` (250,000 by default: about 15 MiB of search rows; the measured
 * row is 59 B on disk). Between runs of the job a range grows by the follows it gains; names are
 * unique per account, so a range can always be split until each holds one name. The job's cost is
 * a read of every search row of each list over `2 × rangeRows` members (smaller lists cannot hold
 * an overfilled range and are skipped on their count), plus a copy of the rows it moves.
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
import type { Directory } from '../../model/time-buckets.js';
import type { ListKey } from '../../model/types.js';
import type { ListStore } from '../../ports/list-store.js';
import type { SearchStore } from '../../ports/search-store.js';
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

/** The steps of a search split; partitions are named by their first name. */
export type SearchSplitStep = ReshapeStep<string>;

export interface SearchSplitOptions extends ReshapeOptions<SearchSplitStep> {
  /** Rows per range after a split; a range over twice this is split. */
  rangeRows: number;
  /**
   * How far ahead of the clock the tombstone is dated, ms (default 60,000): above the version of
   * every write issued before the split was finalized, whose positions may run ahead of their
   * clocks (the pair protocol's bound, 5 s, plus clock skew). No write reaches the moved range of
   * the parent after that, so the margin costs nothing.
   */
  tombstoneLeadMs?: number;
}

export type SearchSplitStore = Pick<ListStore, 'getDirectory' | 'updateDirectory'> &
  Pick<SearchStore, 'listSearchRows' | 'copySearchRows' | 'deleteSearchRange'>;

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

/** Boundaries splitting `range` into pieces of `rangeRows`, and its rows: one walk of the range. */
export async function planSearchSplit(
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

/** The split's record: the directory's search layout, written by version; the flip adds the starts. */
function searchSplitKind(store: SearchSplitStore, list: ListKey): Reshape<Directory, SearchSplit | null> {
  return {
    read: () => store.getDirectory(list),
    stateOf: (d) => searchLayoutOf(d).split,
    same: sameSearchSplit,
    write: (d, next) => {
      const layout = searchLayoutOf(d);
      const flip = next?.stage === 'flipped' && layout.split?.stage === 'dual';
      const starts = flip ? [...new Set([...layout.starts, ...next.starts])].sort() : layout.starts;
      return store.updateDirectory(list, d.version, {
        search: { starts, split: next },
      });
    },
    conflict: (step) =>
      new ReshapeConflictError(`search split of ${list.userId} ${list.direction} changed (step ${step})`),
    markOf: (s) => s,
    at: (s, mark) => ({ ...(s as SearchSplit), ...mark }),
    cleared: () => null,
  };
}

/**
 * Splits `range` of `list` at `starts` (from `planSearchSplit`), or, with a split already pending
 * on the list, finishes that one (pass `null`). Resumable from any step. Throws
 * `ReshapeConflictError` when another runner moved the split, `ReshapeVerificationError` when a
 * child keeps differing from its parent's range.
 */
export async function splitSearchRange(
  store: SearchSplitStore,
  list: ListKey,
  plan: { range: SearchRange; starts: string[]; rows: number } | null,
  o: SearchSplitOptions,
): Promise<{ parent: string; children: string[] }> {
  const clock = o.clock ?? nowPosition;
  const pageSize = o.pageSize ?? 1000;
  const directory = await store.getDirectory(list);
  let planned: { next: () => SearchSplit; rows: number } | null = null;
  if (!searchLayoutOf(directory).split) {
    if (!plan) throw new RangeError('no split pending and no range named');
    if (plan.starts.length === 0) return { parent: plan.range.partition, children: [] };
    const next: SearchSplit = {
      parent: plan.range.partition,
      starts: plan.starts,
      stage: 'dual',
      copied: 0,
    };
    planned = { next: () => next, rows: plan.rows };
  }

  const moves = (state: SearchSplit | null, d: Directory): ReshapeMoves<string, { rows: number }> => {
    const s = state as SearchSplit;
    const parent = s.parent;
    // P's upper end: the next range start of its base that is not one of its children.
    const moving = new Set(s.starts);
    const before = searchLayoutOf(d).starts.filter((x) => !moving.has(x));
    const own = rangesOfBase({ starts: before }, searchPrefix(parent)).find((r) => r.partition === parent);
    if (!own) throw new RangeError(`search range ${parent} is not in the layout`);
    const range = (c: number) => [s.starts[c] as string, s.starts[c + 1] ?? own.to] as const;
    const lead = BigInt(Math.round((o.tombstoneLeadMs ?? 60_000) * 1000));
    return {
      parent,
      children: s.starts,
      copy: async (c) => ({
        rows: await copyRange(store, list, parent, ...range(c), pageSize),
      }),
      verify: (c) => compareRange(store, list, parent, ...range(c), pageSize),
      describe: (c) => `search range ${s.starts[c]} of ${list.userId} ${list.direction}`,
      cleanUp: () =>
        store.deleteSearchRange(list, parent, s.starts[0] as string, wallClockVersion(clock() + lead)),
    };
  };

  const done = await runReshape(searchSplitKind(store, list), directory, planned, moves, o);
  return { parent: done.parent, children: done.children };
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
function compareRange(
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
  return lockstepMismatches(reader(parent), reader(lo), compareSearchKeys);
}

function sameSearchSplit(a: SearchSplit | null, b: SearchSplit | null): boolean {
  if (a === null || b === null) return a === b;
  return (
    a.parent === b.parent &&
    a.stage === b.stage &&
    a.copied === b.copied &&
    a.starts.join() === b.starts.join()
  );
}

/** What `splitOverfilledRanges` did to one list. */
export interface SearchSplitSummary {
  /** Ranges measured (read through). */
  ranges: number;
  /** Ranges split (a resumed split counts once). */
  splits: number;
}

/**
 * Finishes a split left pending on `list`, then measures every range of its search partitions and
 * splits each one over `2 × rangeRows` rows. Each range is read once; a range just split is not
 * measured again in the same run.
 */
export async function splitOverfilledRanges(
  store: SearchSplitStore,
  list: ListKey,
  o: SearchSplitOptions & {
    /** Told of each range measured over the bound, before it is split. */
    onOverfilled?: (range: SearchRange, rows: number) => void;
    /** Told after each range measured (progress). */
    onMeasured?: (range: SearchRange, rows: number) => void;
  },
): Promise<SearchSplitSummary> {
  const summary: SearchSplitSummary = { ranges: 0, splits: 0 };
  if (searchLayoutOf(await store.getDirectory(list)).split) {
    await splitSearchRange(store, list, null, o);
    summary.splits++;
  }
  const layout = searchLayoutOf(await store.getDirectory(list));
  for (const base of SEARCH_BASES) {
    for (const range of rangesOfBase(layout, base)) {
      summary.ranges++;
      const plan = await planSearchSplit(store, list, range, o.rangeRows, o.pageSize ?? 1000);
      o.onMeasured?.(range, plan.rows);
      if (plan.rows <= 2 * o.rangeRows || plan.starts.length === 0) continue;
      o.onOverfilled?.(range, plan.rows);
      await splitSearchRange(store, list, { range, ...plan }, o);
      summary.splits++;
    }
  }
  return summary;
}
