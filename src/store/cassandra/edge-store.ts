/**
 * `EdgeStore` on Cassandra: edge state forward (`edges_out`, one partition per source) and inverse
 * (`edges_in`, bucketed like the target's `in` list), written together with the list rows they
 * imply as one LOGGED batch at the caller's version (`USING TIMESTAMP`): the batchlog makes the
 * multi-partition write all-or-nothing eventually, the write time makes it last-writer-wins and
 * idempotent. The batchlog fallback is the executor's (`executor.ts`); a batch carrying feed rows
 * (`event-store.ts`) never takes it.
 */
import { bucketCodeOf } from '../../model/buckets.js';
import type { EventRow } from '../../model/events.js';
import {
  type BucketLayout,
  type EdgeRecord,
  RELATIONS,
  type Relation,
  type UserId,
} from '../../model/types.js';
import type { EdgeStore } from '../../ports/edge-store.js';
import type { EdgeWrite, ListRowWrite } from '../../ports/records.js';
import { searchWritesOf } from '../search-writes.js';
import type { CassandraEventStore } from './event-store.js';
import type { Bound, CqlExecutor } from './executor.js';
import { listTable, partitionValues } from './keys.js';
import { toEdge } from './rows.js';
import { searchStatements } from './search-store.js';
import { LS, S } from './statements.js';

const ALL_RELATIONS: Relation[] = [...RELATIONS];

export class CassandraEdgeStore implements EdgeStore {
  constructor(
    private readonly cql: CqlExecutor,
    private readonly events: CassandraEventStore,
    /** Whether follows rows' search rows ride the batch (`CassandraGraphStoreOptions.searchIndex`). */
    private readonly searchIndex = true,
  ) {}

  async writeEdges(
    edges: readonly EdgeWrite[],
    rows: readonly ListRowWrite[],
    version: bigint,
    events: readonly EventRow[] = [],
  ): Promise<void> {
    const queries: Bound[] = [];
    for (const { edge: e, inBucketCodes } of edges) {
      const cells = [e.state, e.position, e.createdAt, version];
      queries.push({
        statement: S.putOut,
        params: [e.sourceId, e.relation, e.targetId, ...cells],
      });
      for (const code of inBucketCodes) {
        queries.push({
          statement: S.putIn,
          params: [e.targetId, e.relation, code, e.sourceId, ...cells],
        });
      }
    }
    for (const r of rows) {
      const q = LS[listTable(r.list)];
      for (const code of r.bucketCodes) {
        const key = [...partitionValues(r.list, code), r.entry.createdAt, r.entry.otherId];
        if (r.op === 'delete') {
          queries.push({ statement: q.deleteRow, params: [version, ...key] });
          continue;
        }
        queries.push({
          statement: q.putRow,
          params: [...key, version, version],
        });
        // The name one below the row (see `ListStore.setListUsernames`), so a rename's rewrite at
        // the row's own write time replaces it whatever the names' order.
        const name = r.entry.username;
        if (name !== undefined)
          queries.push({
            statement: q.setUsername,
            params: [version - 1n, name, ...key],
          });
      }
    }
    // The follows rows' search rows and indexed names ride with them, at the same version.
    if (this.searchIndex) {
      const search = searchWritesOf(rows, version);
      queries.push(...searchStatements(search.writes, search.indexed));
    }
    queries.push(...this.events.eventStatements(events, version));
    if (queries.length === 0) return;
    // Feed rows never go without the batchlog: their change must land with them or not at all.
    await this.cql.loggedBatch('writeEdges', queries, {
      fallback: events.length === 0,
    });
    this.events.written(events);
  }

  async getEdgesOut(
    sourceId: UserId,
    relation: Relation,
    targetIds: readonly UserId[],
  ): Promise<Map<UserId, EdgeRecord>> {
    const out = new Map<UserId, EdgeRecord>();
    if (targetIds.length === 0) return out;
    const rs = await this.cql.exec('getEdgesOut', S.getOut, [sourceId, relation, [...new Set(targetIds)]], {
      fetchSize: 5000,
    });
    for (const row of rs.rows) {
      const target = row.target_id as bigint;
      out.set(target, toEdge(sourceId, target, relation, row));
    }
    return out;
  }

  async getEdgesOutOf(
    sourceId: UserId,
    relations: readonly Relation[],
    targetIds: readonly UserId[],
  ): Promise<EdgeRecord[]> {
    if (relations.length === 0 || targetIds.length === 0) return [];
    const rs = await this.cql.exec(
      'getEdgesOutOf',
      S.getOutOf,
      [sourceId, [...new Set(relations)], [...new Set(targetIds)]],
      { fetchSize: 5000 },
    );
    return rs.rows.map((row) => toEdge(sourceId, row.target_id as bigint, row.relation as Relation, row));
  }

  async getEdgesIn(
    targetId: UserId,
    relation: Relation,
    sourceIds: readonly UserId[],
    layout: BucketLayout,
  ): Promise<Map<UserId, EdgeRecord>> {
    const out = new Map<UserId, EdgeRecord>();
    const byCode = new Map<number, UserId[]>();
    for (const s of new Set(sourceIds)) {
      const code = bucketCodeOf(layout.buckets, s);
      byCode.set(code, [...(byCode.get(code) ?? []), s]);
    }
    const pages = await Promise.all(
      [...byCode].map(([code, sources]) =>
        this.cql.exec('getEdgesIn', S.getIn, [targetId, relation, code, sources], { fetchSize: 5000 }),
      ),
    );
    for (const rs of pages) {
      for (const row of rs.rows) {
        const source = row.source_id as bigint;
        out.set(source, toEdge(source, targetId, relation, row));
      }
    }
    return out;
  }

  async getPairEdges(a: UserId, b: UserId): Promise<EdgeRecord[]> {
    const [ab, ba] = await Promise.all([
      this.cql.exec('getPairEdges', S.getPair, [a, ALL_RELATIONS, b]),
      this.cql.exec('getPairEdges', S.getPair, [b, ALL_RELATIONS, a]),
    ]);
    return [
      ...ab.rows.map((r) => toEdge(a, b, r.relation as Relation, r)),
      ...ba.rows.map((r) => toEdge(b, a, r.relation as Relation, r)),
    ];
  }
}
