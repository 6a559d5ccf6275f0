/**
 * `CountStore` on Cassandra. Counters are not idempotent and cannot carry a write time: they are
 * spread over shards (`list_counts`), fed deltas from real transitions, and reconciled against the
 * lists by a job, which reads the dirty marks writers leave (`dirty_lists`, at explicit write
 * times so a clear never removes a newer mark) and keeps per-bucket counts and the correction
 * (`bucket_counts`, written at the reconciliation's `asOf`).
 *
 * The same again per account (cql/023: `user_counts`, `user_count_state`), written in the same
 * requests: each increment batch carries both shards' updates, each mark batch both marks (a
 * `dirty` cell per bucket mirrors the `dirty_lists` row, at the same write time), each clear both
 * deletes. One account's lists share one partition of each table, so `getUserCounts` answers a
 * counts read in two single-partition reads; the per-bucket counts sit under `kind` 1, out of
 * that read's slice (`kind` 0).
 */
import type { EventKey } from '../../model/events.js';
import type { Direction, ListKey, Relation, UserId } from '../../model/types.js';
import type { CounterDelta, CountStore } from '../../ports/count-store.js';
import type { CountSync, DirtyMark, ListCounts, Reconciliation } from '../../ports/records.js';
import type { Bound, CqlExecutor } from './executor.js';
import { dirtyKey, intentParams } from './keys.js';
import type { Row } from './rows.js';
import { toCountSync, toDirtyMark, toReconciliation } from './rows.js';
import { S } from './statements.js';

const listKey = (list: ListKey) => [list.userId, list.relation, list.direction];

/** `user_id, relation` of the account tables' partition slice, `direction` and `bucket` after it. */
const userKey = (list: ListKey, bucketCode: number) => [
  list.userId,
  list.relation,
  list.direction,
  bucketCode,
];

/** The bucket of a list's correction and `as_of` row under `kind` 0. */
const HEAD = -1;

/** Bucket counts per single-partition batch (under the batch size warning at a few KB). */
const COUNTED_PER_BATCH = 100;

const incrBoth = (d: CounterDelta): Bound[] => {
  const params = [BigInt(d.delta), ...listKey(d.list), d.shard];
  return [
    { statement: S.incr, params },
    { statement: S.userIncr, params },
  ];
};

const markBoth = (list: ListKey, bucketCode: number, version: bigint): Bound[] => [
  { statement: S.markDirty, params: [...dirtyKey(list), bucketCode, version] },
  { statement: S.userMarkDirty, params: [version, ...userKey(list, bucketCode)] },
];

/** One list's `ListCounts` from its counter rows and its `kind` 0 rows. */
function toListCounts(shards: readonly Row[], state: readonly Row[]): ListCounts {
  const head = state.find((r) => r.bucket === HEAD);
  return {
    shardSum: shards.reduce((sum, row) => sum + Number(row.n as bigint), 0),
    correction: Number((head?.correction as bigint | null | undefined) ?? 0n),
    asOf: (head?.as_of as bigint | null | undefined) ?? null,
    dirty: state.some((r) => r.bucket !== HEAD && r.dirty === true),
    written: shards.length > 0 || head !== undefined,
  };
}

export class CassandraCountStore implements CountStore {
  constructor(private readonly cql: CqlExecutor) {}

  async incrementCount(list: ListKey, shard: number, delta: number): Promise<void> {
    if (delta === 0) return;
    await this.cql.write('incrementCount', incrBoth({ list, shard, delta }), {
      logged: false,
      counter: true,
    });
  }

  async incrementCounts(deltas: readonly CounterDelta[]): Promise<void> {
    const queries = deltas.filter((d) => d.delta !== 0).flatMap(incrBoth);
    // Counter updates may share only a COUNTER batch; unlogged, as counters must be.
    await this.cql.write('incrementCounts', queries, { logged: false, counter: true });
  }

  async getCount(list: ListKey): Promise<number> {
    const sync = await this.getCountSync(list);
    return sync.shardSum + sync.correction;
  }

  async markDirty(list: ListKey, bucketCode: number, version: bigint): Promise<void> {
    await this.cql.write('markDirty', markBoth(list, bucketCode, version), { logged: false });
  }

  async markDirtyBuckets(
    marks: readonly { list: ListKey; bucketCode: number }[],
    version: bigint,
    o: { intent?: EventKey; timeoutMs?: number } = {},
  ): Promise<void> {
    // A writer's marks name the lists of the op's two accounts: at most two `dirty_lists` shards
    // and two accounts' partitions, under Cassandra's unlogged-batch warning (10 partitions), and
    // its intent one more.
    await this.cql.write(
      'markDirty',
      [
        ...marks.flatMap((m) => markBoth(m.list, m.bucketCode, version)),
        ...(o.intent ? [{ statement: S.putIntent, params: intentParams(o.intent) }] : []),
      ],
      {
        logged: false,
        ...(o.timeoutMs === undefined ? {} : { readTimeout: Math.max(1, Math.round(o.timeoutMs)) }),
      },
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
    await this.cql.write(
      'clearDirty',
      [
        { statement: S.clearDirty, params: [mark.version, ...dirtyKey(mark.list), mark.bucketCode] },
        { statement: S.userClearDirty, params: [mark.version, ...userKey(mark.list, mark.bucketCode)] },
      ],
      { logged: false },
    );
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

  async getUserCounts(userId: UserId, relation: Relation): Promise<Record<Direction, ListCounts>> {
    const [shards, heads] = await Promise.all([
      this.cql.exec('getUserCounts', S.getUserCounts, [userId, relation]),
      this.cql.exec('getUserCountHeads', S.getUserCountHeads, [userId, relation]),
    ]);
    const of = (d: Direction) =>
      toListCounts(
        shards.rows.filter((r) => r.direction === d),
        heads.rows.filter((r) => r.direction === d),
      );
    return { in: of('in'), out: of('out') };
  }

  async getUserCountSync(list: ListKey): Promise<CountSync> {
    const [shards, state] = await Promise.all([
      this.cql.exec('getUserCounts', S.getUserCounts, [list.userId, list.relation]),
      this.cql.exec('getUserCountState', S.getUserCountState, [list.userId, list.relation], {
        fetchSize: 5000,
      }),
    ]);
    const mine = state.rows.filter((r) => r.direction === list.direction);
    const counts = toListCounts(
      shards.rows.filter((r) => r.direction === list.direction),
      mine.filter((r) => r.kind === 0),
    );
    const buckets = new Map<number, number>();
    for (const r of mine)
      if (r.kind === 1 && r.counted !== null) buckets.set(r.bucket as number, Number(r.counted));
    const { dirty: _, ...sync } = counts;
    return { ...sync, written: sync.written || buckets.size > 0, buckets };
  }

  async putUserCountSync(
    list: ListKey,
    sync: { correction: number; asOf: bigint; buckets: ReadonlyMap<number, number> },
  ): Promise<void> {
    const counted: Bound[] = [...sync.buckets].map(([code, n]) => ({
      statement: S.userPutCounted,
      params: [sync.asOf, BigInt(n), ...userKey(list, code)],
    }));
    const head: Bound = {
      statement: S.userPutHead,
      params: [sync.asOf, BigInt(sync.correction), sync.asOf, ...userKey(list, HEAD)],
    };
    // Single-partition batches; the head with the first of them.
    const batches: Bound[][] = [];
    for (let i = 0; i < counted.length; i += COUNTED_PER_BATCH)
      batches.push(counted.slice(i, i + COUNTED_PER_BATCH));
    batches[0] = [head, ...(batches[0] ?? [])];
    await Promise.all(batches.map((b) => this.cql.write('putUserCountSync', b, { logged: false })));
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
