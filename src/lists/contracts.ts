/**
 * The list engine's one interface (`ListService`) and its page and scan shapes: what the graph
 * service and the jobs ask of lists.
 */

import type { SearchLayout } from '../model/search.js';
import type { BucketLayout, ListEntry, ListKey, Position, UserId } from '../model/types.js';

export interface ListItem {
  id: UserId;
  /** µs position at which the edge became active (the list order key). */
  createdAt: Position;
  /** The member's username as its list row holds it; absent on rows written without one. */
  username?: string;
}

export interface ListPage {
  items: ListItem[];
  /** The page of older items (`direction: 'older'`); null at the end. */
  nextCursor: string | null;
  /**
   * The page of newer items (`direction: 'newer'`); null on the first page (nothing newer).
   * Always set by `BucketedListService`; optional so existing fakes stay valid.
   */
  prevCursor?: string | null;
}

/**
 * How a list page is read (the API contract, Part 2). Items are always newest first. `older` (default)
 * continues after a `nextCursor`; `newer` goes back from a `prevCursor` toward the newest (without
 * a cursor it answers the first page). `since` / `until` (µs) keep only members whose list
 * position is in `[since, until)`; a cursor is bound to its direction and bounds.
 */
export interface ListQueryOptions {
  direction?: 'older' | 'newer';
  since?: Position | null;
  until?: Position | null;
}

/** A `[since, until)` range of list positions; null or absent: unbounded on that side. */
export type TimeRange = Pick<ListQueryOptions, 'since' | 'until'>;

/** `ListQueryOptions` plus the member filter the graph service applies to every page. */
export interface PageOptions extends ListQueryOptions {
  /**
   * Members to skip (deactivated accounts); the page reads on past them and stays full unless its
   * work budget runs out first (then it is short, with a cursor past the skipped members).
   */
  exclude?: MemberFilter;
}

/**
 * Which of `ids` a read must skip: members whose account is deactivated. A list page, a set query
 * or an export calls it once per batch of candidates and reads on past the skipped ones, so pages
 * stay full within their work budget. The graph service supplies it; list and set machinery only
 * apply it.
 */
export type MemberFilter = (ids: readonly UserId[]) => Promise<ReadonlySet<UserId>>;

/** Where the rows of one list go (`ListService.placement`). */
export interface RowPlacement {
  layout: BucketLayout;
  codes(entry: ListEntry): number[];
  /** Follows lists: where the list's search rows go (`model/search.ts`). */
  search: SearchLayout;
}

export interface ScanPage {
  ids: UserId[];
  nextCursor: string | null;
}

/** Options of one scan page (`ListService.scan`). */
export interface ScanOptions {
  /** Drops members (scan pages may be short). */
  exclude?: MemberFilter;
}

/**
 * The list side of the domain (time-bucketed pages and their cursors, scans, inverse-edge layout
 * growth), injected into the graph service so the write path and the read path meet only here.
 */
export interface ListService {
  /**
   * Newest-first page; `cursor` must have been issued for the same `list`, direction and bounds.
   * With `options.exclude` the page skips the excluded members and stays full, except at the end
   * or when its work budget (rows read) runs out: then it is short, possibly empty, and its cursor
   * (`nextCursor`, or `prevCursor` for `newer`) is non-null and resumes past the skipped members.
   */
  page(list: ListKey, limit: number, cursor: string | null, options?: PageOptions): Promise<ListPage>;
  /**
   * The `nextCursor` a plain page (no bounds, older direction) ending at `last` carries: it resumes
   * just past `last` in either engine (both resume from the boundary key). The read caches use it
   * to keep a cached first page's cursor right when they patch the page.
   */
  olderCursor(list: ListKey, last: ListEntry): string;
  /**
   * The members of `list` (a follows list) whose username starts with `q` (1–30 username
   * characters, case-insensitive), in (lowercased name, id) order, at most `limit`, after `cursor`
   * (issued for the same list and query; `InvalidCursorError` otherwise). Reads the search rows
   * only: its cost is bounded by the matches it passes, not by the list's size
   * (`list-search.ts`). With `options.exclude` it skips those members and may come back short
   * (its work budget spent) with a non-null cursor, like `page`.
   */
  search(
    list: ListKey,
    q: string,
    limit: number,
    cursor: string | null,
    options?: Pick<PageOptions, 'exclude'>,
  ): Promise<ListPage>;
  /** One slice of a fan-out scan; `options.exclude` drops members (scan pages may be short). */
  scan(
    list: ListKey,
    slice: number,
    slices: number,
    limit: number,
    cursor: string | null,
    options?: ScanOptions,
  ): Promise<ScanPage>;
  /**
   * The list's inverse-edge layout now (cached for at most the layout cache TTL): `edges_in` rows
   * and count codes are read under its `buckets` and written to every code of `writeBucketCodes`
   * (both layouts while `growingTo` is set). The list's own rows are in time buckets.
   */
  currentLayout(list: ListKey): Promise<BucketLayout>;
  /**
   * Where `list`'s rows go now (cached like the layout): the inverse-edge layout (for `edges_in`)
   * and, per row, every time bucket a writer writes or deletes it in — its own, or parent and child
   * while a split covers it. Throws `LegacyListModeError` for a list stored by the retired
   * hash-bucket engine.
   */
  placement(list: ListKey): Promise<RowPlacement>;
  /**
   * Whether a writer that just inserted `inserted` rows into `list` should read its size and call
   * `noteSize` (a list far below its next threshold need not be sized on every insert).
   */
  sizeCheckDue(list: ListKey, inserted: number): boolean;
  /** Told the list's approximate size after a write; may start an online growth. Never throws. */
  noteSize(list: ListKey, size: number): void;
}
