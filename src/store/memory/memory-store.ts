/**
 * `GraphStore` in memory, for fast domain tests. It copies Cassandra's resolution rules, which the
 * shared contract suite checks on both stores: a write applies only if its version is at least the
 * stored one; at equal versions a row delete beats a put, and between two puts each cell keeps
 * the larger value (Cassandra's tie-break); a partition drop shadows rows written at or below its
 * version. The inverse edge state is kept apart from the forward one, per bucket code, like the
 * Cassandra table: a probe with the wrong layout misses, as it would there. Counters are plain
 * numbers.
 */

import murmurhash from 'murmurhash';
import { bucketCodeOf, bucketOf } from '../../model/buckets.js';
import { nowPosition } from '../../model/clock.js';
import { UsernameTakenError } from '../../model/errors.js';
import { compareEventKeys, type EventKey, type EventRow } from '../../model/events.js';
import { plainUsername, renamedUsername } from '../../model/row-username.js';
import {
  compareSearchKeys,
  isCut,
  type SearchKey,
  type SearchLayout,
  type SearchRow,
} from '../../model/search.js';
import {
  type Directory,
  EMPTY_DIRECTORY,
  type PendingSplit,
  type StoredListMode,
  type TimeBucket,
} from '../../model/time-buckets.js';
import type {
  BucketLayout,
  Direction,
  EdgeRecord,
  ListEntry,
  ListKey,
  Position,
  Relation,
  UserId,
  UserRecord,
} from '../../model/types.js';
import { compareEntries, listId, RELATIONS } from '../../model/types.js';
import type {
  AccountTask,
  CountSync,
  DirtyMark,
  EdgeWrite,
  IndexedNameWrite,
  ListCounts,
  ListRowWrite,
  PairAppend,
  PairHistory,
  Receipt,
  Reconciliation,
  ScannedPartition,
  ScanTable,
  SearchWrite,
  StoredPairOp,
  Suggestion,
  SuggestionSet,
  SweepProgress,
  TokenRange,
  VersionedEntry,
} from '../../ports/records.js';
import { PAIR_READ_ROWS, PAIR_STEP_TIME } from '../../ports/records.js';
import type { CounterDelta, GraphStore } from '../../ports/store.js';
import { DIRTY_SHARDS } from '../../ports/store.js';
import { decodeCheckpoint, encodeCheckpoint } from '../checkpoint-codec.js';
import { decodeEvents, encodeEvents, hasEvents } from '../event-codec.js';
import { searchWritesOf } from '../search-writes.js';

/** `pair_ops` clustering order: position, then source id, then kind. */
function historyOrder(x: StoredPairOp, y: StoredPairOp): number {
  if (x.position !== y.position) return x.position < y.position ? -1 : 1;
  if (x.sourceId !== y.sourceId) return x.sourceId < y.sourceId ? -1 : 1;
  return x.kind < y.kind ? -1 : x.kind > y.kind ? 1 : 0;
}

interface VersionedEdge {
  edge: EdgeRecord;
  version: bigint;
}

/** A row a read shows: its key and name, the write times of its marker and name, the name cell as stored. */
interface LiveRow {
  entry: ListEntry;
  live: bigint;
  nameAt: bigint | null;
  nameCell: string | null;
}

interface RowCell {
  live: bigint | null;
  tomb: bigint | null;
  /** The username cell (list rows only), with its own write time. */
  name?: Cell<string>;
  /** Original write time of the live marker, so copies keep it. */
}

const edgeKey = (s: UserId, r: Relation, t: UserId) => `${s}|${r}|${t}`;
const listKey = listId;
const partKey = (l: ListKey, code: number) => `${listKey(l)}|${code}`;
const rowKey = (e: ListEntry) => `${e.createdAt}|${e.otherId}`;
const inversePartKey = (target: UserId, r: Relation, code: number) => `${target}|${r}|${code}`;

function inverseOf(list: ListKey): [UserId, Relation] {
  if (list.direction !== 'in') throw new RangeError('inverse edges are bucketed like an `in` list');
  return [list.userId, list.relation];
}

/**
 * A stand-in for the partitioner's token: a signed 64-bit hash of the partition key's text. Only the
 * order matters (scans walk partitions in token order, like Cassandra's).
 */
function tokenOf(key: string): bigint {
  const hi = BigInt(murmurhash.v3(key, 0x9747b28c));
  const lo = BigInt(murmurhash.v3(key, 0x5bd1e995));
  return BigInt.asIntN(64, (hi << 32n) | lo);
}

const max = (a: bigint | null, b: bigint) => (a === null || b > a ? b : a);

function mergeEdge(current: VersionedEdge | undefined, incoming: EdgeRecord, version: bigint): VersionedEdge {
  if (!current || version > current.version) return { edge: { ...incoming }, version };
  if (version < current.version) return current;
  const a = current.edge;
  return {
    version,
    edge: {
      ...a,
      state: larger(incoming.state, a.state),
      position: larger(incoming.position, a.position),
      createdAt: larger(incoming.createdAt, a.createdAt),
    },
  };
}

/** One static cell of a pair's partition: a value (null once deleted) and its write time. */
interface Cell<T> {
  value: T | null;
  at: bigint;
}

/** A pair's partition: the compaction cells (static in Cassandra) and the op rows. */
interface MemoryPair {
  statics: {
    cpHorizon: Cell<bigint>;
    cpState: Cell<string>;
    compactTo: Cell<bigint>;
    compactAt: Cell<bigint>;
    seen: Cell<bigint>;
    seenFor: Cell<bigint>;
    /** The names the low (high) account is indexed under (`list_search`), as `row-username.ts` cells. */
    indexedLow: Cell<string>;
    indexedHigh: Cell<string>;
  };
  ops: Map<string, StoredPairOp>;
}

function newMemoryPair(): MemoryPair {
  const empty = () => ({ value: null, at: -1n });
  return {
    statics: {
      cpHorizon: empty(),
      cpState: empty(),
      compactTo: empty(),
      compactAt: empty(),
      seen: empty(),
      seenFor: empty(),
      indexedLow: empty(),
      indexedHigh: empty(),
    },
    ops: new Map(),
  };
}

/** Cassandra's cell rule: the newer write time wins; at an equal one a deletion, then the larger value. */
function writeCell<T extends string | bigint>(cell: Cell<T>, value: T | null, at: bigint): void {
  const wins =
    at > cell.at || (at === cell.at && cell.value !== null && (value === null || value > cell.value));
  if (!wins) return;
  cell.value = value;
  cell.at = at;
}

/** Cassandra's tie-break between two cells at the same write time: the larger value wins. */
function larger<T extends string | bigint>(x: T, y: T): T {
  return x > y ? x : y;
}

/** A copy of a search layout that shares no arrays with it (the store hands out and keeps copies). */
function copySearchLayout(l: SearchLayout): SearchLayout {
  return { starts: [...l.starts], split: l.split ? { ...l.split, starts: [...l.split.starts] } : null };
}

/** A search row (`list_search`): its marker and cells with their write times, and the newest delete. */
interface SearchCell {
  key: SearchKey;
  live: bigint | null;
  tomb: bigint | null;
  username: Cell<string>;
  createdAt: Cell<bigint>;
}

export class MemoryGraphStore implements GraphStore {
  private readonly users = new Map<UserId, UserRecord>();
  private readonly usernames = new Map<string, UserId>();
  /** The registry of deactivated accounts (`listDeactivated`). */
  private readonly deactivated = new Set<UserId>();
  /** Last reported activity per account (`putActivity`: the latest instant wins). */
  private readonly activity = new Map<UserId, Position>();
  private readonly pairs = new Map<string, MemoryPair>();
  /** Search rows per (list owner, direction, prefix) partition, keyed by (lower, id). */
  private readonly search = new Map<string, Map<string, SearchCell>>();
  /** Range tombstones of search partitions (`deleteSearchRange`): the rows from a name on, at a version. */
  private readonly searchRangeTombs = new Map<string, { from: string; version: bigint }[]>();
  /** Forward edge state (`edges_out`). */
  private readonly edges = new Map<string, VersionedEdge>();
  /** Inverse edge state (`edges_in`): per (target, relation, bucket code), keyed by source. */
  private readonly inverse = new Map<string, { drop: bigint | null; rows: Map<UserId, VersionedEdge> }>();
  private readonly partitions = new Map<
    string,
    {
      drop: bigint | null;
      rows: Map<string, RowCell & { entry: ListEntry }>;
      /** Range tombstones (`deleteBucketRange`): rows at or past `from` written at or below `version`. */
      ranges?: { from: Position; version: bigint }[];
    }
  >();
  private readonly layouts = new Map<string, BucketLayout>();
  private readonly directories = new Map<string, Directory>();
  private readonly splits = new Map<string, PendingSplit>();
  private readonly counters = new Map<string, Map<number, number>>();
  private readonly reconciliations = new Map<string, Reconciliation>();
  /** Dirty marks per list bucket, with the newest clear (`tomb`) that shadows older marks. */
  private readonly dirty = new Map<string, { tomb: bigint | null; mark: DirtyMark | null }>();
  private readonly syncs = new Map<
    string,
    { correction: number; asOf: bigint | null; buckets: Map<number, number> }
  >();
  /**
   * The account tables' copies (`user_counts`, `user_count_state`), kept apart so each read names
   * the copy it reads. Their dirty mirror is `dirty` itself: here a mark and its mirror always land
   * together.
   */
  private readonly userCounters = new Map<string, Map<number, number>>();
  private readonly userSyncs = new Map<
    string,
    { correction: number; asOf: bigint | null; buckets: Map<number, number> }
  >();
  /** Task rows, and per task key the newest delete (`tomb`) that shadows rows at or below it. */
  private readonly tasks = new Map<string, { tomb: bigint | null; row: AccountTask | null }>();
  private readonly receipts = new Map<string, { receipt: Receipt; expires: number }>();
  private readonly sweeps = new Map<string, SweepProgress>();
  private readonly relayCursors = new Map<string, string>();
  private readonly suggestions = new Map<UserId, SuggestionSet>();
  /** The feed's rows by key: Cassandra's cell rule at the writer's version. */
  private readonly events = new Map<string, { row: EventRow; text: string; version: bigint }>();

  async getUser(id: UserId): Promise<UserRecord | null> {
    const u = this.users.get(id);
    return u ? { ...u } : null;
  }

  async getUsers(ids: readonly UserId[]): Promise<Map<UserId, UserRecord>> {
    const out = new Map<UserId, UserRecord>();
    for (const id of ids) {
      const u = this.users.get(id);
      if (u) out.set(id, { ...u });
    }
    return out;
  }

  async putUser(user: UserRecord, o: { event?: EventRow } = {}): Promise<{ created: boolean }> {
    const name = user.username.toLowerCase();
    const holder = this.usernames.get(name);
    if (holder !== undefined && holder !== user.id) throw new UsernameTakenError(user.username);
    const existing = this.users.get(user.id);
    if (existing && existing.username.toLowerCase() !== name)
      this.usernames.delete(existing.username.toLowerCase());
    this.usernames.set(name, user.id);
    this.users.set(user.id, { ...user });
    if (user.state === 'deactivated') this.deactivated.add(user.id);
    else if (existing?.state === 'deactivated') this.deactivated.delete(user.id);
    if (o.event) this.writeEvents([o.event], nowPosition());
    return { created: !existing };
  }

  async listDeactivated(limit: number): Promise<UserId[] | null> {
    return this.deactivated.size > limit ? null : [...this.deactivated];
  }

  async putActivity(id: UserId, at: Position): Promise<void> {
    const cur = this.activity.get(id);
    if (cur === undefined || at > cur) this.activity.set(id, at);
  }

  async getActivity(ids: readonly UserId[]): Promise<Map<UserId, Position>> {
    const out = new Map<UserId, Position>();
    for (const id of ids) {
      const at = this.activity.get(id);
      if (at !== undefined) out.set(id, at);
    }
    return out;
  }

  async putAccountTask(task: AccountTask): Promise<void> {
    const k = `${task.userId}|${task.task}`;
    const cur = this.tasks.get(k);
    if (cur && cur.tomb !== null && task.version <= cur.tomb) return;
    if (cur?.row && cur.row.version > task.version) return;
    this.tasks.set(k, { tomb: cur?.tomb ?? null, row: { ...task } });
  }

  async getAccountTask(userId: UserId, task: AccountTask['task']): Promise<AccountTask | null> {
    const row = this.tasks.get(`${userId}|${task}`)?.row;
    return row ? { ...row } : null;
  }

  async listAccountTasks(): Promise<AccountTask[]> {
    return [...this.tasks.values()].flatMap(({ row }) => (row ? [{ ...row }] : []));
  }

  async deleteAccountTask(userId: UserId, task: AccountTask['task'], version: bigint): Promise<void> {
    const k = `${userId}|${task}`;
    const cur = this.tasks.get(k);
    const tomb = max(cur?.tomb ?? null, version);
    this.tasks.set(k, {
      tomb,
      row: cur?.row && cur.row.version > tomb ? cur.row : null,
    });
  }

  async readPairHistory(a: UserId, b: UserId): Promise<PairHistory> {
    const pair = this.pairs.get(this.pairKey(a, b));
    if (!pair)
      return {
        checkpoint: null,
        pending: null,
        ops: [],
        snapshotThrough: null,
        indexedNames: new Map(),
      };
    const { cpHorizon, cpState, compactTo, compactAt, seen, seenFor, indexedLow, indexedHigh } = pair.statics;
    const [low, high] = a < b ? [a, b] : [b, a];
    const indexedNames = new Map<UserId, string>();
    if (indexedLow.value !== null) indexedNames.set(low, plainUsername(indexedLow.value));
    if (indexedHigh.value !== null) indexedNames.set(high, plainUsername(indexedHigh.value));
    const checkpoint =
      cpHorizon.value !== null && cpState.value !== null
        ? decodeCheckpoint(cpHorizon.value, cpState.value)
        : null;
    const horizon = checkpoint?.horizon ?? 0n;
    // The rows one Cassandra statement returns from the horizon on: past its first page, the
    // history is no longer one snapshot there (`snapshotThrough`); here it always is.
    const rows = [...pair.ops.values()].filter((op) => op.position >= horizon).sort(historyOrder);
    const overflow = rows.length > PAIR_READ_ROWS ? rows[PAIR_READ_ROWS - 1] : undefined;
    return {
      checkpoint,
      pending:
        compactTo.value !== null && compactAt.value !== null
          ? {
              horizon: compactTo.value,
              announcedAt: compactAt.value,
              seenAt: seenFor.value === compactTo.value ? seen.value : null,
            }
          : null,
      ops: rows.filter((op) => op.position > horizon).map((op) => ({ ...op })),
      snapshotThrough: overflow ? overflow.position : null,
      ...(indexedNames.size > 0 ? { indexedNames } : {}),
    };
  }

  async appendPair(append: PairAppend): Promise<void> {
    const { op } = append;
    const key = this.pairKey(...append.pair);
    let pair = this.pairs.get(key);
    if (!pair) {
      pair = newMemoryPair();
      this.pairs.set(key, pair);
    }
    if (op) pair.ops.set(`${op.position}|${op.sourceId}|${op.kind}`, { ...op });
    // The compaction cells follow Cassandra's rules at the protocol's logical write times
    // (`PAIR_STEP_TIME`): newer write time wins, at equal times a deletion, then the larger value.
    const st = pair.statics;
    if (append.announce) {
      const { horizon, announcedAt } = append.announce;
      const at = PAIR_STEP_TIME.announce(horizon);
      writeCell(st.compactTo, horizon, at);
      writeCell(st.compactAt, announcedAt, at);
    }
    if (append.observe) {
      const { horizon, seenAt } = append.observe;
      const at = PAIR_STEP_TIME.observe(horizon);
      writeCell(st.seen, seenAt, at);
      writeCell(st.seenFor, horizon, at);
    }
    if (append.commit) {
      const { checkpoint: cp, folded } = append.commit;
      const at = PAIR_STEP_TIME.commit(cp.horizon, folded);
      writeCell(st.cpHorizon, cp.horizon, at);
      writeCell(st.cpState, encodeCheckpoint(cp), at);
      for (const cell of [st.compactTo, st.compactAt, st.seen, st.seenFor]) writeCell(cell, null, at);
      for (const [k, o] of pair.ops) if (o.position < cp.horizon) pair.ops.delete(k);
    }
  }

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

  async listSearchRows(
    list: ListKey,
    prefix: string,
    after: SearchKey,
    end: string,
    limit: number,
  ): Promise<SearchRow[]> {
    return this.searchCells(list, prefix, after, end, limit).map((c) => ({
      ...c.key,
      username: plainUsername(c.username.value ?? ''),
      createdAt: c.createdAt.value ?? 0n,
    }));
  }

  /** The live search rows of a partition in a key range, in order, each cell as live (or null). */
  private searchCells(
    list: ListKey,
    prefix: string,
    after: SearchKey,
    end: string,
    limit: number,
  ): SearchCell[] {
    const pk = `${list.userId}|${list.direction}|${prefix}`;
    const part = this.search.get(pk);
    if (!part) return [];
    const ranges = this.searchRangeTombs.get(pk) ?? [];
    const counts = (at: bigint | null, tomb: bigint | null) => at !== null && (tomb === null || tomb < at);
    const out: SearchCell[] = [];
    for (const c of part.values()) {
      if (compareSearchKeys(c.key, after) <= 0 || c.key.lower >= end) continue;
      const tomb = ranges.reduce((t, r) => (c.key.lower >= r.from ? max(t, r.version) : t), c.tomb);
      const name = c.username.value !== null && counts(c.username.at, tomb) ? c.username : null;
      const createdAt = c.createdAt.value !== null && counts(c.createdAt.at, tomb) ? c.createdAt : null;
      if (!counts(c.live, tomb) && name === null && createdAt === null) continue;
      // Every put writes all three together, so a live row has both cells.
      out.push({
        key: c.key,
        live: counts(c.live, tomb) ? c.live : null,
        tomb,
        username: name ?? { value: null, at: -1n },
        createdAt: createdAt ?? { value: null, at: -1n },
      });
    }
    return out.sort((a, b) => compareSearchKeys(a.key, b.key)).slice(0, limit);
  }

  async copySearchRows(
    list: ListKey,
    from: string,
    to: string,
    after: SearchKey,
    end: string,
    limit: number,
  ): Promise<{ copied: number; last: SearchKey | null }> {
    const rows = this.searchCells(list, from, after, end, limit);
    for (const c of rows) {
      const cell = this.searchCell(`${list.userId}|${list.direction}|${to}`, c.key);
      // The marker and `created_at` at `created_at`'s write time, the username at its own (Cassandra's copy).
      if (c.createdAt.value !== null) {
        cell.live = max(cell.live, c.createdAt.at);
        writeCell(cell.createdAt, c.createdAt.value, c.createdAt.at);
      }
      if (c.username.value !== null) writeCell(cell.username, c.username.value, c.username.at);
    }
    const last = rows.at(-1);
    return { copied: rows.length, last: last ? { ...last.key } : null };
  }

  async deleteSearchRange(list: ListKey, partition: string, from: string, version: bigint): Promise<void> {
    const pk = `${list.userId}|${list.direction}|${partition}`;
    this.searchRangeTombs.set(pk, [...(this.searchRangeTombs.get(pk) ?? []), { from, version }]);
  }

  private searchCell(pk: string, key: SearchKey): SearchCell {
    const part = this.search.get(pk) ?? new Map<string, SearchCell>();
    this.search.set(pk, part);
    const rk = `${key.lower}|${key.otherId}`;
    const cell = part.get(rk) ?? {
      key,
      live: null,
      tomb: null,
      username: { value: null, at: -1n },
      createdAt: { value: null, at: -1n },
    };
    part.set(rk, cell);
    return cell;
  }

  async writeSearchRows(
    writes: readonly SearchWrite[],
    indexed: readonly IndexedNameWrite[] = [],
  ): Promise<void> {
    for (const w of writes) {
      const key = w.op === 'put' ? { lower: w.row.lower, otherId: w.row.otherId } : w.key;
      for (const at of w.partitions) {
        const cell = this.searchCell(`${w.list.userId}|${w.list.direction}|${at}`, key);
        if (w.op === 'delete') {
          cell.tomb = max(cell.tomb, w.version);
          continue;
        }
        cell.live = max(cell.live, w.version);
        writeCell(cell.username, w.row.username, w.version);
        writeCell(cell.createdAt, w.row.createdAt, w.version);
      }
    }
    for (const w of indexed) {
      let pair = this.pairs.get(this.pairKey(w.member, w.other));
      if (!pair) {
        pair = newMemoryPair();
        this.pairs.set(this.pairKey(w.member, w.other), pair);
      }
      writeCell(w.member < w.other ? pair.statics.indexedLow : pair.statics.indexedHigh, w.cell, w.version);
    }
  }

  private writeEvents(rows: readonly EventRow[], version: bigint): void {
    for (const row of rows) {
      const k = row.key;
      const id = `${k.slot}|${k.shard}|${k.low}|${k.high}|${k.opPosition}|${k.opSource}|${k.opKind}`;
      const text = encodeEvents(row);
      const cur = this.events.get(id);
      if (cur && (cur.version > version || (cur.version === version && cur.text >= text))) continue;
      this.events.set(id, { row: decodeEvents(k, text), text, version });
    }
  }

  async readEventRows(after: EventKey | null, until: Position, limit: number): Promise<EventRow[]> {
    return [...this.events.values()]
      .map((e) => e.row)
      .filter(
        (r) => hasEvents(r) && r.key.slot <= until && (after === null || compareEventKeys(r.key, after) > 0),
      )
      .sort((a, b) => compareEventKeys(a.key, b.key))
      .slice(0, limit);
  }

  private writeRow(list: ListKey, code: number, entry: ListEntry, op: 'put' | 'delete', version: bigint) {
    const pk = partKey(list, code);
    let part = this.partitions.get(pk);
    if (!part) {
      part = { drop: null, rows: new Map() };
      this.partitions.set(pk, part);
    }
    const rk = rowKey(entry);
    const { username, ...key } = entry;
    const cell = part.rows.get(rk) ?? { live: null, tomb: null, entry: key };
    if (op === 'put') {
      cell.live = max(cell.live, version);
      // One below the row, as the Cassandra store writes it (`ListStore.setListUsernames`).
      if (username !== undefined) this.writeName(cell, username, version - 1n);
    } else cell.tomb = max(cell.tomb, version);
    part.rows.set(rk, cell);
  }

  private writeName(cell: RowCell, username: string, version: bigint): void {
    cell.name ??= { value: null, at: -1n };
    writeCell(cell.name, username, version);
  }

  private inversePart(target: UserId, relation: Relation, code: number) {
    const pk = inversePartKey(target, relation, code);
    let part = this.inverse.get(pk);
    if (!part) {
      part = { drop: null, rows: new Map() };
      this.inverse.set(pk, part);
    }
    return part;
  }

  /** The live inverse row of `source` in one bucket, or undefined (never written, or dropped). */
  private liveInverse(target: UserId, relation: Relation, code: number, source: UserId) {
    const part = this.inverse.get(inversePartKey(target, relation, code));
    const row = part?.rows.get(source);
    if (!part || !row || (part.drop !== null && part.drop >= row.version)) return undefined;
    return row;
  }

  private writeInverse(code: number, edge: EdgeRecord, version: bigint) {
    const part = this.inversePart(edge.targetId, edge.relation, code);
    const live = this.liveInverse(edge.targetId, edge.relation, code, edge.sourceId);
    part.rows.set(edge.sourceId, mergeEdge(live, edge, version));
  }

  private liveRows(list: ListKey, code: number): LiveRow[] {
    const part = this.partitions.get(partKey(list, code));
    if (!part) return [];
    const out: LiveRow[] = [];
    // Cassandra's liveness: a cell counts when written after the row's and the partition's
    // deletions (at an equal write time the deletion wins); a row shows while any cell counts.
    const counts = (at: bigint | null, tomb: bigint | null) =>
      at !== null && (tomb === null || tomb < at) && (part.drop === null || part.drop < at);
    const ranged = (createdAt: Position, tomb: bigint | null) =>
      (part.ranges ?? []).reduce((t, r) => (createdAt >= r.from ? max(t, r.version) : t), tomb);
    for (const stored of part.rows.values()) {
      const cell = part.ranges ? { ...stored, tomb: ranged(stored.entry.createdAt, stored.tomb) } : stored;
      const name = cell.name?.value != null && counts(cell.name.at, cell.tomb) ? cell.name : null;
      const live = counts(cell.live, cell.tomb) ? cell.live : null;
      if (live === null && name === null) continue;
      const entry = name ? { ...cell.entry, username: plainUsername(name.value as string) } : cell.entry;
      out.push({
        entry,
        live: live ?? (name?.at as bigint),
        nameAt: name?.at ?? null,
        nameCell: name?.value ?? null,
      });
    }
    return out.sort((a, b) => compareEntries(a.entry, b.entry));
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

  async listBucket(
    list: ListKey,
    bucketCode: number,
    after: ListEntry | null,
    limit: number,
    since?: Position,
  ): Promise<ListEntry[]> {
    return this.liveRows(list, bucketCode)
      .map((r) => r.entry)
      .filter(
        (e) => (!after || compareEntries(e, after) > 0) && (since === undefined || e.createdAt >= since),
      )
      .slice(0, limit)
      .map((e) => ({ ...e }));
  }

  async listBucketNewer(
    list: ListKey,
    bucketCode: number,
    after: ListEntry,
    limit: number,
    until?: Position,
  ): Promise<ListEntry[]> {
    return this.liveRows(list, bucketCode)
      .map((r) => r.entry)
      .filter((e) => compareEntries(e, after) < 0 && (until === undefined || e.createdAt < until))
      .reverse()
      .slice(0, limit)
      .map((e) => ({ ...e }));
  }

  async getLayout(list: ListKey): Promise<BucketLayout> {
    return {
      ...(this.layouts.get(listKey(list)) ?? {
        buckets: 1,
        growingTo: null,
        copiedThrough: 0,
      }),
    };
  }

  async putLayout(list: ListKey, layout: BucketLayout): Promise<void> {
    this.layouts.set(listKey(list), { ...layout });
  }

  async replaceLayout(list: ListKey, expected: BucketLayout, next: BucketLayout): Promise<boolean> {
    // No await between the read and the write: the compare-and-set must be atomic.
    const current = this.layouts.get(listKey(list)) ?? {
      buckets: 1,
      growingTo: null,
      copiedThrough: 0,
    };
    const same =
      current.buckets === expected.buckets &&
      current.growingTo === expected.growingTo &&
      current.copiedThrough === expected.copiedThrough;
    if (same) this.layouts.set(listKey(list), { ...next });
    return same;
  }

  async getDirectory(list: ListKey): Promise<Directory> {
    const d = this.directories.get(listKey(list)) ?? EMPTY_DIRECTORY;
    const split = this.splits.get(listKey(list));
    return {
      ...d,
      buckets: d.buckets.map((b) => ({ ...b })),
      ...(d.search ? { search: copySearchLayout(d.search) } : {}),
      ...(split
        ? {
            split: { ...split, starts: [...split.starts], ids: [...split.ids] },
          }
        : {}),
    };
  }

  async getPlacements(lists: readonly ListKey[]): Promise<{ layout: BucketLayout; directory: Directory }[]> {
    return Promise.all(
      lists.map(async (l) => ({ layout: await this.getLayout(l), directory: await this.getDirectory(l) })),
    );
  }

  async updateDirectory(
    list: ListKey,
    expectedVersion: number,
    change: {
      add?: readonly TimeBucket[];
      mode?: StoredListMode;
      split?: PendingSplit | null;
      search?: SearchLayout;
    },
  ): Promise<boolean> {
    // No await between the read and the write: the compare-and-set must be atomic.
    const d = this.directories.get(listKey(list)) ?? EMPTY_DIRECTORY;
    if (d.version !== expectedVersion) return false;
    if (change.split === null) this.splits.delete(listKey(list));
    else if (change.split)
      this.splits.set(listKey(list), {
        ...change.split,
        starts: [...change.split.starts],
        ids: [...change.split.ids],
      });
    const buckets = [...d.buckets, ...(change.add ?? []).map((b) => ({ ...b }))];
    // Newest first; the implicit first bucket (start null) last.
    buckets.sort((a, b) =>
      a.start === b.start ? 0 : a.start === null ? 1 : b.start === null ? -1 : a.start > b.start ? -1 : 1,
    );
    const search = change.search ?? d.search;
    this.directories.set(listKey(list), {
      mode: change.mode ?? d.mode,
      version: expectedVersion + 1,
      buckets,
      ...(search && isCut(search) ? { search: copySearchLayout(search) } : {}),
    });
    return true;
  }

  async copyBucketPage(
    list: ListKey,
    fromBucketCode: number,
    after: ListEntry | null,
    limit: number,
    targetCode: (row: ListEntry) => number,
  ): Promise<{ copied: number; last: ListEntry | null }> {
    const page = this.liveRows(list, fromBucketCode)
      .filter((r) => !after || compareEntries(r.entry, after) > 0)
      .slice(0, limit);
    for (const r of page) {
      const { username: _, ...key } = r.entry;
      const code = targetCode(key);
      this.writeRow(list, code, key, 'put', r.live);
      // The cell as stored (a rename's keeps its generation tag), at its own write time.
      if (r.nameCell !== null && r.nameAt !== null)
        await this.setListUsernames(list, code, [{ entry: key, version: r.nameAt }], r.nameCell);
    }
    const last = page.at(-1);
    return {
      copied: page.length,
      last: page.length < limit || !last ? null : { ...last.entry },
    };
  }

  async listBucketVersions(
    list: ListKey,
    bucketCode: number,
    after: ListEntry | null,
    limit: number,
  ): Promise<VersionedEntry[]> {
    return this.liveRows(list, bucketCode)
      .filter((r) => !after || compareEntries(r.entry, after) > 0)
      .slice(0, limit)
      .map((r) => ({ entry: { ...r.entry }, version: r.live }));
  }

  async setListUsernames(
    list: ListKey,
    bucketCode: number,
    rows: readonly VersionedEntry[],
    username: string,
    generation?: Position,
    search?: { writes: readonly SearchWrite[]; indexed: readonly IndexedNameWrite[] },
  ): Promise<void> {
    if (search) await this.writeSearchRows(search.writes, search.indexed);
    const name = generation === undefined ? username : renamedUsername(username, generation);
    const pk = partKey(list, bucketCode);
    const part = this.partitions.get(pk) ?? { drop: null, rows: new Map() };
    this.partitions.set(pk, part);
    for (const { entry, version } of rows) {
      const rk = rowKey(entry);
      const { createdAt, otherId } = entry;
      const cell = part.rows.get(rk) ?? {
        live: null,
        tomb: null,
        entry: { createdAt, otherId },
      };
      this.writeName(cell, name, version);
      part.rows.set(rk, cell);
    }
  }

  async dropBucket(list: ListKey, bucketCode: number, version: bigint): Promise<void> {
    const pk = partKey(list, bucketCode);
    const part = this.partitions.get(pk) ?? { drop: null, rows: new Map() };
    part.drop = max(part.drop, version);
    this.partitions.set(pk, part);
  }

  async deleteBucketRange(list: ListKey, bucketCode: number, from: Position, version: bigint): Promise<void> {
    const pk = partKey(list, bucketCode);
    const part = this.partitions.get(pk);
    if (part) part.ranges = [...(part.ranges ?? []), { from, version }];
    else
      this.partitions.set(pk, {
        drop: null,
        rows: new Map(),
        ranges: [{ from, version }],
      });
  }

  async copyInverseEdgePage(
    list: ListKey,
    fromBucketCode: number,
    after: UserId | null,
    limit: number,
    targetCode: (sourceId: UserId) => number,
  ): Promise<{ copied: number; last: UserId | null }> {
    const [target, relation] = inverseOf(list);
    const part = this.inverse.get(inversePartKey(target, relation, fromBucketCode));
    const page = [...(part?.rows.keys() ?? [])]
      .filter((s) => after === null || s > after)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .flatMap((s) => {
        const row = this.liveInverse(target, relation, fromBucketCode, s);
        return row ? [row] : [];
      })
      .slice(0, limit);
    for (const r of page) this.writeInverse(targetCode(r.edge.sourceId), r.edge, r.version);
    const last = page.at(-1)?.edge.sourceId;
    return {
      copied: page.length,
      last: page.length < limit || last === undefined ? null : last,
    };
  }

  async dropInverseEdgeBucket(list: ListKey, bucketCode: number, version: bigint): Promise<void> {
    const [target, relation] = inverseOf(list);
    const part = this.inversePart(target, relation, bucketCode);
    part.drop = max(part.drop, version);
  }

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
  ): Promise<void> {
    await Promise.all(marks.map((m) => this.markDirty(m.list, m.bucketCode, version)));
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

  async getReceipt(actorId: UserId, key: string): Promise<Receipt | null> {
    const r = this.receipts.get(`${actorId}|${key}`);
    if (!r || r.expires < Date.now()) return null;
    return { ...r.receipt };
  }

  async putReceipt(actorId: UserId, key: string, receipt: Receipt, ttlSeconds: number): Promise<void> {
    const k = `${actorId}|${key}`;
    const existing = this.receipts.get(k);
    if (existing && existing.expires >= Date.now()) return;
    this.receipts.set(k, {
      receipt: { ...receipt },
      expires: Date.now() + ttlSeconds * 1000,
    });
  }

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

  async getRelayCursor(name: string): Promise<string | null> {
    return this.relayCursors.get(name) ?? null;
  }

  async putRelayCursor(name: string, cursor: string): Promise<void> {
    this.relayCursors.set(name, cursor);
  }

  async listRelayCursors(limit: number): Promise<{ name: string; cursor: string }[]> {
    return [...this.relayCursors].slice(0, limit).map(([name, cursor]) => ({ name, cursor }));
  }

  async putSuggestions(userId: UserId, generation: bigint, items: readonly Suggestion[]): Promise<void> {
    const cur = this.suggestions.get(userId);
    if (cur && cur.generation > generation) return;
    this.suggestions.set(userId, {
      generation,
      items: structuredClone([...items]),
    });
  }

  async getSuggestions(userId: UserId): Promise<SuggestionSet | null> {
    const s = this.suggestions.get(userId);
    return s ? structuredClone(s) : null;
  }

  /** This process's real clock: tests skew the service's clock against it. */
  async databaseClockMs(): Promise<number> {
    return Date.now();
  }

  async close(): Promise<void> {}

  private pairKey(a: UserId, b: UserId): string {
    return a < b ? `${a}|${b}` : `${b}|${a}`;
  }
}
