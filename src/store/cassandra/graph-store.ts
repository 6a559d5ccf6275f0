/**
 * `GraphStore` on Cassandra / ScyllaDB.
 *
 * Design note. Every edge-state and list-row write carries the caller's `version` as
 * `USING TIMESTAMP`, so Cassandra's cell-level last-writer-wins is the conflict resolution: no
 * lightweight transactions on the edge path, no read-modify-write here. The four rows of an edge
 * change (forward state, inverse state, the two list rows) go out as one LOGGED batch: the
 * batchlog makes the multi-partition write all-or-nothing eventually, so a coordinator crash
 * cannot leave one direction without the other once the batchlog replays. (`batchMode:
 * 'unlogged'` exists only so the benchmark can measure what the batchlog costs.)
 *
 * LWT is used off the edge path only: claiming a username and fixing an idempotency receipt's
 * first outcome.
 *
 * Counters are not idempotent and cannot carry a timestamp; they are spread over shards, fed
 * deltas from real transitions, and reconciled against the lists by a job.
 */
import type cassandra from 'cassandra-driver';
import { bucketCodeOf, bucketOf, SINGLE_BUCKET } from '../../model/buckets.js';
import { nowPosition } from '../../model/clock.js';
import { UsernameTakenError } from '../../model/errors.js';
import type {
  BucketLayout,
  Direction,
  EdgeRecord,
  ListEntry,
  ListKey,
  OpKind,
  Position,
  Relation,
  UserId,
  UserRecord,
} from '../../model/types.js';
import type {
  AccountTask,
  CountSync,
  DirtyMark,
  EdgeWrite,
  ListRowWrite,
  PairAppend,
  PairHistory,
  Receipt,
  Reconciliation,
  ScannedKey,
  ScannedPartition,
  ScanTable,
  Suggestion,
  SuggestionSet,
  SweepProgress,
  TokenRange,
} from '../../ports/records.js';
import { PAIR_READ_ROWS, PAIR_STEP_TIME } from '../../ports/records.js';
import type { GraphStore } from '../../ports/store.js';
import { DEACTIVATED_SHARDS, DIRTY_SHARDS, deactivatedShard } from '../../ports/store.js';
import { decodeCheckpoint, encodeCheckpoint } from '../checkpoint-codec.js';
import type { CqlClient } from './client.js';
import { isBatchlogTimeout, translated } from './errors.js';
import { inverseKey, type Row, toEdge, toEntry, toTask, toUser } from './rows.js';
import { LQ, listTable, partitionValues, Q, scanPartitionsQuery } from './statements.js';

/** The smallest id: `(t, MIN_ID)` is below every key at time `t` (tuple bounds on `created_at` alone). */
const MIN_ID = -(1n << 63n);

/** `(shard, user_id, relation, direction)` of a list's dirty marks. */
const dirtyKey = (l: ListKey): unknown[] => [
  bucketOf(l.userId, DIRTY_SHARDS),
  l.userId,
  l.relation,
  l.direction,
];

export interface CassandraGraphStoreOptions {
  /** `logged` (default) for the dual write; `unlogged` only for measuring the batchlog's cost. */
  batchMode?: 'logged' | 'unlogged';
  /** Called with each statement's duration in seconds and whether it succeeded (latency metric). */
  onQuery?: (name: string, seconds: number, ok: boolean) => void;
}

const DEFAULT_LAYOUT = SINGLE_BUCKET;

const sameLayout = (a: BucketLayout, b: BucketLayout) =>
  a.buckets === b.buckets && a.growingTo === b.growingTo && a.copiedThrough === b.copiedThrough;

const ALL_RELATIONS: Relation[] = ['follows', 'requests', 'blocks', 'mutes', 'close_friends'];

/** Pairs whose last seen horizon is remembered (a read hint only; bounded, oldest forgotten first). */
const HORIZON_HINTS = 10_000;

/** A bounded map that forgets its oldest entry first. */
class BoundedHints<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly max: number) {}
  get(key: string): V | undefined {
    return this.map.get(key);
  }
  delete(key: string): void {
    this.map.delete(key);
  }
  set(key: string, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.max) {
      const oldest = this.map.keys().next().value;
      if (oldest !== undefined) this.map.delete(oldest);
    }
  }
}

export class CassandraGraphStore implements GraphStore {
  private readonly logged: boolean;
  private readonly horizonHints = new BoundedHints<bigint>(HORIZON_HINTS);

  constructor(
    private readonly client: CqlClient,
    private readonly options: CassandraGraphStoreOptions = {},
  ) {
    this.logged = (options.batchMode ?? 'logged') === 'logged';
  }

  private exec(name: string, query: string, params: unknown[], opts: cassandra.QueryOptions = {}) {
    return this.timed(name, () => this.client.execute(query, params, { prepare: true, ...opts }));
  }

  private async timed<T>(name: string, run: () => Promise<T>): Promise<T> {
    const started = performance.now();
    let ok = false;
    try {
      const result = await translated(name, run);
      ok = true;
      return result;
    } finally {
      this.options.onQuery?.(name, (performance.now() - started) / 1000, ok);
    }
  }

  // ---- users ----

  async getUser(id: UserId): Promise<UserRecord | null> {
    const rs = await this.exec('getUser', Q.getUser, [id]);
    const row = rs.first();
    return row?.username ? toUser(row) : null;
  }

  async getUsers(ids: readonly UserId[]): Promise<Map<UserId, UserRecord>> {
    // Point reads, at most 256 in flight: a reconcile page asks for thousands of members at once.
    const unique = [...new Set(ids)];
    const out = new Map<UserId, UserRecord>();
    for (let i = 0; i < unique.length; i += 256) {
      const users = await Promise.all(unique.slice(i, i + 256).map((id) => this.getUser(id)));
      for (const u of users) if (u) out.set(u.id, u);
    }
    return out;
  }

  async putUser(user: UserRecord): Promise<{ created: boolean }> {
    const existing = await this.getUser(user.id);
    const name = user.username.toLowerCase();
    const oldName = existing?.username.toLowerCase();
    if (oldName !== name) {
      const rs = await this.exec('claimUsername', Q.claimUsername, [name, user.id], { isIdempotent: false });
      const row = rs.first();
      if (!row?.['[applied]'] && (row?.user_id as bigint | undefined) !== user.id)
        throw new UsernameTakenError(user.username);
    }
    // The user row and its registry entry in one logged batch at one write time, so the entry
    // of the state that wins is the entry that wins (see `UserStore.listDeactivated`).
    const at = nowPosition();
    const put = {
      query: Q.putUser,
      params: [user.id, user.username, user.private, user.state, user.hideLists, at],
    };
    const shard = deactivatedShard(user.id);
    const registry =
      user.state === 'deactivated'
        ? { query: Q.registerDeactivated, params: [shard, user.id, at, at] }
        : existing?.state === 'deactivated'
          ? { query: Q.unregisterDeactivated, params: [at, shard, user.id] }
          : null;
    await this.timed('putUser', () =>
      registry
        ? this.client.batch([put, registry], { prepare: true, logged: true })
        : this.client.execute(put.query, put.params, { prepare: true }),
    );
    if (oldName !== undefined && oldName !== name) {
      await this.exec('releaseUsername', Q.releaseUsername, [oldName, user.id], { isIdempotent: false });
    }
    return { created: existing === null };
  }

  async listDeactivated(limit: number): Promise<UserId[] | null> {
    // Shard after shard, each read limited to what is left of `limit` (plus one to see an
    // overflow), so an oversized registry costs at most `limit + 1` rows in memory.
    const ids: UserId[] = [];
    for (let shard = 0; shard < DEACTIVATED_SHARDS; shard++) {
      const rows = await this.allRows('listDeactivated', Q.listDeactivated, [shard, limit - ids.length + 1]);
      for (const r of rows) ids.push(r.user_id as bigint);
      if (ids.length > limit) return null;
    }
    return ids;
  }

  // ---- pair history ----

  async readPairHistory(a: UserId, b: UserId): Promise<PairHistory> {
    const [low, high] = a < b ? [a, b] : [b, a];
    const pair = `${low}|${high}`;
    // One statement: its first page is one snapshot of the statics (checkpoint, announcement,
    // observation) and the rows. Start at the last horizon seen for this pair, so the read steps
    // over neither the folded rows nor their range tombstone; the rows at a committed horizon stay,
    // so a read from it always meets a row and the statics come back with it.
    const from = this.horizonHints.get(pair);
    const read = (start: bigint | undefined) =>
      this.pages(
        'readPairHistory',
        start === undefined ? Q.pairRead : Q.pairReadFrom,
        start === undefined ? [low, high] : [low, high, start],
        PAIR_READ_ROWS,
      );
    let pages = read(from);
    let first = (await pages.next()).value ?? [];
    if (first.length === 0 && from !== undefined) {
      // Nothing from the hint on cannot happen while rows at a committed horizon stay; should it,
      // read the pair from its start rather than take it for empty.
      this.horizonHints.delete(pair);
      pages = read(undefined);
      first = (await pages.next()).value ?? [];
    }
    const head = first[0];
    const horizon = (head?.cp_horizon as bigint | null | undefined) ?? null;
    const state = (head?.cp_state as string | null | undefined) ?? null;
    const checkpoint = horizon !== null && state !== null ? decodeCheckpoint(horizon, state) : null;
    const floor = checkpoint?.horizon ?? 0n;
    // A history over one page: the later pages are other statements, not the same snapshot.
    const rows = [...first];
    let snapshotThrough: bigint | null = null;
    for await (const page of pages) {
      snapshotThrough ??= (first.at(-1)?.position as bigint | null | undefined) ?? 0n;
      rows.push(...page);
    }
    // Remember the horizon only once a row at it was seen (a checkpoint committed before the
    // horizon's rows were kept has none, and a read from it would meet nothing).
    if (checkpoint && rows.some((r) => r.position === checkpoint.horizon)) {
      this.horizonHints.set(pair, checkpoint.horizon);
    }
    const compactTo = (head?.compact_to as bigint | null | undefined) ?? null;
    const compactAt = (head?.compact_at as bigint | null | undefined) ?? null;
    const seenFor = (head?.compact_seen_for as bigint | null | undefined) ?? null;
    const seen = (head?.compact_seen as bigint | null | undefined) ?? null;
    return {
      checkpoint,
      pending:
        compactTo !== null && compactAt !== null
          ? { horizon: compactTo, announcedAt: compactAt, seenAt: seenFor === compactTo ? seen : null }
          : null,
      ops: rows
        .filter((r) => r.position !== null && (r.position as bigint) > floor)
        .map((r) => {
          const source = r.source_id as bigint;
          return {
            sourceId: source,
            targetId: source === low ? high : low,
            kind: r.kind as OpKind,
            position: r.position as bigint,
            base: Number((r.base as bigint | null) ?? 0n),
          };
        }),
      snapshotThrough,
    };
  }

  async appendPair(append: PairAppend, timeoutMs?: number): Promise<void> {
    const [a, b] = append.pair;
    const [low, high] = a < b ? [a, b] : [b, a];
    const queries: { query: string; params: unknown[] }[] = [];
    const { op } = append;
    if (op) {
      queries.push({
        query: Q.appendOp,
        params: [low, high, op.position, op.sourceId, op.kind, BigInt(op.base)],
      });
    }
    if (append.announce) {
      const { horizon, announcedAt } = append.announce;
      queries.push({
        query: Q.announce,
        params: [PAIR_STEP_TIME.announce(horizon), horizon, announcedAt, low, high],
      });
    }
    if (append.observe) {
      const { horizon, seenAt } = append.observe;
      queries.push({
        query: Q.observe,
        params: [PAIR_STEP_TIME.observe(horizon), seenAt, horizon, low, high],
      });
    }
    if (append.commit) {
      const { checkpoint: cp, folded } = append.commit;
      queries.push(
        {
          query: Q.commitCheckpoint,
          params: [PAIR_STEP_TIME.commit(cp.horizon, folded), cp.horizon, encodeCheckpoint(cp), low, high],
        },
        { query: Q.dropFolded, params: [low, high, cp.horizon] },
      );
    }
    const options: cassandra.QueryOptions = { prepare: true, logged: false, isIdempotent: true };
    if (timeoutMs !== undefined) options.readTimeout = Math.max(1, Math.round(timeoutMs));
    const [only] = queries;
    if (!only) return;
    await this.timed('appendPair', () =>
      queries.length === 1 && only
        ? this.client.execute(only.query, only.params, options)
        : this.client.batch(queries, options),
    );
  }

  /** Each page of a query's rows, in order; each page is one statement. */
  private async *pages(
    name: string,
    query: string,
    params: unknown[],
    fetchSize = 1000,
  ): AsyncGenerator<Row[]> {
    let pageState: string | undefined;
    do {
      const rs = await this.exec(name, query, params, { fetchSize, pageState });
      yield rs.rows;
      pageState = rs.pageState ?? undefined;
    } while (pageState);
  }

  /** Every row of a query, page by page (never just the first page). */
  private async allRows(name: string, query: string, params: unknown[]): Promise<Row[]> {
    const rows: Row[] = [];
    for await (const page of this.pages(name, query, params)) rows.push(...page);
    return rows;
  }

  // ---- edge state ----

  async writeEdges(
    edges: readonly EdgeWrite[],
    rows: readonly ListRowWrite[],
    version: bigint,
  ): Promise<void> {
    const queries: { query: string; params: unknown[] }[] = [];
    for (const { edge: e, inBucketCodes } of edges) {
      const cells = [e.state, e.position, e.createdAt, version];
      queries.push({ query: Q.putOut, params: [e.sourceId, e.relation, e.targetId, ...cells] });
      for (const code of inBucketCodes) {
        queries.push({ query: Q.putIn, params: [e.targetId, e.relation, code, e.sourceId, ...cells] });
      }
    }
    for (const r of rows) {
      const q = LQ[listTable(r.list)];
      for (const code of r.bucketCodes) {
        const key = [...partitionValues(r.list, code), r.entry.createdAt, r.entry.otherId];
        queries.push(
          r.op === 'put'
            ? { query: q.putRow, params: [...key, version, version] }
            : { query: q.deleteRow, params: [version, ...key] },
        );
      }
    }
    if (queries.length === 0) return;
    const options = { prepare: true, isIdempotent: true };
    await this.timed('writeEdges', async () => {
      try {
        return await this.client.batch(queries, { ...options, logged: this.logged });
      } catch (err) {
        // A dying replica that is not convicted yet still gets the batchlog (in a 3-node DC both
        // other nodes must take it): until the failure detector gives up on it, every logged batch
        // times out there. Nothing of the batch was applied, and its rows are a projection that
        // the next write on the pair or repair rewrites, so apply them without the batchlog.
        if (this.logged && isBatchlogTimeout(err)) {
          this.options.onQuery?.('writeEdgesUnloggedFallback', 0, true);
          return await this.client.batch(queries, { ...options, logged: false });
        }
        throw err;
      }
    });
  }

  async getEdgesOut(
    sourceId: UserId,
    relation: Relation,
    targetIds: readonly UserId[],
  ): Promise<Map<UserId, EdgeRecord>> {
    const out = new Map<UserId, EdgeRecord>();
    if (targetIds.length === 0) return out;
    const rs = await this.exec('getEdgesOut', Q.getOut, [sourceId, relation, [...new Set(targetIds)]], {
      fetchSize: 5000,
    });
    for (const row of rs.rows) {
      const target = row.target_id as bigint;
      out.set(target, toEdge(sourceId, target, relation, row));
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
    const byCode = new Map<number, UserId[]>();
    for (const s of new Set(sourceIds)) {
      const code = bucketCodeOf(layout.buckets, s);
      byCode.set(code, [...(byCode.get(code) ?? []), s]);
    }
    const pages = await Promise.all(
      [...byCode].map(([code, sources]) =>
        this.exec('getEdgesIn', Q.getIn, [targetId, relation, code, sources], { fetchSize: 5000 }),
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
      this.exec('getPairEdges', Q.getPair, [a, ALL_RELATIONS, b]),
      this.exec('getPairEdges', Q.getPair, [b, ALL_RELATIONS, a]),
    ]);
    return [
      ...ab.rows.map((r) => toEdge(a, b, r.relation as Relation, r)),
      ...ba.rows.map((r) => toEdge(b, a, r.relation as Relation, r)),
    ];
  }

  // ---- lists ----

  async listBucket(
    list: ListKey,
    bucketCode: number,
    after: ListEntry | null,
    limit: number,
    since?: Position,
  ): Promise<ListEntry[]> {
    if (since !== undefined) {
      // A tuple bound on both sides: Cassandra refuses a single-column and a tuple slice together.
      const q = LQ[listTable(list)].listSince;
      const key = partitionValues(list, bucketCode);
      const rs = after
        ? await this.exec('listBucket', q.after, [
            ...key,
            after.createdAt,
            after.otherId,
            since,
            MIN_ID,
            limit,
          ])
        : await this.exec('listBucket', q.head, [...key, since, limit]);
      return rs.rows.map(toEntry);
    }
    const rows = await this.bucketRows(
      'listBucket',
      LQ[listTable(list)].list,
      list,
      bucketCode,
      after,
      limit,
    );
    return rows.map(toEntry);
  }

  async listBucketNewer(
    list: ListKey,
    bucketCode: number,
    after: ListEntry,
    limit: number,
    until?: Position,
  ): Promise<ListEntry[]> {
    const q = LQ[listTable(list)].listNewer;
    const key = partitionValues(list, bucketCode);
    // `(created_at, other_id) < (until, MIN_ID)` is exactly `created_at < until`.
    const rs =
      until === undefined
        ? await this.exec('listBucketNewer', q.open, [...key, after.createdAt, after.otherId, limit])
        : await this.exec('listBucketNewer', q.until, [
            ...key,
            after.createdAt,
            after.otherId,
            until,
            MIN_ID,
            limit,
          ]);
    return rs.rows.map(toEntry);
  }

  /** One bucket's rows in list order, strictly after `after` when given, at most `limit`. */
  private async bucketRows(
    name: string,
    page: { head: string; after: string },
    list: ListKey,
    bucketCode: number,
    after: ListEntry | null,
    limit: number,
  ): Promise<Row[]> {
    const key = partitionValues(list, bucketCode);
    const rs = after
      ? await this.exec(name, page.after, [...key, after.createdAt, after.otherId, limit])
      : await this.exec(name, page.head, [...key, limit]);
    return rs.rows;
  }

  async getLayout(list: ListKey): Promise<BucketLayout> {
    const rs = await this.exec('getLayout', Q.getLayout, [list.userId, list.relation, list.direction]);
    const row = rs.first();
    if (!row) return { ...DEFAULT_LAYOUT };
    return {
      buckets: row.buckets as number,
      growingTo: (row.growing_to as number | null) ?? null,
      copiedThrough: (row.copied_through as number | null) ?? 0,
    };
  }

  async putLayout(list: ListKey, layout: BucketLayout): Promise<void> {
    await this.exec('putLayout', Q.putLayout, [
      list.userId,
      list.relation,
      list.direction,
      layout.buckets,
      layout.growingTo,
      layout.copiedThrough,
    ]);
  }

  async replaceLayout(list: ListKey, expected: BucketLayout, next: BucketLayout): Promise<boolean> {
    const key = [list.userId, list.relation, list.direction];
    const values = [next.buckets, next.growingTo, next.copiedThrough];
    if (sameLayout(expected, DEFAULT_LAYOUT)) {
      const rs = await this.exec('replaceLayout', Q.insertLayoutIfAbsent, [...key, ...values], {
        isIdempotent: false,
      });
      if (rs.first()?.['[applied]']) return true;
    }
    const rs = await this.exec(
      'replaceLayout',
      Q.replaceLayout,
      [...values, ...key, expected.buckets, expected.growingTo, expected.copiedThrough],
      { isIdempotent: false },
    );
    return Boolean(rs.first()?.['[applied]']);
  }

  async copyBucketPage(
    list: ListKey,
    fromBucketCode: number,
    after: ListEntry | null,
    limit: number,
    targetCode: (otherId: UserId) => number,
  ): Promise<{ copied: number; last: ListEntry | null }> {
    const q = LQ[listTable(list)];
    const rows = await this.bucketRows('copyBucketPage', q.copy, list, fromBucketCode, after, limit);
    await Promise.all(
      rows.map((row) =>
        this.exec('copyListRow', q.putRow, [
          ...partitionValues(list, targetCode(row.other_id as bigint)),
          row.created_at,
          row.other_id,
          row.position,
          row.wt,
        ]),
      ),
    );
    const lastRow = rows.at(-1);
    return { copied: rows.length, last: rows.length < limit || !lastRow ? null : toEntry(lastRow) };
  }

  async dropBucket(list: ListKey, bucketCode: number, version: bigint): Promise<void> {
    await this.exec('dropBucket', LQ[listTable(list)].dropBucket, [
      version,
      ...partitionValues(list, bucketCode),
    ]);
  }

  async copyInverseEdgePage(
    list: ListKey,
    fromBucketCode: number,
    after: UserId | null,
    limit: number,
    targetCode: (sourceId: UserId) => number,
  ): Promise<{ copied: number; last: UserId | null }> {
    const key = inverseKey(list);
    const rs =
      after === null
        ? await this.exec('copyInverseEdgePage', Q.copyInHead, [...key, fromBucketCode, limit])
        : await this.exec('copyInverseEdgePage', Q.copyInAfter, [...key, fromBucketCode, after, limit]);
    await Promise.all(
      rs.rows.flatMap((row) => {
        const source = row.source_id as bigint;
        const partition = [...key, targetCode(source), source];
        // One insert per distinct write time, so every cell keeps its own.
        const byTime = new Map<bigint, [string, unknown][]>();
        for (const [cell, wt] of [
          ['state', row.ws],
          ['position', row.wp],
          ['created_at', row.wc],
        ] as const) {
          if (wt === null || wt === undefined) continue;
          byTime.set(wt as bigint, [...(byTime.get(wt as bigint) ?? []), [cell, row[cell]]]);
        }
        return [...byTime].map(([wt, cells]) =>
          this.exec('copyInverseEdge', Q.putInCells(cells.map(([c]) => c)), [
            ...partition,
            ...cells.map(([, v]) => v),
            wt,
          ]),
        );
      }),
    );
    const last = rs.rows.at(-1)?.source_id as bigint | undefined;
    return { copied: rs.rows.length, last: rs.rows.length < limit || last === undefined ? null : last };
  }

  async dropInverseEdgeBucket(list: ListKey, bucketCode: number, version: bigint): Promise<void> {
    await this.exec('dropInverseEdgeBucket', Q.dropIn, [version, ...inverseKey(list), bucketCode]);
  }

  // ---- counts ----

  async incrementCount(list: ListKey, shard: number, delta: number): Promise<void> {
    if (delta === 0) return;
    await this.exec(
      'incrementCount',
      Q.incr,
      [BigInt(delta), list.userId, list.relation, list.direction, shard],
      {
        isIdempotent: false,
      },
    );
  }

  async getCount(list: ListKey): Promise<number> {
    const sync = await this.getCountSync(list);
    return sync.shardSum + sync.correction;
  }

  async markDirty(list: ListKey, bucketCode: number, version: bigint): Promise<void> {
    await this.exec('markDirty', Q.markDirty, [...dirtyKey(list), bucketCode, version]);
  }

  async listDirty(shard: number, limit: number): Promise<DirtyMark[]> {
    const rs = await this.exec('listDirty', Q.listDirty, [shard, limit]);
    return rs.rows.map((row) => ({
      list: {
        userId: row.user_id as bigint,
        relation: row.relation as Relation,
        direction: row.direction as Direction,
      },
      bucketCode: row.bucket as number,
      version: row.wt as bigint,
    }));
  }

  async hasDirty(list: ListKey): Promise<boolean> {
    const rs = await this.exec('hasDirty', Q.hasDirty, dirtyKey(list));
    return rs.rows.length > 0;
  }

  async clearDirty(mark: DirtyMark): Promise<void> {
    await this.exec('clearDirty', Q.clearDirty, [mark.version, ...dirtyKey(mark.list), mark.bucketCode]);
  }

  async getCountSync(list: ListKey): Promise<CountSync> {
    const key = [list.userId, list.relation, list.direction];
    const [shards, buckets] = await Promise.all([
      this.exec('getCount', Q.getCount, key),
      this.exec('getCountSync', Q.getBucketCounts, key, { fetchSize: 5000 }),
    ]);
    const head = buckets.first();
    const counted = new Map<number, number>();
    for (const row of buckets.rows) {
      if (row.bucket !== null && row.counted !== null) counted.set(row.bucket as number, Number(row.counted));
    }
    return {
      shardSum: shards.rows.reduce((sum, row) => sum + Number(row.n as bigint), 0),
      correction: Number((head?.correction as bigint | null | undefined) ?? 0n),
      asOf: (head?.as_of as bigint | null | undefined) ?? null,
      buckets: counted,
      written: shards.rows.length > 0 || buckets.rows.length > 0,
    };
  }

  async putCountSync(
    list: ListKey,
    sync: { correction: number; asOf: bigint; buckets: ReadonlyMap<number, number> },
  ): Promise<void> {
    const key = [list.userId, list.relation, list.direction];
    await Promise.all([
      ...[...sync.buckets].map(([code, n]) =>
        this.exec('putCountSync', Q.putBucketCount, [sync.asOf, BigInt(n), ...key, code]),
      ),
      this.exec('putCountSync', Q.putCountSync, [sync.asOf, BigInt(sync.correction), sync.asOf, ...key]),
    ]);
  }

  async putReconciliation(list: ListKey, r: Reconciliation): Promise<void> {
    await this.exec('putReconciliation', Q.putRecon, [
      list.userId,
      list.relation,
      list.direction,
      r.reconciledAt,
      BigInt(r.counted),
      BigInt(r.drift),
    ]);
  }

  async getReconciliation(list: ListKey): Promise<Reconciliation | null> {
    const rs = await this.exec('getReconciliation', Q.getRecon, [list.userId, list.relation, list.direction]);
    const row = rs.first();
    if (!row) return null;
    return {
      reconciledAt: row.reconciled_at as Date,
      counted: Number(row.counted as bigint),
      drift: Number(row.drift as bigint),
    };
  }

  // ---- receipts ----

  async getReceipt(actorId: UserId, key: string): Promise<Receipt | null> {
    const rs = await this.exec('getReceipt', Q.getReceipt, [actorId, key]);
    const row = rs.first();
    return row
      ? { requestHash: row.request_hash as string, status: row.status as number, body: row.body as string }
      : null;
  }

  async putReceipt(actorId: UserId, key: string, receipt: Receipt, ttlSeconds: number): Promise<void> {
    await this.exec(
      'putReceipt',
      Q.putReceipt,
      [actorId, key, receipt.requestHash, receipt.status, receipt.body, ttlSeconds],
      { isIdempotent: false },
    );
  }

  // ---- account tasks ----

  async putAccountTask(task: AccountTask): Promise<void> {
    await this.exec('putAccountTask', Q.putTask, [task.userId, task.task, task.cursor, task.version]);
  }

  async getAccountTask(userId: UserId, task: AccountTask['task']): Promise<AccountTask | null> {
    const row = (await this.exec('getAccountTask', Q.getTask, [userId, task])).first();
    return row ? toTask(row) : null;
  }

  async listAccountTasks(): Promise<AccountTask[]> {
    return (await this.allRows('listAccountTasks', Q.listTasks, [])).map(toTask);
  }

  async deleteAccountTask(userId: UserId, task: AccountTask['task'], version: bigint): Promise<void> {
    await this.exec('deleteAccountTask', Q.deleteTask, [version, userId, task]);
  }

  // ---- scans (jobs) ----

  async scanPartitions(
    table: ScanTable,
    range: TokenRange,
    afterToken: bigint | null,
    limit: number,
  ): Promise<ScannedPartition[]> {
    const from = afterToken !== null && afterToken > range.start ? afterToken : range.start;
    if (from >= range.end) return [];
    const rs = await this.exec('scanPartitions', scanPartitionsQuery(table), [from, range.end, limit], {
      fetchSize: limit,
    });
    return rs.rows.map((row) => ({ token: row.t as bigint, key: scannedKey(table, row) }));
  }

  async edgesOfSource(
    sourceId: UserId,
    after: { relation: Relation; targetId: UserId } | null,
    limit: number,
  ): Promise<EdgeRecord[]> {
    const rs = after
      ? await this.exec('edgesOfSource', Q.edgesOfSourceAfter, [
          sourceId,
          after.relation,
          after.targetId,
          limit,
        ])
      : await this.exec('edgesOfSource', Q.edgesOfSourceHead, [sourceId, limit]);
    return rs.rows.map((row) => toEdge(sourceId, row.target_id as bigint, row.relation as Relation, row));
  }

  async hasListRow(list: ListKey, bucketCode: number, entry: ListEntry): Promise<boolean> {
    const rs = await this.exec('hasListRow', LQ[listTable(list)].hasRow, [
      ...partitionValues(list, bucketCode),
      entry.createdAt,
      entry.otherId,
    ]);
    return rs.rows.length > 0;
  }

  async getSweepProgress(job: string): Promise<SweepProgress | null> {
    const row = (await this.exec('getSweepProgress', Q.getSweep, [job])).first();
    if (!row) return null;
    return {
      job: row.job as string,
      runId: row.run_id as string,
      ranges: row.ranges as number,
      rangeIndex: row.range_index as number,
      table: row.tbl as ScanTable,
      lastToken: (row.last_token as bigint | null) ?? null,
      totals: (row.totals as string | null) ?? '{}',
      done: Boolean(row.done),
    };
  }

  async putSweepProgress(p: SweepProgress): Promise<void> {
    await this.exec('putSweepProgress', Q.putSweep, [
      p.job,
      p.runId,
      p.ranges,
      p.rangeIndex,
      p.table,
      p.lastToken,
      p.totals,
      p.done,
    ]);
  }

  // ---- suggestions ----

  async putSuggestions(userId: UserId, generation: bigint, items: readonly Suggestion[]): Promise<void> {
    const queries: { query: string; params: unknown[] }[] = [
      { query: Q.clearSuggestions, params: [generation - 1n, userId] },
      { query: Q.putSuggestionGeneration, params: [generation, generation, userId] },
      ...items.map((s, rank) => ({
        query: Q.putSuggestion,
        params: [userId, rank, s.id, s.score, s.via, generation],
      })),
    ];
    // One partition: an unlogged batch is atomic and isolated on each replica.
    await this.timed('putSuggestions', () =>
      this.client.batch(queries, { prepare: true, logged: false, isIdempotent: true }),
    );
  }

  async getSuggestions(userId: UserId): Promise<SuggestionSet | null> {
    const rows = await this.allRows('getSuggestions', Q.getSuggestions, [userId]);
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

  // ---- lifecycle ----

  async databaseClockMs(): Promise<number> {
    const rs = await this.exec('databaseClock', Q.databaseClock, []);
    return Number(rs.first()?.now_ms);
  }

  async close(): Promise<void> {
    await this.client.shutdown();
  }
}

/** The key of a partition a scan returned. */
function scannedKey(table: ScanTable, row: Row): ScannedKey {
  switch (table) {
    case 'pair_ops':
      return { table, lowId: row.low_id as bigint, highId: row.high_id as bigint };
    case 'edges_out':
      return { table, sourceId: row.source_id as bigint };
    case 'users':
      return { table, userId: row.user_id as bigint };
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
