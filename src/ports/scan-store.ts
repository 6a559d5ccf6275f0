import type { EdgeRecord, ListEntry, ListKey, Relation, UserId } from '../model/types.js';
import type { ScannedPartition, ScanTable, SweepProgress, TokenRange } from './records.js';

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
