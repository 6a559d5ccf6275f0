/**
 * The graph service: the domain's facade (`GraphApi`). It holds the parts `graph-parts.ts` builds
 * and hands each call to the one that does the job:
 *
 * - `accounts/`: the user row, the durable account tasks its changes start, reported activity,
 *   and the registry of deactivated accounts.
 * - `pair/`: every relationship mutation, through one write path (`write-path.ts`).
 * - `reads/`: status, relationships, `contains`, counts, visibility, set queries, suggestions,
 *   list pages and scans with their member filter (deactivated accounts are skipped), followed-by
 *   and the following walk.
 * - `feed.ts` and `caches/`: the change feed and the read caches that follow its tail.
 *
 * The one rule of its own: read-your-writes for a mutation's pair (`dropping`).
 */
import type { ListQueryOptions, MemberFilter, ScanPage, TimeRange } from '../lists/contracts.js';
import type { SetQueryKind } from '../lists/cursor/set-cursor.js';
import { UserNotFoundError } from '../model/errors.js';
import type { Direction, ListKey, Position, Relation, UserId, UserRecord } from '../model/types.js';
import type { UserInput } from './accounts/accounts.js';
import type { DeactivatedAccounts } from './accounts/deactivated-accounts.js';
import type { GraphCaches } from './caches/graph-caches.js';
import type {
  Caller,
  Counts,
  FollowStatus,
  GraphApi,
  Member,
  MemberPage,
  MutationOptions,
  Relationship,
  RelationshipFlags,
  SuggestionItem,
} from './contracts.js';
import type { Feed } from './feed.js';
import type { IntentRecovery } from './feed-intents.js';
import { buildGraphParts, type GraphParts, type GraphServiceOptions } from './graph-parts.js';
import type { GraphMutationResult, TOGGLES, ToggleKind } from './pair/write-path.js';
import { activeScanFilter } from './reads/active-scan.js';
import type { CountSource } from './reads/count-source.js';
import { followedBy } from './reads/followed-by.js';
import { listPage } from './reads/list-page.js';
import { readFollowing } from './reads/read-following.js';
import type { SetPage } from './reads/set-queries.js';
import { readSuggestions } from './reads/suggestions.js';
import { walkFollowing } from './reads/walk-following.js';

export type { GraphServiceOptions } from './graph-parts.js';

export class GraphService implements GraphApi {
  private readonly p: GraphParts;
  /** Members a read must skip: deactivated accounts (see `account-state.ts`), or the injected filter. */
  readonly hiddenMembers: MemberFilter;
  /** The change feed (`feed.ts`). */
  readonly feed: Feed;
  /** Resolves the feed's intents left behind (`feed-intents.ts`): `start` it where the feed is served. */
  readonly intentRecovery: IntentRecovery;
  /** The in-memory registry of deactivated accounts, when the service has one. */
  readonly registry: DeactivatedAccounts | null;
  /** The read caches (`caches/graph-caches.ts`); disabled ones hold nothing. */
  readonly caches: GraphCaches;
  /** Which copy of the counts `counts` reads (`count-source.ts`). */
  readonly countSource: CountSource;

  constructor(o: GraphServiceOptions) {
    this.p = buildGraphParts(o);
    ({
      hiddenMembers: this.hiddenMembers,
      feed: this.feed,
      intentRecovery: this.intentRecovery,
      registry: this.registry,
      caches: this.caches,
      countSource: this.countSource,
    } = this.p);
  }

  // ---- users, account tasks and activity (`accounts/accounts.ts`) ----

  putUser(input: UserInput): Promise<{ user: UserRecord; created: boolean }> {
    return this.p.accounts.putUser(input);
  }
  /** Throws `UserNotFoundError`. Through the user cache (within the staleness bound). */
  async getUser(id: UserId): Promise<UserRecord> {
    const u = await this.p.reader.getUser(id);
    if (!u) throw new UserNotFoundError(id);
    return u;
  }
  getUsers(ids: readonly UserId[]): Promise<Map<UserId, UserRecord>> {
    return this.p.reader.getUsers(ids);
  }
  /** Resumes every unfinished account task in the background (once, at start-up); returns how many. */
  resumeAccountTasks(): Promise<number> {
    return this.p.accounts.resume();
  }
  /** Resolves when no account task runs in this process (tests). */
  settleAccountTasks(): Promise<void> {
    return this.p.accounts.settle();
  }
  /** Runs the owner's `accept_requests` task now (tests, and a PUT that finds one left over). */
  runAcceptTask(owner: UserId): Promise<number> {
    return this.p.accounts.runAcceptTask(owner);
  }
  /** See `Accounts.reportActivity`. */
  reportActivity(id: UserId, at: Position): Promise<void> {
    return this.p.accounts.reportActivity(id, at);
  }
  /** The last reported activity of `id` (µs), or null when never reported. */
  lastActiveAt(id: UserId): Promise<Position | null> {
    return this.p.accounts.lastActiveAt(id);
  }

  // ---- mutations (`pair/write-path.ts`) ----

  follow(actor: UserId, target: UserId, o?: MutationOptions) {
    return this.dropping(actor, target, this.p.writes.follow(actor, target, o));
  }
  unfollow(actor: UserId, target: UserId, o?: MutationOptions) {
    return this.dropping(actor, target, this.p.writes.unfollow(actor, target, o));
  }
  acceptRequest(owner: UserId, requester: UserId, o?: MutationOptions) {
    return this.dropping(owner, requester, this.p.writes.accept(owner, requester, o));
  }
  declineRequest(owner: UserId, requester: UserId, o?: MutationOptions) {
    return this.dropping(owner, requester, this.p.writes.onInbound(owner, requester, 'decline', o));
  }
  removeFollower(owner: UserId, follower: UserId, o?: MutationOptions) {
    return this.dropping(owner, follower, this.p.writes.onInbound(owner, follower, 'remove_follower', o));
  }
  readonly block = this.toggle('block');
  readonly unblock = this.toggle('unblock');
  readonly mute = this.toggle('mute');
  readonly unmute = this.toggle('unmute');
  readonly addCloseFriend = this.toggle('close_friend_add');
  readonly removeCloseFriend = this.toggle('close_friend_remove');
  readonly restrict = this.toggle('restrict');
  readonly unrestrict = this.toggle('unrestrict');

  /** The typed-edge op `kind` as a `GraphApi` method. */
  private toggle<K extends ToggleKind>(kind: K) {
    return (
      actor: UserId,
      target: UserId,
      o?: MutationOptions,
    ): Promise<GraphMutationResult<(typeof TOGGLES)[K]['on'] | 'none'>> =>
      this.dropping(actor, target, this.p.writes.toggle(kind, actor, target, o));
  }

  /**
   * Read-your-writes: the pair's cached entries are dropped when its mutation settles (after its
   * counter work), before the caller answers. The follow lists' first pages only when it failed (it
   * may have written part of its change): a mutation that returns has published its events to this
   * instance's caches before (`Feed.written`, right after each batch), and they patched or dropped
   * the pages it changed; dropping them again would throw away a celebrity's page on every follow.
   */
  private async dropping<T>(a: UserId, b: UserId, write: Promise<T>): Promise<T> {
    let ok = false;
    try {
      const r = await write;
      ok = true;
      return r;
    } finally {
      this.caches.dropPair(a, b, { pages: !ok });
    }
  }

  // ---- reads (`reads/`) ----

  getFollowStatus(source: UserId, target: UserId): Promise<FollowStatus> {
    return this.p.reads.getFollowStatus(source, target);
  }
  relationship(viewer: UserId, other: UserId): Promise<Relationship> {
    return this.p.reads.relationship(viewer, other);
  }
  relationships(viewer: UserId, ids: readonly UserId[]): Promise<RelationshipFlags[]> {
    return this.p.reads.relationships(viewer, ids);
  }
  contains(
    owner: UserId,
    relation: Relation,
    direction: Direction,
    ids: readonly UserId[],
  ): Promise<UserId[]> {
    return this.p.reads.contains(owner, relation, direction, ids);
  }
  counts(userId: UserId): Promise<Counts> {
    return this.caches.countsThrough(userId, () => this.p.reads.counts(userId));
  }
  suggestions(userId: UserId, limit: number): Promise<SuggestionItem[]> {
    return readSuggestions(this.p.store, userId, limit);
  }

  // ---- lists: the list engine's pages with the member filter; visibility is the caller's ----

  /** A page without deactivated members (`reads/list-page.ts`: a plain first page through its cache). */
  listPage(
    list: ListKey,
    limit: number,
    cursor: string | null,
    options?: ListQueryOptions,
  ): Promise<MemberPage> {
    const { lists, members } = this.p;
    const d = { lists, members, caches: this.caches, counts: (l: ListKey) => this.counts(l.userId) };
    return listPage(d, list, limit, cursor, options);
  }

  /** A search page without deactivated members (`list-search.ts`); its rows carry the names. */
  async search(list: ListKey, q: string, limit: number, cursor: string | null): Promise<MemberPage> {
    const m = this.p.members();
    const page = await this.p.lists.search(list, q, limit, cursor, { exclude: m.exclude });
    return { ...page, items: await m.hydrate(page.items) };
  }

  /** A scan page without deactivated members, nor, with `activeSince`, inactive ones (`reads/active-scan.ts`; ids only, for fan-out). */
  scanPage(
    list: ListKey,
    slice: number,
    slices: number,
    limit: number,
    cursor: string | null,
    o: { activeSince?: Position } = {},
  ): Promise<ScanPage> {
    const exclude = activeScanFilter(this.hiddenMembers, this.p.store, o.activeSince);
    return this.p.lists.scan(list, slice, slices, limit, cursor, { exclude });
  }

  /** A set-query page with its cost (`reads/set-queries.ts`). */
  async setPage(
    kind: SetQueryKind,
    owner: UserId,
    limit: number,
    cursor: string | null,
    bounds: TimeRange = {},
  ): Promise<Omit<SetPage, 'items'> & MemberPage> {
    const m = this.p.members();
    const page = await this.p.sets.page(kind, owner, limit, cursor, bounds, m.exclude);
    return { ...page, items: await m.hydrate(page.items) };
  }

  /** The accounts `viewer` follows that follow `id` (`reads/followed-by.ts`). */
  followedBy(viewer: UserId, id: UserId, limit: number): Promise<{ sample: Member[]; total: number }> {
    const { edges, sets, members, lists, maxFollowing } = this.p;
    const following = (v: UserId) =>
      this.caches.following.enabled
        ? this.caches.following.through(v, () => readFollowing(lists, v, maxFollowing))
        : Promise.resolve(null);
    return followedBy({ edges, sets, members, following }, viewer, id, limit);
  }

  /** `owner`'s following list page by page, members filtered and hydrated (`reads/walk-following.ts`). */
  walkFollowing(owner: UserId, onPage: (items: Member[]) => Promise<void>, pageSize = 500): Promise<void> {
    return walkFollowing(this.p.store, this.p.members, owner, onPage, pageSize);
  }

  // ---- visibility (`reads/visibility.ts`) ----

  assertAccountsActive(
    owner: UserId,
    caller: Caller,
    scope: 'account' | 'other',
  ): Promise<UserRecord | null> {
    return this.p.visibility.assertAccountsActive(owner, caller, scope);
  }
  assertListsVisible(caller: Caller, owner: UserId, known?: UserRecord | null): Promise<void> {
    return this.p.visibility.assertListsVisible(caller, owner, known);
  }
  listsVisible(caller: Caller, owner: UserId): Promise<boolean> {
    return this.p.visibility.listsVisible(caller, owner);
  }
  assertCanViewProfile(viewer: UserId, owner: UserId): Promise<void> {
    return this.p.visibility.assertCanViewProfile(viewer, owner);
  }
  assertCanViewLists(viewer: UserId, owner: UserId): Promise<void> {
    return this.p.visibility.assertCanViewLists(viewer, owner);
  }
}
