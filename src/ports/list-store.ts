import type { SearchLayout } from '../model/search.js';
import type { Directory, PendingSplit, StoredListMode, TimeBucket } from '../model/time-buckets.js';
import type { BucketLayout, ListEntry, ListKey, Position, UserId } from '../model/types.js';
import type { IndexedNameWrite, SearchWrite, VersionedEntry } from './records.js';

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
   * `mode` when given (stored as given; a legacy mode is refused by every reader, `rowMode`), sets
   * or clears (null) the pending `split` when given, replaces the `search`
   * layout (starts and cut) when given, and stores version
   * `expectedVersion + 1`; returns whether it did. Linearizable (Cassandra: a lightweight
   * transaction on the directory partition, never on the edge path).
   */
  updateDirectory(
    list: ListKey,
    expectedVersion: number,
    change: {
      add?: readonly TimeBucket[];
      mode?: StoredListMode;
      split?: PendingSplit | null;
      search?: SearchLayout;
    },
  ): Promise<boolean>;
  /**
   * Copies one page of a bucket (rows strictly after `after`, newest first, at most `limit`) into
   * the bucket code `targetCode` chooses for each row, each row keeping its original write time, so a
   * concurrent delete (a higher version) still wins over the copy. Used by online growth and bucket splits; resume
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
