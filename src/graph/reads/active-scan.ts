/** The member filter of a fan-out scan that skips the inactive (`activeSince`). */
import type { MemberFilter } from '../../lists/contracts.js';
import type { Position } from '../../model/types.js';
import type { UserStore } from '../../ports/user-store.js';

/**
 * `hidden` (deactivated accounts), plus, with `since`, every member whose last reported activity
 * is before it or was never reported: one point read of `user_activity` per member (256 in flight)
 * beside the filter's own.
 */
export function activeScanFilter(
  hidden: MemberFilter,
  activity: Pick<UserStore, 'getActivity'>,
  since?: Position,
): MemberFilter {
  if (since === undefined) return hidden;
  return async (ids) => {
    const [out, at] = await Promise.all([hidden(ids), activity.getActivity(ids)]);
    const excluded = new Set(out);
    for (const id of ids) if ((at.get(id) ?? since - 1n) < since) excluded.add(id);
    return excluded;
  };
}
