/** Row mappers of the Cassandra store: driver rows → the storage vocabulary. */
import type cassandra from 'cassandra-driver';
import type { EdgeRecord, ListEntry, ListKey, Relation, UserId, UserRecord } from '../../model/types.js';
import type { AccountTask } from '../../ports/records.js';

export type Row = cassandra.types.Row;

export function toUser(row: Row): UserRecord {
  return {
    id: row.user_id as bigint,
    username: row.username as string,
    private: Boolean(row.private),
    state: (row.state as 'active' | 'deactivated' | null) ?? 'active',
    hideLists: Boolean(row.hide_lists),
  };
}

export function toEdge(source: UserId, target: UserId, relation: Relation, row: Row): EdgeRecord {
  return {
    sourceId: source,
    targetId: target,
    relation,
    state: row.state as EdgeRecord['state'],
    position: row.position as bigint,
    createdAt: (row.created_at as bigint | null) ?? 0n,
  };
}

export const toTask = (row: Row): AccountTask => ({
  userId: row.user_id as bigint,
  task: row.task as AccountTask['task'],
  cursor: (row.cursor as string | null) ?? null,
  version: row.version as bigint,
});

/** `(target_id, relation)` of the inverse edges bucketed like `list`, which must be an `in` list. */
export function inverseKey(list: ListKey): [UserId, Relation] {
  if (list.direction !== 'in') throw new RangeError('inverse edges are bucketed like an `in` list');
  return [list.userId, list.relation];
}

export const toEntry = (row: Row): ListEntry => ({
  createdAt: row.created_at as bigint,
  otherId: row.other_id as bigint,
});
