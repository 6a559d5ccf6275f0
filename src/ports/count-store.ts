import type { EventKey } from '../model/events.js';
import type { Direction, ListKey, Position, Relation, UserId } from '../model/types.js';
import type { CountSync, DirtyMark, ListCounts, Reconciliation } from './records.js';

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
 * Two copies of the counters and the reconciliation state: per list (`list_counts`,
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
   * applied (the writer's dirty marks cover that: `src/graph/pair/count-step.ts`).
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
   * `o.intent`: an op's feed intent (`FeedIntentStore.putIntent`), carried in the same batch, so
   * a write's marks and its intent cost one request; `o.timeoutMs` then bounds the request (the
   * intent's budget).
   */
  markDirtyBuckets(
    marks: readonly { list: ListKey; bucketCode: number }[],
    version: bigint,
    o?: { intent?: EventKey; timeoutMs?: number },
  ): Promise<void>;
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
