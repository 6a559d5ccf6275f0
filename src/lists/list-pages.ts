/**
 * A list page and a scan page as the list service answers them: the time-bucket reads
 * (`time-pages.ts`) plus the cursors they carry and the cost they report. The cursors carry the
 * boundary only: the product card's merge cursor in its one-bucket case (`cursor-codec.ts`).
 *
 * A newer page (`direction=newer`, from a `prevCursor`) reads upward from its boundary and takes
 * `limit + 1` items: the extra one says whether anything newer is left (`prevCursor` null on
 * reaching the newest, so a walk back ends exactly at the first page) and is not shown. An older
 * page's `prevCursor` resumes above its first item; the first page (no cursor) has none. An empty
 * page's cursors use the key just beside the boundary so the boundary item itself is not lost. A
 * page cut short by its work budget carries a cursor at the last row read.
 */
import type { Directory } from '../model/time-buckets.js';
import type { ListEntry, ListKey, Position } from '../model/types.js';
import type { ListStore } from '../ports/list-store.js';
import type { ListPage, MemberFilter, ScanPage } from './contracts.js';
import type { CursorCodec, TimeBounds } from './cursor/cursor-codec.js';
import { keyAbove, keyBelow, MIN_ID, toItem } from './page-keys.js';
import { type PageStats, readNewer, readOlder, scanTimeSlice } from './time-pages.js';

/** The cost of one page or scan page, told to `ListServiceOptions.onPage`. */
export interface ListReadStats extends PageStats {
  kind: 'page' | 'scan';
  list: ListKey;
  /** Items returned. */
  items: number;
  /** True when the page stopped at its work budget (short, with a cursor). */
  budgetHit: boolean;
}

/** What a page or scan read needs: the rows, the cursor codec and the cost sink. */
export interface PageReads {
  store: Pick<ListStore, 'listBucket' | 'listBucketNewer'>;
  codec: CursorCodec;
  onPage?: ((s: ListReadStats) => void) | undefined;
}

/** One page request, its cursor already checked against the list, direction and bounds. */
export interface TimePageRequest {
  list: ListKey;
  directory: Directory;
  limit: number;
  /** The decoded cursor's boundary; null for the first page. */
  after: ListEntry | null;
  newer: boolean;
  since: Position | null;
  until: Position | null;
  exclude: MemberFilter | undefined;
  /** Rows after which no further round starts (the first always runs). */
  budget: number;
}

/** A page of a time-bucketed list (`time-pages.ts`) with its cursors (see the module note). */
export async function timeListPage(d: PageReads, q: TimePageRequest): Promise<ListPage> {
  const { list, directory, limit, after, newer, since, until, exclude, budget } = q;
  const bounds: TimeBounds | undefined = since === null && until === null ? undefined : { since, until };
  const stats: PageStats = { queries: 0, rowsRead: 0, buckets: 0, rounds: 0 };
  const seal = (direction: 'older' | 'newer', at: ListEntry) =>
    d.codec.encodePage({
      list,
      after: at,
      ...(direction === 'newer' ? { direction } : {}),
      ...(bounds ? { bounds } : {}),
    });
  const base = { store: d.store, list, directory, budget, stats, exclude };
  let page: ListPage;
  let budgetHit: boolean;
  if (after && newer) {
    const r = await readNewer({ ...base, after, until, want: limit + 1 });
    budgetHit = r.budgetHit;
    const shown = r.items.slice(0, limit).reverse();
    const newest = shown[0];
    page = {
      items: shown.map(toItem),
      nextCursor: seal('older', shown.at(-1) ?? keyAbove(after)),
      prevCursor:
        r.budgetHit && r.last
          ? seal('newer', r.last)
          : r.items.length > limit && newest
            ? seal('newer', newest)
            : null,
    };
  } else {
    const from = after ?? (until !== null ? { createdAt: until, otherId: MIN_ID } : null);
    const r = await readOlder({ ...base, after: from, since, want: limit });
    budgetHit = r.budgetHit;
    const resume = r.last ?? from;
    page = {
      items: r.items.map(toItem),
      nextCursor: r.done || !resume ? null : seal('older', resume),
      prevCursor: after ? seal('newer', r.items[0] ?? keyBelow(after)) : null,
    };
  }
  d.onPage?.({ kind: 'page', list, items: page.items.length, budgetHit, ...stats });
  return page;
}

/** One scan slice request (`ListService.scan`), its slice numbers already checked. */
export interface TimeScanRequest {
  list: ListKey;
  directory: Directory;
  slice: number;
  slices: number;
  limit: number;
  cursor: string | null;
  exclude: MemberFilter | undefined;
}

/** One scan slice of a time-bucketed list (`time-pages.ts`): the slice's buckets by owner key. */
export async function timeListScan(d: PageReads, q: TimeScanRequest): Promise<ScanPage> {
  const { list, directory, slice, slices, limit, cursor, exclude } = q;
  const pos = cursor ? d.codec.decodeTimeScan(cursor, list, slice, slices) : { key: 0, after: null };
  const stats: PageStats = { queries: 0, rowsRead: 0, buckets: 0, rounds: 0 };
  const r = await scanTimeSlice(d.store, list, directory, slice, slices, limit, pos, stats);
  const skip = exclude && r.ids.length > 0 ? await exclude(r.ids) : null;
  const kept = skip && skip.size > 0 ? r.ids.filter((id) => !skip.has(id)) : r.ids;
  d.onPage?.({ kind: 'scan', list, items: kept.length, budgetHit: false, ...stats });
  return {
    ids: kept,
    nextCursor: r.next ? d.codec.encodeTimeScan({ list, slice, slices, ...r.next }) : null,
  };
}
