/**
 * The keys of search within a follows list (`list_search`, `cql/024_list_search.cql`): members
 * ordered by lowercased username, then id, partitioned per list by the name's first two characters.
 *
 * Design note. A prefix of two or more characters lies in one partition (`prefix = q[0..2]`) and
 * one clustering range (`lower >= q` and `lower < q + '\uffff'`); a one-character prefix spans the
 * partition of the one-character name itself and the 38 two-character partitions `q + c`, read in
 * byte order (`SEARCH_ALPHABET`), which is the order of their names. So every query reads the
 * matches in (lowercased name, id) order and nothing else, whatever the list's size. A partition
 * holds the members sharing two first characters: bounded by how usernames spread, not by the
 * service (see the README's "Search" section for the adversarial case).
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
