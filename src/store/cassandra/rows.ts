/**
 * Row mappers of the Cassandra store: driver rows → the storage vocabulary. Every column the
 * statements in `statements.ts` select is read here and nowhere else; a null cell becomes the
 * record's stated default (0n, null, `'active'`, `'{}'`).
 */
import type cassandra from 'cassandra-driver';
import { plainUsername } from '../../model/row-username.js';
import type {
  BucketLayout,
  Direction,
  EdgeRecord,
  ListEntry,
  OpKind,
  Relation,
  UserId,
  UserRecord,
} from '../../model/types.js';
import type { LeaseRow } from '../../ports/lease-store.js';
import type {
  AccountTask,
  CountSync,
  DirtyMark,
  PairCheckpoint,
  PendingCompaction,
  Receipt,
  Reconciliation,
  ScannedKey,
  ScanTable,
  StoredPairOp,
  SuggestionSet,
  SweepProgress,
} from '../../ports/records.js';
import { decodeCheckpoint } from '../checkpoint-codec.js';

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

export const toEntry = (row: Row): ListEntry => {
  const username = row.username as string | null | undefined;
  return {
    createdAt: row.created_at as bigint,
    otherId: row.other_id as bigint,
    ...(username === null || username === undefined ? {} : { username: plainUsername(username) }),
  };
};

/** The checkpoint in the statics of a pair read's first row (none before the first commit). */
export function toCheckpoint(head: Row | undefined): PairCheckpoint | null {
  const horizon = (head?.cp_horizon as bigint | null | undefined) ?? null;
  const state = (head?.cp_state as string | null | undefined) ?? null;
  return horizon !== null && state !== null ? decodeCheckpoint(horizon, state) : null;
}

/** The announced compaction in the statics of a pair read's first row, with its observation if it is of this announcement. */
export function toPending(head: Row | undefined): PendingCompaction | null {
  const compactTo = (head?.compact_to as bigint | null | undefined) ?? null;
  const compactAt = (head?.compact_at as bigint | null | undefined) ?? null;
  const seenFor = (head?.compact_seen_for as bigint | null | undefined) ?? null;
  const seen = (head?.compact_seen as bigint | null | undefined) ?? null;
  return compactTo !== null && compactAt !== null
    ? { horizon: compactTo, announcedAt: compactAt, seenAt: seenFor === compactTo ? seen : null }
    : null;
}

/** An op row of the pair `(low, high)`. */
export function toPairOp(low: UserId, high: UserId, row: Row): StoredPairOp {
  const source = row.source_id as bigint;
  return {
    sourceId: source,
    targetId: source === low ? high : low,
    kind: row.kind as OpKind,
    position: row.position as bigint,
    base: Number((row.base as bigint | null) ?? 0n),
    ...(row.slot !== null && row.slot !== undefined ? { slot: row.slot as bigint } : {}),
  };
}

export const toLayout = (row: Row): BucketLayout => ({
  buckets: row.buckets as number,
  growingTo: (row.growing_to as number | null) ?? null,
  copiedThrough: (row.copied_through as number | null) ?? 0,
});

export const toDirtyMark = (row: Row): DirtyMark => ({
  list: {
    userId: row.user_id as bigint,
    relation: row.relation as Relation,
    direction: row.direction as Direction,
  },
  bucketCode: row.bucket as number,
  version: row.wt as bigint,
});

/** A list's counter shards and its `bucket_counts` partition (the statics on its first row). */
export function toCountSync(shards: Row[], buckets: Row[]): CountSync {
  const head = buckets[0];
  const counted = new Map<number, number>();
  for (const row of buckets) {
    if (row.bucket !== null && row.counted !== null) counted.set(row.bucket as number, Number(row.counted));
  }
  return {
    shardSum: shards.reduce((sum, row) => sum + Number(row.n as bigint), 0),
    correction: Number((head?.correction as bigint | null | undefined) ?? 0n),
    asOf: (head?.as_of as bigint | null | undefined) ?? null,
    buckets: counted,
    written: shards.length > 0 || buckets.length > 0,
  };
}

export const toReconciliation = (row: Row): Reconciliation => ({
  reconciledAt: row.reconciled_at as Date,
  counted: Number(row.counted as bigint),
  drift: Number(row.drift as bigint),
});

export const toReceipt = (row: Row): Receipt => ({
  requestHash: row.request_hash as string,
  status: row.status as number,
  body: row.body as string,
});

export const toSweepProgress = (row: Row): SweepProgress => ({
  job: row.job as string,
  runId: row.run_id as string,
  ranges: row.ranges as number,
  rangeIndex: row.range_index as number,
  table: row.tbl as ScanTable,
  lastToken: (row.last_token as bigint | null) ?? null,
  totals: (row.totals as string | null) ?? '{}',
  done: Boolean(row.done),
});

/** A user's suggestions partition (the generation is static), or null if no run wrote one. */
export function toSuggestionSet(rows: Row[]): SuggestionSet | null {
  const head = rows[0];
  if (!head || head.generation === null || head.generation === undefined) return null;
  return {
    generation: head.generation as bigint,
    items: rows
      .filter((r) => r.rank !== null && r.other_id !== null)
      .map((r) => ({
        id: r.other_id as bigint,
        score: r.score as number,
        via: ((r.via as bigint[] | null) ?? []).map((v) => v),
      })),
  };
}

/** The key of a partition a scan of `table` returned. */
export function toScannedKey(table: ScanTable, row: Row): ScannedKey {
  switch (table) {
    case 'pair_ops':
      return { table, lowId: row.low_id as bigint, highId: row.high_id as bigint };
    case 'edges_out':
      return { table, sourceId: row.source_id as bigint };
    case 'users':
      return { table, userId: row.user_id as bigint };
    case 'usernames':
      return { table, username: row.username as string };
    case 'list_counts':
    case 'bucket_counts':
      return {
        table,
        list: {
          userId: row.user_id as bigint,
          relation: row.relation as Relation,
          direction: row.direction as Direction,
        },
      };
    case 'following':
    case 'followers':
      return {
        table,
        list: {
          userId: row.user_id as bigint,
          relation: 'follows',
          direction: table === 'following' ? 'out' : 'in',
        },
        bucketCode: row.bucket as number,
      };
    case 'relation_lists':
      return {
        table,
        list: {
          userId: row.user_id as bigint,
          relation: row.relation as Relation,
          direction: row.direction as Direction,
        },
        bucketCode: row.bucket as number,
      };
  }
}

/** A `job_leases` row (null when absent). */
export function toLeaseRow(r: Row | undefined | null): LeaseRow | null {
  if (!r || r.generation == null) return null;
  return {
    name: r.name as string,
    holder: r.holder as string,
    generation: r.generation as bigint,
    expiresAtMs: Number(r.expires_at as bigint),
    state: (r.state as string | null | undefined) ?? null,
  };
}
