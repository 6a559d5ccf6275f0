/**
 * A list page for clients: the list engine's page without deactivated members, hydrated, and the
 * first-page decision — a plain first page (no cursor, no time bounds, the default direction:
 * older, named or not) goes through the first-page cache (`GraphCaches.firstPage`), every other
 * page is read.
 */
import type { ListQueryOptions, ListService } from '../../lists/contracts.js';
import type { ListKey } from '../../model/types.js';
import type { GraphCaches } from '../caches/graph-caches.js';
import type { MemberPage } from '../contracts.js';
import type { pageMembers } from './page-members.js';

export interface ListPageDeps {
  lists: Pick<ListService, 'page'>;
  caches: Pick<GraphCaches, 'firstPage'>;
  /** One page's member filter and hydration (`page-members.ts`). */
  members: () => ReturnType<typeof pageMembers>;
  /** The list owner's counts: the size hint the first-page cache asks for. */
  counts: (list: ListKey) => Promise<unknown>;
}

/** Whether a page request is a plain first page, the one the first-page cache serves. */
export function isPlainFirstPage(cursor: string | null, o: ListQueryOptions): boolean {
  return cursor === null && o.direction !== 'newer' && o.since == null && o.until == null;
}

/** A page without deactivated members: the engine reads on past them, within its work budget. */
export async function listPage(
  d: ListPageDeps,
  list: ListKey,
  limit: number,
  cursor: string | null,
  options: ListQueryOptions = {},
): Promise<MemberPage> {
  const read = async () => {
    const m = d.members();
    const page = await d.lists.page(list, limit, cursor, { ...options, exclude: m.exclude });
    return { ...page, items: await m.hydrate(page.items) };
  };
  if (!isPlainFirstPage(cursor, options)) return read();
  return d.caches.firstPage(list, limit, read, () => d.counts(list));
}
