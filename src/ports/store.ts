/**
 * The storage ports: narrow role interfaces, one per job, that the domain (`src/graph`) and the list
 * engine (`src/lists`) take — each consumer the narrowest it needs. The domain decides *what* to
 * write; a store only reads and writes. Two implementations are held to one contract suite (`test/store/contract.ts`): the
 * Cassandra store and an in-memory store for fast domain tests.
 *
 * Write discipline: every edge and list-row write carries the caller's `version` as its cell
 * write time (`USING TIMESTAMP version` in Cassandra), so the store's own last-writer-wins
 * resolves races and replays; a write with a lower version never shadows a higher one. At equal
 * versions a delete wins over a put (Cassandra's tie rule; the memory store copies it).
 */

import type { EventKey, EventRow } from '../model/events.js';
import type { SearchKey, SearchLayout, SearchRow } from '../model/search.js';
import type { Directory, PendingSplit, RowMode, TimeBucket } from '../model/time-buckets.js';
import type {
  BucketLayout,
  Direction,
  EdgeRecord,
  ListEntry,
  ListKey,
  Position,
  Relation,
  UserId,
  UserRecord,
} from '../model/types.js';
import type {
  AccountTask,
  CountSync,
  DirtyMark,
  EdgeWrite,
  IndexedNameWrite,
  ListCounts,
  ListMigration,
  ListRowWrite,
  PairAppend,
  PairHistory,
  Receipt,
  Reconciliation,
  ScannedPartition,
  ScanTable,
  SearchWrite,
  Suggestion,
  SuggestionSet,
  SweepProgress,
  TokenRange,
  VersionedEntry,
} from './records.js';

/**
 * The pair histories (`pair_ops`): one partition per unordered pair holding a checkpoint, a pending
 * compaction and the ops above the checkpoint's horizon. The algorithm that uses it, and why it is
 * safe without lightweight transactions, is in `src/graph/pair-history.ts`.
 */
export interface PairHistoryStore {
  /**
   * The pair's checkpoint, pending compaction and every op above the horizon, in history order
   * (position, source id, kind). Reads every page; ops at or below the horizon that a late write
   * left behind are not returned.
   */
  readPairHistory(a: UserId, b: UserId): Promise<PairHistory>;
  /**
   * One single-partition write, atomic and isolated on each replica: inserts the op (the same op
   * twice is one row), and announces or commits a compaction when asked. A commit writes the
   * checkpoint at a write time that grows with its horizon (a later commit of a lower horizon
   * never wins), clears the announcement and deletes the folded ops. `timeoutMs` bounds the call.
   */
  appendPair(append: PairAppend, timeoutMs?: number): Promise<void>;
}

/**
 * Durable per-account background tasks (`account_tasks`): a row per unfinished task, written and
 * deleted at explicit write times (`AccountTask.version`), so a run can delete its own generation
 * of a task without a lightweight transaction and without deleting a newer one.
 */
export interface AccountTaskStore {
  /**
   * Creates or moves on the task at write time `task.version`: the row of the highest version
   * wins (an older write landing late changes nothing). Idempotent.
   */
  putAccountTask(task: AccountTask): Promise<void>;
  /** The unfinished task with its version, or null. */
  getAccountTask(userId: UserId, task: AccountTask['task']): Promise<AccountTask | null>;
  /** Every unfinished task (few at a time; read at start-up to resume them). */
  listAccountTasks(): Promise<AccountTask[]>;
  /**
   * Marks the task finished at write time `version`: a row written at a higher version (a newer
   * generation) survives; at equal versions the delete wins. Idempotent.
   */
  deleteAccountTask(userId: UserId, task: AccountTask['task'], version: bigint): Promise<void>;
}

/** The users projection. */
export interface UserStore {
  /** The user, or null if unknown. */
  getUser(id: UserId): Promise<UserRecord | null>;
  /** The known users among `ids` (unknown ids are absent from the map). */
  getUsers(ids: readonly UserId[]): Promise<Map<UserId, UserRecord>>;
  /**
   * Creates or updates a user. Throws `UsernameTakenError` when another id holds the username
   * (case-insensitive). Returns whether the user was new. `event`: the account's `user.updated`
   * row of the feed, written in the same logged batch as the user row (see `EventStore`).
   */
  putUser(user: UserRecord, o?: { event?: EventRow }): Promise<{ created: boolean }>;
  /**
   * The accounts in the registry of deactivated accounts, or null when it holds more than `limit`
   * (reads `DEACTIVATED_SHARDS` partitions). Every deactivated account is in it: each `putUser`
   * of a deactivated state registers the account at the same write time, and only the write that
   * reactivates an account seen deactivated unregisters it. It may also name a few active
   * accounts (a reactivation raced by a write that read the old state), so a caller confirms the
   * entries it uses against `getUsers`.
   */
  listDeactivated(limit: number): Promise<UserId[] | null>;
  /**
   * Records that `id` was active at `at` (µs since the epoch; the account service's report). The
   * latest instant wins whatever order reports arrive in (an older report changes nothing). Kept
   * apart from the user row: no `user.updated` event, no user-row cache sees it. Idempotent.
   */
  putActivity(id: UserId, at: Position): Promise<void>;
  /** The last reported activity of each of `ids` (µs); accounts never reported are absent. */
  getActivity(ids: readonly UserId[]): Promise<Map<UserId, Position>>;
}

/** Partitions of the deactivated-accounts registry. */
export const DEACTIVATED_SHARDS = 16;

/** The registry partition of `id`. */
export const deactivatedShard = (id: UserId): number => Number(id % BigInt(DEACTIVATED_SHARDS));

/** Pair-keyed edge state (forward and bucketed inverse), written with the list rows it implies. */
export interface EdgeStore {
  /**
   * Writes derived edge states and list rows as one logged batch (all-or-nothing eventually),
   * every cell at write time `version`. Idempotent. Each edge goes to the forward table and to
   * every code of its `inBucketCodes`; each list row to every code of its `bucketCodes`, in the
   * table its `ListKey` selects (follows: the card's `following` / `followers`; other relations:
   * `relation_lists`). `events`: rows of the feed (see `EventStore`) that ride in the same batch,
   * at the same version; a batch that carries events is never sent without the batchlog (it fails
   * with `StoreUnavailableError` instead), so the events and the change are all-or-nothing.
   */
  writeEdges(
    edges: readonly EdgeWrite[],
    rows: readonly ListRowWrite[],
    version: bigint,
    events?: readonly EventRow[],
  ): Promise<void>;
  /** Edge states `sourceId → t` for each t in `targetIds` (absent: no edge ever). One partition. */
  getEdgesOut(
    sourceId: UserId,
    relation: Relation,
    targetIds: readonly UserId[],
  ): Promise<Map<UserId, EdgeRecord>>;
  /**
   * Edge states `s → targetId` for each s in `sourceIds` (absent: no edge ever). The inverse state
   * is bucketed like the target's `in` list of `relation`: pass that list's layout (its `buckets`,
   * the read layout, is used). One single-partition `IN` read per distinct bucket code among
   * `sourceIds`, so at most `min(layout.buckets, |sourceIds|)` partitions.
   *
   * @example
   * const layout = await lists.currentLayout({ userId: b, relation: 'follows', direction: 'in' });
   * const edges = await store.getEdgesIn(b, 'follows', [a1, a2, a3], layout);
   */
  getEdgesIn(
    targetId: UserId,
    relation: Relation,
    sourceIds: readonly UserId[],
    layout: BucketLayout,
  ): Promise<Map<UserId, EdgeRecord>>;
  /** Every edge state between `a` and `b`, all relations, both directions. */
  getPairEdges(a: UserId, b: UserId): Promise<EdgeRecord[]>;
}

/** The bucketed list projections and their layouts, with what online growth needs. */
export interface ListStore {
  /**
   * One bucket's rows, newest first (created_at DESC, other_id DESC), strictly after `after`
   * when given (i.e. older than it in list order), at most `limit` rows; with `since`, only rows
   * whose `created_at >= since` (the read stops there: a bound in the query, not a filter).
   */
  listBucket(
    list: ListKey,
    bucketCode: number,
    after: ListEntry | null,
    limit: number,
    since?: Position,
  ): Promise<ListEntry[]>;
  /**
   * One bucket's rows *newer* than `after` (strictly), oldest first (created_at ASC, other_id ASC:
   * the clustering order read backwards), with `created_at < until` when `until` is given, at most
   * `limit` rows. What a `direction=newer` page merges (see `list-service.ts`).
   */
  listBucketNewer(
    list: ListKey,
    bucketCode: number,
    after: ListEntry,
    limit: number,
    until?: Position,
  ): Promise<ListEntry[]>;
  /** The list's layout; `{ buckets: 1, growingTo: null, copiedThrough: 0 }` when never set. */
  getLayout(list: ListKey): Promise<BucketLayout>;
  putLayout(list: ListKey, layout: BucketLayout): Promise<void>;
  /**
   * Compare-and-set of the layout: writes `next` only if the stored layout (the default when none
   * is stored) equals `expected`; returns whether it did. Linearizable (Cassandra: a lightweight
   * transaction — off the edge path), so two growth runners can never interleave their steps.
   */
  replaceLayout(list: ListKey, expected: BucketLayout, next: BucketLayout): Promise<boolean>;
  /**
   * The list's time-bucket directory, newest bucket first and ending with the implicit first bucket
   * (`EMPTY_DIRECTORY` when nothing was ever stored). See `model/time-buckets.ts`.
   */
  getDirectory(list: ListKey): Promise<Directory>;
  /**
   * `getLayout` and `getDirectory` of each list, in order, in as few requests as the store can
   * (Cassandra: one multi-partition read of each table per 100 lists of one relation and
   * direction). For walks that place one row in each of many lists (the rename fan-out).
   */
  getPlacements(lists: readonly ListKey[]): Promise<{ layout: BucketLayout; directory: Directory }[]>;
  /**
   * Compare-and-set of the directory: when the stored version (0 when none) is `expectedVersion`,
   * adds the `add` buckets (ids and starts new to the list, with their `owner` when set), sets
   * `mode` when given, sets or clears (null) the pending `split` when given, replaces the `search`
   * layout (starts and cut) when given, and stores version
   * `expectedVersion + 1`; returns whether it did. Linearizable (Cassandra: a lightweight
   * transaction on the directory partition, never on the edge path).
   */
  updateDirectory(
    list: ListKey,
    expectedVersion: number,
    change: {
      add?: readonly TimeBucket[];
      mode?: RowMode;
      migration?: ListMigration | null;
      split?: PendingSplit | null;
      search?: SearchLayout;
    },
  ): Promise<boolean>;
  /**
   * Where the list's migration to time buckets stands (set with `updateDirectory`'s `migration`;
   * null clears it), or null when none is pending. Read with the directory's partition.
   */
  getListMigration(list: ListKey): Promise<ListMigration | null>;
  /**
   * Copies one page of a bucket (rows strictly after `after`, newest first, at most `limit`) into
   * the bucket code `targetCode` chooses for each row, each row keeping its original write time, so a
   * concurrent delete (a higher version) still wins over the copy. Used by online growth; resume
   * from the returned `last` (null when the bucket is exhausted).
   */
  copyBucketPage(
    list: ListKey,
    fromBucketCode: number,
    after: ListEntry | null,
    limit: number,
    targetCode: (row: ListEntry) => number,
  ): Promise<{ copied: number; last: ListEntry | null }>;
  /**
   * `listBucket` without bounds, each row with its write time (the version of the put that wrote
   * it). What a rename's fan-out walks (`rename-fanout.ts`).
   */
  listBucketVersions(
    list: ListKey,
    bucketCode: number,
    after: ListEntry | null,
    limit: number,
  ): Promise<VersionedEntry[]>;
  /**
   * Sets the username cell of each of `rows` in one bucket partition to `username`, each at its
   * own `version` (write time): a row deleted at or above that version stays deleted (at an equal
   * write time the deletion wins), and a later put of the row overwrites the name. A put writes
   * its row's name one below the row's version, so this replaces it whatever the two names' order
   * (two live cells at one write time resolve to the larger value). With `generation` (a
   * rename's, µs) the cell is tagged with it (`model/row-username.ts`), so of two renames written
   * at one row's write time the newer generation wins whatever the names' order; readers see the
   * name only. One single-partition write. Idempotent. `search`: search writes (`SearchStore`)
   * sent in the same request, each at its own version (a rename's fan-out moves a follows row's
   * search row with its name): one unlogged batch, each partition's mutation atomic on its own,
   * the whole not.
   */
  setListUsernames(
    list: ListKey,
    bucketCode: number,
    rows: readonly VersionedEntry[],
    username: string,
    generation?: Position,
    search?: { writes: readonly SearchWrite[]; indexed: readonly IndexedNameWrite[] },
  ): Promise<void>;
  /** Drops a whole bucket partition (after a growth has moved past it), at write time `version`. */
  dropBucket(list: ListKey, bucketCode: number, version: bigint): Promise<void>;
  /**
   * Deletes the rows of one bucket partition with `created_at >= from` (one range tombstone at
   * write time `version`: a row written there at or below `version`, before or after, stays
   * deleted). What a split does to its parent's moved rows (`lists/reshape/bucket-split.ts`). Idempotent.
   */
  deleteBucketRange(list: ListKey, bucketCode: number, from: Position, version: bigint): Promise<void>;
  /**
   * The inverse edge state bucketed like `list` (direction `in`; RangeError otherwise): copies one
   * page of bucket `fromBucketCode` (sources strictly above `after`, ascending, at most `limit`,
   * removed edges included) into the codes chosen by `targetCode`, every cell keeping its original
   * write time, so a concurrent newer write still wins over the copy. Used by online growth;
   * resume from the returned `last` (null when the bucket is exhausted).
   */
  copyInverseEdgePage(
    list: ListKey,
    fromBucketCode: number,
    after: UserId | null,
    limit: number,
    targetCode: (sourceId: UserId) => number,
  ): Promise<{ copied: number; last: UserId | null }>;
  /** Drops one inverse-edge bucket of `list` (direction `in`) at write time `version`. */
  dropInverseEdgeBucket(list: ListKey, bucketCode: number, version: bigint): Promise<void>;
}

/** One counter change: `delta` on shard `shard` of `list`'s counter. */
export interface CounterDelta {
  list: ListKey;
  shard: number;
  delta: number;
}

/** Shards of the dirty-mark table; a list's marks all live in shard `bucketOf(userId, DIRTY_SHARDS)`. */
export const DIRTY_SHARDS = 8;

/**
 * Sharded list counters, the marks writers leave for the reconciler, the per-bucket counts it
 * keeps, and the older whole-list reconciliation records.
 *
 * Two copies of the counters and the reconciliation state (issue 21): per list (`list_counts`,
 * `bucket_counts`: the "list tables") and per account (`user_counts`, `user_count_state`: the
 * "account tables", where one account's lists share one partition of each, so a counts read is
 * two single-partition reads). Every write below writes both (an increment or a mark, one request
 * still); the reads name the copy they read. The dirty marks live in `dirty_lists` (the
 * reconciler's work queue) with a mirror cell per marked bucket in the account tables, written
 * and cleared with it.
 */
export interface CountStore {
  /** Adds `delta` to the list's counter shard (both copies). Not idempotent (counter semantics). */
  incrementCount(list: ListKey, shard: number, delta: number): Promise<void>;
  /**
   * Adds each delta to its list's counter shard, both copies, in one request (a counter batch;
   * zero deltas are left out). Not idempotent, never retried; a failure may leave any subset
   * applied (the writer's dirty marks cover that: `pair-writer.ts`).
   */
  incrementCounts(deltas: readonly CounterDelta[]): Promise<void>;
  /** The served count from the list tables: sum over the list's counter shards plus the correction. */
  getCount(list: ListKey): Promise<number>;
  /**
   * Marks one bucket of `list` dirty at write time `version` (µs), in `dirty_lists` and its mirror,
   * in one request (an unlogged batch). Idempotent; a newer mark replaces an older one.
   */
  markDirty(list: ListKey, bucketCode: number, version: bigint): Promise<void>;
  /**
   * `markDirty` of every bucket of `marks`, all at write time `version`, in one request (an
   * unlogged batch: each mark and each mirror cell lands or not on its own). Idempotent.
   */
  markDirtyBuckets(marks: readonly { list: ListKey; bucketCode: number }[], version: bigint): Promise<void>;
  /** Up to `limit` marks of one shard (`0 ≤ shard < DIRTY_SHARDS`), in key order, with their write times. */
  listDirty(shard: number, limit: number): Promise<DirtyMark[]>;
  /** Whether any bucket of `list` is marked dirty (`dirty_lists`). One single-partition read. */
  hasDirty(list: ListKey): Promise<boolean>;
  /**
   * Clears a mark and its mirror at the mark's own write time, in one request: a mark written
   * again later (a higher version) survives. At equal versions the clear wins. Idempotent.
   */
  clearDirty(mark: DirtyMark): Promise<void>;
  /** From the list tables: the counter shards' sum, the correction, `asOf` and the per-bucket counts of `list`. */
  getCountSync(list: ListKey): Promise<CountSync>;
  /**
   * From the account tables: every list of `relation` of `userId`, both directions, with its
   * dirty flag. Two single-partition reads, in parallel, whatever the lists' sizes (the
   * per-bucket counts are not read).
   */
  getUserCounts(userId: UserId, relation: Relation): Promise<Record<Direction, ListCounts>>;
  /**
   * From the account tables: `getCountSync` of one list (with its per-bucket counts). Two
   * single-partition reads.
   */
  getUserCountSync(list: ListKey): Promise<CountSync>;
  /**
   * Records a reconciliation in the account tables: the new `correction` and `asOf` and the
   * recounted `buckets` (others kept), all at write time `asOf` (an older reconciliation finishing
   * late never wins), in single-partition batches of up to 100 buckets (the correction with the
   * first). Readers never need them together: a counts read takes only the correction, and a
   * reconciler recomputes the correction from the bucket counts it reads.
   */
  putUserCountSync(
    list: ListKey,
    sync: { correction: number; asOf: Position; buckets: ReadonlyMap<number, number> },
  ): Promise<void>;
  /**
   * Records a reconciliation in the list tables: the new `correction` and `asOf` (written at write
   * time `asOf`, so an older reconciliation finishing late never wins) and the recounted `buckets`
   * (others kept).
   */
  putCountSync(
    list: ListKey,
    sync: {
      correction: number;
      asOf: Position;
      buckets: ReadonlyMap<number, number>;
    },
  ): Promise<void>;
  /** Records that the list's counter was reconciled against `counted` rows, with `drift` corrected. */
  putReconciliation(list: ListKey, r: Reconciliation): Promise<void>;
  /** The last reconciliation of the list, or null. */
  getReconciliation(list: ListKey): Promise<Reconciliation | null>;
}

/**
 * Whole-table walks for jobs (the repair sweep, the suggestion snapshot): partitions in token order
 * within a slice of the ring, then point or partition reads of what was found. Nothing here holds a
 * table in memory; callers page.
 */
export interface ScanStore {
  /**
   * Up to `limit` partitions of `table` whose token `t` has `max(range.start, afterToken) < t <=
   * range.end`, in token order (Cassandra: `SELECT DISTINCT … WHERE token(pk) > ? AND token(pk) <= ?`).
   * Resume a range from the last token returned. Two partitions sharing one 64-bit token would be
   * split by a page boundary only with negligible probability; a resumed page may then skip one.
   *
   * @example
   * let after: bigint | null = null;
   * for (;;) {
   *   const page = await store.scanPartitions('edges_out', range, after, 100);
   *   for (const p of page) await check(p.key);
   *   if (page.length < 100) break;
   *   after = page.at(-1)!.token;
   * }
   */
  scanPartitions(
    table: ScanTable,
    range: TokenRange,
    afterToken: bigint | null,
    limit: number,
  ): Promise<ScannedPartition[]>;
  /**
   * One page of every forward edge state of `sourceId` (all relations, removed ones included), in
   * (relation, target id) order, strictly after `after` when given. One partition.
   */
  edgesOfSource(
    sourceId: UserId,
    after: { relation: Relation; targetId: UserId } | null,
    limit: number,
  ): Promise<EdgeRecord[]>;
  /** Whether bucket `bucketCode` of `list` holds the row `entry`. One point read. */
  hasListRow(list: ListKey, bucketCode: number, entry: ListEntry): Promise<boolean>;
  /** The job's saved progress, or null. */
  getSweepProgress(job: string): Promise<SweepProgress | null>;
  /** Saves the job's progress (the newest write wins). */
  putSweepProgress(progress: SweepProgress): Promise<void>;
}

/**
 * Precomputed friend-of-friend suggestions (`suggestions`): one partition per user, replaced whole
 * by each run.
 */
export interface SuggestionStore {
  /**
   * Replaces the user's suggestions with `items` (rank order) of run `generation` (µs), atomically
   * and isolated (one single-partition batch): the old rows are deleted at write time
   * `generation − 1` and the new ones written at `generation`, so readers see one run or the
   * other, and an older run finishing late never replaces a newer one.
   */
  putSuggestions(userId: UserId, generation: bigint, items: readonly Suggestion[]): Promise<void>;
  /** The user's stored suggestions in rank order, or null if no run wrote any for them. */
  getSuggestions(userId: UserId): Promise<SuggestionSet | null>;
}

/**
 * The graph's change feed as stored: rows keyed by `EventKey`, written only with the change they
 * describe (`writeEdges`, `putUser`), each cell at its writer's version, so a row written from a
 * fuller view of a pair's history replaces one written from a partial view (an empty row: no
 * events). Rows expire after the retention the store was opened with.
 */
export interface EventStore {
  /**
   * The non-empty rows strictly after `after` (null: from the start of the retention) with
   * `slot <= until`, in feed order (`compareEventKeys`), at most `limit`.
   */
  readEventRows(after: EventKey | null, until: Position, limit: number): Promise<EventRow[]>;
}

/** Idempotency receipts (`receipts`), what the HTTP layer's `Idempotency-Key` middleware keeps. */
export interface ReceiptStore {
  /** The receipt stored for (actor, key), or null when none (or expired). */
  getReceipt(actorId: UserId, key: string): Promise<Receipt | null>;
  /** Stores a receipt for `ttlSeconds`; the first writer of a key wins (later puts are ignored). */
  putReceipt(actorId: UserId, key: string, receipt: Receipt, ttlSeconds: number): Promise<void>;
}

/**
 * The feed cursors of the Kafka relays (`relay_cursors`, `src/jobs/relay.ts`): one per relay name.
 * A relay of one name runs as one process at a time; the newest write wins.
 */
export interface RelayCursorStore {
  /** The cursor the relay `name` saved last, or null when it never saved one. */
  getRelayCursor(name: string): Promise<string | null>;
  /** Saves `cursor` as the relay's (idempotent; replaces what was saved). */
  putRelayCursor(name: string, cursor: string): Promise<void>;
  /** Every relay's saved cursor, at most `limit` (the relay-lag metric reads it). */
  listRelayCursors(limit: number): Promise<{ name: string; cursor: string }[]>;
}

/**
 * The search rows of follows lists (`list_search`): each member of a follows list under its
 * lowercased username, partitioned per list by the name's first two characters
 * (`model/search.ts`). The edge batch writes them with their list rows (`EdgeStore.writeEdges`,
 * `ListRowWrite.searchNames`); this port reads them and writes them outside that batch.
 */
export interface SearchStore {
  /**
   * The rows of partition `prefix` of `list`'s search rows strictly after `after` in
   * (lowercased name, id) order and with a lowercased name below `end`, in that order, at most
   * `limit`. One single-partition read.
   */
  listSearchRows(
    list: ListKey,
    prefix: string,
    after: SearchKey,
    end: string,
    limit: number,
  ): Promise<SearchRow[]>;
  /**
   * Writes each search row put or delete at its own version (a row's cells last-writer-wins; at
   * one version a delete beats a put), and each indexed name into its pair's static cell at its
   * version. Idempotent. Grouped per partition; partitions are written independently (not atomic
   * together).
   */
  writeSearchRows(writes: readonly SearchWrite[], indexed?: readonly IndexedNameWrite[]): Promise<void>;
  /**
   * Copies one page of partition `from`'s rows (strictly after `after`, with a lowercased name
   * below `end`, in order, at most `limit`) into partition `to`, each cell keeping its write time,
   * so a delete sent to both (a higher version) wins over the copy whichever lands last. Deleted
   * rows are not copied. Resume from the returned `last` (null: nothing was left). What a split of a
   * search partition does (`lists/reshape/search-split.ts`).
   */
  copySearchRows(
    list: ListKey,
    from: string,
    to: string,
    after: SearchKey,
    end: string,
    limit: number,
  ): Promise<{ copied: number; last: SearchKey | null }>;
  /**
   * Deletes the rows of partition `partition` with a lowercased name at or above `from` (one range
   * tombstone at write time `version`: a row written there at or below `version`, before or after,
   * stays deleted). Idempotent.
   */
  deleteSearchRange(list: ListKey, partition: string, from: string, version: bigint): Promise<void>;
}

/**
 * Everything the service needs from storage: the role interfaces above plus the database clock.
 * Components take the narrowest role they use. (Readiness is not asked of the store: `/readyz`
 * asks whether every migration is applied: `schemaPresent`, wired in `src/main.ts`.)
 */
export interface GraphStore
  extends UserStore,
    RelayCursorStore,
    PairHistoryStore,
    EdgeStore,
    ListStore,
    SearchStore,
    CountStore,
    ReceiptStore,
    AccountTaskStore,
    ScanStore,
    SuggestionStore,
    EventStore {
  /** The database's clock, ms since the epoch (what the clock guard compares this instance's with). */
  databaseClockMs(): Promise<number>;
  close(): Promise<void>;
}
