/**
 * The members of one page: a member filter that drops deactivated accounts, and the page's
 * hydration with usernames.
 *
 * Design note. A page reads no member's user row when it can help it (a followers page
 * of 50 cost 101 user reads). Usernames come from the list rows (`ListItem.username`, written with
 * each row and rewritten by a rename's fan-out, `rename-fanout.ts`); only rows written before the
 * column existed lack one, and hydration reads the user rows of those members only (a member whose
 * row is gone is then left out). Deactivation comes from `filter`, the service's in-memory
 * registry (`deactivated-accounts.ts`) or an injected filter; without one, `deactivatedFilter`
 * reads the rows of the ids it is asked about and keeps them, so hydration never reads a member
 * twice. One instance serves one page (its map lives as long as the page's request).
 */
import type { ListItem, MemberFilter } from '../../lists/contracts.js';
import type { UserId, UserRecord } from '../../model/types.js';
import type { UserStore } from '../../ports/user-store.js';
import { deactivatedFilter } from '../accounts/account-state.js';
import type { Member } from '../contracts.js';

export function pageMembers(
  store: Pick<UserStore, 'getUsers'>,
  filter?: MemberFilter,
): { exclude: MemberFilter; hydrate: (items: readonly ListItem[]) => Promise<Member[]> } {
  const users = new Map<UserId, UserRecord | null>();
  const exclude = filter ?? deactivatedFilter(store, users);
  const hydrate = async (items: readonly ListItem[]) => {
    const unnamed = [...new Set(items.filter((i) => i.username === undefined).map((i) => i.id))].filter(
      (id) => !users.has(id),
    );
    if (unnamed.length > 0) {
      const read = await store.getUsers(unnamed);
      for (const id of unnamed) users.set(id, read.get(id) ?? null);
    }
    return items.flatMap((i) => {
      const username = i.username ?? users.get(i.id)?.username;
      return username === undefined ? [] : [{ ...i, username }];
    });
  };
  return { exclude, hydrate };
}
