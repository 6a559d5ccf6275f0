/**
 * The keys of search within a follows list (`list_search`, `cql/024_list_search.cql`): members
 * ordered by lowercased username, then id, partitioned per list by name ranges.
 *
 * Design note. Every name belongs to one *base* partition: its first two characters (one for a
 * one-character name). A prefix of two or more characters lies in one base and one clustering
 * range (`lower >= q` and `lower < q + '\uffff'`); a one-character prefix spans the base of the
 * one-character name itself and the 38 two-character bases `q + c`, in byte order
 * (`SEARCH_ALPHABET`), which is the order of their names.
 *
 * A base holds the members sharing two first characters, which a celebrity's list can make large
 * (1.84M of 9M generated handles start with `th`; all of them could). So a base is split into name
 * ranges when it outgrows a bound (`lists/reshape/search-split.ts`): the list's *search layout* (kept in
 * its follows directory, `model/time-buckets.ts` `Directory.search`) holds the added range starts,
 * each a name longer than its base and starting with it, and a range `[s, next)` is partition `s`
 * (the `prefix` column holds the range's start). A name's partition is the greatest start at or
 * below it within its base (`searchPartitionOf`); a query reads, in order, the ranges that meet
 * `[q, q + '\uffff')`, each read bounded by its range (`searchRanges`), so a parent's rows moved
 * to a child but not yet deleted never show twice. With no starts, every base is one range and
 * the partition is the base: the layout of lists never split.
 */
import type { UserId } from './types.js';

/** The characters of a lowercased username, in byte order (`USERNAME_PATTERN` lowercased). */
export const SEARCH_ALPHABET: readonly string[] = [
  '.',
  ...'0123456789',
  '_',
  ...'abcdefghijklmnopqrstuvwxyz',
];

/** Above every character of a username: `q + SEARCH_END` bounds the names that start with `q`. */
export const SEARCH_END = '\uffff';

/** A search row's place in its list's order: the lowercased name, then the member's id. */
export interface SearchKey {
  lower: string;
  otherId: UserId;
}

/** One member of a follows list as its search row holds it. */
export interface SearchRow extends SearchKey {
  /** The name as written (its case kept). */
  username: string;
  /** The list row's `created_at` (the member's followed_at). */
  createdAt: bigint;
}

/** The partition of a lowercased name: its first two characters (one for a one-character name). */
export function searchPrefix(lower: string): string {
  return lower.slice(0, 2);
}

/**
 * The partitions a lowercased query reads, in order: one for two or more characters; for one, the
 * partition of the one-character name, then `q + c` for every `c` of `SEARCH_ALPHABET`.
 */
export function searchPartitions(q: string): string[] {
  if (q.length >= 2) return [searchPrefix(q)];
  return [q, ...SEARCH_ALPHABET.map((c) => q + c)];
}

/** (lowercased name, id) order. */
export function compareSearchKeys(a: SearchKey, b: SearchKey): number {
  if (a.lower !== b.lower) return a.lower < b.lower ? -1 : 1;
  if (a.otherId !== b.otherId) return a.otherId < b.otherId ? -1 : 1;
  return 0;
}

/**
 * A split of one search partition (`parent`) into name ranges, in progress
 * (`lists/reshape/search-split.ts`):
 * `starts` (ascending, each above `parent` and within its range) begin the children.
 * - `dual`: readers read the parent whole; writers of a name in a child's range write it to the
 *   parent and the child;
 * - `flipped`: the layout's starts include the children; readers read each range from its own
 *   partition; writers still write both;
 * - `finalized`: writers write the children only.
 */
export interface SearchSplit {
  parent: string;
  starts: string[];
  stage: 'dual' | 'flipped' | 'finalized';
  /** Children copied and verified so far (the copy resumes at this child). */
  copied: number;
}

/** A follows list's search partitions: the range starts added to the bases, and the split in progress. */
export interface SearchLayout {
  /** Added starts, ascending; each is longer than its base (`searchPrefix`) and starts with it. */
  starts: string[];
  split: SearchSplit | null;
}

export const EMPTY_SEARCH_LAYOUT: SearchLayout = { starts: [], split: null };

/** The search layout a directory holds (`Directory.search`; absent: never split). */
export function searchLayoutOf(directory: { search?: SearchLayout }): SearchLayout {
  return directory.search ?? EMPTY_SEARCH_LAYOUT;
}

/** Whether a layout differs from the bases alone: starts added, or a split in progress. */
export function isCut(layout: SearchLayout): boolean {
  return layout.starts.length > 0 || layout.split !== null;
}

/** The partition that holds `lower` for readers: the greatest start at or below it within its base. */
export function searchPartitionOf(layout: Pick<SearchLayout, 'starts'>, lower: string): string {
  const ranges = rangesOfBase(layout, searchPrefix(lower));
  return (ranges.findLast((r) => r.from <= lower) ?? (ranges[0] as SearchRange)).partition;
}

/**
 * The partitions a write of `lower` goes to: its own, and while a split moves its range, the other
 * side of the split too (the parent's copy stays complete until writers stop writing it, and the
 * child's is complete once copied). Each write carries its own version, so the copies agree.
 */
export function searchWritePartitions(layout: SearchLayout, lower: string): string[] {
  const at = searchPartitionOf(layout, lower);
  const split = layout.split;
  if (!split || split.stage === 'finalized') return [at];
  if (split.stage === 'dual') {
    if (at !== split.parent) return [at];
    const child = split.starts.filter((s) => s <= lower).at(-1);
    return child === undefined ? [at] : [at, child];
  }
  return split.starts.includes(at) ? [at, split.parent] : [at];
}

/** A name range `[from, to)` of a list's search rows and the partition that holds it. */
export interface SearchRange {
  partition: string;
  from: string;
  to: string;
}

/** The ranges of `base` under `layout`, in name order. */
export function rangesOfBase(layout: Pick<SearchLayout, 'starts'>, base: string): SearchRange[] {
  const subs = layout.starts.filter((s) => s !== base && searchPrefix(s) === base).sort();
  const starts = [base, ...subs];
  // A one-character base holds the one-character name alone.
  const end = base.length < 2 ? `${base}\u0000` : base + SEARCH_END;
  return starts.map((from, i) => ({ partition: from, from, to: starts[i + 1] ?? end }));
}

/** The ranges a lowercased query reads, in name order: those of its bases that meet `[q, q + END)`. */
export function searchRanges(layout: Pick<SearchLayout, 'starts'>, q: string): SearchRange[] {
  const end = q + SEARCH_END;
  return searchPartitions(q).flatMap((base) =>
    rangesOfBase(layout, base).filter((r) => r.from < end && r.to > q),
  );
}
