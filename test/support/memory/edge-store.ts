import { bucketCodeOf } from '../../../src/model/buckets.js';
import type { EventRow } from '../../../src/model/events.js';
import {
  type BucketLayout,
  type EdgeRecord,
  RELATIONS,
  type Relation,
  type UserId,
} from '../../../src/model/types.js';
import type { EdgeStore } from '../../../src/ports/edge-store.js';
import type { EdgeWrite, ListRowWrite } from '../../../src/ports/records.js';
import { searchWritesOf } from '../../../src/store/search-writes.js';
import { MemoryAccountTaskStore } from './account-task-store.js';
import { edgeKey, mergeEdge } from './state.js';

/** `EdgeStore` in memory: one layer of `MemoryGraphStore` (`graph-store.ts`). */
export abstract class MemoryEdgeStore extends MemoryAccountTaskStore implements EdgeStore {
  async writeEdges(
    edges: readonly EdgeWrite[],
    rows: readonly ListRowWrite[],
    version: bigint,
    events: readonly EventRow[] = [],
  ): Promise<void> {
    this.writeEvents(events, version);
    for (const { edge, inBucketCodes } of edges) {
      const key = edgeKey(edge.sourceId, edge.relation, edge.targetId);
      this.edges.set(key, mergeEdge(this.edges.get(key), edge, version));
      for (const code of inBucketCodes) this.writeInverse(code, edge, version);
    }
    for (const r of rows) {
      for (const code of r.bucketCodes) this.writeRow(r.list, code, r.entry, r.op, version);
    }
    const search = searchWritesOf(rows, version);
    await this.writeSearchRows(search.writes, search.indexed);
  }

  async getEdgesOut(
    sourceId: UserId,
    relation: Relation,
    targetIds: readonly UserId[],
  ): Promise<Map<UserId, EdgeRecord>> {
    const out = new Map<UserId, EdgeRecord>();
    for (const t of targetIds) {
      const e = this.edges.get(edgeKey(sourceId, relation, t));
      if (e) out.set(t, { ...e.edge });
    }
    return out;
  }

  async getEdgesOutOf(
    sourceId: UserId,
    relations: readonly Relation[],
    targetIds: readonly UserId[],
  ): Promise<EdgeRecord[]> {
    const out: EdgeRecord[] = [];
    for (const r of new Set(relations))
      for (const t of new Set(targetIds)) {
        const e = this.edges.get(edgeKey(sourceId, r, t));
        if (e) out.push({ ...e.edge });
      }
    return out;
  }

  async getEdgesIn(
    targetId: UserId,
    relation: Relation,
    sourceIds: readonly UserId[],
    layout: BucketLayout,
  ): Promise<Map<UserId, EdgeRecord>> {
    const out = new Map<UserId, EdgeRecord>();
    for (const s of sourceIds) {
      const code = bucketCodeOf(layout.buckets, s);
      const e = this.liveInverse(targetId, relation, code, s);
      if (e) out.set(s, { ...e.edge });
    }
    return out;
  }

  async getPairEdges(a: UserId, b: UserId): Promise<EdgeRecord[]> {
    const out: EdgeRecord[] = [];
    for (const [s, t] of [
      [a, b],
      [b, a],
    ] as const) {
      for (const r of RELATIONS) {
        const e = this.edges.get(edgeKey(s, r, t));
        if (e) out.push({ ...e.edge });
      }
    }
    return out;
  }
}
