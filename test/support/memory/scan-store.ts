import murmurhash from 'murmurhash';
import {
  compareEntries,
  type Direction,
  type EdgeRecord,
  type ListEntry,
  type ListKey,
  type Relation,
  type UserId,
} from '../../../src/model/types.js';
import type { ScannedPartition, ScanTable, SweepProgress, TokenRange } from '../../../src/ports/records.js';
import type { ScanStore } from '../../../src/ports/scan-store.js';
import { MemoryCountStore } from './count-store.js';

/**
 * A stand-in for the partitioner's token: a signed 64-bit hash of the partition key's text. Only the
 * order matters (scans walk partitions in token order, like Cassandra's).
 */
function tokenOf(key: string): bigint {
  const hi = BigInt(murmurhash.v3(key, 0x9747b28c));
  const lo = BigInt(murmurhash.v3(key, 0x5bd1e995));
  return BigInt.asIntN(64, (hi << 32n) | lo);
}

/** `ScanStore` in memory: one layer of `MemoryGraphStore` (`graph-store.ts`). */
export abstract class MemoryScanStore extends MemoryCountStore implements ScanStore {
  async scanPartitions(
    table: ScanTable,
    range: TokenRange,
    afterToken: bigint | null,
    limit: number,
  ): Promise<ScannedPartition[]> {
    const from = afterToken !== null && afterToken > range.start ? afterToken : range.start;
    const found: ScannedPartition[] = [];
    const add = (text: string, key: ScannedPartition['key']) => {
      const token = tokenOf(`${table}|${text}`);
      if (token > from && token <= range.end) found.push({ token, key });
    };
    if (table === 'pair_ops') {
      for (const k of this.pairs.keys()) {
        const [lo, hi] = k.split('|').map(BigInt) as [bigint, bigint];
        add(k, { table, lowId: lo, highId: hi });
      }
    } else if (table === 'edges_out') {
      const sources = new Set<UserId>();
      for (const e of this.edges.values()) sources.add(e.edge.sourceId);
      for (const s of sources) add(`${s}`, { table, sourceId: s });
    } else if (table === 'users') {
      for (const id of this.users.keys()) add(`${id}`, { table, userId: id });
    } else if (table === 'usernames') {
      for (const name of this.usernames.keys()) add(name, { table, username: name });
    } else if (table === 'list_counts' || table === 'bucket_counts') {
      for (const k of (table === 'list_counts' ? this.counters : this.syncs).keys()) {
        const [user, relation, direction] = k.split('|') as [string, Relation, Direction];
        add(k, { table, list: { userId: BigInt(user), relation, direction } });
      }
    } else {
      for (const [pk, part] of this.partitions) {
        if (part.rows.size === 0) continue;
        const [user, relation, direction, code] = pk.split('|') as [string, Relation, 'in' | 'out', string];
        const list: ListKey = { userId: BigInt(user), relation, direction };
        const t = relation !== 'follows' ? 'relation_lists' : direction === 'out' ? 'following' : 'followers';
        if (t === table) add(pk, { table, list, bucketCode: Number(code) });
      }
    }
    return found.sort((a, b) => (a.token < b.token ? -1 : a.token > b.token ? 1 : 0)).slice(0, limit);
  }

  async edgesOfSource(
    sourceId: UserId,
    after: { relation: Relation; targetId: UserId } | null,
    limit: number,
  ): Promise<EdgeRecord[]> {
    const order = (
      x: { relation: Relation; targetId: UserId },
      y: { relation: Relation; targetId: UserId },
    ) =>
      x.relation !== y.relation
        ? x.relation < y.relation
          ? -1
          : 1
        : x.targetId < y.targetId
          ? -1
          : x.targetId > y.targetId
            ? 1
            : 0;
    return [...this.edges.values()]
      .map((v) => v.edge)
      .filter((e) => e.sourceId === sourceId && (!after || order(e, after) > 0))
      .sort(order)
      .slice(0, limit)
      .map((e) => ({ ...e }));
  }

  async hasListRow(list: ListKey, bucketCode: number, entry: ListEntry): Promise<boolean> {
    return this.liveRows(list, bucketCode).some((r) => compareEntries(r.entry, entry) === 0);
  }

  async getSweepProgress(job: string): Promise<SweepProgress | null> {
    const p = this.sweeps.get(job);
    return p ? { ...p } : null;
  }

  async putSweepProgress(progress: SweepProgress): Promise<void> {
    this.sweeps.set(progress.job, { ...progress });
  }
}
