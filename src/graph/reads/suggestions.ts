/**
 * Reading a user's precomputed suggestions (written by `src/jobs/suggest.ts`), filtered at read
 * time against what changed since the run: anyone the user now follows, has requested, blocks or
 * is blocked by, and deactivated or unknown accounts are dropped.
 *
 * `via` names accounts whose follows the user sees through the suggestion, so it keeps only an
 * intermediary whose following list the user may see now: active, not `hide_lists`, followed by
 * the user (a private one has approved the user; a block either way has ended the follow) and not
 * blocking the user. A candidate with no named intermediary left is dropped: its score may rest on
 * accounts the user may no longer see through (`via` holds at most 3, so unnamed ones may remain;
 * dropping is the safe side). The score is the run's and is not recomputed.
 *
 * Cost: one partition read of the stored list (≤ 100 rows) and single-partition reads of the
 * user's follows, requests and blocks edges and its bucketed inverse blocks for those ids and the
 * intermediaries (≤ 300 more), plus those accounts' user rows.
 */

import type { UserId } from '../../model/types.js';
import type { GraphStore } from '../../ports/graph-store.js';
import type { SuggestionItem } from '../contracts.js';

export async function readSuggestions(
  store: GraphStore,
  userId: UserId,
  limit: number,
): Promise<SuggestionItem[]> {
  const set = await store.getSuggestions(userId);
  if (!set || set.items.length === 0) return [];
  const ids = set.items.map((s) => s.id);
  const both = [...new Set([...ids, ...set.items.flatMap((s) => s.via)])];
  const blocksIn = await store.getLayout({
    userId,
    relation: 'blocks',
    direction: 'in',
  });
  const [follows, requests, blocks, blockedBy, users] = await Promise.all([
    store.getEdgesOut(userId, 'follows', both),
    store.getEdgesOut(userId, 'requests', ids),
    store.getEdgesOut(userId, 'blocks', ids),
    store.getEdgesIn(userId, 'blocks', both, blocksIn),
    store.getUsers(both),
  ]);
  const active = (m: Map<UserId, { state: string }>, id: UserId) => m.get(id)?.state === 'active';
  const seenThrough = (z: UserId) => {
    const u = users.get(z);
    return u?.state === 'active' && !u.hideLists && active(follows, z) && !active(blockedBy, z);
  };
  const out: SuggestionItem[] = [];
  for (const s of set.items) {
    if (out.length >= limit) break;
    const user = users.get(s.id);
    if (user?.state !== 'active' || s.id === userId) continue;
    if (active(follows, s.id) || active(requests, s.id) || active(blocks, s.id) || active(blockedBy, s.id))
      continue;
    const via = s.via.filter(seenThrough);
    if (via.length === 0) continue;
    out.push({ id: s.id, username: user.username, score: s.score, via });
  }
  return out;
}
