/**
 * The records the storage ports read and write (pair histories, writes, tasks, marks, counts,
 * scans, suggestions): the ports' vocabulary beyond the domain's nouns.
 */

import type { SearchKey, SearchLayout, SearchRow } from '../model/search.js';
import type { EdgeRecord, ListEntry, ListKey, PairOp, Position, UserId } from '../model/types.js';

/**
 * An op as the pair history stores it: with `base`, the checkpoint's op count its writer saw
 * (the number of ops at or below the horizon then). It makes the write version tie-free across
 * compactions (`src/graph/pair/pair-history.ts`).
 */
export interface StoredPairOp extends PairOp {
  base: number;
  /**
   * The op's feed slot (µs, the writer's clock at its append): where its events stand in the
   * feed (`src/graph/pair/pair-events.ts`). Absent on ops appended before the feed existed.
   */
  slot?: Position;
}

/**
 * The folded state of a pair's history up to `horizon`: every op at or below it has been folded
 * in and is no longer stored one by one.
 */
export interface PairCheckpoint {
  /** Position of the newest op folded in; ops at or below it are refused from now on. */
  horizon: Position;
  /** Distinct ops folded in, over the pair's whole life. */
  count: number;
  /** Smallest `base` among the folded ops at `horizon` (the version needs it when no op is newer). */
  newestBase: number;
  /** The state of every edge of the pair that any folded op touched. */
  edges: EdgeRecord[];
}

/** A compaction announced but not yet committed: ops at or below `horizon` are refused meanwhile. */
export interface PendingCompaction {
  horizon: Position;
  /** µs clock of the writer that announced it (informational: nothing is timed from it). */
  announcedAt: Position;
  /**
   * The observer's wall clock (µs) when a read that saw *this* announcement returned: the
   * announcement was visible to every later read by then. Recorded bound to `horizon` (an
   * observation of an earlier announcement is never reported for a later one). Null until a
   * writer has recorded it.
   */
  seenAt: Position | null;
}

/** Rows of a pair's history that one statement reads (the first page of the pair read). */
export const PAIR_READ_ROWS = 1024;

/** One read of a pair's history: the checkpoint, a pending compaction, and every op above the horizon. */
export interface PairHistory {
  checkpoint: PairCheckpoint | null;
  pending: PendingCompaction | null;
  /** Ops above the checkpoint's horizon, in history order (position, source id, kind). */
  ops: StoredPairOp[];
  /**
   * Null when the checkpoint, the pending compaction and every op came from one statement (one
   * snapshot). Otherwise the position through which they did: ops above it were read by later
   * statements (a history longer than `PAIR_READ_ROWS` rows), and `0n` when nothing is known to
   * share the checkpoint's snapshot. A compaction may only commit a horizon strictly below it.
   */
  snapshotThrough: Position | null;
  /**
   * The name each account of the pair was last indexed under in the other's follows lists' search
   * rows (`list_search`), as the pair's static cells hold it (plain, the tag of a rename's cell
   * stripped); an account never indexed has no entry (and the field is absent when neither was). What a delete of a follow row deletes its
   * search row under besides the member's current name (`ListRowWrite.searchNames`).
   */
  indexedNames?: ReadonlyMap<UserId, string>;
}

/** One single-partition write to a pair's history: an op, and optionally a compaction step. */
export interface PairAppend {
  /** The pair's two accounts, in either order. */
  pair: readonly [UserId, UserId];
  /** The op; none for a compaction step written alone (a pair over its bound drains without growing). */
  op?: StoredPairOp;
  /** Announce a compaction (when none is pending); `seenAt` is ignored. */
  announce?: PendingCompaction;
  /** Record that a read which saw the announcement of `horizon` returned at `seenAt` (µs, wall). */
  observe?: { horizon: Position; seenAt: Position };
  /**
   * Commit the pending compaction: set this checkpoint, clear the announcement and its
   * observation, drop the ops below the horizon (the ops at it stay, filtered by readers, so a read
   * starting at the horizon always meets a row). `folded`: distinct ops this commit folds.
   */
  commit?: { checkpoint: PairCheckpoint; folded: number };
}

/**
 * Write times of a pair's compaction cells: logical, from the horizon, never from a clock, so the
 * cells order by the protocol's own steps whatever the writers' clocks say. Per horizon `h` an
 * announcement is written at `h·1024`, its observation at `h·1024 + 1`, its commit at
 * `h·1024 + 2 + folded` (a commit of the same horizon that folded more ops wins; such commits
 * differ only in ops that were never acknowledged). Every step of a higher horizon outranks every
 * step of a lower one, so a late statement of an old step never undoes a newer one.
 */
export const PAIR_STEP_TIME = {
  announce: (h: Position): bigint => h * 1024n,
  observe: (h: Position): bigint => h * 1024n + 1n,
  commit: (h: Position, folded: number): bigint =>
    h * 1024n + 2n + BigInt(Math.max(0, Math.min(folded, 1021))),
} as const;

/** A list-row mutation the domain derived; the store writes it to each named bucket code. */
/** A list row with its write time (`writetime(position)`: the version of the put that wrote it). */
export interface VersionedEntry {
  entry: ListEntry;
  version: bigint;
}

export interface ListRowWrite {
  list: ListKey;
  bucketCodes: number[];
  entry: ListEntry;
  op: 'put' | 'delete';
  /**
   * Follows rows only: the names the member's search row (`list_search`) may stand under that
   * this write deletes, at its version. A put indexes `entry.username` (and records it as the
   * member's indexed name in the pair's static cell) and deletes under each other name here (a
   * name indexed before a rename reached the row); a delete deletes under each name here (the
   * member's current name and the name last indexed). Names equal to the put's once lowercased
   * are skipped (the same search row).
   */
  searchNames?: readonly string[];
  /** Follows rows: the list's search layout the search writes are placed by (absent: never cut). */
  searchLayout?: SearchLayout;
}

/**
 * One search-row write outside the edge batch (a rename's fan-out, the backfill job): a put of a
 * row, or a delete of a key, in `list` (a follows list), at `version` (the list row's write time).
 * `username` of a put is the cell as stored (a rename's is tagged, `model/row-username.ts`).
 */
export type SearchWrite = (
  | { op: 'put'; list: ListKey; row: SearchRow; version: bigint }
  | { op: 'delete'; list: ListKey; key: SearchKey; version: bigint }
) & {
  /** The partitions (range starts) written: `searchWritePartitions` of the list's search layout. */
  partitions: readonly string[];
};

/**
 * The name `member` is indexed under in `other`'s follows lists, recorded in their pair's static
 * cell at `version` (`cell`: a `row-username.ts` cell, a rename's tagged so it wins at one write time).
 */
export interface IndexedNameWrite {
  member: UserId;
  other: UserId;
  cell: string;
  version: bigint;
}

/** A derived edge state to write. */
export interface EdgeWrite {
  edge: EdgeRecord;
  /**
   * Bucket codes of the inverse row (`edges_in`): `writeBucketCodes` of the target's `in` list
   * layout for the source — the same codes as that list's row, both layouts while a growth runs.
   */
  inBucketCodes: number[];
}

export interface Receipt {
  requestHash: string;
  status: number;
  body: string;
}

export interface Reconciliation {
  reconciledAt: Date;
  /** Rows counted in the list. */
  counted: number;
  /** counted − counter before the correction. */
  drift: number;
}

/** Durable per-account background work; `cursor` is where a restart resumes (null: from the start). */
export interface AccountTask {
  userId: UserId;
  task: 'accept_requests' | 'mark_counterparts' | 'rename_fanout';
  cursor: string | null;
  /**
   * The row's write time (µs): the generation's when the state change that needs the task writes
   * it (its clock), one more per cursor commit of its run. A run deletes the row at the version it
   * last wrote or read, so a newer generation's row (written later, at a higher version) survives.
   */
  version: bigint;
}

/** A pending "recount me" mark on one bucket of a list, left by a writer that changed its counter. */
export interface DirtyMark {
  list: ListKey;
  /** Bucket code of the list's read layout when the mark was written. */
  bucketCode: number;
  /** Write time of the mark (µs): clearing at it leaves any newer mark standing. */
  version: bigint;
}

/** What the reconciler last established about a list's counter (`bucket_counts`). */
export interface CountSync {
  /** Sum over the counter shards, without the correction. */
  shardSum: number;
  /** Added to `shardSum` to serve the count (`counted − shardSum` at the last reconciliation). */
  correction: number;
  /** When the last reconciliation read the dirty marks (µs), or null if never reconciled. */
  asOf: Position | null;
  /** Rows counted per bucket code at the last recount of each bucket. */
  buckets: Map<number, number>;
  /** Whether the list has any counter shard or reconciliation row at all. */
  written: boolean;
}

/**
 * What a counts read needs of one list from the per-account tables (`user_counts`,
 * `user_count_state`): the served count is `shardSum + correction`.
 */
export interface ListCounts {
  /** Sum over the list's counter shards, without the correction. */
  shardSum: number;
  /** The reconciler's correction (0 when never reconciled). */
  correction: number;
  /** When the last reconciliation read the dirty marks (µs), or null if never reconciled. */
  asOf: Position | null;
  /** Whether any bucket of the list is marked dirty (the mirror of its `dirty_lists` marks). */
  dirty: boolean;
  /** Whether the list has any counter shard or reconciliation state at all. */
  written: boolean;
}

/** Tables a token-range scan can walk, partition by partition. */
export const SCAN_TABLES = [
  'pair_ops',
  'edges_out',
  'following',
  'followers',
  'relation_lists',
  'users',
  'usernames',
  'list_counts',
  'bucket_counts',
] as const;

export type ScanTable = (typeof SCAN_TABLES)[number];

/** The Murmur3 ring: tokens lie in (MIN_TOKEN, MAX_TOKEN]; MIN_TOKEN itself is never a key's token. */
export const MIN_TOKEN = -(2n ** 63n);

export const MAX_TOKEN = 2n ** 63n - 1n;

/** A slice of the ring: partitions whose token `t` has `start < t <= end`. */
export interface TokenRange {
  start: bigint;
  end: bigint;
}

/** The key of one partition a scan found, by table. */
export type ScannedKey =
  | { table: 'pair_ops'; lowId: UserId; highId: UserId }
  | { table: 'edges_out'; sourceId: UserId }
  | { table: 'following' | 'followers' | 'relation_lists'; list: ListKey; bucketCode: number }
  | { table: 'users'; userId: UserId }
  | { table: 'usernames'; username: string }
  | { table: 'list_counts' | 'bucket_counts'; list: ListKey };

/** One partition found by a token-range scan: its token and its key. */
export interface ScannedPartition {
  token: bigint;
  key: ScannedKey;
}

/** Where a resumable sweep stands (`sweep_progress`): saved after every page. */
export interface SweepProgress {
  /** The job's name (one row per job). */
  job: string;
  /** Identifies one run from start to finish (a fresh run gets a new one). */
  runId: string;
  /** How many ranges the ring was split into for this run. */
  ranges: number;
  /** Index of the range being scanned. */
  rangeIndex: number;
  /** The table being scanned within that range. */
  table: ScanTable;
  /** Token of the last partition fully handled in that range and table; null: none yet. */
  lastToken: bigint | null;
  /** The job's running totals (opaque JSON), so a resumed run reports the whole run. */
  totals: string;
  done: boolean;
}

/** One stored friend-of-friend suggestion for a user. */
export interface Suggestion {
  id: UserId;
  score: number;
  /** Up to a few mutual accounts with the biggest contribution, biggest first. */
  via: UserId[];
}

/** A user's suggestions from one run (`generation`: the run's start, µs). */
export interface SuggestionSet {
  generation: bigint;
  items: Suggestion[];
}
