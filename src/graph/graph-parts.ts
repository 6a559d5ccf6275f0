/**
 * The graph's parts, built once from the service's options and wired to each other: the feed, the
 * caches, the deactivated-accounts registry, the write path, the account tasks, the reads. The
 * facade (`graph-service.ts`) holds them and delegates; nothing else builds them.
 *
 * Every clock read in the domain is the injected one (`clock`, `monotonic`), so tests and the
 * simulation control time.
 */

import { randomBytes } from 'node:crypto';
import type { ListService, MemberFilter } from '../lists/contracts.js';
import { SetCursorCodec } from '../lists/cursor/set-cursor.js';
import { nowPosition } from '../model/clock.js';
import { DEFAULT_EVENT_RETENTION_SECONDS } from '../model/events.js';
import type { Timers } from '../model/timers.js';
import type { Tracer } from '../model/tracing.js';
import type { Position, UserId } from '../model/types.js';
import type { GraphStore } from '../ports/graph-store.js';
import type { LeaseStore } from '../ports/lease-store.js';
import { deactivatedFilter } from './accounts/account-state.js';
import { Accounts } from './accounts/accounts.js';
import { DeactivatedAccounts } from './accounts/deactivated-accounts.js';
import { type CacheOptions, GraphCaches } from './caches/graph-caches.js';
import { Feed } from './feed.js';
import { IntentFrontier, IntentRecovery } from './feed-intents.js';
import { newHolderName } from './lease.js';
import { UNGUARDED, type WriteClock } from './pair/clock-guard.js';
import { FollowCap } from './pair/follow-cap.js';
import {
  DEFAULT_HISTORY_POLICY,
  eventWindowMicros,
  feedLagMicros,
  type HistoryPolicy,
} from './pair/pair-history.js';
import { PairMutations } from './pair/write-path.js';
import { CountSource, type CountsFrom } from './reads/count-source.js';
import { EdgeReads } from './reads/edge-reads.js';
import { pageMembers } from './reads/page-members.js';
import { GraphReads } from './reads/reads.js';
import { type SetPageStats, SetQueries } from './reads/set-queries.js';
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
   * Draws the number that tells apart two account updates' feed rows at one version
   * (`userUpdatedRow`); default 62 random bits. Injectable for replayable simulations.
   */
  updateNonce?: () => bigint;
  /**
   * The clock and timers of the background work (the feed's tail, the registry, the caches'
   * ages); default the process's. A simulation passes virtual ones.
   */
  timers?: Timers;
  /** Cache lookups as events on the active span (`caches/read-cache.ts`); default none. */
  tracer?: Tracer;
  /**
   * Where leases are kept: given, the feed's intent recovery resolves in one process at a time
   * (`feed-intents.ts`); default none (every process that starts it resolves).
   */
  leases?: LeaseStore;
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
  /**
   * The feed's cursor secrets (`feed-cursor.ts`): the first seals event ids and cursors, every one
   * opens them (the previous secret during a rotation). Instances that serve one feed share them.
   * Default: a fixed secret (tests, one process).
   */
  feedCursorSecrets?: readonly string[];
  /** Members set queries, followed-by and the export skip (deactivated accounts); default none. */
  memberFilter?: MemberFilter;
  /** Rows-read budget of one set-query page (`set-queries.ts`); default `max(20 × limit, 1000)`. */
  setBudget?: (limit: number) => number;
  /** Told every set-query page's cost. */
  onSetPage?: (s: SetPageStats) => void;
  /** How long the change feed keeps events (the store's retention); default 7 days. */
  eventRetentionSeconds?: number;
  /** The feed's one poller's period (ms): waiting reads' look and the unsettled tail's reads; default 200. */
  feedPollMs?: number;
  /** False: the feed's listeners (caches, registry) hear this instance's writes only; default true. */
  feedTail?: boolean;
  /** Rows per read of the feed's tail (`FeedOptions.tailPage`); default 1,000. */
  feedTailPage?: number;
  /** Feed reads that may wait at once on this instance (`Feed`'s `maxWaiters`); default 1,000. */
  feedMaxWaiters?: number;
  /** Told the number of events each feed read returns, and how old (s) the newest of them is. */
  onFeedRead?: (events: number, newestAgeSeconds: number | null) => void;
  /** Told the number of new feed events each acknowledged batch wrote (rows this instance rewrites count once). */
  onEventsWritten?: (events: number) => void;
  /** False: write no feed rows (the follow path without the outbox, for `bench:events` only). */
  events?: boolean;
  /**
   * False: follows write feed rows without their intents, so a change that lands late is passed by
   * the watermark (what intents cost, for `bench:events`' F5 only). Default true.
   */
  feedIntents?: boolean;
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

/** The parts of one graph service (see the note). */
export interface GraphParts {
  store: GraphStore;
  lists: ListService;
  maxFollowing: number;
  feed: Feed;
  /** Resolves the feed's intents left behind (`feed-intents.ts`); started by the entry points. */
  intentRecovery: IntentRecovery;
  caches: GraphCaches;
  /** The store's user and edge reads through the caches: what the read paths take. */
  reader: GraphCaches['reader'];
  registry: DeactivatedAccounts | null;
  /** Members a read must skip: deactivated accounts (see `account-state.ts`), or the injected filter. */
  hiddenMembers: MemberFilter;
  /**
   * One page's member filter and hydration: the injected filter, else the registry while it is
   * fresh, else per-member reads shared with hydration (`page-members.ts`).
   */
  members: () => ReturnType<typeof pageMembers>;
  countSource: CountSource;
  writes: PairMutations;
  accounts: Accounts;
  reads: GraphReads;
  edges: EdgeReads;
  visibility: Visibility;
  sets: SetQueries;
}

/** Builds and wires the parts of a graph service. */
export function buildGraphParts(o: GraphServiceOptions): GraphParts {
  const countSource = new CountSource(o.store, o.countsFrom, o.countsMarkerRefreshMs);
  const clock = o.clock ?? nowPosition;
  const guard = o.clockGuard ?? UNGUARDED;
  const monotonic = o.monotonic ?? (() => performance.now());
  const policy = { ...DEFAULT_HISTORY_POLICY, ...o.historyPolicy };
  const countLeaseMicros = BigInt(Math.round((o.countLeaseMs ?? 2 * policy.clockSkewMs) * 1000));
  const retentionSeconds = o.eventRetentionSeconds ?? DEFAULT_EVENT_RETENTION_SECONDS;
  const intents = new IntentFrontier({
    store: o.store,
    lagMicros: feedLagMicros(policy),
    retentionMicros: BigInt(retentionSeconds) * 1_000_000n,
  });
  const feed = new Feed({
    store: o.store,
    intents,
    clock,
    lagMicros: feedLagMicros(policy),
    skewMicros: BigInt(policy.clockSkewMs) * 1000n,
    ...(o.feedCursorSecrets ? { cursorSecrets: o.feedCursorSecrets } : {}),
    guard,
    retentionSeconds,
    ...(o.feedPollMs !== undefined ? { pollMs: o.feedPollMs } : {}),
    ...(o.feedTail === false ? { tail: false } : {}),
    ...(o.feedTailPage !== undefined ? { tailPage: o.feedTailPage } : {}),
    ...(o.timers ? { timers: o.timers } : {}),
    ...(o.feedMaxWaiters ? { maxWaiters: o.feedMaxWaiters } : {}),
    onRead: o.onFeedRead,
    onWritten: o.onEventsWritten,
  });
  // Off with the registry: the caches follow the same feed tail.
  const cachesOff = o.events === false || o.registry === false;
  const caches = new GraphCaches({
    store: o.store,
    feed,
    cursorAfter: (list, last) => o.lists.olderCursor(list, last),
    ...(o.timers ? { nowMs: o.timers.nowMs } : {}),
    ...(o.tracer ? { tracer: o.tracer } : {}),
    options: cachesOff || o.caches === false ? { ttlMs: 0 } : (o.caches ?? {}),
  });
  const reader = caches.reader;
  // Deactivation from memory (`deactivated-accounts.ts`), kept fresh by the feed's tail; without
  // the feed (events: false) or with an injected filter, none. Its per-member reads (while it is
  // not fresh) take the cached rows, which are as fresh as the caches' bound.
  const registry =
    o.memberFilter || o.events === false || o.registry === false
      ? null
      : new DeactivatedAccounts({
          store: o.store,
          feed,
          memberRows: reader,
          ...(o.timers ? { nowMs: o.timers.nowMs, sleep: o.timers.sleep } : {}),
        });
  registry?.start();
  const hiddenMembers = o.memberFilter ?? registry?.filter ?? deactivatedFilter(reader);
  const members = () =>
    pageMembers(reader, o.memberFilter ?? (registry?.fresh() ? registry.filter : undefined));
  const edges = new EdgeReads(reader, o.lists);
  const writes = new PairMutations({
    store: o.store,
    // A mutation's acting account from the user cache (at most the caches' bound old); the other
    // account, whose privacy and state decide the op, the write path reads fresh (`WritePathDeps.users`).
    users: { getUsers: (ids) => reader.getUsers(ids) },
    lists: o.lists,
    clock,
    monotonic,
    guard,
    policy,
    cap: new FollowCap(o.store, o.maxFollowing, monotonic),
    countLeaseMicros,
    ...(o.feedIntents === false ? { intents: false } : {}),
    eventsFrom: o.events === false ? () => null : () => clock() - eventWindowMicros(policy),
    // Compaction folds no op whose intent may stand (`intentsResolved`).
    ...(o.events === false
      ? {}
      : { intentsClear: (shard: number) => intents.shardBounds()?.[shard] ?? null }),
    onEvents: feed.written,
  });
  const intentRecovery = new IntentRecovery(
    {
      store: o.store,
      lists: o.lists,
      clock,
      lagMicros: feedLagMicros(policy),
      onEvents: feed.written,
    },
    intents,
    o.leases
      ? {
          lease: {
            store: o.leases,
            holder: newHolderName(),
            clockBoundMs: policy.clockSkewMs,
            // A holder that dies holds the feed back at most this (+ S) before another takes over.
            ttlMs: 10_000,
            ...(o.timers ? { timers: o.timers } : {}),
          },
        }
      : {},
  );
  const accounts = new Accounts({
    store: o.store,
    lists: o.lists,
    clock,
    guard,
    leaseMicros: countLeaseMicros,
    renameLagMicros: feedLagMicros(policy),
    intentBudgetMicros: BigInt(policy.writeBudgetMs) * 1000n,
    lateMicros: BigInt(policy.writeBudgetMs + policy.viewBudgetMs + policy.batchTimeoutMs) * 1000n,
    ...(o.onRenameProgress ? { onRenameProgress: o.onRenameProgress } : {}),
    onEvents: feed.written,
    // The row at once; an update's feed row (published right after) drops counts and pages too.
    onUserWritten: (u) => {
      registry?.note(u);
      caches.users.invalidate(u.id);
    },
    accept: (owner, requester) => writes.accept(owner, requester, {}, true),
    updateNonce: o.updateNonce ?? (() => randomBytes(8).readBigUInt64BE() >> 2n),
    onTaskError: o.onTaskError ?? (() => undefined),
  });
  const reads = new GraphReads(
    {
      getUsers: reader.getUsers,
      getEdgesOut: reader.getEdgesOut,
      getEdgesOutOf: reader.getEdgesOutOf,
      getPairEdges: reader.getPairEdges,
      getCountSync: (list) => o.store.getCountSync(list),
      hasDirty: (list) => o.store.hasDirty(list),
      getUserCounts: (userId, relation) => o.store.getUserCounts(userId, relation),
    },
    edges,
    hiddenMembers,
    clock,
    () => countSource.accountTables(),
  );
  const visibility = new Visibility(
    { getUser: reader.getUser, getUsers: reader.getUsers, getEdgesOut: reader.getEdgesOut },
    edges,
    (id) => registry?.isDeactivated(id) ?? null,
  );
  const sets = new SetQueries({
    lists: o.lists,
    codec: new SetCursorCodec(o.setCursorSecret ?? randomBytes(32).toString('base64url')),
    probe: (owner, direction, ids) => edges.activeEdges(owner, 'follows', direction, ids),
    count: (list) => o.store.getCount(list),
    memberFilter: hiddenMembers,
    ...(o.setBudget ? { budget: o.setBudget } : {}),
    ...(o.onSetPage ? { onPage: o.onSetPage } : {}),
  });
  return {
    store: o.store,
    lists: o.lists,
    maxFollowing: o.maxFollowing,
    feed,
    intentRecovery,
    caches,
    reader,
    registry,
    hiddenMembers,
    members,
    countSource,
    writes,
    accounts,
    reads,
    edges,
    visibility,
    sets,
  };
}
