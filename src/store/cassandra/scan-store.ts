/**
 * `ScanStore` on Cassandra: token-range walks of whole tables for the jobs (`SELECT DISTINCT
 * token(pk)` pages), the point and partition reads that check what they find, and the sweep's
 * saved progress (`sweep_progress`).
 */
import type { EdgeRecord, ListEntry, ListKey, Relation, UserId } from '../../model/types.js';
import type { ScannedPartition, ScanTable, SweepProgress, TokenRange } from '../../ports/records.js';
import type { ScanStore } from '../../ports/scan-store.js';
import type { CqlExecutor } from './executor.js';
import { listTable, partitionValues } from './keys.js';
import { toEdge, toScannedKey, toSweepProgress } from './rows.js';
import { LS, S, scanPartitionsStatement } from './statements.js';

export class CassandraScanStore implements ScanStore {
  constructor(private readonly cql: CqlExecutor) {}

  async scanPartitions(
    table: ScanTable,
    range: TokenRange,
    afterToken: bigint | null,
    limit: number,
  ): Promise<ScannedPartition[]> {
    const from = afterToken !== null && afterToken > range.start ? afterToken : range.start;
    if (from >= range.end) return [];
    const rs = await this.cql.exec(
      'scanPartitions',
      scanPartitionsStatement(table),
      [from, range.end, limit],
      {
        fetchSize: limit,
      },
    );
    return rs.rows.map((row) => ({ token: row.t as bigint, key: toScannedKey(table, row) }));
  }

  async edgesOfSource(
    sourceId: UserId,
    after: { relation: Relation; targetId: UserId } | null,
    limit: number,
  ): Promise<EdgeRecord[]> {
    const rs = after
      ? await this.cql.exec('edgesOfSource', S.edgesOfSourceAfter, [
          sourceId,
          after.relation,
          after.targetId,
          limit,
        ])
      : await this.cql.exec('edgesOfSource', S.edgesOfSourceHead, [sourceId, limit]);
    return rs.rows.map((row) => toEdge(sourceId, row.target_id as bigint, row.relation as Relation, row));
  }

  async hasListRow(list: ListKey, bucketCode: number, entry: ListEntry): Promise<boolean> {
    const rs = await this.cql.exec('hasListRow', LS[listTable(list)].hasRow, [
      ...partitionValues(list, bucketCode),
      entry.createdAt,
      entry.otherId,
    ]);
    return rs.rows.length > 0;
  }

  async getSweepProgress(job: string): Promise<SweepProgress | null> {
    const row = (await this.cql.exec('getSweepProgress', S.getSweep, [job])).first();
    return row ? toSweepProgress(row) : null;
  }

  async putSweepProgress(p: SweepProgress): Promise<void> {
    await this.cql.exec('putSweepProgress', S.putSweep, [
      p.job,
      p.runId,
      p.ranges,
      p.rangeIndex,
      p.table,
      p.lastToken,
      p.totals,
      p.done,
    ]);
  }
}
