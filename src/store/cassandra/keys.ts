/**
 * The bind values of the store's partition keys: which list table a list lives in, and the key
 * columns and values of a list bucket, a dirty-mark partition, an inverse-edge bucket and each
 * table a token-range scan walks.
 */

import { bucketOf } from '../../model/buckets.js';
import type { EventKey } from '../../model/events.js';
import type { ListKey, Relation, UserId } from '../../model/types.js';
import { DIRTY_SHARDS } from '../../ports/count-store.js';
import type { ScanTable } from '../../ports/records.js';

/**
 * The three list tables and their partition keys: follows in the card's `following` /
 * `followers` (`(user_id, bucket)`), every other relation in `relation_lists`
 * (`(user_id, relation, direction, bucket)`). Clustering is the same everywhere.
 */
export type ListTable = 'following' | 'followers' | 'relation_lists';

export const listTable = (l: ListKey): ListTable =>
  l.relation !== 'follows' ? 'relation_lists' : l.direction === 'out' ? 'following' : 'followers';

export const PARTITION: Record<ListTable, string[]> = {
  following: ['user_id', 'bucket'],
  followers: ['user_id', 'bucket'],
  relation_lists: ['user_id', 'relation', 'direction', 'bucket'],
};

/** The partition key values of one bucket of `list`, in `PARTITION` order. */
export const partitionValues = (l: ListKey, code: number): unknown[] =>
  listTable(l) === 'relation_lists' ? [l.userId, l.relation, l.direction, code] : [l.userId, code];

/** Partition key columns of each table a token-range scan walks. */
export const SCAN_PARTITION: Record<ScanTable, string[]> = {
  pair_ops: ['low_id', 'high_id'],
  edges_out: ['source_id'],
  following: PARTITION.following,
  followers: PARTITION.followers,
  relation_lists: PARTITION.relation_lists,
  users: ['user_id'],
  usernames: ['username'],
  list_counts: ['user_id', 'relation', 'direction'],
  bucket_counts: ['user_id', 'relation', 'direction'],
};

/** `(shard, user_id, relation, direction)` of a list's dirty marks. */
export const dirtyKey = (l: ListKey): unknown[] => [
  bucketOf(l.userId, DIRTY_SHARDS),
  l.userId,
  l.relation,
  l.direction,
];

/** `(target_id, relation)` of the inverse edges bucketed like `list`, which must be an `in` list. */
export function inverseKey(list: ListKey): [UserId, Relation] {
  if (list.direction !== 'in') throw new RangeError('inverse edges are bucketed like an `in` list');
  return [list.userId, list.relation];
}

/** The bind values of a `feed_intents` row (`S.putIntent`, `S.deleteIntent`). */
export const intentParams = (k: EventKey): unknown[] => [
  k.shard,
  k.slot,
  k.low,
  k.high,
  k.opPosition,
  k.opSource,
  k.opKind,
];
