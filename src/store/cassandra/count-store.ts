/**
 * `CountStore` on Cassandra. Counters are not idempotent and cannot carry a write time: they are
 * spread over shards (`list_counts`), fed deltas from real transitions, and reconciled against the
 * lists by a job, which reads the dirty marks writers leave (`dirty_lists`, at explicit write
 * times so a clear never removes a newer mark) and keeps per-bucket counts and the correction
 * (`bucket_counts`, written at the reconciliation's `asOf`).
 */
import type { ListKey } from '../../model/types.js';
import type { CountSync, DirtyMark, Reconciliation } from '../../ports/records.js';
import type { CounterDelta, CountStore } from '../../ports/store.js';
import type { CqlExecutor } from './executor.js';
import { dirtyKey } from './keys.js';
import { toCountSync, toDirtyMark, toReconciliation } from './rows.js';
import { S } from './statements.js';

const listKey = (list: ListKey) => [list.userId, list.relation, list.direction];

export class CassandraCountStore implements CountStore {
  constructor(private readonly cql: CqlExecutor) {}

  async incrementCount(list: ListKey, shard: number, delta: number): Promise<void> {
    if (delta === 0) return;
    await this.cql.exec('incrementCount', S.incr, [BigInt(delta), ...listKey(list), shard]);
  }

  async incrementCounts(deltas: readonly CounterDelta[]): Promise<void> {
    const queries = deltas
      .filter((d) => d.delta !== 0)
      .map((d) => ({ statement: S.incr, params: [BigInt(d.delta), ...listKey(d.list), d.shard] }));
    // Counter updates may share only a COUNTER batch; unlogged, as counters must be.
    await this.cql.write('incrementCounts', queries, { logged: false, counter: true });
  }

  async getCount(list: ListKey): Promise<number> {
    const sync = await this.getCountSync(list);
    return sync.shardSum + sync.correction;
  }

  async markDirty(list: ListKey, bucketCode: number, version: bigint): Promise<void> {
    await this.cql.exec('markDirty', S.markDirty, [...dirtyKey(list), bucketCode, version]);
  }

  async markDirtyBuckets(
    marks: readonly { list: ListKey; bucketCode: number }[],
    version: bigint,
  ): Promise<void> {
    // At most `DIRTY_SHARDS` partitions (8), under Cassandra's unlogged-batch warning (10).
    await this.cql.write(
      'markDirty',
      marks.map((m) => ({ statement: S.markDirty, params: [...dirtyKey(m.list), m.bucketCode, version] })),
      { logged: false },
    );
  }

  async listDirty(shard: number, limit: number): Promise<DirtyMark[]> {
    const rs = await this.cql.exec('listDirty', S.listDirty, [shard, limit]);
    return rs.rows.map(toDirtyMark);
  }

  async hasDirty(list: ListKey): Promise<boolean> {
    const rs = await this.cql.exec('hasDirty', S.hasDirty, dirtyKey(list));
    return rs.rows.length > 0;
  }

  async clearDirty(mark: DirtyMark): Promise<void> {
    await this.cql.exec('clearDirty', S.clearDirty, [mark.version, ...dirtyKey(mark.list), mark.bucketCode]);
  }

  async getCountSync(list: ListKey): Promise<CountSync> {
    const key = listKey(list);
    const [shards, buckets] = await Promise.all([
      this.cql.exec('getCount', S.getCount, key),
      this.cql.exec('getCountSync', S.getBucketCounts, key, { fetchSize: 5000 }),
    ]);
    return toCountSync(shards.rows, buckets.rows);
  }

  async putCountSync(
    list: ListKey,
    sync: { correction: number; asOf: bigint; buckets: ReadonlyMap<number, number> },
  ): Promise<void> {
    const key = listKey(list);
    await Promise.all([
      ...[...sync.buckets].map(([code, n]) =>
        this.cql.exec('putCountSync', S.putBucketCount, [sync.asOf, BigInt(n), ...key, code]),
      ),
      this.cql.exec('putCountSync', S.putCountSync, [sync.asOf, BigInt(sync.correction), sync.asOf, ...key]),
    ]);
  }

  async putReconciliation(list: ListKey, r: Reconciliation): Promise<void> {
    await this.cql.exec('putReconciliation', S.putRecon, [
      ...listKey(list),
      r.reconciledAt,
      BigInt(r.counted),
      BigInt(r.drift),
    ]);
  }

  async getReconciliation(list: ListKey): Promise<Reconciliation | null> {
    const rs = await this.cql.exec('getReconciliation', S.getRecon, listKey(list));
    const row = rs.first();
    return row ? toReconciliation(row) : null;
  }
}
