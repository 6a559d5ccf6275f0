/**
 * An account's following list whole, newest first: what the `following` cache holds
 * (`caches/graph-caches.ts`) and `followedBy` probes.
 */
import type { ListService } from '../../lists/contracts.js';
import { listOut, type UserId } from '../../model/types.js';
import type { FollowingIds } from '../caches/graph-caches.js';
import { MAX_SET_BATCH } from './set-queries.js';

/** Pages a whole following read may take beyond cap ÷ 1,000 (pages cut short by their budget). */
const FOLLOWING_READ_SLACK = 8;

/**
 * `owner`'s following list whole, newest first, or null when it holds more than `maxFollowing`
 * (a list imported or grown past the cap: walk it instead). Pages of 1,000; at most cap ÷ 1,000 +
 * `FOLLOWING_READ_SLACK` pages (a page cut short by the page budget still counts).
 */
export async function readFollowing(
  lists: Pick<ListService, 'page'>,
  owner: UserId,
  maxFollowing: number,
): Promise<FollowingIds | null> {
  const ids: bigint[] = [];
  const at: bigint[] = [];
  const maxPages = Math.ceil(maxFollowing / MAX_SET_BATCH) + FOLLOWING_READ_SLACK;
  let cursor: string | null = null;
  for (let pages = 1; ; pages++) {
    const p = await lists.page(listOut(owner, 'follows'), MAX_SET_BATCH, cursor);
    for (const item of p.items) {
      ids.push(item.id);
      at.push(item.createdAt);
    }
    if (ids.length > maxFollowing || (p.nextCursor !== null && pages >= maxPages)) return null;
    cursor = p.nextCursor;
    if (cursor === null) return { ids: BigInt64Array.from(ids), createdAt: BigInt64Array.from(at) };
  }
}
