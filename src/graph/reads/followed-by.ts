/**
 * "Followed by": the accounts `viewer` follows that follow `id`, closest first (`GraphApi.followedBy`).
 *
 * Design note. The viewer's following list (bounded by the following cap) against `id`'s inverse
 * edges. The total counts every hit; the sample is the first `limit` hits closest first
 * (`../shared/spec/api.md` Part 3): the viewer's close friends, then accounts that follow the
 * viewer back, then the rest, each tier in the viewer's following order (most recently followed
 * first). Each tier keeps at most `limit` hits, so memory stays `3 × limit` whatever the walk's
 * size; the tiers are found by two more probes of the viewer's own edges per batch of hits (its
 * `close_friends` out, its `follows` in), skipped once the first tier is full. The following list
 * comes whole from the `following` cache (`readFollowing` through it, when the account is under
 * the cap), probed 1,000 ids at a time; without the cache, or over the cap, the set walk drives
 * it page by page (200 a page). It names members of `id`'s followers, so visibility is the lists'
 * (`assertCanViewLists`).
 */
import type { ListItem } from '../../lists/contracts.js';
import { listOut, type UserId } from '../../model/types.js';
import type { FollowingIds } from '../caches/graph-caches.js';
import type { Member } from '../contracts.js';
import type { EdgeReads } from './edge-reads.js';
import type { pageMembers } from './page-members.js';
import { MAX_SET_BATCH, type SetQueries } from './set-queries.js';

/** Following-list page size of the followed-by walk (well under the contains limit). */
const FOLLOWED_BY_WALK_PAGE = 200;

export interface FollowedByDeps {
  edges: Pick<EdgeReads, 'activeEdges'>;
  sets: Pick<SetQueries, 'walk'>;
  /** `viewer`'s following list whole (through the `following` cache), or null: walk it instead. */
  following: (viewer: UserId) => Promise<FollowingIds | null>;
  /** One page's member filter and hydration (`page-members.ts`). */
  members: () => ReturnType<typeof pageMembers>;
}

/** The accounts `viewer` follows that follow `id`: a sample of `limit`, closest first, and the total (see the note). */
export async function followedBy(
  d: FollowedByDeps,
  viewer: UserId,
  id: UserId,
  limit: number,
): Promise<{ sample: Member[]; total: number }> {
  const m = d.members();
  const tiers: [ListItem[], ListItem[], ListItem[]] = [[], [], []];
  let total = 0;
  const take = async (matched: readonly ListItem[]) => {
    total += matched.length;
    if (matched.length === 0 || tiers[0].length >= limit) return;
    const ids = matched.map((i) => i.id);
    const [close, back] = await Promise.all([
      d.edges.activeEdges(viewer, 'close_friends', 'out', ids),
      d.edges.activeEdges(viewer, 'follows', 'in', ids),
    ]);
    for (const item of matched) {
      const tier = tiers[close.has(item.id) ? 0 : back.has(item.id) ? 1 : 2];
      if (tier.length < limit) tier.push(item);
    }
  };
  const whole = await d.following(viewer);
  if (whole) {
    for (let i = 0; i < whole.ids.length; i += MAX_SET_BATCH) {
      const batch: ListItem[] = [];
      for (let k = i; k < Math.min(i + MAX_SET_BATCH, whole.ids.length); k++) {
        const member = whole.ids[k] as bigint;
        if (member !== id) batch.push({ id: member, createdAt: whole.createdAt[k] as bigint });
      }
      const on = await d.edges.activeEdges(
        id,
        'follows',
        'in',
        batch.map((b) => b.id),
      );
      const hits = batch.filter((b) => on.has(b.id));
      const hidden = hits.length > 0 ? await m.exclude(hits.map((h) => h.id)) : new Set<UserId>();
      await take(hits.filter((h) => !hidden.has(h.id)));
    }
  } else {
    const walk = d.sets.walk(
      {
        drive: listOut(viewer, 'follows'),
        probe: (ids) => d.edges.activeEdges(id, 'follows', 'in', ids),
        keep: 'intersect',
        exclude: id,
      },
      { inner: null, boundary: null },
      () => FOLLOWED_BY_WALK_PAGE,
      m.exclude,
    );
    for await (const b of walk) await take(b.matched);
  }
  return { sample: await m.hydrate(tiers.flat().slice(0, limit)), total };
}
