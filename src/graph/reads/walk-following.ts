/** An account's following list walked page by page, members filtered and hydrated (exports, fan-outs). */
import { type WalkStore, walkList } from '../../lists/list-walker.js';
import { listOut, type UserId } from '../../model/types.js';
import type { Member } from '../contracts.js';
import type { pageMembers } from './page-members.js';

/**
 * `walkList` over `owner`'s following list, each page's members filtered and hydrated by a fresh
 * `members()`; the next page is read after `onPage` settles, and a page left empty is skipped.
 */
export async function walkFollowing(
  store: WalkStore,
  members: () => ReturnType<typeof pageMembers>,
  owner: UserId,
  onPage: (items: Member[]) => Promise<void>,
  pageSize = 500,
): Promise<void> {
  await walkList(
    store,
    listOut(owner, 'follows'),
    async (rows) => {
      const m = members();
      const hidden = await m.exclude(rows.map((r) => r.otherId));
      const items = rows
        .filter((r) => !hidden.has(r.otherId))
        .map((r) => ({ id: r.otherId, createdAt: r.createdAt, username: r.username }));
      const hydrated = await m.hydrate(items);
      if (hydrated.length > 0) await onPage(hydrated);
    },
    { pageSize },
  );
}
