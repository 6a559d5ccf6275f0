/**
 * A search page of a follows list: the members whose username starts with a prefix, in
 * (lowercased name, id) order, paged by a signed cursor bound to the list and the query.
 *
 * Design note. The rows come from `list_search` (`model/search.ts` for the partitioning), never from
 * the list itself, so a page's reads are bounded by the matches it passes, not by the list's size:
 * a query of two or more characters reads one clustering range of the one name range that holds
 * its start (and the next ranges only while the page is not full: where the list's search
 * partitions were split, `lists/reshape/search-split.ts`); a one-character query walks its 39 bases' ranges
 * in order the same way (an empty range costs one request). Each range is read within its own
 * bounds, so a split parent's moved rows, kept until the split deletes them, never show twice. Each request asks for what the page still lacks plus one (the
 * look-ahead that tells the last page from a full one). Members the filter drops (deactivated
 * accounts) are read past within the page's rows-read budget, the list pages' (`pageBudget`);
 * when it runs out the page is short and its cursor non-null, resuming after the last row read
 * (the rule the list pages follow). The cursor holds the last key passed, so rows added or
 * removed meanwhile neither repeat nor skip the rows that stay.
 *
 * Rejected: filtering the list's own rows by name (cost by list size, 9M rows for a celebrity);
 * a secondary index or SAI on the list tables (a scatter over the cluster per query, and no order
 * by name across buckets).
 */
import { InvalidInputError } from '../model/errors.js';
import { USERNAME_PATTERN } from '../model/limits.js';
import {
  compareSearchKeys,
  SEARCH_END,
  type SearchKey,
  type SearchLayout,
  type SearchRange,
  searchRanges,
} from '../model/search.js';
import type { ListKey } from '../model/types.js';
import type { SearchStore } from '../ports/search-store.js';
import type { ListItem, ListPage, MemberFilter } from './contracts.js';
import type { CursorCodec } from './cursor/cursor-codec.js';
import { MIN_ID } from './page-keys.js';

export interface SearchPageDeps {
  store: Pick<SearchStore, 'listSearchRows'>;
  /** The list's search partitions (`ListService.directory`'s, cached like the time directory). */
  layout: Pick<SearchLayout, 'starts'>;
  codec: CursorCodec;
  /** Rows a page may read before it stops short. */
  budget: number;
}

/** What one search page cost (for metrics and tests). */
export interface SearchPageStats {
  queries: number;
  rowsRead: number;
  budgetHit: boolean;
}

/**
 * The page of `list` (a follows list) after `cursor` (null: from the start) of members whose
 * username starts with `q` (case-insensitive), at most `limit`. Throws `InvalidInputError` for a
 * `q` that is not 1–30 username characters or a list of another relation, `InvalidCursorError` for
 * a cursor not issued for this list and query.
 */
export async function searchPage(
  deps: SearchPageDeps,
  list: ListKey,
  q: string,
  limit: number,
  cursor: string | null,
  exclude?: MemberFilter,
): Promise<{ page: ListPage; stats: SearchPageStats }> {
  if (!USERNAME_PATTERN.test(q)) throw new InvalidInputError('q', '1 to 30 of A-Z a-z 0-9 . _');
  if (list.relation !== 'follows') throw new InvalidInputError('relation', 'follows');
  const lower = q.toLowerCase();
  let after: SearchKey = cursor ? deps.codec.decodeSearch(cursor, list, lower) : { lower, otherId: MIN_ID };
  const end = lower + SEARCH_END;
  const ranges = searchRanges(deps.layout, lower);
  const stats: SearchPageStats = { queries: 0, rowsRead: 0, budgetHit: false };
  const items: (ListItem & { key: SearchKey })[] = [];
  // The first range that may hold a key after the cursor.
  let p = 0;
  while (p < ranges.length && after.lower >= (ranges[p] as SearchRange).to) p++;
  while (p < ranges.length && items.length <= limit) {
    if (stats.rowsRead >= deps.budget) {
      stats.budgetHit = true;
      break;
    }
    const range = ranges[p] as SearchRange;
    const from = { lower: range.from, otherId: MIN_ID };
    const start = compareSearchKeys(after, from) < 0 ? from : after;
    // biome-ignore lint/complexity/useMathMinMax: strings (Math.min takes numbers)
    const stop = range.to < end ? range.to : end;
    const want = Math.min(limit + 1 - items.length, deps.budget - stats.rowsRead);
    const rows = await deps.store.listSearchRows(list, range.partition, start, stop, want);
    stats.queries++;
    stats.rowsRead += rows.length;
    const last = rows.at(-1);
    if (last) after = { lower: last.lower, otherId: last.otherId };
    const skip = exclude && rows.length > 0 ? await exclude(rows.map((r) => r.otherId)) : null;
    for (const r of rows) {
      if (skip?.has(r.otherId)) continue;
      items.push({ id: r.otherId, createdAt: r.createdAt, username: r.username, key: r });
    }
    if (rows.length < want) p++;
  }
  const shown = items.slice(0, limit);
  const seal = (at: SearchKey) =>
    deps.codec.encodeSearch({ list, q: lower, after: { lower: at.lower, otherId: at.otherId } });
  const lastShown = shown.at(-1);
  const nextCursor =
    items.length > limit && lastShown
      ? seal(lastShown.key)
      : stats.budgetHit && p < ranges.length
        ? seal(after)
        : null;
  return { page: { items: shown.map(({ key: _, ...item }) => item), nextCursor }, stats };
}
