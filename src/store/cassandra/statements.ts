/**
 * Every CQL statement the Cassandra store runs, each with its idempotence flag: one table (`S`),
 * plus the list tables' statements per table (`LS`: follows in the card's `following` /
 * `followers`, the other relations in `relation_lists`), the inverse-edge copy (`putInCells`) and
 * the token-range scan (`scanPartitionsStatement`). `Q` and `LQ` are the same CQL text alone, for
 * the tests and benchmarks that send it themselves. Nothing else in the project writes CQL
 * outside `cql/` and the migration runner.
 *
 * Idempotence is what lets the driver retry a statement on another host after a broken
 * connection (`client.ts`): every edge-path write carries `USING TIMESTAMP`, so landing twice is
 * landing once. Only lightweight transactions (their outcome depends on what they find) and the
 * counter update are flagged `once`.
 */
import type { ScanTable } from '../../ports/records.js';
import { type ListTable, PARTITION, SCAN_PARTITION } from './keys.js';

const EVENT_COLUMNS = 'slot, low_id, high_id, op_position, op_source, op_kind, events';

/** A CQL statement and whether running it twice has the effect of running it once. */
export interface Statement {
  readonly cql: string;
  readonly idempotent: boolean;
}

/** A read, or a write whose effect does not depend on how often it lands (the driver may retry it). */
const idempotent = (cql: string): Statement => ({ cql, idempotent: true });

/** A lightweight transaction or a counter update: sent once, never retried by the driver. */
const once = (cql: string): Statement => ({ cql, idempotent: false });

/** The CQL text of every statement in a (nested) table of statements. */
type CqlOf<T> = T extends Statement ? string : { readonly [K in keyof T]: CqlOf<T[K]> };

function cqlOf<T extends object>(table: T): CqlOf<T> {
  const text = (v: unknown): unknown =>
    v !== null && typeof v === 'object' && 'cql' in v
      ? (v as Statement).cql
      : Object.fromEntries(Object.entries(v as object).map(([k, x]) => [k, text(x)]));
  return text(table) as CqlOf<T>;
}

function listStatements(t: ListTable) {
  const pk = PARTITION[t];
  const where = pk.map((c) => `${c} = ?`).join(' AND ');
  const cols = [...pk, 'created_at', 'other_id', 'position'];
  const page = (select: string) => ({
    head: idempotent(`SELECT ${select} FROM ${t} WHERE ${where} LIMIT ?`),
    after: idempotent(
      `SELECT ${select} FROM ${t} WHERE ${where} AND (created_at, other_id) < (?, ?) LIMIT ?`,
    ),
  });
  const cols2 = 'created_at, other_id, username';
  return {
    /** Older than a key (or from the head) and `created_at >= since`, newest first. */
    listSince: {
      head: idempotent(`SELECT ${cols2} FROM ${t} WHERE ${where} AND created_at >= ? LIMIT ?`),
      after: idempotent(
        `SELECT ${cols2} FROM ${t} WHERE ${where} AND (created_at, other_id) < (?, ?) AND (created_at, other_id) >= (?, ?) LIMIT ?`,
      ),
    },
    /** Newer than a key (and `created_at < until`), oldest first: the clustering order reversed. */
    listNewer: {
      open: idempotent(
        `SELECT ${cols2} FROM ${t} WHERE ${where} AND (created_at, other_id) > (?, ?) ORDER BY created_at ASC, other_id ASC LIMIT ?`,
      ),
      until: idempotent(
        `SELECT ${cols2} FROM ${t} WHERE ${where} AND (created_at, other_id) > (?, ?) AND (created_at, other_id) < (?, ?) ORDER BY created_at ASC, other_id ASC LIMIT ?`,
      ),
    },
    putRow: idempotent(
      `INSERT INTO ${t} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')}) USING TIMESTAMP ?`,
    ),
    /** The username cell of one row, at the write time given (see `ListStore.setListUsernames`). */
    setUsername: idempotent(
      `UPDATE ${t} USING TIMESTAMP ? SET username = ? WHERE ${where} AND created_at = ? AND other_id = ?`,
    ),
    deleteRow: idempotent(
      `DELETE FROM ${t} USING TIMESTAMP ? WHERE ${where} AND created_at = ? AND other_id = ?`,
    ),
    list: page('created_at, other_id, username'),
    copy: page(
      'created_at, other_id, position, username, writetime(position) AS wt, writetime(username) AS wu',
    ),
    dropBucket: idempotent(`DELETE FROM ${t} USING TIMESTAMP ? WHERE ${where}`),
    /** One range tombstone: the partition's rows at or past a `created_at`. */
    deleteFrom: idempotent(`DELETE FROM ${t} USING TIMESTAMP ? WHERE ${where} AND created_at >= ?`),
    hasRow: idempotent(`SELECT other_id FROM ${t} WHERE ${where} AND created_at = ? AND other_id = ?`),
  };
}

/** The list tables' statements, by table. */
export const LS: Record<ListTable, ReturnType<typeof listStatements>> = {
  following: listStatements('following'),
  followers: listStatements('followers'),
  relation_lists: listStatements('relation_lists'),
};

export const LQ = cqlOf(LS);

/** One page of distinct partition keys of `table` in a token slice: `(start, end]`, limit. */
export function scanPartitionsStatement(table: ScanTable): Statement {
  const pk = SCAN_PARTITION[table].join(', ');
  return idempotent(
    `SELECT DISTINCT token(${pk}) AS t, ${pk} FROM ${table} WHERE token(${pk}) > ? AND token(${pk}) <= ? LIMIT ?`,
  );
}

/** An `edges_in` insert of the named cells at one write time (a copy keeps each cell's own). */
export const putInCells = (cells: readonly string[]): Statement =>
  idempotent(
    `INSERT INTO edges_in (target_id, relation, bucket, source_id, ${cells.join(', ')}) VALUES (?, ?, ?, ?, ${cells.map(() => '?').join(', ')}) USING TIMESTAMP ?`,
  );

/** The statements of every table but the list tables, by name. */
export const S = {
  getUser: idempotent('SELECT user_id, username, private, state, hide_lists FROM users WHERE user_id = ?'),
  /** A whole row at one write time (`UserStore.putUser`; loads and fixtures). */
  putUser: idempotent(
    'INSERT INTO users (user_id, username, private, state, hide_lists, updated_at) VALUES (?, ?, ?, ?, ?, toTimestamp(now())) USING TIMESTAMP ?',
  ),
  /** The row with each cell's write time (`UserStore.getUserVersioned`). */
  getUserVersioned: idempotent(
    'SELECT user_id, username, private, state, hide_lists, writetime(username) AS wu, writetime(private) AS wp, writetime(state) AS ws, writetime(hide_lists) AS wh FROM users WHERE user_id = ?',
  ),
  /** One field of a PUT each, at the PUT's version (`UserStore.putUserFields`). */
  putUsername: idempotent(
    'UPDATE users USING TIMESTAMP ? SET username = ?, updated_at = toTimestamp(now()) WHERE user_id = ?',
  ),
  putUserPrivate: idempotent(
    'UPDATE users USING TIMESTAMP ? SET private = ?, updated_at = toTimestamp(now()) WHERE user_id = ?',
  ),
  putUserState: idempotent(
    'UPDATE users USING TIMESTAMP ? SET state = ?, updated_at = toTimestamp(now()) WHERE user_id = ?',
  ),
  putUserHideLists: idempotent(
    'UPDATE users USING TIMESTAMP ? SET hide_lists = ?, updated_at = toTimestamp(now()) WHERE user_id = ?',
  ),

  registerDeactivated: idempotent(
    'INSERT INTO deactivated_accounts (shard, user_id, since) VALUES (?, ?, ?) USING TIMESTAMP ?',
  ),
  unregisterDeactivated: idempotent(
    'DELETE FROM deactivated_accounts USING TIMESTAMP ? WHERE shard = ? AND user_id = ?',
  ),
  listDeactivated: idempotent('SELECT user_id FROM deactivated_accounts WHERE shard = ? LIMIT ?'),
  putActivity: idempotent(
    'INSERT INTO user_activity (user_id, last_active_at) VALUES (?, ?) USING TIMESTAMP ?',
  ),
  getActivity: idempotent('SELECT last_active_at FROM user_activity WHERE user_id = ?'),
  putEvent: idempotent(
    'INSERT INTO graph_events (period, shard, slot, low_id, high_id, op_position, op_source, op_kind, events) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ? AND TTL ?',
  ),
  putEventPeriod: idempotent('INSERT INTO graph_event_periods (day, period) VALUES (?, ?) USING TTL ?'),
  listEventPeriods: idempotent(
    'SELECT period FROM graph_event_periods WHERE day = ? AND period >= ? AND period <= ?',
  ),
  readEventsAfterKey: idempotent(
    `SELECT ${EVENT_COLUMNS} FROM graph_events WHERE period = ? AND shard = ? AND (slot, low_id, high_id, op_position, op_source, op_kind) > (?, ?, ?, ?, ?, ?) AND slot <= ? LIMIT ?`,
  ),
  readEventsAfterSlot: idempotent(
    `SELECT ${EVENT_COLUMNS} FROM graph_events WHERE period = ? AND shard = ? AND slot > ? AND slot <= ? LIMIT ?`,
  ),
  /** Every shard of a period at once (the shard is read back: the rows say which they are). */
  readEventsShardsFromSlot: idempotent(
    `SELECT shard, ${EVENT_COLUMNS} FROM graph_events WHERE period = ? AND shard IN ? AND slot >= ? AND slot <= ? LIMIT ?`,
  ),
  readEventsFromSlot: idempotent(
    `SELECT ${EVENT_COLUMNS} FROM graph_events WHERE period = ? AND shard = ? AND slot >= ? AND slot <= ? LIMIT ?`,
  ),
  putIntent: idempotent(
    'INSERT INTO feed_intents (shard, slot, low_id, high_id, op_position, op_source, op_kind) VALUES (?, ?, ?, ?, ?, ?, ?)',
  ),
  deleteIntent: idempotent(
    'DELETE FROM feed_intents WHERE shard = ? AND slot = ? AND low_id = ? AND high_id = ? AND op_position = ? AND op_source = ? AND op_kind = ?',
  ),
  readIntents: idempotent(
    'SELECT slot, low_id, high_id, op_position, op_source, op_kind FROM feed_intents WHERE shard = ? AND slot > ? AND slot <= ? LIMIT ?',
  ),
  readIntentBound: idempotent('SELECT through FROM feed_intent_bound WHERE id = 0'),
  /** The first decision stands: a failed insert returns it. */
  decideIntent: once(
    'INSERT INTO feed_intent_decisions (shard, slot, low_id, high_id, op_position, op_source, op_kind, decision) VALUES (?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS',
  ),
  /** The first claim of an op's slot stands: a failed insert returns it. */
  claimOpSlot: once(
    'INSERT INTO pair_op_slots (low_id, high_id, position, source_id, kind, slot) VALUES (?, ?, ?, ?, ?, ?) IF NOT EXISTS',
  ),
  /** Written at the bound as its write time: the larger bound wins. */
  saveIntentBound: idempotent('INSERT INTO feed_intent_bound (id, through) VALUES (0, ?) USING TIMESTAMP ?'),
  /** An op row's fence: a delete at a write time after its append's (`appendOp` writes at the slot). */
  fenceOp: idempotent(
    'DELETE FROM pair_ops USING TIMESTAMP ? WHERE low_id = ? AND high_id = ? AND position = ? AND source_id = ? AND kind = ?',
  ),
  claimUsername: once('INSERT INTO usernames (username, user_id) VALUES (?, ?) IF NOT EXISTS'),
  releaseUsername: once('DELETE FROM usernames WHERE username = ? IF user_id = ?'),
  getUsernameClaim: idempotent(
    'SELECT user_id, writetime(user_id) AS claimed_at FROM usernames WHERE username = ?',
  ),
  /** An op row, written at its slot (µs) as its write time, so a fence can outrank a late landing. */
  appendOp: idempotent(
    'INSERT INTO pair_ops (low_id, high_id, position, source_id, kind, base, slot) VALUES (?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?',
  ),
  announce: idempotent(
    'UPDATE pair_ops USING TIMESTAMP ? SET compact_to = ?, compact_at = ? WHERE low_id = ? AND high_id = ?',
  ),
  observe: idempotent(
    'UPDATE pair_ops USING TIMESTAMP ? SET compact_seen = ?, compact_seen_for = ? WHERE low_id = ? AND high_id = ?',
  ),
  commitCheckpoint: idempotent(
    'UPDATE pair_ops USING TIMESTAMP ? SET cp_horizon = ?, cp_state = ?, compact_to = null, compact_at = null, compact_seen = null, compact_seen_for = null WHERE low_id = ? AND high_id = ?',
  ),
  /** The name the pair's low (high) account is indexed under in the other's follows lists. */
  indexedLow: idempotent(
    'UPDATE pair_ops USING TIMESTAMP ? SET indexed_low = ? WHERE low_id = ? AND high_id = ?',
  ),
  indexedHigh: idempotent(
    'UPDATE pair_ops USING TIMESTAMP ? SET indexed_high = ? WHERE low_id = ? AND high_id = ?',
  ),
  searchPut: idempotent(
    'INSERT INTO list_search (user_id, direction, prefix, lower_username, other_id, username, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?',
  ),
  searchDelete: idempotent(
    'DELETE FROM list_search USING TIMESTAMP ? WHERE user_id = ? AND direction = ? AND prefix = ? AND lower_username = ? AND other_id = ?',
  ),
  /** One partition's rows after a key and below a name: the clustering range of a prefix. */
  searchRead: idempotent(
    'SELECT lower_username, other_id, username, created_at FROM list_search WHERE user_id = ? AND direction = ? AND prefix = ? AND (lower_username, other_id) > (?, ?) AND (lower_username) < (?) LIMIT ?',
  ),
  /** `searchRead` with each cell's write time: what a cut of a partition copies. */
  searchCopyRead: idempotent(
    'SELECT lower_username, other_id, username, created_at, writetime(username) AS wu, writetime(created_at) AS wc FROM list_search WHERE user_id = ? AND direction = ? AND prefix = ? AND (lower_username, other_id) > (?, ?) AND (lower_username) < (?) LIMIT ?',
  ),
  /** A copied row's marker and `created_at` at their write time (its username follows at its own). */
  searchCopyRow: idempotent(
    'INSERT INTO list_search (user_id, direction, prefix, lower_username, other_id, created_at) VALUES (?, ?, ?, ?, ?, ?) USING TIMESTAMP ?',
  ),
  searchCopyUsername: idempotent(
    'UPDATE list_search USING TIMESTAMP ? SET username = ? WHERE user_id = ? AND direction = ? AND prefix = ? AND lower_username = ? AND other_id = ?',
  ),
  /** A cut parent's moved rows: one range tombstone. */
  searchDeleteFrom: idempotent(
    'DELETE FROM list_search USING TIMESTAMP ? WHERE user_id = ? AND direction = ? AND prefix = ? AND lower_username >= ?',
  ),
  dropFolded: idempotent('DELETE FROM pair_ops WHERE low_id = ? AND high_id = ? AND position < ?'),
  /** The whole pair from its first live row: one statement (its first page) is one snapshot. */
  pairRead: idempotent(
    'SELECT position, source_id, kind, base, slot, cp_horizon, cp_state, compact_to, compact_at, compact_seen, compact_seen_for, indexed_low, indexed_high FROM pair_ops WHERE low_id = ? AND high_id = ?',
  ),
  /** The same from a known horizon on (its rows stay, so the statics always come back). */
  pairReadFrom: idempotent(
    'SELECT position, source_id, kind, base, slot, cp_horizon, cp_state, compact_to, compact_at, compact_seen, compact_seen_for, indexed_low, indexed_high FROM pair_ops WHERE low_id = ? AND high_id = ? AND position >= ?',
  ),
  putOut: idempotent(
    'INSERT INTO edges_out (source_id, relation, target_id, state, position, created_at) VALUES (?, ?, ?, ?, ?, ?) USING TIMESTAMP ?',
  ),
  putIn: idempotent(
    'INSERT INTO edges_in (target_id, relation, bucket, source_id, state, position, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?',
  ),
  getOut: idempotent(
    'SELECT target_id, state, position, created_at FROM edges_out WHERE source_id = ? AND relation = ? AND target_id IN ?',
  ),
  getOutOf: idempotent(
    'SELECT relation, target_id, state, position, created_at FROM edges_out WHERE source_id = ? AND relation IN ? AND target_id IN ?',
  ),
  getIn: idempotent(
    'SELECT source_id, state, position, created_at FROM edges_in WHERE target_id = ? AND relation = ? AND bucket = ? AND source_id IN ?',
  ),
  getPair: idempotent(
    'SELECT relation, state, position, created_at FROM edges_out WHERE source_id = ? AND relation IN ? AND target_id = ?',
  ),
  copyInHead: idempotent(
    'SELECT source_id, state, position, created_at, writetime(state) AS ws, writetime(position) AS wp, writetime(created_at) AS wc FROM edges_in WHERE target_id = ? AND relation = ? AND bucket = ? LIMIT ?',
  ),
  copyInAfter: idempotent(
    'SELECT source_id, state, position, created_at, writetime(state) AS ws, writetime(position) AS wp, writetime(created_at) AS wc FROM edges_in WHERE target_id = ? AND relation = ? AND bucket = ? AND source_id > ? LIMIT ?',
  ),
  dropIn: idempotent(
    'DELETE FROM edges_in USING TIMESTAMP ? WHERE target_id = ? AND relation = ? AND bucket = ?',
  ),
  getLayout: idempotent(
    'SELECT buckets, growing_to, copied_through FROM list_layouts WHERE user_id = ? AND relation = ? AND direction = ?',
  ),
  putLayout: idempotent(
    'INSERT INTO list_layouts (user_id, relation, direction, buckets, growing_to, copied_through, updated_at) VALUES (?, ?, ?, ?, ?, ?, toTimestamp(now()))',
  ),
  insertLayoutIfAbsent: once(
    'INSERT INTO list_layouts (user_id, relation, direction, buckets, growing_to, copied_through, updated_at) VALUES (?, ?, ?, ?, ?, ?, toTimestamp(now())) IF NOT EXISTS',
  ),
  getDirectory: idempotent(
    'SELECT start, bucket, base, owner, version, mode, split_bucket, split_starts, split_ids, split_stage, split_copied, search_starts, search_split_parent, search_split_starts, search_split_stage, search_split_copied FROM list_directory WHERE user_id = ? AND relation = ? AND direction = ?',
  ),
  getLayouts: idempotent(
    'SELECT user_id, buckets, growing_to, copied_through FROM list_layouts WHERE user_id IN ? AND relation = ? AND direction = ?',
  ),
  getDirectories: idempotent(
    'SELECT user_id, start, bucket, base, owner, version, mode, split_bucket, split_starts, split_ids, split_stage, split_copied, search_starts, search_split_parent, search_split_starts, search_split_stage, search_split_copied FROM list_directory WHERE user_id IN ? AND relation = ? AND direction = ?',
  ),
  setListSplit: idempotent(
    'UPDATE list_directory SET split_bucket = ?, split_starts = ?, split_ids = ?, split_stage = ?, split_copied = ? WHERE user_id = ? AND relation = ? AND direction = ?',
  ),
  setSearchLayout: idempotent(
    'UPDATE list_directory SET search_starts = ?, search_split_parent = ?, search_split_starts = ?, search_split_stage = ?, search_split_copied = ? WHERE user_id = ? AND relation = ? AND direction = ?',
  ),
  directoryFirstVersion: once(
    'UPDATE list_directory SET version = ?, mode = ? WHERE user_id = ? AND relation = ? AND direction = ? IF version = null',
  ),
  directoryNextVersion: once(
    'UPDATE list_directory SET version = ?, mode = ? WHERE user_id = ? AND relation = ? AND direction = ? IF version = ?',
  ),
  directoryAdd: idempotent(
    'INSERT INTO list_directory (user_id, relation, direction, start, bucket, base, owner) VALUES (?, ?, ?, ?, ?, ?, ?)',
  ),
  replaceLayout: once(
    'UPDATE list_layouts SET buckets = ?, growing_to = ?, copied_through = ?, updated_at = toTimestamp(now()) WHERE user_id = ? AND relation = ? AND direction = ? IF buckets = ? AND growing_to = ? AND copied_through = ?',
  ),
  incr: once(
    'UPDATE list_counts SET n = n + ? WHERE user_id = ? AND relation = ? AND direction = ? AND shard = ?',
  ),
  getCount: idempotent('SELECT n FROM list_counts WHERE user_id = ? AND relation = ? AND direction = ?'),
  markDirty: idempotent(
    'INSERT INTO dirty_lists (shard, user_id, relation, direction, bucket, marked) VALUES (?, ?, ?, ?, ?, true) USING TIMESTAMP ?',
  ),
  listDirty: idempotent(
    'SELECT user_id, relation, direction, bucket, writetime(marked) AS wt FROM dirty_lists WHERE shard = ? LIMIT ?',
  ),
  hasDirty: idempotent(
    'SELECT bucket FROM dirty_lists WHERE shard = ? AND user_id = ? AND relation = ? AND direction = ? LIMIT 1',
  ),
  clearDirty: idempotent(
    'DELETE FROM dirty_lists USING TIMESTAMP ? WHERE shard = ? AND user_id = ? AND relation = ? AND direction = ? AND bucket = ?',
  ),
  getBucketCounts: idempotent(
    'SELECT bucket, counted, correction, as_of FROM bucket_counts WHERE user_id = ? AND relation = ? AND direction = ?',
  ),
  putCountSync: idempotent(
    'UPDATE bucket_counts USING TIMESTAMP ? SET correction = ?, as_of = ? WHERE user_id = ? AND relation = ? AND direction = ?',
  ),
  putBucketCount: idempotent(
    'UPDATE bucket_counts USING TIMESTAMP ? SET counted = ? WHERE user_id = ? AND relation = ? AND direction = ? AND bucket = ?',
  ),
  // The account tables (cql/023): one partition per account, every relation and direction.
  userIncr: once(
    'UPDATE user_counts SET n = n + ? WHERE user_id = ? AND relation = ? AND direction = ? AND shard = ?',
  ),
  getUserCounts: idempotent('SELECT direction, n FROM user_counts WHERE user_id = ? AND relation = ?'),
  /** `kind` 0 of one relation: per list the correction and `as_of` (bucket -1) and the dirty mirrors. */
  getUserCountHeads: idempotent(
    'SELECT direction, bucket, correction, as_of, dirty FROM user_count_state WHERE user_id = ? AND relation = ? AND kind = 0',
  ),
  getUserCountState: idempotent(
    'SELECT kind, direction, bucket, correction, as_of, dirty, counted FROM user_count_state WHERE user_id = ? AND relation = ?',
  ),
  userMarkDirty: idempotent(
    'UPDATE user_count_state USING TIMESTAMP ? SET dirty = true WHERE user_id = ? AND relation = ? AND kind = 0 AND direction = ? AND bucket = ?',
  ),
  userClearDirty: idempotent(
    'DELETE dirty FROM user_count_state USING TIMESTAMP ? WHERE user_id = ? AND relation = ? AND kind = 0 AND direction = ? AND bucket = ?',
  ),
  userPutHead: idempotent(
    'UPDATE user_count_state USING TIMESTAMP ? SET correction = ?, as_of = ? WHERE user_id = ? AND relation = ? AND kind = 0 AND direction = ? AND bucket = ?',
  ),
  userPutCounted: idempotent(
    'UPDATE user_count_state USING TIMESTAMP ? SET counted = ? WHERE user_id = ? AND relation = ? AND kind = 1 AND direction = ? AND bucket = ?',
  ),
  putRecon: idempotent(
    'INSERT INTO count_reconciliations (user_id, relation, direction, reconciled_at, counted, drift) VALUES (?, ?, ?, ?, ?, ?)',
  ),
  getRecon: idempotent(
    'SELECT reconciled_at, counted, drift FROM count_reconciliations WHERE user_id = ? AND relation = ? AND direction = ?',
  ),
  getReceipt: idempotent('SELECT request_hash, status, body FROM receipts WHERE actor_id = ? AND key = ?'),
  putReceipt: once(
    'INSERT INTO receipts (actor_id, key, request_hash, status, body, created_at) VALUES (?, ?, ?, ?, ?, toTimestamp(now())) IF NOT EXISTS USING TTL ?',
  ),
  putTask: idempotent(
    'INSERT INTO account_tasks (user_id, task, cursor, updated_at) VALUES (?, ?, ?, toTimestamp(now())) USING TIMESTAMP ?',
  ),
  getTask: idempotent(
    'SELECT user_id, task, cursor, writetime(updated_at) AS version FROM account_tasks WHERE user_id = ? AND task = ?',
  ),
  listTasks: idempotent('SELECT user_id, task, cursor, writetime(updated_at) AS version FROM account_tasks'),
  deleteTask: idempotent('DELETE FROM account_tasks USING TIMESTAMP ? WHERE user_id = ? AND task = ?'),
  databaseClock: idempotent('SELECT toUnixTimestamp(now()) AS now_ms FROM system.local'),
  edgesOfSourceHead: idempotent(
    'SELECT relation, target_id, state, position, created_at FROM edges_out WHERE source_id = ? LIMIT ?',
  ),
  edgesOfSourceAfter: idempotent(
    'SELECT relation, target_id, state, position, created_at FROM edges_out WHERE source_id = ? AND (relation, target_id) > (?, ?) LIMIT ?',
  ),
  getSweep: idempotent(
    'SELECT job, run_id, ranges, range_index, tbl, last_token, totals, done FROM sweep_progress WHERE job = ?',
  ),
  putSweep: idempotent(
    'INSERT INTO sweep_progress (job, run_id, ranges, range_index, tbl, last_token, totals, done, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, toTimestamp(now()))',
  ),
  getLease: idempotent('SELECT name, holder, generation, expires_at, state FROM job_leases WHERE name = ?'),
  listLeases: idempotent('SELECT name, holder, generation, expires_at, state FROM job_leases LIMIT ?'),
  createLease: once(
    'INSERT INTO job_leases (name, holder, generation, expires_at, updated_at) VALUES (?, ?, 1, ?, toTimestamp(now())) IF NOT EXISTS',
  ),
  takeLease: once(
    'UPDATE job_leases SET holder = ?, generation = ?, expires_at = ?, updated_at = toTimestamp(now()) WHERE name = ? IF generation = ?',
  ),
  extendLease: once(
    'UPDATE job_leases SET expires_at = ?, updated_at = toTimestamp(now()) WHERE name = ? IF generation = ?',
  ),
  putLeaseState: once(
    'UPDATE job_leases SET state = ?, updated_at = toTimestamp(now()) WHERE name = ? IF generation = ?',
  ),
  getRelayCursor: idempotent('SELECT cursor FROM relay_cursors WHERE name = ?'),
  listRelayCursors: idempotent('SELECT name, cursor FROM relay_cursors LIMIT ?'),
  putRelayCursor: idempotent(
    'INSERT INTO relay_cursors (name, cursor, updated_at) VALUES (?, ?, toTimestamp(now()))',
  ),
  clearSuggestions: idempotent('DELETE FROM suggestions USING TIMESTAMP ? WHERE user_id = ?'),
  putSuggestionGeneration: idempotent(
    'UPDATE suggestions USING TIMESTAMP ? SET generation = ? WHERE user_id = ?',
  ),
  putSuggestion: idempotent(
    'INSERT INTO suggestions (user_id, rank, other_id, score, via) VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ?',
  ),
  getSuggestions: idempotent(
    'SELECT generation, rank, other_id, score, via FROM suggestions WHERE user_id = ?',
  ),
};

export const Q = cqlOf(S);
