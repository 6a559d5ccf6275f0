/**
 * The read caches of one service process, and the store view the read paths take through them.
 *
 * Design note.
 *
 * What is cached (each a `ReadCache`: bounded by entries, expiring, counted):
 * - `users`: user rows (id, username, private, state, hide_lists) by id; unknown ids are not
 *   cached (an account created on another instance is served at once).
 * - `edges`: edge states by table and (source, relation, target), negative answers included
 *   (null: no edge ever). The forward table's key space (`o|`) serves the forward reads
 *   (`getEdgesOut`: status, the visibility checks' block edge, `relationships`, `contains … out`)
 *   and the pair read (`getPairEdges`, which reads the forward rows both ways: a relationship; it
 *   stores all twelve states of the pair, six relations in both directions, absent ones as null).
 *   The inverse table's (`i|`) serves the inverse reads (`getEdgesIn`: `contains … in`,
 *   followed-by, `relationships`' inverse flags). Apart, because the inverse copy can lag or miss
 *   a row (the drift the repair sweep exists for): an inverse read must never answer a forward
 *   probe, such as the block check of a visibility read.
 *   Block lists are not cached whole: every read path that asks "does X block Y" asks it of given
 *   ids (one owner, ≤ 1000 ids), so the per-edge entries answer it, negatives included.
 * - `counts`: what `GraphReads.counts` returns, by account, when it is exact (see `countsThrough`).
 * - `pages`: the first page of a large follow list (size hint ≥ `pageMinListSize`), by list and
 *   limit, as served (members filtered and hydrated).
 * - `following`: an account's following list whole (ids and follow times, newest first, members
 *   not filtered), for accounts under the following cap; bounded by ids held across lists (16
 *   bytes each), an account over the cap held as null (walk it). What followed-by drives from: it
 *   is read on every profile view, and the list is the viewer's, so one entry serves all the
 *   profiles a viewer opens. Dropped by every event of a pair the account is in (a follow, an
 *   unfollow, a block, an accept), like the pair's edge states.
 *
 * The staleness bound. Every entry expires `ttlMs` (default 1 s, at most 2 s) after the read that
 * fetched it began, so whatever is lost on the way (a missed feed event, a tail poll that fails,
 * a read that raced a write), no read serves a value read more than `ttlMs` before. The feed's
 * unsettled tail (`Feed.subscribe`: this instance's rows at once, every instance's rows by a poll
 * every 200 ms) drops entries sooner: an edge event drops its pair's twelve edge states, both
 * accounts' counts, following lists and first pages (a follow event patches the pages instead, see
 * `patchFollowPages`); `user.updated` drops the account's row, every count and every
 * first page (a deactivation changes other accounts' counts and pages, a rename their pages).
 *
 * Read-your-writes. The service drops the pair's entries again when a mutation returns (after its
 * counter work), and an account's row when its PUT returns, before it answers; a local feed event
 * drops them as soon as the batch is acknowledged too.
 *
 * Every read path that consults a user row or a block edge, and what it reads (all within the bound):
 * - the account gate, `assertAccountsActive`: the owner's row (cached), the caller's own state from
 *   the registry (`deactivated-accounts.ts`, its own 1 s freshness rule) or its cached row;
 * - `assertListsVisible` / `assertCanViewLists` / `assertCanViewProfile` (profile, both follow
 *   lists, counts, set lists, followed-by, the status of another account): the owner's cached row
 *   (deactivated, private, hide_lists), the owner's block of the viewer (cached edge, negative
 *   included) and, for a private owner, the viewer's follow (cached inverse edge);
 * - `getFollowStatus`: both cached rows; `relationship`: the pair's cached states;
 *   `relationships`: cached out and in states (blocks both ways) and the member filter;
 * - the member filter of pages, scans, set queries, `contains` and `relationships`: the registry
 *   while fresh, else cached rows (`memberRows`), and page hydration: cached rows;
 * - `GraphService.getUser` (the routes' existence checks): the cached row;
 * - not cached: suggestions (reads the store), the write path and the account tasks.
 * A first page is served whole from its cache, so it is cleared on every `user.updated` and
 * expires within the bound like every entry.
 *
 * The race rule (`read-cache.ts`): a read-through takes a ticket before it reads the store and
 * stores only if no invalidation of its key came after the ticket, so a reader that fetched the
 * old value before a writer's invalidation never stores it.
 *
 * Limits: the tail reads at most 1000 feed rows per poll, so under a heavy write rate events can be
 * missed (the TTL still holds); a list's first pages are dropped by the limits seen for it, kept in
 * a bounded map: a list pushed out of it keeps its pages until they expire.
 *
 * Rejected: a store decorator handed to the whole service. The write path and the account tasks
 * must read what is stored (an account PUT compares with the stored row; the pair protocol reads
 * its own history), so only the read paths take the cached view (`reader`), and the service
 * wires it where it builds them.
 */
import type { GraphEvent } from '../../model/events.js';
import { boundedLru } from '../../model/lru.js';
import type { Tracer } from '../../model/tracing.js';
import {
  type BucketLayout,
  compareEntries,
  type EdgeRecord,
  edgeKey,
  type ListEntry,
  type ListKey,
  listId,
  RELATIONS,
  type Relation,
  type UserId,
  type UserRecord,
} from '../../model/types.js';
import type { EdgeStore } from '../../ports/edge-store.js';
import type { UserStore } from '../../ports/user-store.js';
import type { Counts, MemberPage } from '../contracts.js';
import { ReadCache, type ReadCacheStats } from './read-cache.js';

/** Sizes (entries; 0 turns one off) and the TTL; see `config.ts` for the defaults. */
export interface CacheOptions {
  /** The staleness bound (ms): every entry expires this long after its read began; 0: no caches. */
  ttlMs: number;
  users: number;
  edges: number;
  counts: number;
  pages: number;
  /** A follow list's first page is cached when its size hint is at least this. */
  pageMinListSize: number;
  /** Following ids held at most, across the cached following lists. */
  following: number;
}

/**
 * An account's following list whole, newest first (list order): `ids[i]` followed at
 * `createdAt[i]`. Typed arrays: 16 bytes a member, so a 7,500-member list is 120 KB.
 */
export interface FollowingIds {
  ids: BigInt64Array;
  createdAt: BigInt64Array;
}

export const DEFAULT_CACHE_OPTIONS: CacheOptions = {
  ttlMs: 1000,
  users: 300_000,
  edges: 500_000,
  counts: 100_000,
  pages: 1000,
  pageMinListSize: 10_000,
  following: 1_000_000,
};

export const CACHE_NAMES = ['users', 'edges', 'counts', 'pages', 'following'] as const;
export type CacheName = (typeof CACHE_NAMES)[number];

/** The read methods a read path takes from the store, through the caches. */
export type CachedReads = Pick<UserStore, 'getUser' | 'getUsers'> &
  Pick<EdgeStore, 'getEdgesOut' | 'getEdgesOutOf' | 'getEdgesIn' | 'getPairEdges'>;

/** An edge's cache key as the forward table (`edges_out`) gave it. */
const forwardKey = (edge: string) => `o|${edge}`;
/** An edge's cache key as the inverse table (`edges_in`) gave it: never read by a forward probe. */
const inverseKey = (edge: string) => `i|${edge}`;

/** How long a list size hint (whether a first page is worth caching) is kept (ms). */
const SIZE_HINT_MS = 60_000;

export interface GraphCachesDeps {
  store: CachedReads;
  /** The change feed's tail; none: entries expire by the TTL only. */
  feed?: { subscribe(listener: (e: GraphEvent) => void): () => void };
  options?: Partial<CacheOptions>;
  /** ms clock (default `performance.now`). */
  nowMs?: () => number;
  /**
   * The cursor a plain first page ending at `last` carries (`ListService.olderCursor`); without
   * it a follow event drops the follow lists' first pages instead of patching them.
   */
  cursorAfter?: (list: ListKey, last: ListEntry) => string;
  /** Lookups as `cache.hit` / `cache.miss` events on the active span. */
  tracer?: Tracer;
}

export class GraphCaches {
  readonly users: ReadCache<UserId, UserRecord>;
  readonly edges: ReadCache<string, EdgeRecord | null>;
  readonly counts: ReadCache<UserId, Counts>;
  readonly pages: ReadCache<string, MemberPage>;
  readonly following: ReadCache<UserId, FollowingIds | null>;
  readonly options: CacheOptions;
  /** The store's read methods through the caches (see the note). */
  readonly reader: CachedReads;
  private readonly pageLimits = boundedLru<string, Set<number>>(10_000);
  private readonly sizeHints: ReturnType<typeof boundedLru<string, number>>;
  private unsubscribe: (() => void) | null = null;
  private readonly cursorAfter: GraphCachesDeps['cursorAfter'];

  constructor(d: GraphCachesDeps) {
    this.cursorAfter = d.cursorAfter;
    const o = { ...DEFAULT_CACHE_OPTIONS, ...d.options };
    this.options = o;
    const sized = (entries: number, name: string) => ({
      entries: o.ttlMs > 0 ? entries : 0,
      ttlMs: o.ttlMs,
      ...(d.nowMs ? { nowMs: d.nowMs } : {}),
      ...(d.tracer ? { traced: { tracer: d.tracer, name } } : {}),
    });
    this.users = new ReadCache(sized(o.users, 'users'));
    this.edges = new ReadCache(sized(o.edges, 'edges'));
    this.counts = new ReadCache(sized(o.counts, 'counts'));
    this.pages = new ReadCache(sized(o.pages, 'pages'));
    this.following = new ReadCache<UserId, FollowingIds | null>({
      ...sized(o.following, 'following'),
      sizeOf: (v) => v?.ids.length ?? 1,
    });
    this.sizeHints = boundedLru<string, number>(Math.max(1, o.pages * 10));
    this.reader = this.makeReader(d.store);
    if (d.feed && this.enabled) this.unsubscribe = d.feed.subscribe((e) => this.onEvent(e));
  }

  /** Whether any cache holds anything. */
  get enabled(): boolean {
    return CACHE_NAMES.some((name) => this[name].enabled);
  }

  /** A feed event (this instance's at once, others' by the tail poll). */
  onEvent(e: GraphEvent): void {
    if (e.type === 'user.updated') this.dropUser(e.source);
    else if (e.type === 'follow.created' || e.type === 'follow.removed') {
      this.dropPair(e.source, e.target, { pages: false });
      this.patchFollowPages(e);
    } else this.dropPair(e.source, e.target);
  }

  /**
   * A follow event's change to the two first pages it touches, made in place (`ReadCache.patch`:
   * the reads in flight store nothing, the entry keeps its expiry): the target's followers page and
   * the source's following page. A follow whose row is newer than the page's first member (a live
   * follow: its row's `createdAt` is the event's position) is prepended and the page trimmed to its
   * limit, its cursor re-sealed after the new last member; one older than a full page's last member
   * changes nothing when the page has a next cursor (the page is the list's first `limit`
   * members). Anything else drops the page, and the next read fetches it: a
   * late follow landing inside the page, a member whose row is not in the user cache or is
   * deactivated, and every unfollow (whether the page's cursor still leads anywhere is not known
   * without a read: the page must equal a fresh read, cursor included). This keeps a celebrity's first page
   * served from memory while followers arrive (C1), where dropping it on every follow would not.
   */
  private patchFollowPages(e: GraphEvent): void {
    if (!this.pages.enabled) return;
    const on = e.type === 'follow.created';
    const sides = [
      [e.target, e.source, 'in'],
      [e.source, e.target, 'out'],
    ] as const;
    for (const [owner, member, direction] of sides) {
      const list: ListKey = { userId: owner, relation: 'follows', direction };
      const limits = this.pageLimits.get(listId(list));
      if (!limits) continue;
      for (const limit of limits)
        this.pages.patch(`${listId(list)}|${limit}`, (page) =>
          on ? this.withMember(list, page, limit, member, e.position) : undefined,
        );
    }
  }

  private withMember(
    list: ListKey,
    page: MemberPage,
    limit: number,
    member: UserId,
    at: bigint,
  ): MemberPage | undefined {
    const shown = page.items.find((i) => i.id === member);
    if (shown) return shown.createdAt === at ? page : undefined;
    const entry = { createdAt: at, otherId: member };
    const key = (i: { id: UserId; createdAt: bigint }) => ({ createdAt: i.createdAt, otherId: i.id });
    const first = page.items[0];
    const last = page.items.at(-1);
    if (first && compareEntries(entry, key(first)) > 0) {
      // Older than the first member: unchanged only when it falls past a full page that goes on.
      const past = page.items.length >= limit && last && compareEntries(entry, key(last)) > 0;
      return past && page.nextCursor !== null ? page : undefined;
    }
    const user = this.users.peek(member);
    if (user?.state !== 'active' || !this.cursorAfter) return undefined;
    const items = [{ id: member, createdAt: at, username: user.username }, ...page.items];
    if (items.length <= limit) return { ...page, items };
    const kept = items.slice(0, limit);
    const end = kept.at(-1) as (typeof kept)[number];
    return { ...page, items: kept, nextCursor: this.cursorAfter(list, key(end)) };
  }

  /**
   * Drops an account's row, every count and every first page: a deactivation or a rename shows in
   * other accounts' lists, and a deactivation in their counts (its task marks them for a recount).
   */
  dropUser(id: UserId): void {
    this.users.invalidate(id);
    if (this.counts.enabled) this.counts.clear();
    if (this.pages.enabled) {
      this.pages.clear();
      this.pageLimits.clear();
    }
  }

  /**
   * Drops every edge state between `a` and `b`, both accounts' counts and following lists and
   * (unless `pages: false`) their follow lists' first pages.
   */
  dropPair(a: UserId, b: UserId, o: { pages?: boolean } = {}): void {
    for (const relation of RELATIONS) {
      for (const k of [edgeKey(a, relation, b), edgeKey(b, relation, a)]) {
        this.edges.invalidate(forwardKey(k));
        this.edges.invalidate(inverseKey(k));
      }
    }
    this.counts.invalidate(a);
    this.counts.invalidate(b);
    this.following.invalidate(a);
    this.following.invalidate(b);
    if (this.pages.enabled && o.pages !== false)
      for (const id of [a, b])
        for (const direction of ['in', 'out'] as const)
          this.dropPages({ userId: id, relation: 'follows', direction });
  }

  private dropPages(list: ListKey): void {
    const limits = this.pageLimits.get(listId(list));
    if (!limits) return;
    for (const limit of limits) this.pages.invalidate(`${listId(list)}|${limit}`);
  }

  /**
   * Counts through the cache; `read` on a miss. Only exact counts are kept: an exact count changes
   * only by an edge write (which drops it), never by a reconciliation pass (which touches marked
   * lists only), so a pass on another process cannot leave a cached count behind. Also notes
   * both follow lists' sizes (the page cache's hint).
   */
  async countsThrough(userId: UserId, read: () => Promise<Counts>): Promise<Counts> {
    let c = this.counts.get(userId);
    if (c === undefined) {
      const ticket = this.counts.begin();
      c = await read();
      if (c.exact) this.counts.store(userId, c, ticket);
    }
    this.sizeHints.set(`${userId}|follows|in`, c.followers, { ttl: SIZE_HINT_MS });
    this.sizeHints.set(`${userId}|follows|out`, c.following, { ttl: SIZE_HINT_MS });
    return c;
  }

  /**
   * The first page of `list` at `limit` through the page cache when the list is large (its size
   * hint at least `pageMinListSize`), else `read`. Without a hint yet, `hint` is asked for one in
   * the background (the counts read) and this page is read.
   */
  async firstPage(
    list: ListKey,
    limit: number,
    read: () => Promise<MemberPage>,
    hint: () => Promise<unknown>,
  ): Promise<MemberPage> {
    if (!this.pages.enabled || list.relation !== 'follows') return read();
    const id = listId(list);
    const size = this.sizeHints.get(id);
    if (size === undefined) {
      void hint().catch(() => undefined);
      return read();
    }
    if (size < this.options.pageMinListSize) return read();
    const key = `${id}|${limit}`;
    const hit = this.pages.get(key);
    if (hit !== undefined) return hit;
    // Known before the read begins, so an invalidation of the list during the read reaches its key.
    const limits = this.pageLimits.get(id) ?? new Set<number>();
    limits.add(limit);
    this.pageLimits.set(id, limits);
    const ticket = this.pages.begin();
    const page = await read();
    this.pages.store(key, page, ticket);
    return page;
  }

  /** Every cache's stats, by name (what `/metrics` reports as `flocklist_cache_*{cache}`). */
  stats(): Record<CacheName, ReadCacheStats> {
    return Object.fromEntries(CACHE_NAMES.map((name) => [name, this[name].snapshot()])) as Record<
      CacheName,
      ReadCacheStats
    >;
  }

  /** Stops following the feed. */
  close(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  private makeReader(store: CachedReads): CachedReads {
    const users = this.users;
    const edges = this.edges;
    const readUsers = async (ids: readonly UserId[], one = false): Promise<Map<UserId, UserRecord>> => {
      const out = new Map<UserId, UserRecord>();
      const missing: UserId[] = [];
      for (const id of new Set(ids)) {
        const u = users.get(id);
        if (u === undefined) missing.push(id);
        else out.set(id, u);
      }
      if (missing.length === 0) return out;
      const ticket = users.begin();
      const read =
        one && missing.length === 1
          ? await store.getUser(missing[0] as UserId).then((u) => new Map(u ? [[u.id, u]] : []))
          : await store.getUsers(missing);
      for (const id of missing) {
        const u = read.get(id);
        if (!u) continue;
        out.set(id, u);
        users.store(id, u, ticket);
      }
      return out;
    };
    /**
     * The states of `key(id)` for the ids, cached ones first (also under `alsoKey`), the rest in
     * one `fetch`, stored under `key`.
     */
    const readEdges = async (
      ids: readonly UserId[],
      key: (id: UserId) => string,
      fetch: (missing: UserId[]) => Promise<Map<UserId, EdgeRecord>>,
      alsoKey?: (id: UserId) => string,
    ): Promise<Map<UserId, EdgeRecord>> => {
      const out = new Map<UserId, EdgeRecord>();
      const missing: UserId[] = [];
      for (const id of new Set(ids)) {
        const e = (alsoKey && edges.get(alsoKey(id))) ?? edges.get(key(id));
        if (e === undefined) missing.push(id);
        else if (e !== null) out.set(id, e);
      }
      if (missing.length === 0) return out;
      const ticket = edges.begin();
      const read = await fetch(missing);
      for (const id of missing) {
        const e = read.get(id) ?? null;
        if (e) out.set(id, e);
        edges.store(key(id), e, ticket);
      }
      return out;
    };
    /**
     * The forward states of `wanted`: every one cached answers (the present ones); else one read of
     * them all (`fetch`, one statement), each wanted state stored, found or absent.
     */
    const readAllOrNone = async (
      wanted: readonly string[],
      fetch: () => Promise<EdgeRecord[]>,
    ): Promise<EdgeRecord[]> => {
      const keys = wanted.map(forwardKey);
      const cached = keys.map((k) => edges.get(k));
      if (cached.every((e) => e !== undefined)) return cached.filter((e): e is EdgeRecord => e !== null);
      const ticket = edges.begin();
      const read = await fetch();
      const found = new Map(read.map((e) => [forwardKey(edgeKey(e.sourceId, e.relation, e.targetId)), e]));
      for (const k of keys) edges.store(k, found.get(k) ?? null, ticket);
      return read;
    };
    return {
      getUser: async (id) => (await readUsers([id], true)).get(id) ?? null,
      getUsers: (ids) => readUsers(ids),
      getEdgesOut: (source: UserId, relation: Relation, targets: readonly UserId[]) =>
        readEdges(
          targets,
          (t) => forwardKey(edgeKey(source, relation, t)),
          (missing) => store.getEdgesOut(source, relation, missing),
        ),
      getEdgesIn: (target: UserId, relation: Relation, sources: readonly UserId[], layout: BucketLayout) =>
        readEdges(
          sources,
          (s) => inverseKey(edgeKey(s, relation, target)),
          (missing) => store.getEdgesIn(target, relation, missing, layout),
          // A forward state may answer an inverse probe (the forward table is the truth), never the reverse.
          (s) => forwardKey(edgeKey(s, relation, target)),
        ),
      getEdgesOutOf: (source: UserId, relations: readonly Relation[], targets: readonly UserId[]) =>
        readAllOrNone(
          relations.flatMap((r) => targets.map((t) => edgeKey(source, r, t))),
          () => store.getEdgesOutOf(source, relations, targets),
        ),
      getPairEdges: (a: UserId, b: UserId) =>
        readAllOrNone(
          RELATIONS.flatMap((r) => [edgeKey(a, r, b), edgeKey(b, r, a)]),
          () => store.getPairEdges(a, b),
        ),
    };
  }
}
