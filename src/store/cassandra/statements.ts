/**
 * Every CQL statement the Cassandra store runs, in one table (`Q`), plus the list tables'
 * statements per table (`LQ`): follows in the card's `following` / `followers`, the other
 * relations in `relation_lists`. Nothing else in the project writes CQL outside `cql/` and the
 * migration runner.
 */
import type { ListKey } from '../../model/types.js';
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

function listStatements(t: ListTable) {
  const pk = PARTITION[t];
  const where = pk.map((c) => `${c} = ?`).join(' AND ');
  const cols = [...pk, 'created_at', 'other_id', 'position'];
  const page = (select: string) => ({
    head: `SELECT ${select} FROM ${t} WHERE ${where} LIMIT ?`,
    after: `SELECT ${select} FROM ${t} WHERE ${where} AND (created_at, other_id) < (?, ?) LIMIT ?`,
  });
  const cols2 = 'created_at, other_id';
  return {
    /** Older than a key (or from the head) and `created_at >= since`, newest first. */
    listSince: {
      head: `SELECT ${cols2} FROM ${t} WHERE ${where} AND created_at >= ? LIMIT ?`,
      after: `SELECT ${cols2} FROM ${t} WHERE ${where} AND (created_at, other_id) < (?, ?) AND (created_at, other_id) >= (?, ?) LIMIT ?`,
    },
    /** Newer than a key (and `created_at < until`), oldest first: the clustering order reversed. */
    listNewer: {
      open: `SELECT ${cols2} FROM ${t} WHERE ${where} AND (created_at, other_id) > (?, ?) ORDER BY created_at ASC, other_id ASC LIMIT ?`,
      until: `SELECT ${cols2} FROM ${t} WHERE ${where} AND (created_at, other_id) > (?, ?) AND (created_at, other_id) < (?, ?) ORDER BY created_at ASC, other_id ASC LIMIT ?`,
    },
    putRow: `INSERT INTO ${t} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')}) USING TIMESTAMP ?`,
    deleteRow: `DELETE FROM ${t} USING TIMESTAMP ? WHERE ${where} AND created_at = ? AND other_id = ?`,
    list: page('created_at, other_id'),
    copy: page('created_at, other_id, position, writetime(position) AS wt'),
    dropBucket: `DELETE FROM ${t} USING TIMESTAMP ? WHERE ${where}`,
    hasRow: `SELECT other_id FROM ${t} WHERE ${where} AND created_at = ? AND other_id = ?`,
  };
}

export const LQ: Record<ListTable, ReturnType<typeof listStatements>> = {
  following: listStatements('following'),
  followers: listStatements('followers'),
  relation_lists: listStatements('relation_lists'),
};

/** Partition key columns of each table a token-range scan walks. */
export const SCAN_PARTITION: Record<ScanTable, string[]> = {
  pair_ops: ['low_id', 'high_id'],
  edges_out: ['source_id'],
  following: PARTITION.following,
  followers: PARTITION.followers,
  relation_lists: PARTITION.relation_lists,
  users: ['user_id'],
};

/** One page of distinct partition keys of `table` in a token slice: `(start, end]`, limit. */
export function scanPartitionsQuery(table: ScanTable): string {
  const pk = SCAN_PARTITION[table].join(', ');
  return `SELECT DISTINCT token(${pk}) AS t, ${pk} FROM ${table} WHERE token(${pk}) > ? AND token(${pk}) <= ? LIMIT ?`;
}

export const Q = {
  getUser: 'SELECT user_id, username, private, state, hide_lists FROM users WHERE user_id = ?',
  putUser:
    'INSERT INTO users (user_id, username, private, state, hide_lists, updated_at) VALUES (?, ?, ?, ?, ?, toTimestamp(now())) USING TIMESTAMP ?',
  registerDeactivated:
    'INSERT INTO deactivated_accounts (shard, user_id, since) VALUES (?, ?, ?) USING TIMESTAMP ?',
  unregisterDeactivated: 'DELETE FROM deactivated_accounts USING TIMESTAMP ? WHERE shard = ? AND user_id = ?',
  listDeactivated: 'SELECT user_id FROM deactivated_accounts WHERE shard = ? LIMIT ?',
  claimUsername: 'INSERT INTO usernames (username, user_id) VALUES (?, ?) IF NOT EXISTS',
  releaseUsername: 'DELETE FROM usernames WHERE username = ? IF user_id = ?',
  appendOp:
    'INSERT INTO pair_ops (low_id, high_id, position, source_id, kind, base) VALUES (?, ?, ?, ?, ?, ?)',
  announce:
    'UPDATE pair_ops USING TIMESTAMP ? SET compact_to = ?, compact_at = ? WHERE low_id = ? AND high_id = ?',
  observe:
    'UPDATE pair_ops USING TIMESTAMP ? SET compact_seen = ?, compact_seen_for = ? WHERE low_id = ? AND high_id = ?',
  commitCheckpoint:
    'UPDATE pair_ops USING TIMESTAMP ? SET cp_horizon = ?, cp_state = ?, compact_to = null, compact_at = null, compact_seen = null, compact_seen_for = null WHERE low_id = ? AND high_id = ?',
  dropFolded: 'DELETE FROM pair_ops WHERE low_id = ? AND high_id = ? AND position < ?',
  /** The whole pair from its first live row: one statement (its first page) is one snapshot. */
  pairRead:
    'SELECT position, source_id, kind, base, cp_horizon, cp_state, compact_to, compact_at, compact_seen, compact_seen_for FROM pair_ops WHERE low_id = ? AND high_id = ?',
  /** The same from a known horizon on (its rows stay, so the statics always come back). */
  pairReadFrom:
    'SELECT position, source_id, kind, base, cp_horizon, cp_state, compact_to, compact_at, compact_seen, compact_seen_for FROM pair_ops WHERE low_id = ? AND high_id = ? AND position >= ?',
  putOut:
    'INSERT INTO edges_out (source_id, relation, target_id, state, position, created_at) VALUES (?, ?, ?, ?, ?, ?) USING TIMESTAMP ?',
  putIn:
    'INSERT INTO edges_in (target_id, relation, bucket, source_id, state, position, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?',
  getOut:
    'SELECT target_id, state, position, created_at FROM edges_out WHERE source_id = ? AND relation = ? AND target_id IN ?',
  getIn:
    'SELECT source_id, state, position, created_at FROM edges_in WHERE target_id = ? AND relation = ? AND bucket = ? AND source_id IN ?',
  getPair:
    'SELECT relation, state, position, created_at FROM edges_out WHERE source_id = ? AND relation IN ? AND target_id = ?',
  copyInHead:
    'SELECT source_id, state, position, created_at, writetime(state) AS ws, writetime(position) AS wp, writetime(created_at) AS wc FROM edges_in WHERE target_id = ? AND relation = ? AND bucket = ? LIMIT ?',
  copyInAfter:
    'SELECT source_id, state, position, created_at, writetime(state) AS ws, writetime(position) AS wp, writetime(created_at) AS wc FROM edges_in WHERE target_id = ? AND relation = ? AND bucket = ? AND source_id > ? LIMIT ?',
  putInCells: (cells: readonly string[]) =>
    `INSERT INTO edges_in (target_id, relation, bucket, source_id, ${cells.join(', ')}) VALUES (?, ?, ?, ?, ${cells.map(() => '?').join(', ')}) USING TIMESTAMP ?`,
  dropIn: 'DELETE FROM edges_in USING TIMESTAMP ? WHERE target_id = ? AND relation = ? AND bucket = ?',
  getLayout:
    'SELECT buckets, growing_to, copied_through FROM list_layouts WHERE user_id = ? AND relation = ? AND direction = ?',
  putLayout:
    'INSERT INTO list_layouts (user_id, relation, direction, buckets, growing_to, copied_through, updated_at) VALUES (?, ?, ?, ?, ?, ?, toTimestamp(now()))',
  insertLayoutIfAbsent:
    'INSERT INTO list_layouts (user_id, relation, direction, buckets, growing_to, copied_through, updated_at) VALUES (?, ?, ?, ?, ?, ?, toTimestamp(now())) IF NOT EXISTS',
  replaceLayout:
    'UPDATE list_layouts SET buckets = ?, growing_to = ?, copied_through = ?, updated_at = toTimestamp(now()) WHERE user_id = ? AND relation = ? AND direction = ? IF buckets = ? AND growing_to = ? AND copied_through = ?',
  incr: 'UPDATE list_counts SET n = n + ? WHERE user_id = ? AND relation = ? AND direction = ? AND shard = ?',
  getCount: 'SELECT n FROM list_counts WHERE user_id = ? AND relation = ? AND direction = ?',
  markDirty:
    'INSERT INTO dirty_lists (shard, user_id, relation, direction, bucket, marked) VALUES (?, ?, ?, ?, ?, true) USING TIMESTAMP ?',
  listDirty:
    'SELECT user_id, relation, direction, bucket, writetime(marked) AS wt FROM dirty_lists WHERE shard = ? LIMIT ?',
  hasDirty:
    'SELECT bucket FROM dirty_lists WHERE shard = ? AND user_id = ? AND relation = ? AND direction = ? LIMIT 1',
  clearDirty:
    'DELETE FROM dirty_lists USING TIMESTAMP ? WHERE shard = ? AND user_id = ? AND relation = ? AND direction = ? AND bucket = ?',
  getBucketCounts:
    'SELECT bucket, counted, correction, as_of FROM bucket_counts WHERE user_id = ? AND relation = ? AND direction = ?',
  putCountSync:
    'UPDATE bucket_counts USING TIMESTAMP ? SET correction = ?, as_of = ? WHERE user_id = ? AND relation = ? AND direction = ?',
  putBucketCount:
    'UPDATE bucket_counts USING TIMESTAMP ? SET counted = ? WHERE user_id = ? AND relation = ? AND direction = ? AND bucket = ?',
  putRecon:
    'INSERT INTO count_reconciliations (user_id, relation, direction, reconciled_at, counted, drift) VALUES (?, ?, ?, ?, ?, ?)',
  getRecon:
    'SELECT reconciled_at, counted, drift FROM count_reconciliations WHERE user_id = ? AND relation = ? AND direction = ?',
  getReceipt: 'SELECT request_hash, status, body FROM receipts WHERE actor_id = ? AND key = ?',
  putReceipt:
    'INSERT INTO receipts (actor_id, key, request_hash, status, body, created_at) VALUES (?, ?, ?, ?, ?, toTimestamp(now())) IF NOT EXISTS USING TTL ?',
  putTask:
    'INSERT INTO account_tasks (user_id, task, cursor, updated_at) VALUES (?, ?, ?, toTimestamp(now())) USING TIMESTAMP ?',
  getTask:
    'SELECT user_id, task, cursor, writetime(updated_at) AS version FROM account_tasks WHERE user_id = ? AND task = ?',
  listTasks: 'SELECT user_id, task, cursor, writetime(updated_at) AS version FROM account_tasks',
  deleteTask: 'DELETE FROM account_tasks USING TIMESTAMP ? WHERE user_id = ? AND task = ?',
  databaseClock: 'SELECT toUnixTimestamp(now()) AS now_ms FROM system.local',
  edgesOfSourceHead:
    'SELECT relation, target_id, state, position, created_at FROM edges_out WHERE source_id = ? LIMIT ?',
  edgesOfSourceAfter:
    'SELECT relation, target_id, state, position, created_at FROM edges_out WHERE source_id = ? AND (relation, target_id) > (?, ?) LIMIT ?',
  getSweep:
    'SELECT job, run_id, ranges, range_index, tbl, last_token, totals, done FROM sweep_progress WHERE job = ?',
  putSweep:
    'INSERT INTO sweep_progress (job, run_id, ranges, range_index, tbl, last_token, totals, done, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, toTimestamp(now()))',
  clearSuggestions: 'DELETE FROM suggestions USING TIMESTAMP ? WHERE user_id = ?',
  putSuggestionGeneration: 'UPDATE suggestions USING TIMESTAMP ? SET generation = ? WHERE user_id = ?',
  putSuggestion:
    'INSERT INTO suggestions (user_id, rank, other_id, score, via) VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ?',
  getSuggestions: 'SELECT generation, rank, other_id, score, via FROM suggestions WHERE user_id = ?',
} as const;
