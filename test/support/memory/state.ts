/**
 * The in-memory store's tables, and the cell rules more than one port uses: every map a port of
 * `MemoryGraphStore` reads or writes lives on `MemoryState`, with the helpers that write and read
 * list rows, inverse edge rows and pair cells by Cassandra's rules (edge writes and list copies both
 * use them). The ports' layers (`*-store.ts` beside it) extend it; `graph-store.ts` says why they
 * form one chain.
 */

import type { EventRow } from '../../../src/model/events.js';
import { plainUsername } from '../../../src/model/row-username.js';
import type { SearchKey } from '../../../src/model/search.js';
import type { Directory, PendingSplit } from '../../../src/model/time-buckets.js';
import {
  type BucketLayout,
  compareEntries,
  type EdgeRecord,
  type ListEntry,
  type ListKey,
  listId,
  type Position,
  type Relation,
  type UserField,
  type UserId,
} from '../../../src/model/types.js';
import type {
  AccountTask,
  DirtyMark,
  Receipt,
  Reconciliation,
  StoredPairOp,
  SuggestionSet,
  SweepProgress,
} from '../../../src/ports/records.js';

export interface VersionedEdge {
  edge: EdgeRecord;
  version: bigint;
}

/** A row a read shows: its key and name, the write times of its marker and name, the name cell as stored. */
export interface LiveRow {
  entry: ListEntry;
  live: bigint;
  nameAt: bigint | null;
  nameCell: string | null;
}

export interface RowCell {
  live: bigint | null;
  tomb: bigint | null;
  /** The username cell (list rows only), with its own write time. */
  name?: Cell<string>;
  /** Original write time of the live marker, so copies keep it. */
}

export const edgeKey = (s: UserId, r: Relation, t: UserId) => `${s}|${r}|${t}`;
export const listKey = listId;
export const partKey = (l: ListKey, code: number) => `${listKey(l)}|${code}`;
export const rowKey = (e: ListEntry) => `${e.createdAt}|${e.otherId}`;
export const inversePartKey = (target: UserId, r: Relation, code: number) => `${target}|${r}|${code}`;

export const max = (a: bigint | null, b: bigint) => (a === null || b > a ? b : a);

export function mergeEdge(
  current: VersionedEdge | undefined,
  incoming: EdgeRecord,
  version: bigint,
): VersionedEdge {
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
export interface Cell<T> {
  value: T | null;
  at: bigint;
}

/** A pair's partition: the compaction cells (static in Cassandra) and the op rows. */
export interface MemoryPair {
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

export function newMemoryPair(): MemoryPair {
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
export function writeCell<T extends string | bigint>(cell: Cell<T>, value: T | null, at: bigint): void {
  const wins =
    at > cell.at || (at === cell.at && cell.value !== null && (value === null || value > cell.value));
  if (!wins) return;
  cell.value = value;
  cell.at = at;
}

/** Cassandra's tie-break between two cells at the same write time: the larger value wins. */
export function larger<T extends string | bigint>(x: T, y: T): T {
  return x > y ? x : y;
}

/** A search row (`list_search`): its marker and cells with their write times, and the newest delete. */
export interface SearchCell {
  key: SearchKey;
  live: bigint | null;
  tomb: bigint | null;
  username: Cell<string>;
  createdAt: Cell<bigint>;
}

/** An account's row: one cell per field. */
export type UserCells = Record<UserField, Cell<string>>;

export abstract class MemoryState {
  /** Each account's fields as cells at their PUT's version (`putUserFields`; flags as `true`/`false`). */
  protected readonly users = new Map<UserId, UserCells>();
  protected readonly usernames = new Map<string, UserId>();
  /** When each username was claimed (µs; `getUsernameClaim`). */
  protected readonly claimedAt = new Map<string, Position>();
  /** The registry of deactivated accounts (`listDeactivated`): a cell per account, null once deleted. */
  protected readonly deactivated = new Map<UserId, Cell<string>>();
  /** Last reported activity per account (`putActivity`: the latest instant wins). */
  protected readonly activity = new Map<UserId, Position>();
  protected readonly pairs = new Map<string, MemoryPair>();
  /** Search rows per (list owner, direction, prefix) partition, keyed by (lower, id). */
  protected readonly search = new Map<string, Map<string, SearchCell>>();
  /** Range tombstones of search partitions (`deleteSearchRange`): the rows from a name on, at a version. */
  protected readonly searchRangeTombs = new Map<string, { from: string; version: bigint }[]>();
  /** Forward edge state (`edges_out`). */
  protected readonly edges = new Map<string, VersionedEdge>();
  /** Inverse edge state (`edges_in`): per (target, relation, bucket code), keyed by source. */
  protected readonly inverse = new Map<string, { drop: bigint | null; rows: Map<UserId, VersionedEdge> }>();
  protected readonly partitions = new Map<
    string,
    {
      drop: bigint | null;
      rows: Map<string, RowCell & { entry: ListEntry }>;
      /** Range tombstones (`deleteBucketRange`): rows at or past `from` written at or below `version`. */
      ranges?: { from: Position; version: bigint }[];
    }
  >();
  protected readonly layouts = new Map<string, BucketLayout>();
  protected readonly directories = new Map<string, Directory>();
  protected readonly splits = new Map<string, PendingSplit>();
  protected readonly counters = new Map<string, Map<number, number>>();
  protected readonly reconciliations = new Map<string, Reconciliation>();
  /** Dirty marks per list bucket, with the newest clear (`tomb`) that shadows older marks. */
  protected readonly dirty = new Map<string, { tomb: bigint | null; mark: DirtyMark | null }>();
  protected readonly syncs = new Map<
    string,
    { correction: number; asOf: bigint | null; buckets: Map<number, number> }
  >();
  /**
   * The account tables' copies (`user_counts`, `user_count_state`), kept apart so each read names
   * the copy it reads. Their dirty mirror is `dirty` itself: here a mark and its mirror always land
   * together.
   */
  protected readonly userCounters = new Map<string, Map<number, number>>();
  protected readonly userSyncs = new Map<
    string,
    { correction: number; asOf: bigint | null; buckets: Map<number, number> }
  >();
  /** Task rows, and per task key the newest delete (`tomb`) that shadows rows at or below it. */
  protected readonly tasks = new Map<string, { tomb: bigint | null; row: AccountTask | null }>();
  protected readonly receipts = new Map<string, { receipt: Receipt; expires: number }>();
  protected readonly sweeps = new Map<string, SweepProgress>();
  protected readonly relayCursors = new Map<string, string>();
  protected readonly suggestions = new Map<UserId, SuggestionSet>();
  /** The feed's rows by key: Cassandra's cell rule at the writer's version. */
  protected readonly events = new Map<string, { row: EventRow; text: string; version: bigint }>();

  protected writeRow(list: ListKey, code: number, entry: ListEntry, op: 'put' | 'delete', version: bigint) {
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

  protected writeName(cell: RowCell, username: string, version: bigint): void {
    cell.name ??= { value: null, at: -1n };
    writeCell(cell.name, username, version);
  }

  protected inversePart(target: UserId, relation: Relation, code: number) {
    const pk = inversePartKey(target, relation, code);
    let part = this.inverse.get(pk);
    if (!part) {
      part = { drop: null, rows: new Map() };
      this.inverse.set(pk, part);
    }
    return part;
  }

  /** The live inverse row of `source` in one bucket, or undefined (never written, or dropped). */
  protected liveInverse(target: UserId, relation: Relation, code: number, source: UserId) {
    const part = this.inverse.get(inversePartKey(target, relation, code));
    const row = part?.rows.get(source);
    if (!part || !row || (part.drop !== null && part.drop >= row.version)) return undefined;
    return row;
  }

  protected writeInverse(code: number, edge: EdgeRecord, version: bigint) {
    const part = this.inversePart(edge.targetId, edge.relation, code);
    const live = this.liveInverse(edge.targetId, edge.relation, code, edge.sourceId);
    part.rows.set(edge.sourceId, mergeEdge(live, edge, version));
  }

  protected liveRows(list: ListKey, code: number): LiveRow[] {
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

  protected pairKey(a: UserId, b: UserId): string {
    return a < b ? `${a}|${b}` : `${b}|${a}`;
  }
}
