/**
 * The graph service: the domain's facade (`GraphApi`), wiring modules that each do one job.
 *
 * - `accounts.ts`: the user row and the durable account tasks its changes start.
 * - `pair/write-path.ts`: every relationship mutation, through one write path (validate, position,
 *   marks, append, re-read, rows, counts); `follow-cap.ts` the following cap it checks.
 * - `reads.ts`: status, relationships, `contains`, counts; `edge-reads.ts` the edge probes.
 * - `visibility.ts`: who may see a profile and lists; `set-queries.ts`: mutuals and friends-of.
 * - The list engine (`src/lists`) serves pages and scans; this facade adds the member filter
 *   (deactivated accounts are skipped) to every page it hands out.
 *
 * Every clock read in the domain is the injected one (`clock`, `monotonic`), so tests and the
 * simulation control time.
 */
import { randomBytes } from 'node:crypto';
import type {
  ListItem,
  ListQueryOptions,
  ListService,
  MemberFilter,
  ScanPage,
  TimeRange,
} from '../lists/contracts.js';
import { SetCursorCodec, type SetQueryKind } from '../lists/cursor/set-cursor.js';
import { walkList } from '../lists/list-walker.js';
import { nowPosition } from '../model/clock.js';
import { InvalidInputError, UserNotFoundError } from '../model/errors.js';
import { DEFAULT_EVENT_RETENTION_SECONDS } from '../model/events.js';
import {
  type Direction,
  type ListKey,
  listOut,
  type Position,
  type Relation,
  type UserId,
  type UserRecord,
} from '../model/types.js';
import type { GraphStore } from '../ports/store.js';
import { deactivatedFilter } from './accounts/account-state.js';
import { Accounts, type UserInput } from './accounts/accounts.js';
import { DeactivatedAccounts } from './accounts/deactivated-accounts.js';
import { type CacheOptions, type FollowingIds, GraphCaches } from './caches/graph-caches.js';
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
import { Feed } from './feed.js';
import { UNGUARDED, type WriteClock } from './pair/clock-guard.js';
import { FollowCap } from './pair/follow-cap.js';
import {
  DEFAULT_HISTORY_POLICY,
  eventWindowMicros,
  feedLagMicros,
  type HistoryPolicy,
} from './pair/pair-history.js';
import { type GraphMutationResult, PairMutations, type TOGGLES, type ToggleKind } from './pair/write-path.js';
import { CountSource, type CountsFrom } from './reads/count-source.js';
import { EdgeReads } from './reads/edge-reads.js';
import { pageMembers } from './reads/page-members.js';
import { GraphReads } from './reads/reads.js';
import { MAX_SET_BATCH, type SetPage, type SetPageStats, SetQueries } from './reads/set-queries.js';
import { readSuggestions } from './reads/suggestions.js';
import { Visibility } from './reads/visibility.js';

export interface GraphServiceOptions {
  store: GraphStore;
  lists: ListService;
  /** Following cap (`GRAPH_MAX_FOLLOWING`). */
  maxFollowing: number;
  /** µs since the epoch; injectable for tests. */
  clock?: () => Position;
  /** A monotonic clock (ms) for the write budget; default `performance.now`. */
  monotonic?: () => number;
  /**
   * Refuses writes while this instance's clock is not known to be within the bound
   * (`clock-guard.ts`); `main` passes a `ClockGuard`. Default: unguarded (one-clock tests and tools).
   */
  clockGuard?: WriteClock;
  /**
   * How far ahead of the clock a write dates the dirty marks it writes before its append (ms):
   * a list stays inexact that long after a write. Default twice the clock bound (`clockSkewMs`),
   * so a mark dated by a clock S behind still lies past the start of any pass a clock S ahead
   * began earlier. 0 suits one-clock tests that reconcile right after writing (the writer then
   * also marks after its increments).
   */
  countLeaseMs?: number;
  /** How pair histories are kept short (`pair-history.ts`); defaults for production. */
  historyPolicy?: Partial<HistoryPolicy>;
  /** Told when a background account task fails (it stays recorded and resumes on the next PUT or start). */
  onTaskError?: (userId: UserId, error: unknown) => void;
  /** Told the rows a rename's fan-out has done after every page (`rename-fanout.ts`). */
  onRenameProgress?: (userId: UserId, done: number) => void;
  /**
   * HMAC key of set-query cursors (`config.graph.cursorSecret`; at least 16 characters). Default:
   * a random key per instance, so set cursors are then valid only on the instance that made them.
   */
  setCursorSecret?: string;
  /** Members set queries, followed-by and the export skip (deactivated accounts); default none. */
  memberFilter?: MemberFilter;
  /** Rows-read budget of one set-query page (`set-queries.ts`); default `max(20 × limit, 1000)`. */
  setBudget?: (limit: number) => number;
  /** Told every set-query page's cost. */
  onSetPage?: (s: SetPageStats) => void;
  /** How long the change feed keeps events (the store's retention); default 7 days. */
  eventRetentionSeconds?: number;
  /** The feed's poll periods (ms): a waiting read, and the unsettled tail while anyone listens. */
  feedPollMs?: { wait?: number; tail?: number };
  /** Told the number of events each feed read returns, and how old (s) the newest of them is. */
  onFeedRead?: (events: number, newestAgeSeconds: number | null) => void;
  /** Told the number of new feed events each acknowledged batch wrote (rows this instance rewrites count once). */
  onEventsWritten?: (events: number) => void;
  /** False: write no feed rows (the follow path without the outbox, for `bench:events` only). */
  events?: boolean;
  /**
   * Whether pages take deactivation from an in-memory registry that follows the feed's tail
   * (`deactivated-accounts.ts`; needs `events`). Default true. Off, pages read their members' user
   * rows: for runs that must issue the very same statements when replayed (the protocol
   * simulation), which the registry's real-time tail poll would not.
   */
  registry?: boolean;
  /**
   * The read caches (`caches/graph-caches.ts`): sizes and the staleness bound; false (or a TTL of
   * 0) turns them off. Default: on with the defaults wherever the registry is (they follow the
   * same feed tail), off otherwise.
   */
  caches?: Partial<CacheOptions> | false;
  /**
   * Which copy of the counts `counts` reads (`count-source.ts`): `auto` (default) the account
   * tables once `jobs migrate-counts` has finished, the list tables until then; `accounts` or
   * `lists` forces one (benchmarks, tests).
   */
  countsFrom?: CountsFrom;
  /** How often an unset counts-migration marker is re-read (ms); default 30 s. */
  countsMarkerRefreshMs?: number;
}

/** How far ahead of the clock a reported activity may be (µs): clock skew between services. */
const ACTIVITY_AHEAD_MICROS = 60_000_000n;

/** Following-list page size of the followed-by walk (well under the contains limit). */
const FOLLOWED_BY_WALK_PAGE = 200;
/** Pages a whole following read may take beyond cap ÷ 1,000 (pages cut short by their budget). */
const FOLLOWING_READ_SLACK = 8;

export class GraphService implements GraphApi {
  private readonly store: GraphStore;
  private readonly clock: () => Position;
  private readonly lists: ListService;
  private readonly accounts: Accounts;
  private readonly writes: PairMutations;
  private readonly reads: GraphReads;
  private readonly edges: EdgeReads;
  private readonly visibility: Visibility;
  private readonly sets: SetQueries;
  private readonly maxFollowing: number;
  /** Members a read must skip: deactivated accounts (see `account-state.ts`), or the injected filter. */
  readonly hiddenMembers: MemberFilter;
  private readonly injectedFilter: MemberFilter | undefined;
  /** The store's user and edge reads through the caches: what the read paths take. */
  private readonly reader: GraphCaches['reader'];
  /** The change feed (`feed.ts`). */
  readonly feed: Feed;
  /** The in-memory registry of deactivated accounts, when the service has one. */
  readonly registry: DeactivatedAccounts | null;
  /** The read caches (`caches/graph-caches.ts`); disabled ones hold nothing. */
  readonly caches: GraphCaches;
  /** Which copy of the counts `counts` reads (`count-source.ts`). */
  readonly countSource: CountSource;

  constructor(o: GraphServiceOptions) {
    this.countSource = new CountSource(o.store, o.countsFrom, o.countsMarkerRefreshMs);
    const clock = o.clock ?? nowPosition;
    const guard = o.clockGuard ?? UNGUARDED;
    const monotonic = o.monotonic ?? (() => performance.now());
    const policy = { ...DEFAULT_HISTORY_POLICY, ...o.historyPolicy };
    const countLeaseMicros = BigInt(Math.round((o.countLeaseMs ?? 2 * policy.clockSkewMs) * 1000));
    this.store = o.store;
    this.lists = o.lists;
    this.maxFollowing = o.maxFollowing;
    this.feed = new Feed({
      store: o.store,
      clock,
      lagMicros: feedLagMicros(policy),
      retentionSeconds: o.eventRetentionSeconds ?? DEFAULT_EVENT_RETENTION_SECONDS,
      pollMs: o.feedPollMs?.wait,
      tailPollMs: o.feedPollMs?.tail,
      onRead: o.onFeedRead,
      onWritten: o.onEventsWritten,
    });
    const onEvents = this.feed.written;
    // Off with the registry: the caches follow the same feed tail.
    const cachesOff = o.events === false || o.registry === false;
    this.caches = new GraphCaches({
      store: o.store,
      feed: this.feed,
      cursorAfter: (list, last) => o.lists.olderCursor(list, last),
      options: cachesOff || o.caches === false ? { ttlMs: 0 } : (o.caches ?? {}),
    });
    const reader = this.caches.reader;
    this.reader = reader;
    // Deactivation from memory (`deactivated-accounts.ts`), kept fresh by the feed's tail; without
    // the feed (events: false) or with an injected filter, none. Its per-member reads (while it is
    // not fresh) take the cached rows, which are as fresh as the caches' bound.
    this.registry =
      o.memberFilter || o.events === false || o.registry === false
        ? null
        : new DeactivatedAccounts({ store: o.store, feed: this.feed, memberRows: reader });
    this.registry?.start();
    this.hiddenMembers = o.memberFilter ?? this.registry?.filter ?? deactivatedFilter(reader);
    this.clock = clock;
    this.injectedFilter = o.memberFilter;
    this.edges = new EdgeReads(reader, o.lists);
    this.writes = new PairMutations({
      store: o.store,
      // A mutation's two user rows from the user cache (issue 21: a warm follow in 6 requests);
      // a row is at most the caches' bound old, and the fold, not this read, decides the op.
      users: { getUsers: (ids) => reader.getUsers(ids) },
      lists: o.lists,
      clock,
      monotonic,
      guard,
      policy,
      cap: new FollowCap(o.store, o.maxFollowing, monotonic),
      countLeaseMicros,
      eventsFrom: o.events === false ? () => null : () => clock() - eventWindowMicros(policy),
      onEvents,
    });
    this.accounts = new Accounts({
      store: o.store,
      lists: o.lists,
      clock,
      guard,
      leaseMicros: countLeaseMicros,
      renameLagMicros: feedLagMicros(policy),
      ...(o.onRenameProgress ? { onRenameProgress: o.onRenameProgress } : {}),
      onEvents,
      // The row at once; an update's feed row (published right after) drops counts and pages too.
      onUserWritten: (u) => {
        this.registry?.note(u);
        this.caches.users.invalidate(u.id);
      },
      accept: (owner, requester) => this.writes.accept(owner, requester, {}, true),
      onTaskError: o.onTaskError ?? (() => undefined),
    });
    this.reads = new GraphReads(
      {
        getUsers: reader.getUsers,
        getEdgesOut: reader.getEdgesOut,
        getPairEdges: reader.getPairEdges,
        getCountSync: (list) => o.store.getCountSync(list),
        hasDirty: (list) => o.store.hasDirty(list),
        getUserCounts: (userId, relation) => o.store.getUserCounts(userId, relation),
      },
      this.edges,
      this.hiddenMembers,
      clock,
      () => this.countSource.accountTables(),
    );
    this.visibility = new Visibility(
      { getUser: reader.getUser, getUsers: reader.getUsers, getEdgesOut: reader.getEdgesOut },
      this.edges,
      (id) => this.registry?.isDeactivated(id) ?? null,
    );
    this.sets = new SetQueries({
      lists: o.lists,
      codec: new SetCursorCodec(o.setCursorSecret ?? randomBytes(32).toString('base64url')),
      probe: (owner, direction, ids) => this.edges.activeEdges(owner, 'follows', direction, ids),
      count: (list) => this.store.getCount(list),
      memberFilter: this.hiddenMembers,
      ...(o.setBudget ? { budget: o.setBudget } : {}),
      ...(o.onSetPage ? { onPage: o.onSetPage } : {}),
    });
  }

  // ---- users and account tasks (`accounts.ts`) ----

  putUser(input: UserInput): Promise<{ user: UserRecord; created: boolean }> {
    return this.accounts.putUser(input);
  }
  /** Throws `UserNotFoundError`. Through the user cache (within the staleness bound). */
  async getUser(id: UserId): Promise<UserRecord> {
    const u = await this.reader.getUser(id);
    if (!u) throw new UserNotFoundError(id);
    return u;
  }
  getUsers(ids: readonly UserId[]): Promise<Map<UserId, UserRecord>> {
    return this.reader.getUsers(ids);
  }
  /** Resumes every unfinished account task in the background (once, at start-up); returns how many. */
  resumeAccountTasks(): Promise<number> {
    return this.accounts.resume();
  }
  /** Resolves when no account task runs in this process (tests). */
  settleAccountTasks(): Promise<void> {
    return this.accounts.settle();
  }
  /** Runs the owner's `accept_requests` task now (tests, and a PUT that finds one left over). */
  runAcceptTask(owner: UserId): Promise<number> {
    return this.accounts.runAcceptTask(owner);
  }

  // ---- mutations (`pair/write-path.ts`) ----

  follow(actor: UserId, target: UserId, o?: MutationOptions) {
    return this.dropping(actor, target, this.writes.follow(actor, target, o));
  }
  unfollow(actor: UserId, target: UserId, o?: MutationOptions) {
    return this.dropping(actor, target, this.writes.unfollow(actor, target, o));
  }
  acceptRequest(owner: UserId, requester: UserId, o?: MutationOptions) {
    return this.dropping(owner, requester, this.writes.accept(owner, requester, o));
  }
  declineRequest(owner: UserId, requester: UserId, o?: MutationOptions) {
    return this.dropping(owner, requester, this.writes.onInbound(owner, requester, 'decline', o));
  }
  removeFollower(owner: UserId, follower: UserId, o?: MutationOptions) {
    return this.dropping(owner, follower, this.writes.onInbound(owner, follower, 'remove_follower', o));
  }

  /**
   * Read-your-writes: the pair's cached entries are dropped when its mutation settles (after its
   * counter work), before the caller answers. The follow lists' first pages only when it failed (it
   * may have written part of its change): a mutation that returns has published its events to this
   * instance's caches before (`onEvents`, right after each batch), and they patched or dropped the
   * pages it changed; dropping them again would throw away a celebrity's page on every follow.
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
      this.dropping(actor, target, this.writes.toggle(kind, actor, target, o));
  }

  // ---- reads (`reads.ts`) ----

  getFollowStatus(source: UserId, target: UserId): Promise<FollowStatus> {
    return this.reads.getFollowStatus(source, target);
  }
  relationship(viewer: UserId, other: UserId): Promise<Relationship> {
    return this.reads.relationship(viewer, other);
  }
  relationships(viewer: UserId, ids: readonly UserId[]): Promise<RelationshipFlags[]> {
    return this.reads.relationships(viewer, ids);
  }
  contains(
    owner: UserId,
    relation: Relation,
    direction: Direction,
    ids: readonly UserId[],
  ): Promise<UserId[]> {
    return this.reads.contains(owner, relation, direction, ids);
  }
  counts(userId: UserId): Promise<Counts> {
    return this.caches.countsThrough(userId, () => this.reads.counts(userId));
  }
  suggestions(userId: UserId, limit: number): Promise<SuggestionItem[]> {
    return readSuggestions(this.store, userId, limit);
  }

  // ---- lists: the list engine's pages with the member filter; visibility is the caller's ----

  /**
   * One page's member filter and hydration: the injected filter, else the registry while it is
   * fresh, else per-member reads shared with hydration (`page-members.ts`).
   */
  private pageMembers() {
    const fromRegistry = this.registry?.fresh() ? this.registry.filter : undefined;
    return pageMembers(this.reader, this.injectedFilter ?? fromRegistry);
  }

  /** A page without deactivated members: the engine reads on past them, within its work budget. */
  async listPage(
    list: ListKey,
    limit: number,
    cursor: string | null,
    options: ListQueryOptions = {},
  ): Promise<MemberPage> {
    const read = async () => {
      const m = this.pageMembers();
      const page = await this.lists.page(list, limit, cursor, { ...options, exclude: m.exclude });
      return { ...page, items: await m.hydrate(page.items) };
    };
    const plain = cursor === null && !options.direction && options.since == null && options.until == null;
    if (!plain) return read();
    return this.caches.firstPage(list, limit, read, () => this.counts(list.userId));
  }

  /** A search page without deactivated members (`list-search.ts`); its rows carry the names. */
  async search(list: ListKey, q: string, limit: number, cursor: string | null): Promise<MemberPage> {
    const m = this.pageMembers();
    const page = await this.lists.search(list, q, limit, cursor, { exclude: m.exclude });
    return { ...page, items: await m.hydrate(page.items) };
  }

  /** A scan page without deactivated members (it may be short; ids only, for fan-out). */
  scanPage(
    list: ListKey,
    slice: number,
    slices: number,
    limit: number,
    cursor: string | null,
    o: { activeSince?: Position } = {},
  ): Promise<ScanPage> {
    const since = o.activeSince;
    const exclude: MemberFilter =
      since === undefined
        ? this.hiddenMembers
        : async (ids) => {
            // One point read of `user_activity` per member (256 in flight) beside the filter's own.
            const [hidden, activity] = await Promise.all([
              this.hiddenMembers(ids),
              this.store.getActivity(ids),
            ]);
            const out = new Set(hidden);
            for (const id of ids) if ((activity.get(id) ?? since - 1n) < since) out.add(id);
            return out;
          };
    return this.lists.scan(list, slice, slices, limit, cursor, { exclude });
  }

  /**
   * Records the account service's report that `id` was active at `at` (µs); the latest report
   * wins. Throws `UserNotFoundError` for an unknown account, `InvalidInputError` for a time more
   * than a minute ahead of this service's clock.
   */
  async reportActivity(id: UserId, at: Position): Promise<void> {
    if (at > this.clock() + ACTIVITY_AHEAD_MICROS)
      throw new InvalidInputError('last_active_at', 'a time not in the future');
    await this.accounts.getUser(id);
    await this.store.putActivity(id, at);
  }

  /** The last reported activity of `id` (µs), or null when never reported. */
  async lastActiveAt(id: UserId): Promise<Position | null> {
    return (await this.store.getActivity([id])).get(id) ?? null;
  }

  /** A set-query page with its cost (`set-queries.ts`). */
  async setPage(
    kind: SetQueryKind,
    owner: UserId,
    limit: number,
    cursor: string | null,
    bounds: TimeRange = {},
  ): Promise<Omit<SetPage, 'items'> & MemberPage> {
    const m = this.pageMembers();
    const page = await this.sets.page(kind, owner, limit, cursor, bounds, m.exclude);
    return { ...page, items: await m.hydrate(page.items) };
  }

  /**
   * The viewer's following list against `id`'s inverse edges (bounded by the following cap). The
   * total counts every hit; the sample is the first `limit` hits closest first
   * (`../shared/spec/api.md` Part 3): the viewer's close friends, then accounts that follow the
   * viewer back, then the rest, each tier in the viewer's following order (most recently followed
   * first). Each tier keeps at most `limit` hits, so memory stays `3 × limit` whatever the walk's
   * size; the tiers are found by two more probes of the viewer's own edges per batch of hits (its
   * `close_friends` out, its `follows` in), skipped once the first tier is full. The following
   * list comes whole from the `following` cache (read through it, 1,000 a page, when the account
   * is under the cap), probed 1,000 ids at a time; without the cache, or over the cap, the set
   * walk drives it page by page (200 a page). It names members of `id`'s followers, so
   * visibility is the lists' (`assertCanViewLists`).
   */
  async followedBy(viewer: UserId, id: UserId, limit: number): Promise<{ sample: Member[]; total: number }> {
    const m = this.pageMembers();
    const tiers: [ListItem[], ListItem[], ListItem[]] = [[], [], []];
    let total = 0;
    const take = async (matched: readonly ListItem[]) => {
      total += matched.length;
      if (matched.length === 0 || tiers[0].length >= limit) return;
      const ids = matched.map((i) => i.id);
      const [close, back] = await Promise.all([
        this.edges.activeEdges(viewer, 'close_friends', 'out', ids),
        this.edges.activeEdges(viewer, 'follows', 'in', ids),
      ]);
      for (const item of matched) {
        const tier = tiers[close.has(item.id) ? 0 : back.has(item.id) ? 1 : 2];
        if (tier.length < limit) tier.push(item);
      }
    };
    const whole = this.caches.following.enabled
      ? await this.caches.following.through(viewer, () => this.readFollowing(viewer))
      : null;
    if (whole) {
      for (let i = 0; i < whole.ids.length; i += MAX_SET_BATCH) {
        const batch: ListItem[] = [];
        for (let k = i; k < Math.min(i + MAX_SET_BATCH, whole.ids.length); k++) {
          const member = whole.ids[k] as bigint;
          if (member !== id) batch.push({ id: member, createdAt: whole.createdAt[k] as bigint });
        }
        const on = await this.edges.activeEdges(
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
      const walk = this.sets.walk(
        {
          drive: listOut(viewer, 'follows'),
          probe: (ids) => this.edges.activeEdges(id, 'follows', 'in', ids),
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

  /**
   * `owner`'s following list whole, newest first (what the `following` cache holds), or null when
   * it holds more than the following cap (a list imported or grown past it: walk it instead).
   * Pages of 1,000; at most cap ÷ 1,000 + `FOLLOWING_READ_SLACK` pages (a page cut short by the
   * page budget still counts).
   */
  private async readFollowing(owner: UserId): Promise<FollowingIds | null> {
    const ids: bigint[] = [];
    const at: bigint[] = [];
    const maxPages = Math.ceil(this.maxFollowing / MAX_SET_BATCH) + FOLLOWING_READ_SLACK;
    let cursor: string | null = null;
    for (let pages = 1; ; pages++) {
      const p = await this.lists.page(listOut(owner, 'follows'), MAX_SET_BATCH, cursor);
      for (const item of p.items) {
        ids.push(item.id);
        at.push(item.createdAt);
      }
      if (ids.length > this.maxFollowing || (p.nextCursor !== null && pages >= maxPages)) return null;
      cursor = p.nextCursor;
      if (cursor === null) return { ids: BigInt64Array.from(ids), createdAt: BigInt64Array.from(at) };
    }
  }

  /** `walkList` over `owner`'s following list, members filtered and hydrated per page; the next page is read after `onPage` settles. */
  async walkFollowing(
    owner: UserId,
    onPage: (items: Member[]) => Promise<void>,
    pageSize = 500,
  ): Promise<void> {
    await walkList(
      this.store,
      listOut(owner, 'follows'),
      async (rows) => {
        const m = this.pageMembers();
        const hidden = await m.exclude(rows.map((r) => r.otherId));
        const items = rows
          .filter((r) => !hidden.has(r.otherId))
          .map((r) => ({ id: r.otherId, createdAt: r.createdAt, username: r.username }));
        const members = await m.hydrate(items);
        if (members.length > 0) await onPage(members);
      },
      { pageSize },
    );
  }

  // ---- visibility (`visibility.ts`) ----

  assertAccountsActive(
    owner: UserId,
    caller: Caller,
    scope: 'account' | 'other',
  ): Promise<UserRecord | null> {
    return this.visibility.assertAccountsActive(owner, caller, scope);
  }
  assertListsVisible(caller: Caller, owner: UserId, known?: UserRecord | null): Promise<void> {
    return this.visibility.assertListsVisible(caller, owner, known);
  }
  listsVisible(caller: Caller, owner: UserId): Promise<boolean> {
    return this.visibility.listsVisible(caller, owner);
  }
  assertCanViewProfile(viewer: UserId, owner: UserId): Promise<void> {
    return this.visibility.assertCanViewProfile(viewer, owner);
  }
  assertCanViewLists(viewer: UserId, owner: UserId): Promise<void> {
    return this.visibility.assertCanViewLists(viewer, owner);
  }
}
