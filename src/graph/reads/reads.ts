/**
 * The one-hop reads that are not list pages: a follow's status, a pair's relationship, the
 * Follow-button flags of up to 100 ids, `contains` over up to 1000 ids, and the O(1) counts. Every
 * read drops deactivated members (the injected `MemberFilter`) where it names them.
 */
import type { MemberFilter } from '../../lists/contracts.js';
import { InvalidInputError, UserNotFoundError } from '../../model/errors.js';
import { MAX_CONTAINS_IDS, MAX_RELATIONSHIP_IDS } from '../../model/limits.js';
import {
  type Direction,
  listIn,
  listOut,
  type Position,
  type Relation,
  type UserId,
} from '../../model/types.js';
import type { CountStore } from '../../ports/count-store.js';
import type { EdgeStore } from '../../ports/edge-store.js';
import type { UserStore } from '../../ports/user-store.js';
import type { Counts, FollowStatus, Relationship, RelationshipFlags } from '../contracts.js';
import type { EdgeReads } from './edge-reads.js';

export type ReadStore = Pick<UserStore, 'getUsers'> &
  Pick<EdgeStore, 'getEdgesOut' | 'getEdgesOutOf' | 'getPairEdges'> &
  Pick<CountStore, 'getCountSync' | 'hasDirty' | 'getUserCounts'>;

/** One list's served count and freshness. */
interface Served {
  n: number;
  exact: boolean;
  asOf: Position | null;
}

export class GraphReads {
  constructor(
    private readonly store: ReadStore,
    private readonly edges: EdgeReads,
    private readonly hidden: MemberFilter,
    private readonly clock: () => Position,
    /** Whether counts come from the account tables (`count-source.ts`); default the list tables. */
    private readonly accountTables: () => Promise<boolean> = async () => false,
  ) {}

  async getFollowStatus(source: UserId, target: UserId): Promise<FollowStatus> {
    // One read of the source's partition for both relations (a cold status: it and the user rows).
    const [users, edges] = await Promise.all([
      this.store.getUsers([source, target]),
      this.store.getEdgesOutOf(source, ['follows', 'requests'], [target]),
    ]);
    for (const id of [source, target]) if (users.get(id)?.state !== 'active') throw new UserNotFoundError(id);
    const f = edges.find((e) => e.relation === 'follows');
    if (f?.state === 'active') return { state: 'following', since: f.createdAt };
    const r = edges.find((e) => e.relation === 'requests');
    if (r?.state === 'active') return { state: 'requested', since: r.createdAt };
    return { state: 'none' };
  }

  async relationship(viewer: UserId, other: UserId): Promise<Relationship> {
    const edges = await this.store.getPairEdges(viewer, other);
    const on = (s: UserId, r: Relation) =>
      edges.some((e) => e.sourceId === s && e.relation === r && e.state === 'active');
    return {
      following: on(viewer, 'follows') ? 'following' : on(viewer, 'requests') ? 'requested' : 'none',
      followedBy: on(other, 'follows'),
      blocking: on(viewer, 'blocks'),
      muting: on(viewer, 'mutes'),
      restricting: on(viewer, 'restricts'),
    };
  }

  async relationships(viewer: UserId, ids: readonly UserId[]): Promise<RelationshipFlags[]> {
    if (ids.length > MAX_RELATIONSHIP_IDS)
      throw new InvalidInputError('ids', `at most ${MAX_RELATIONSHIP_IDS} ids`);
    if (ids.length === 0) return [];
    const distinct = [...new Set(ids)];
    const out = (relation: Relation) => this.store.getEdgesOut(viewer, relation, distinct);
    const inv = (relation: Relation) => this.edges.inverseEdges(viewer, relation, distinct);
    const [
      follows,
      requests,
      blocks,
      mutes,
      closeFriends,
      followedBy,
      requestedBy,
      blockedBy,
      hidden,
      restricts,
    ] = await Promise.all([
      out('follows'),
      out('requests'),
      out('blocks'),
      out('mutes'),
      out('close_friends'),
      inv('follows'),
      inv('requests'),
      inv('blocks'),
      this.hidden(distinct),
      out('restricts'),
    ]);
    const on = (m: Map<UserId, { state: string }>, id: UserId) =>
      m.get(id)?.state === 'active' && !hidden.has(id);
    return ids.map((id) => ({
      id,
      following: on(follows, id),
      followedBy: on(followedBy, id),
      requested: on(requests, id),
      requestedBy: on(requestedBy, id),
      blocking: on(blocks, id),
      blockedBy: on(blockedBy, id),
      muting: on(mutes, id),
      closeFriend: on(closeFriends, id),
      restricting: on(restricts, id),
    }));
  }

  /**
   * The subset of `ids` with an active `relation` edge from `owner` (`out`) or to it (`in`), in
   * request order, each id once. `out`: one single-partition read; `in`: one per bucket code of
   * `owner`'s `in` list among the ids (at most min(N, |ids|)). Throws `InvalidInputError` over 1000 ids.
   */
  async contains(
    owner: UserId,
    relation: Relation,
    direction: Direction,
    ids: readonly UserId[],
  ): Promise<UserId[]> {
    if (ids.length > MAX_CONTAINS_IDS) throw new InvalidInputError('ids', `at most ${MAX_CONTAINS_IDS} ids`);
    const [active, hidden] = await Promise.all([
      this.edges.activeEdges(owner, relation, direction, ids),
      this.hidden(ids),
    ]);
    const seen = new Set<UserId>();
    return ids.filter((id) => {
      if (seen.has(id) || hidden.has(id) || !active.has(id)) return false;
      seen.add(id);
      return true;
    });
  }

  /**
   * O(1): the two counters (shards plus the reconciler's correction) and their freshness. From the
   * account tables two single-partition reads (one account's counters, one account's correction
   * and dirty flags); from the list tables, until the counts migration is done, six (per list the
   * counter shards, the correction and the dirty flags). Negative drift (before reconciliation)
   * reads as 0. A list never written reads 0, exact, as of now.
   */
  async counts(userId: UserId): Promise<Counts> {
    const now = this.clock();
    const serve = (
      c: { shardSum: number; correction: number; asOf: Position | null; written: boolean },
      dirty: boolean,
    ): Served => {
      const asOf = c.asOf ?? (c.written ? null : now);
      return { n: Math.max(0, c.shardSum + c.correction), exact: !dirty && asOf !== null, asOf };
    };
    let a: Served;
    let b: Served;
    if (await this.accountTables()) {
      const c = await this.store.getUserCounts(userId, 'follows');
      a = serve(c.in, c.in.dirty);
      b = serve(c.out, c.out.dirty);
    } else {
      [a, b] = (await Promise.all(
        [listIn(userId, 'follows'), listOut(userId, 'follows')].map(async (list) => {
          const [sync, dirty] = await Promise.all([this.store.getCountSync(list), this.store.hasDirty(list)]);
          return serve(sync, dirty);
        }),
      )) as [Served, Served];
    }
    return {
      followers: a.n,
      following: b.n,
      exact: a.exact && b.exact,
      // biome-ignore lint/complexity/useMathMinMax: positions are bigints, which Math.min does not take
      asOf: a.asOf === null || b.asOf === null ? null : a.asOf < b.asOf ? a.asOf : b.asOf,
    };
  }
}
