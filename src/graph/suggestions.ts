/**
 * Reading a user's precomputed suggestions (written by `src/jobs/suggest.ts`), filtered at read
 * time against what changed since the run: anyone the user now follows, has requested, blocks or
 * is blocked by, and deactivated or unknown accounts are dropped. Cost: one partition read of the
 * stored list (≤ 100 rows) and single-partition reads of the user's follows, requests and blocks
 * edges and its bucketed inverse blocks for those ids, plus the users' rows.
 */
import type { GraphStore } from '../store/store.js';
import type { UserId } from '../store/types.js';
import type { SuggestionItem } from './contracts.js';

export async function readSuggestions(
  store: GraphStore,
  userId: UserId,
  limit: number,
): Promise<SuggestionItem[]> {
  const set = await store.getSuggestions(userId);
  if (!set || set.items.length === 0) return [];
  const ids = set.items.map((s) => s.id);
  const blocksIn = await store.getLayout({ userId, relation: 'blocks', direction: 'in' });
  const [follows, requests, blocks, blockedBy, users] = await Promise.all([
    store.getEdgesOut(userId, 'follows', ids),
    store.getEdgesOut(userId, 'requests', ids),
    store.getEdgesOut(userId, 'blocks', ids),
    store.getEdgesIn(userId, 'blocks', ids, blocksIn),
    store.getUsers(ids),
  ]);
  const active = (m: Map<UserId, { state: string }>, id: UserId) => m.get(id)?.state === 'active';
  const out: SuggestionItem[] = [];
  for (const s of set.items) {
    if (out.length >= limit) break;
    const user = users.get(s.id);
    if (user?.state !== 'active' || s.id === userId) continue;
    if (active(follows, s.id) || active(requests, s.id) || active(blocks, s.id) || active(blockedBy, s.id))
      continue;
    out.push({ id: s.id, username: user.username, score: s.score, via: s.via });
  }
  return out;
}
