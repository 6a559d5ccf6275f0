/**
 * The members of one page: a member filter that drops deactivated accounts, and the page's
 * hydration with usernames. The filter reads the user rows of the ids it is asked about and keeps
 * them, so hydrating the page reads only members it never saw (none, with the default filter):
 * each member's row is read at most once per page. Members whose row is gone are left out. With an
 * injected filter (`GraphServiceOptions.memberFilter`) the filter is that one and hydration reads
 * each member once. One instance serves one page (its map lives as long as the page's request).
 */
import type { ListItem, MemberFilter } from '../lists/contracts.js';
import type { UserId, UserRecord } from '../model/types.js';
import type { UserStore } from '../ports/store.js';
import { deactivatedFilter } from './account-state.js';
import type { Member } from './contracts.js';

export function pageMembers(
  store: Pick<UserStore, 'getUsers'>,
  injected?: MemberFilter,
): { exclude: MemberFilter; hydrate: (items: readonly ListItem[]) => Promise<Member[]> } {
  const users = new Map<UserId, UserRecord | null>();
  const read = deactivatedFilter(store, users);
  const hydrate = async (items: readonly ListItem[]) => {
    await read(items.map((i) => i.id));
    return items.flatMap((i) => {
      const u = users.get(i.id);
      return u ? [{ ...i, username: u.username }] : [];
    });
  };
  return { exclude: injected ?? read, hydrate };
}
