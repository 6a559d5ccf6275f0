/**
 * The graph service: users, every relationship mutation, and the one-hop reads.
 *
 * Design note. Every mutation goes through `mutate`, one write path for all relations:
 * (1) validate at request time (users exist, not self; for live operations also the block, the
 * following cap and a pending request for accept — see below); a private target turns a follow
 * into a `request` op; (2) pick the position: the caller's explicit one (admin replay) or
 * `max(now, newest position on the pair + 1)`; (3) append the op to the pair history and read the
 * history again (insert-then-read: of two concurrent appliers, at least the later reader sees
 * both ops); (4) write the fold of that view (`pair-writer.ts`), where the most complete view
 * wins by version; (5) apply counter deltas `after − before`.
 *
 * Replay ops (explicit `position`) are recorded whatever the current state: the request-time
 * checks compare against *now*, which says nothing about the op's position (a follow replayed
 * while a block stands may predate the block, or follow an unblock not yet delivered). The fold
 * applies the rules at the op's position, so refusing there is where convergence comes from.
 * Live ops are positioned after everything on the pair, so their request-time check and the fold
 * agree, and a refusal can be reported as an error.
 *
 * A crash between the append and the edge write leaves the history ahead of the edges: a retry of
 * the same op (a duplicate, reported `duplicate: true`) re-folds and rewrites everything, and the
 * repair job does the same for pairs nobody retries.
 */
import { type GraphStore, nowPosition } from '../store/store.js';
import type {
  Direction,
  EdgeRecord,
  ListKey,
  OpKind,
  PairOp,
  Position,
  Relation,
  UserId,
  UserRecord,
} from '../store/types.js';
import { readBucketCodes } from './buckets.js';
import type {
  Counts,
  FollowStatus,
  GraphApi,
  ListPage,
  ListService,
  MutationOptions,
  MutationResult,
  Relationship,
  ScanPage,
} from './contracts.js';
import {
  BlockedError,
  FollowingCapError,
  HiddenError,
  NoPendingRequestError,
  NotVisibleError,
  SelfFollowError,
  UserNotFoundError,
} from './errors.js';
import { activeEdge, containsOp, edgeKey, foldPair, type PairFold } from './pair-fold.js';
import {
  applyCountDeltas,
  countDeltas,
  listIn,
  listOut,
  type PairWriterDeps,
  writePairView,
} from './pair-writer.js';

export interface GraphServiceOptions {
  store: GraphStore;
  lists: ListService;
  /** Following cap (`GRAPH_MAX_FOLLOWING`). */
  maxFollowing: number;
  /** µs since the epoch; injectable for tests. */
  clock?: () => Position;
}

/** The result of every mutation, with whether the op was already in the pair history. */
export type GraphMutationResult<S extends string> = MutationResult<S> & { duplicate: boolean };

/** Usernames: 1–30 of `[A-Za-z0-9._]` (api.md "Users"). */
export const USERNAME_PATTERN = /^[A-Za-z0-9._]{1,30}$/;

/** Following-list page size of the followed-by walk (well under the contains limit). */
const FOLLOWED_BY_WALK_PAGE = 200;

/** Most ids `contains` accepts in one call (one single-partition read). */
export const MAX_CONTAINS_IDS = 1000;

/** Pending requests accepted inline when an account goes public; more run in the background. */
const INLINE_ACCEPT_LIMIT = 100;

interface Mutation {
  /** The acting account and the other one, checked to exist in this order. */
  actor: UserId;
  other: UserId;
  /** The edge the op acts on (`accept`, `decline`, `remove_follower`: requester/follower → actor). */
  sourceId: UserId;
  targetId: UserId;
  /** The op kind, or how to pick it from the other account (a private target turns a follow into a request). */
  kind: OpKind | ((other: UserRecord) => OpKind);
  /** Extra request-time rules for live ops, against the pair as it stands. */
  check?: (now: PairFold) => Promise<void> | void;
}

interface Applied {
  op: PairOp;
  after: PairFold;
  changed: boolean;
  duplicate: boolean;
}

export class GraphService implements GraphApi {
  private readonly store: GraphStore;
  private readonly lists: ListService;
  private readonly maxFollowing: number;
  private readonly clock: () => Position;
  private readonly deps: PairWriterDeps;

  constructor(o: GraphServiceOptions) {
    this.deps = { store: o.store, lists: o.lists };
    this.store = o.store;
    this.lists = o.lists;
    this.maxFollowing = o.maxFollowing;
    this.clock = o.clock ?? nowPosition;
  }

  // ---- users ----

  /**
   * Creates or updates a user (keeps `state` and `hideLists` of an existing one). Throws
   * `RangeError` for a username outside the rules (the HTTP layer validates first) and the
   * store's `UsernameTakenError`. Going private → public accepts the pending requests: inline up
   * to 100, in the background beyond.
   */
  async putUser(input: {
    id: UserId;
    username: string;
    private?: boolean;
  }): Promise<{ user: UserRecord; created: boolean }> {
    if (!USERNAME_PATTERN.test(input.username))
      throw new RangeError('username must be 1–30 of [A-Za-z0-9._]');
    if (input.id <= 0n) throw new RangeError('user id must be positive');
    const existing = await this.store.getUser(input.id);
    const user: UserRecord = {
      id: input.id,
      username: input.username,
      private: input.private ?? existing?.private ?? false,
      state: existing?.state ?? 'active',
      hideLists: existing?.hideLists ?? false,
    };
    const { created } = await this.store.putUser(user);
    if (existing?.private && !user.private) {
      const pending = await this.store.getCount(listIn(user.id, 'requests'));
      const run = this.acceptPendingRequests(user.id);
      if (pending <= INLINE_ACCEPT_LIMIT) await run;
      else run.catch(() => undefined);
    }
    return { user, created };
  }

  /** Throws `UserNotFoundError`. */
  async getUser(id: UserId): Promise<UserRecord> {
    const u = await this.store.getUser(id);
    if (!u) throw new UserNotFoundError(id);
    return u;
  }

  async getUsers(ids: readonly UserId[]): Promise<Map<UserId, UserRecord>> {
    return this.store.getUsers(ids);
  }

  /**
   * Accepts every pending request to `owner` (paging its incoming requests list). Safe to re-run;
   * returns how many were accepted by this run.
   */
  async acceptPendingRequests(owner: UserId): Promise<number> {
    const list = listIn(owner, 'requests');
    const layout = await this.store.getLayout(list);
    let accepted = 0;
    for (const code of readBucketCodes(layout)) {
      for (;;) {
        const page = await this.store.listBucket(list, code, null, 500);
        if (page.length === 0) break;
        for (const entry of page) {
          const r = await this.acceptRequest(owner, entry.otherId).catch((e: unknown) => {
            if (e instanceof NoPendingRequestError) return null;
            throw e;
          });
          if (r?.changed) accepted++;
        }
        if (page.length < 500) break;
      }
    }
    return accepted;
  }

  // ---- mutations ----

  async follow(
    actor: UserId,
    target: UserId,
    o: MutationOptions = {},
  ): Promise<GraphMutationResult<'following' | 'requested'>> {
    // The cap's counter read only matters for a live follow; start it alongside the pair reads.
    const following = o.position === undefined ? this.store.getCount(listOut(actor, 'follows')) : null;
    following?.catch(() => undefined);
    const a = await this.mutate(
      {
        actor,
        other: target,
        sourceId: actor,
        targetId: target,
        kind: (t) => (t.private ? 'request' : 'follow'),
        check: async (now) => {
          if (activeEdge(now, actor, 'blocks', target) || activeEdge(now, target, 'blocks', actor))
            throw new BlockedError();
          if (activeEdge(now, actor, 'follows', target) || activeEdge(now, actor, 'requests', target)) return;
          if (((await following) ?? 0) >= this.maxFollowing) throw new FollowingCapError(this.maxFollowing);
        },
      },
      o,
    );
    if (activeEdge(a.after, actor, 'requests', target)) return this.result(a, 'requested');
    const isFollowing = activeEdge(a.after, actor, 'follows', target) || a.op.kind === 'follow';
    return this.result(a, isFollowing ? 'following' : 'requested');
  }

  async unfollow(actor: UserId, target: UserId, o: MutationOptions = {}) {
    return this.result(
      await this.mutate({ actor, other: target, sourceId: actor, targetId: target, kind: 'unfollow' }, o),
      'none',
    );
  }

  async removeFollower(owner: UserId, follower: UserId, o: MutationOptions = {}) {
    return this.onInbound(owner, follower, 'remove_follower', 'none', o);
  }

  async acceptRequest(owner: UserId, requester: UserId, o: MutationOptions = {}) {
    const a = await this.mutate(
      {
        actor: owner,
        other: requester,
        sourceId: requester,
        targetId: owner,
        kind: 'accept',
        check: (now) => {
          if (!activeEdge(now, requester, 'requests', owner) && !activeEdge(now, requester, 'follows', owner))
            throw new NoPendingRequestError();
        },
      },
      o,
    );
    return this.result(a, 'following');
  }

  async declineRequest(owner: UserId, requester: UserId, o: MutationOptions = {}) {
    return this.onInbound(owner, requester, 'decline', 'none', o);
  }

  async block(actor: UserId, target: UserId, o: MutationOptions = {}) {
    return this.simple(actor, target, 'block', 'blocking', o);
  }

  async unblock(actor: UserId, target: UserId, o: MutationOptions = {}) {
    return this.simple(actor, target, 'unblock', 'none', o);
  }

  async mute(actor: UserId, target: UserId, o: MutationOptions = {}) {
    return this.simple(actor, target, 'mute', 'muting', o);
  }

  async unmute(actor: UserId, target: UserId, o: MutationOptions = {}) {
    return this.simple(actor, target, 'unmute', 'none', o);
  }

  async addCloseFriend(actor: UserId, target: UserId, o: MutationOptions = {}) {
    return this.simple(actor, target, 'close_friend_add', 'close_friend', o);
  }

  async removeCloseFriend(actor: UserId, target: UserId, o: MutationOptions = {}) {
    return this.simple(actor, target, 'close_friend_remove', 'none', o);
  }

  private async simple<S extends string>(
    actor: UserId,
    target: UserId,
    kind: OpKind,
    state: S,
    o: MutationOptions,
  ): Promise<GraphMutationResult<S>> {
    return this.result(
      await this.mutate({ actor, other: target, sourceId: actor, targetId: target, kind }, o),
      state,
    );
  }

  /** `owner` acts on the edge `other → owner` (removing a follower, declining a request). */
  private async onInbound<S extends string>(
    owner: UserId,
    other: UserId,
    kind: OpKind,
    state: S,
    o: MutationOptions,
  ): Promise<GraphMutationResult<S>> {
    return this.result(
      await this.mutate({ actor: owner, other, sourceId: other, targetId: owner, kind }, o),
      state,
    );
  }

  private result<S extends string>(a: Applied, state: S): GraphMutationResult<S> {
    return { state, changed: a.changed, position: a.op.position, duplicate: a.duplicate };
  }

  /** Both users exist; returns the second (the target). */
  private async requireUsers(actor: UserId, target: UserId): Promise<UserRecord> {
    const users = await this.store.getUsers([actor, target]);
    if (!users.has(actor)) throw new UserNotFoundError(actor);
    const t = users.get(target);
    if (!t) throw new UserNotFoundError(target);
    return t;
  }

  /** The one write path (see the design note). */
  private async mutate(m: Mutation, o: MutationOptions): Promise<Applied> {
    const { store } = this;
    if (m.actor === m.other) throw new SelfFollowError();
    const [other, before] = await Promise.all([
      this.requireUsers(m.actor, m.other),
      store.listPairOps(m.sourceId, m.targetId),
    ]);
    const kind = typeof m.kind === 'function' ? m.kind(other) : m.kind;
    const foldBefore = foldPair(before);
    const live = o.position === undefined;
    if (live) await m.check?.(foldBefore);
    const newest = before.at(-1)?.position ?? 0n;
    const now = this.clock();
    const position = o.position ?? (now > newest ? now : newest + 1n);
    if (position <= 0n) throw new RangeError('position must be positive');
    const op: PairOp = { sourceId: m.sourceId, targetId: m.targetId, kind, position };
    const duplicate = containsOp(before, op);
    // A live op that changes nothing (a repeated follow, an unfollow of nobody) is not recorded:
    // its position is newer than everything on the pair, so it cannot matter to any later fold,
    // and recording it would let retry loops grow the pair's history without bound. The pair
    // view is still rewritten below, which heals an earlier attempt that crashed mid-write.
    const noop = live && !duplicate && sameActive(foldBefore, foldPair([...before, op]));
    if (!duplicate && !noop) await store.appendPairOp(op);
    // A duplicate or a no-op is usually a retry after a failure: count against what the edge rows
    // show, so a first attempt that crashed before its edge write gets its count now, and one that
    // completed does not count twice.
    const countedBefore =
      duplicate || noop ? storedFold(await store.getPairEdges(m.sourceId, m.targetId)) : foldBefore;
    const view = noop ? before : await store.listPairOps(m.sourceId, m.targetId);
    const after = await writePairView(this.deps, view);
    await applyCountDeltas(this.deps, countDeltas(countedBefore, after));
    if (noop) return { op, after, duplicate, changed: false };
    const without = foldPair(
      view.filter((x) => !(x.position === position && x.sourceId === op.sourceId && x.kind === op.kind)),
    );
    return { op, after, duplicate, changed: !duplicate && !sameActive(without, after) };
  }

  // ---- reads ----

  async getFollowStatus(source: UserId, target: UserId): Promise<FollowStatus> {
    const [follows, requests] = await Promise.all([
      this.store.getEdgesOut(source, 'follows', [target]),
      this.store.getEdgesOut(source, 'requests', [target]),
    ]);
    const f = follows.get(target);
    if (f?.state === 'active') return { state: 'following', since: f.createdAt };
    const r = requests.get(target);
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
    };
  }

  /**
   * The subset of `ids` with an active `relation` edge from `owner` (`out`) or to it (`in`), in
   * request order, each id once. `out`: one single-partition read; `in`: one per bucket code of
   * `owner`'s `in` list among the ids (at most min(N, |ids|)). Throws `RangeError` over 1000 ids.
   */
  async contains(
    owner: UserId,
    relation: Relation,
    direction: Direction,
    ids: readonly UserId[],
  ): Promise<UserId[]> {
    if (ids.length > MAX_CONTAINS_IDS) throw new RangeError(`at most ${MAX_CONTAINS_IDS} ids`);
    const edges =
      direction === 'out'
        ? await this.store.getEdgesOut(owner, relation, ids)
        : await this.inverseEdges(owner, relation, ids);
    const seen = new Set<UserId>();
    return ids.filter((id) => {
      if (seen.has(id) || edges.get(id)?.state !== 'active') return false;
      seen.add(id);
      return true;
    });
  }

  /** O(1): the two counters. Negative drift (before reconciliation) reads as 0. */
  async counts(userId: UserId): Promise<Counts> {
    const [followers, following] = await Promise.all([
      this.store.getCount(listIn(userId, 'follows')),
      this.store.getCount(listOut(userId, 'follows')),
    ]);
    return { followers: Math.max(0, followers), following: Math.max(0, following) };
  }

  /** Pure delegate to the list service; visibility is checked by the caller. */
  async listPage(list: ListKey, limit: number, cursor: string | null): Promise<ListPage> {
    return this.lists.page(list, limit, cursor);
  }

  /**
   * Walks the viewer's following list (bounded by the following cap) in pages and asks one
   * single-partition `contains` on `id`'s inverse edges per page.
   */
  async followedBy(viewer: UserId, id: UserId, limit: number): Promise<{ sample: UserId[]; total: number }> {
    const sample: UserId[] = [];
    let total = 0;
    let cursor: string | null = null;
    do {
      const page: ListPage = await this.lists.page(listOut(viewer, 'follows'), FOLLOWED_BY_WALK_PAGE, cursor);
      const candidates = page.items.map((i) => i.id).filter((x) => x !== id);
      if (candidates.length > 0) {
        const hits = await this.contains(id, 'follows', 'in', candidates);
        total += hits.length;
        for (const h of hits) if (sample.length < limit) sample.push(h);
      }
      cursor = page.nextCursor;
    } while (cursor !== null);
    return { sample, total };
  }

  /** Pure delegate to the list service; visibility is checked by the caller. */
  async scanPage(
    list: ListKey,
    slice: number,
    slices: number,
    limit: number,
    cursor: string | null,
  ): Promise<ScanPage> {
    return this.lists.scan(list, slice, slices, limit, cursor);
  }

  // ---- visibility ----

  async assertCanViewProfile(viewer: UserId, owner: UserId): Promise<void> {
    await this.visibleOwner(viewer, owner);
  }

  async assertCanViewLists(viewer: UserId, owner: UserId): Promise<void> {
    const user = await this.visibleOwner(viewer, owner);
    if (viewer === owner) return;
    if (user.hideLists) throw new NotVisibleError();
    if (!user.private) return;
    const f = await this.inverseEdges(owner, 'follows', [viewer]);
    if (f.get(viewer)?.state !== 'active') throw new NotVisibleError();
  }

  /**
   * Edge states `s → target` for the ids, read in the buckets of the target's `in` list as readers
   * see it now (its `buckets` flips only after a growth copied the inverse rows).
   */
  private async inverseEdges(target: UserId, relation: Relation, sourceIds: readonly UserId[]) {
    const layout = await this.lists.layoutForWrite(listIn(target, relation));
    return this.store.getEdgesIn(target, relation, sourceIds, layout);
  }

  /** The owner, unless unknown (`UserNotFoundError`), deactivated or blocking the viewer (`HiddenError`). */
  private async visibleOwner(viewer: UserId, owner: UserId): Promise<UserRecord> {
    const user = await this.getUser(owner);
    if (viewer === owner) return user;
    if (user.state === 'deactivated') throw new HiddenError(owner);
    const blocks = await this.store.getEdgesOut(owner, 'blocks', [viewer]);
    if (blocks.get(viewer)?.state === 'active') throw new HiddenError(owner);
    return user;
  }
}

/** The pair as its stored edge rows show it, in fold shape (no candidates: only states are used). */
function storedFold(edges: readonly EdgeRecord[]): PairFold {
  return {
    edges: new Map(edges.map((e) => [edgeKey(e.sourceId, e.relation, e.targetId), { ...e, candidates: [] }])),
  };
}

/** Same active edges with the same `createdAt` (what lists and counts show). */
function sameActive(a: PairFold, b: PairFold): boolean {
  const act = (f: PairFold) =>
    [...f.edges]
      .filter(([, e]) => e.state === 'active')
      .map(([k, e]) => `${k}@${e.createdAt}`)
      .sort()
      .join(',');
  return act(a) === act(b);
}
