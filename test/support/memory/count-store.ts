import { bucketOf } from '../../../src/model/buckets.js';
import type { EventKey } from '../../../src/model/events.js';
import type { Direction, ListKey, Relation, UserId } from '../../../src/model/types.js';
import { type CounterDelta, type CountStore, DIRTY_SHARDS } from '../../../src/ports/count-store.js';
import type { CountSync, DirtyMark, ListCounts, Reconciliation } from '../../../src/ports/records.js';
import { MemoryListStore } from './list-store.js';
import { listKey, max } from './state.js';

/** `CountStore` in memory: one layer of `MemoryGraphStore` (`graph-store.ts`). */
export abstract class MemoryCountStore extends MemoryListStore implements CountStore {
  async incrementCount(list: ListKey, shard: number, delta: number): Promise<void> {
    if (delta === 0) return;
    const k = listKey(list);
    for (const counters of [this.counters, this.userCounters]) {
      const shards = counters.get(k) ?? new Map<number, number>();
      shards.set(shard, (shards.get(shard) ?? 0) + delta);
      counters.set(k, shards);
    }
  }

  // One request on the node: applied at once here, as the single-statement methods are.
  async incrementCounts(deltas: readonly CounterDelta[]): Promise<void> {
    await Promise.all(deltas.map((d) => this.incrementCount(d.list, d.shard, d.delta)));
  }

  async markDirtyBuckets(
    marks: readonly { list: ListKey; bucketCode: number }[],
    version: bigint,
    o: { intent?: EventKey; timeoutMs?: number } = {},
  ): Promise<void> {
    await Promise.all([
      ...marks.map((m) => this.markDirty(m.list, m.bucketCode, version)),
      ...(o.intent ? [this.putIntent(o.intent)] : []),
    ]);
  }

  async getCount(list: ListKey): Promise<number> {
    const sync = await this.getCountSync(list);
    return sync.shardSum + sync.correction;
  }

  async markDirty(list: ListKey, bucketCode: number, version: bigint): Promise<void> {
    const k = `${listKey(list)}|${bucketCode}`;
    const cur = this.dirty.get(k);
    if (cur && cur.tomb !== null && version <= cur.tomb) return;
    if (cur?.mark && cur.mark.version >= version) return;
    this.dirty.set(k, {
      tomb: cur?.tomb ?? null,
      mark: { list: { ...list }, bucketCode, version },
    });
  }

  async listDirty(shard: number, limit: number): Promise<DirtyMark[]> {
    const marks: DirtyMark[] = [];
    for (const { mark } of this.dirty.values()) {
      if (mark && bucketOf(mark.list.userId, DIRTY_SHARDS) === shard) marks.push({ ...mark });
    }
    return marks.slice(0, limit);
  }

  async hasDirty(list: ListKey): Promise<boolean> {
    const k = listKey(list);
    for (const { mark } of this.dirty.values()) if (mark && listKey(mark.list) === k) return true;
    return false;
  }

  async clearDirty(mark: DirtyMark): Promise<void> {
    const k = `${listKey(mark.list)}|${mark.bucketCode}`;
    const cur = this.dirty.get(k);
    const tomb = max(cur?.tomb ?? null, mark.version);
    this.dirty.set(k, {
      tomb,
      mark: cur?.mark && cur.mark.version > tomb ? cur.mark : null,
    });
  }

  async getCountSync(list: ListKey): Promise<CountSync> {
    return this.countSyncOf(list, this.counters, this.syncs);
  }

  async getUserCountSync(list: ListKey): Promise<CountSync> {
    return this.countSyncOf(list, this.userCounters, this.userSyncs);
  }

  async getUserCounts(userId: UserId, relation: Relation): Promise<Record<Direction, ListCounts>> {
    const of = async (direction: Direction): Promise<ListCounts> => {
      const list = { userId, relation, direction };
      const { buckets: _, ...sync } = this.countSyncOf(list, this.userCounters, this.userSyncs);
      return { ...sync, dirty: await this.hasDirty(list) };
    };
    return { in: await of('in'), out: await of('out') };
  }

  async putUserCountSync(
    list: ListKey,
    s: { correction: number; asOf: bigint; buckets: ReadonlyMap<number, number> },
  ): Promise<void> {
    this.putSyncInto(this.userSyncs, list, s);
  }

  private countSyncOf(
    list: ListKey,
    counters: Map<string, Map<number, number>>,
    syncs: Map<string, { correction: number; asOf: bigint | null; buckets: Map<number, number> }>,
  ): CountSync {
    const k = listKey(list);
    const shards = counters.get(k);
    const sync = syncs.get(k);
    let shardSum = 0;
    for (const n of shards?.values() ?? []) shardSum += n;
    return {
      shardSum,
      correction: sync?.correction ?? 0,
      asOf: sync?.asOf ?? null,
      buckets: new Map(sync?.buckets ?? []),
      written: shards !== undefined || sync !== undefined,
    };
  }

  async putCountSync(
    list: ListKey,
    s: {
      correction: number;
      asOf: bigint;
      buckets: ReadonlyMap<number, number>;
    },
  ): Promise<void> {
    this.putSyncInto(this.syncs, list, s);
  }

  private putSyncInto(
    syncs: Map<string, { correction: number; asOf: bigint | null; buckets: Map<number, number> }>,
    list: ListKey,
    s: { correction: number; asOf: bigint; buckets: ReadonlyMap<number, number> },
  ): void {
    const k = listKey(list);
    const cur = syncs.get(k);
    const buckets = new Map(cur?.buckets ?? []);
    for (const [code, n] of s.buckets) buckets.set(code, n);
    const newer = !cur || cur.asOf === null || s.asOf >= cur.asOf;
    syncs.set(k, {
      correction: newer ? s.correction : (cur?.correction ?? 0),
      asOf: newer ? s.asOf : (cur?.asOf ?? null),
      buckets,
    });
  }

  async putReconciliation(list: ListKey, r: Reconciliation): Promise<void> {
    this.reconciliations.set(listKey(list), { ...r });
  }

  async getReconciliation(list: ListKey): Promise<Reconciliation | null> {
    const r = this.reconciliations.get(listKey(list));
    return r ? { ...r } : null;
  }
}
