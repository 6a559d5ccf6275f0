/**
 * A single-node model of Cassandra's storage semantics that executes the store's own CQL against
 * the schema parsed from `cql/*.cql`.
 *
 * Design note.
 *
 * Modelled. Every cell carries its write time (the statement's `USING TIMESTAMP`, else the
 * client timestamp the caller passes — in the simulation the writer's own clock through the
 * driver's monotonic generator) and is merged last-writer-wins per cell; at equal write times a
 * tombstone beats a value and the larger serialized value beats the smaller (Cassandra's
 * `Conflicts.resolveRegular`: `cp_state` `'{"n":99…'` beats `'{"n":132…'`). Deletions are
 * partition, row, range (a clustering prefix plus an optional slice on the next column) and cell
 * tombstones; a tombstone shadows data written at or below its time. INSERT writes a row marker
 * (a row with only its key exists), UPDATE does not. Static cells live once per partition and are
 * shadowed only by partition deletions and their own tombstones. TTLs expire on the node's clock
 * (the simulation's true time); an expired cell acts as a tombstone at its write time. Counters
 * add (no write time, never idempotent). Collections: non-frozen maps, sets and lists as element
 * cells with a collection tombstone at `t − 1` for a whole-value write; frozen ones as one cell.
 * `IF NOT EXISTS` / `IF c = ?` apply atomically at apply time with a server-side write time.
 *
 * SELECT: partitions by `=` / `IN` on the whole partition key, by a token range or a full scan in
 * token order (a stand-in hash: only the order matters); clustering restrictions as Cassandra
 * accepts them (an `=` / `IN` prefix, then one slice or tuple slices); `ORDER BY` only as the
 * clustering order or its reverse; `DISTINCT` on partition key and static columns; `LIMIT`; paging
 * by re-executing from the last row returned (a page is a new statement — there is no snapshot
 * across pages, as in Cassandra). The static row: a partition whose statics are live but whose
 * rows are all dead returns one row of statics with null clustering and regular columns — only
 * when the query has no clustering restriction (verified on the real node: `SELECT … WHERE k = ?
 * AND c > ?` on a partition holding only statics returns nothing). `writetime()`, `ttl()`,
 * `token()` selectors.
 *
 * Atomicity: what the caller applies in one `apply` call is atomic and isolated — the simulated
 * client applies one statement, or one partition's share of a batch, per call. Nothing gives a
 * snapshot across calls: two SELECTs of one partition sent in parallel may read different states.
 *
 * Not modelled here, and why that is enough for the pair protocol. Replicas (`replicas.ts` models
 * them over several engines, for the whole-service simulation): a write here becomes
 * visible to every later read at one instant (its apply event). With QUORUM writes and QUORUM
 * reads and Cassandra's blocking read repair, a write is unseen until the first quorum read that
 * sees it and seen by every quorum read after, which is one visibility instant too; the protocol
 * reasons exactly about when a write is visible to a quorum read (`seenAt`, the settle), and the
 * scheduler puts every delay the network can before and after that instant. What a single copy
 * cannot show: two concurrent quorum reads seeing two concurrent writes in opposite orders (each
 * write on a different replica, read repair not yet done), hinted handoff and the batchlog replay
 * as mechanisms (their effect — a write applied late, after its client gave up — is a fault the
 * scheduler injects). Compaction and gc_grace: tombstones are kept forever (a purge can only
 * resurrect data, a failure the protocol already treats as lost writes; shadowed cells are dropped
 * at once, which does not change what a read returns). Paxos contention (LWT is off the pair
 * path). Secondary indexes, `ALLOW FILTERING`, aggregates, user types, list elements by index:
 * statements using them throw.
 */
import {
  type Assignment,
  type Cmp,
  type Column,
  type Condition,
  type CqlType,
  CqlUnsupportedError,
  type NativeType,
  parseStatement,
  type Restriction,
  type Schema,
  type Selector,
  type Statement,
  type TableSchema,
  type Term,
} from './syntax.js';
import { CqlBindError, coerceNative, compareNative, compareSerialized, keyPart, tokenOf } from './values.js';

/** The type of a non-frozen collection's element cells: a map's values, a list's elements, a set's (none: `true`). */
const elementValueType = (col: Column): CqlType =>
  col.type.kind === 'map'
    ? col.type.value
    : col.type.kind === 'list'
      ? col.type.element
      : { kind: 'native', name: 'boolean' };

const NO_DEL = -(1n << 90n);
const NEVER = Number.POSITIVE_INFINITY;

/**
 * The true time a write is landing at, while `applyWrites` applies one with a landing time of its
 * own (a replica that gets a statement after its coordinator took it: `replicas.ts`); null
 * otherwise. Only the cells' `at` (diagnosis) reads it: a statement's TTL, `now()` and LWT write
 * time are its coordinator's, the same on every replica, as Cassandra fixes them there.
 */
let landing: number | null = null;

interface Cell {
  v: unknown;
  ts: bigint;
  dead: boolean;
  /** True time (µs) at which a TTL cell expires; Infinity without TTL. */
  exp: number;
  /** True time (µs) it was applied, and the id of the statement that wrote it (diagnosis only). */
  at: number;
  by: number;
}

interface CollCell {
  coll: true;
  del: bigint;
  elems: Map<string, { key: unknown; cell: Cell }>;
}

type Slot = Cell | CollCell;

interface Row {
  ck: unknown[];
  marker: Cell | null;
  del: bigint;
  cells: Map<string, Slot>;
}

interface RangeDel {
  eq: unknown[];
  slice?: { op: Exclude<Cmp, '='>; v: unknown };
  ts: bigint;
}

interface Partition {
  table: TableSchema;
  pk: unknown[];
  key: string;
  /** The partition's token, computed when first needed (scans and multi-partition reads). */
  token: bigint | null;
  del: bigint;
  statics: Map<string, Slot>;
  rows: Map<string, Row>;
  sorted: Row[] | null;
  ranges: RangeDel[];
}

/** A partition's raw cells and tombstones (`CqlEngine.rawPartition`, `mergePartition`). */
export type RawPartition = Partition;

/** Where a paged read resumes: after this row (`ck` null: the partition's static row). */
export interface PageState {
  token: bigint;
  key: string;
  ck: unknown[] | null;
  returned: number;
}

export type ResultRow = Record<string, unknown>;

/** Write time and origin of a cell a read returned (`meta`), for the simulation's diagnosis. */
export interface CellMeta {
  ts: bigint;
  at: number;
  by: number;
}

export interface ReadResult {
  rows: ResultRow[];
  next: PageState | null;
  meta?: Record<string, CellMeta>[];
}

/** One partition's share of a bound write: applied atomically by `applyWrites`. */
export interface PartitionWrite {
  table: string;
  key: string;
  pk: unknown[];
  /**
   * Applies to the partition at true time `now`; an LWT returns its `[applied]` row.
   * `unconditional`: an LWT's write without its condition (a Paxos commit reaching a replica that
   * was not in the round's quorum: the decision was taken there).
   */
  apply(part: Partition, now: number, unconditional?: boolean): ResultRow | undefined;
  lwt: boolean;
  counter: boolean;
}

const tokenOfPart = (part: Partition): bigint => {
  if (part.token === null) part.token = tokenOf(part.key);
  return part.token;
};

const UNSET = Symbol('unset');
const NOW = Symbol('now');

interface Prepared {
  s: Statement;
  table: TableSchema;
  /** The `=` / `IN` restriction of each key column, by name. */
  keyRestrictions: Map<string, Restriction>;
  /** A SELECT's restrictions, sorted by role. */
  plan?: ReadPlan;
  output?: OutputEntry[];
}

interface OutputEntry {
  alias: string;
  k: 'col' | 'writetime' | 'ttl' | 'token';
  col: Column | null;
  /** Position of a key column in the partition or clustering key. */
  index: number;
}

interface ReadPlan {
  partitions: Restriction[] | 'scan';
  tokens: Extract<Restriction, { k: 'token' }>[];
  clustering: Restriction[];
}

/** Statements parsed and validated once per schema (every schedule's engine shares them). */
const PREPARED = new WeakMap<Schema, Map<string, Prepared>>();

const cmpOk = (c: number, op: Cmp): boolean =>
  op === '=' ? c === 0 : op === '<' ? c < 0 : op === '<=' ? c <= 0 : op === '>' ? c > 0 : c >= 0;

function nativeOf(t: CqlType, what: string, text: string): NativeType {
  if (t.kind !== 'native')
    throw new CqlUnsupportedError(`${what}: a collection where a native value is needed`, text);
  return t.name;
}

export class CqlEngine {
  private readonly data = new Map<string, Map<string, Partition>>();
  private readonly prepared: Map<string, Prepared>;
  /**
   * Told the partitions each SELECT names (`table|key`, whether they exist or not; a scan:
   * `table|*`) and each partition a write is applied to, with the true time: the simulation's
   * staleness check watches what a read depends on (`read-sim.ts`). Null: nobody watches.
   */
  watch: {
    read(partition: string): void;
    write(partition: string, now: number): void;
  } | null = null;

  constructor(readonly schema: Schema) {
    for (const name of schema.keys()) this.data.set(name, new Map());
    let prepared = PREPARED.get(schema);
    if (!prepared) {
      prepared = new Map();
      PREPARED.set(schema, prepared);
    }
    this.prepared = prepared;
  }

  /** Parses and validates a statement once; throws `CqlUnsupportedError` for shapes not modelled. */
  prepare(query: string): Prepared {
    let p = this.prepared.get(query);
    if (!p) {
      const s = parseStatement(query);
      const table = this.schema.get(s.table);
      if (!table) throw new CqlUnsupportedError(`unknown table ${s.table}`, query);
      const keyRestrictions = new Map<string, Restriction>();
      if (s.kind !== 'insert')
        for (const r of s.where) if (r.k === 'eq' || r.k === 'in') keyRestrictions.set(r.col, r);
      p = { s, table, keyRestrictions };
      this.validate(p);
      if (s.kind === 'select') p.plan = this.readRestrictions(p);
      this.prepared.set(query, p);
    }
    return p;
  }

  /** The parsed statement (validated against the schema). */
  statement(query: string): Statement {
    return this.prepare(query).s;
  }

  isSelect(query: string): boolean {
    return this.prepare(query).s.kind === 'select';
  }

  private col(p: Prepared, name: string): Column {
    const c = p.table.columns.get(name);
    if (!c) throw new CqlUnsupportedError(`unknown column ${p.table.name}.${name}`, p.s.text);
    return c;
  }

  private validate(p: Prepared): void {
    const { s, table } = p;
    const fail = (what: string): never => {
      throw new CqlUnsupportedError(what, s.text);
    };
    if (s.kind === 'insert') {
      for (const c of s.cols) this.col(p, c);
      if (table.counter) fail('INSERT into a counter table');
      for (const k of table.partitionKey) if (!s.cols.includes(k)) fail(`INSERT without partition key ${k}`);
      const hasCk = table.clustering.every((k) => s.cols.includes(k));
      const onlyStatic = s.cols.every((c) => {
        const r = this.col(p, c).role;
        return r === 'partition' || r === 'static';
      });
      if (!hasCk && !onlyStatic) fail('INSERT without the full clustering key');
      if (s.conditions.length > 0 && s.using.timestamp) fail('USING TIMESTAMP on a conditional update');
      return;
    }
    if (s.kind === 'update' || s.kind === 'delete') {
      const cols = s.kind === 'update' ? s.assignments.map((a) => a.col) : s.targets.map((t) => t.col);
      for (const c of cols) {
        const col = this.col(p, c);
        if (col.role === 'partition' || col.role === 'clustering') fail(`SET of primary key column ${c}`);
      }
      for (const cond of s.conditions) if (cond.k === 'eq') this.col(p, cond.col);
      if (s.conditions.length > 0 && s.using.timestamp) fail('USING TIMESTAMP on a conditional update');
      if (table.counter && s.kind === 'delete') fail('DELETE from a counter table');
      if (table.counter && s.using.timestamp) fail('USING TIMESTAMP on a counter update');
      this.writeRestrictions(p, s.where, cols);
      if (s.kind === 'update') {
        for (const a of s.assignments) {
          const col = this.col(p, a.col);
          const isCounter = col.type.kind === 'native' && col.type.name === 'counter';
          if ((a.k === 'add' || a.k === 'sub') && col.type.kind === 'native' && !isCounter)
            fail(`${a.col} = ${a.col} ± on a non-counter`);
          if (isCounter && a.k !== 'add' && a.k !== 'sub') fail(`plain SET of counter ${a.col}`);
          if (a.k === 'prepend') fail('list prepend');
          if (a.k === 'elem' && col.type.kind !== 'map') fail(`element assignment on ${a.col} (only maps)`);
        }
      }
      return;
    }
    // select
    for (const sel of s.selectors) {
      if (sel.k === 'col' || sel.k === 'writetime' || sel.k === 'ttl') {
        const col = this.col(p, sel.col);
        if (sel.k !== 'col' && (col.role === 'partition' || col.role === 'clustering'))
          fail(`${sel.k}() of a primary key column`);
        if (sel.k !== 'col' && col.type.kind !== 'native') fail(`${sel.k}() of a collection`);
        if (sel.k !== 'col' && table.counter) fail(`${sel.k}() of a counter`);
        if (s.distinct && col.role !== 'partition' && col.role !== 'static')
          fail('DISTINCT with a non-static column');
      } else if (sel.k === 'token') {
        if (sel.cols.join(',') !== table.partitionKey.join(','))
          fail('token() of other than the partition key');
      } else if (s.distinct) fail('DISTINCT *');
    }
    const plan = this.readRestrictions(p);
    if (s.distinct && plan.clustering.length > 0) fail('DISTINCT with a clustering restriction');
    if (s.orderBy.length > 0) {
      if (plan.partitions === 'scan') fail('ORDER BY without a partition key restriction');
      s.orderBy.forEach((o, i) => {
        if (table.clustering[i] !== o.col) fail('ORDER BY other than the clustering columns in order');
      });
    }
  }

  /** Checks a write's WHERE: the whole partition key, then what the targets need of the clustering. */
  private writeRestrictions(p: Prepared, where: Restriction[], cols: string[]): void {
    const { s, table } = p;
    const fail = (what: string): never => {
      throw new CqlUnsupportedError(what, s.text);
    };
    const by = new Map<string, Restriction>();
    for (const r of where) {
      if (r.k === 'tuple' || r.k === 'token') fail(`${r.k} restriction in a write`);
      const col = this.col(p, (r as { col: string }).col);
      if (col.role !== 'partition' && col.role !== 'clustering')
        fail(`restriction on non-key column ${col.name}`);
      if (by.has(col.name) && r.k !== 'slice') fail(`two restrictions on ${col.name}`);
      by.set(col.name, r);
    }
    for (const k of table.partitionKey) {
      const r = by.get(k);
      if (!r || (r.k !== 'eq' && r.k !== 'in')) fail(`write without = on partition key ${k}`);
    }
    const allStatic = cols.length > 0 && cols.every((c) => this.col(p, c).role === 'static');
    const ckRestricted = table.clustering.filter((k) => by.has(k));
    if (allStatic) {
      if (ckRestricted.length > 0) fail('a static write restricting clustering columns');
      return;
    }
    if (s.kind === 'update' || (s.kind === 'delete' && cols.length > 0)) {
      for (const k of table.clustering) {
        const r = by.get(k);
        if (!r || (r.k !== 'eq' && r.k !== 'in')) fail(`write of regular columns without = on ${k}`);
      }
      return;
    }
    // DELETE of rows: an = prefix, then at most one slice on the next column (range deletion).
    let sliced = false;
    for (const k of table.clustering) {
      const r = by.get(k);
      if (!r) {
        sliced = true;
        continue;
      }
      if (sliced) fail(`restriction on ${k} after an unrestricted or sliced column`);
      if (r.k === 'in') fail('IN in a range deletion');
      if (r.k === 'slice') sliced = true;
    }
  }

  private readRestrictions(p: Prepared): ReadPlan {
    const { s, table } = p;
    if (s.kind !== 'select') throw new Error('not a select');
    const fail = (what: string): never => {
      throw new CqlUnsupportedError(what, s.text);
    };
    const pk: Restriction[] = [];
    const tokens: Extract<Restriction, { k: 'token' }>[] = [];
    const ck: Restriction[] = [];
    for (const r of s.where) {
      if (r.k === 'token') {
        if (r.cols.join(',') !== table.partitionKey.join(','))
          fail('token() of other than the partition key');
        tokens.push(r);
        continue;
      }
      const cols = r.k === 'tuple' ? r.cols : [r.col];
      const roles = cols.map((c) => this.col(p, c).role);
      if (roles.every((x) => x === 'partition')) {
        if (r.k !== 'eq' && r.k !== 'in') fail('a slice on the partition key');
        pk.push(r);
      } else if (roles.every((x) => x === 'clustering')) ck.push(r);
      else fail(`restriction on non-key column(s) ${cols.join(', ')} (ALLOW FILTERING)`);
    }
    if (pk.length > 0 && tokens.length > 0) fail('partition key and token restrictions together');
    if (pk.length > 0) {
      const restricted = new Set(pk.map((r) => (r as { col: string }).col));
      if (restricted.size !== pk.length || table.partitionKey.some((k) => !restricted.has(k)))
        fail('a partial partition key');
    } else if (ck.length > 0) fail('clustering restrictions without the partition key');
    // Clustering: `=`/`IN` on a prefix, then slices (single-column on one column, or tuples
    // starting at that column over consecutive columns); nothing after.
    let i = 0;
    const order = table.clustering;
    const eqCols = new Set<string>();
    for (const r of ck) if (r.k === 'eq' || r.k === 'in') eqCols.add(r.col);
    while (i < order.length && eqCols.has(order[i] as string)) i++;
    for (const r of ck) {
      if (r.k === 'eq' || r.k === 'in') {
        if (order.indexOf(r.col) >= i) fail(`= on ${r.col} after a gap in the clustering key`);
      } else if (r.k === 'slice') {
        if (order.indexOf(r.col) !== i) fail(`slice on ${r.col} not right after the = prefix`);
      } else if (r.k === 'tuple') {
        r.cols.forEach((c, j) => {
          if (order.indexOf(c) !== i + j) fail('tuple slice not over consecutive clustering columns');
        });
      }
    }
    return { partitions: pk.length > 0 ? pk : 'scan', tokens, clustering: ck };
  }

  // ---- binding ----

  private value(t: Term, params: readonly unknown[], type: CqlType, what: string, text: string): unknown {
    switch (t.k) {
      case 'bind': {
        const v = params[t.i];
        if (v === undefined) return UNSET;
        if (v === null) return null;
        return this.coerce(type, v, what, text);
      }
      case 'null':
        return null;
      case 'now':
        if (!(type.kind === 'native' && type.name === 'timestamp'))
          throw new CqlUnsupportedError(`toTimestamp(now()) for non-timestamp ${what}`, text);
        return NOW;
      case 'lit': {
        let v = t.v;
        if (
          typeof v === 'bigint' &&
          type.kind === 'native' &&
          (type.name === 'int' || type.name === 'double')
        )
          v = Number(v);
        return this.coerce(type, v, what, text);
      }
      case 'coll': {
        if (type.kind === 'native')
          throw new CqlBindError(`${what}: a collection literal for a native column`);
        if (t.kind === 'map') {
          if (type.kind !== 'map') throw new CqlBindError(`${what}: a map literal`);
          const out: [unknown, unknown][] = t.items.map((item, j) => [
            this.value((t.keys as Term[])[j] as Term, params, type.key, what, text),
            this.value(item, params, type.value, what, text),
          ]);
          return new Map(out);
        }
        const element = type.kind === 'map' ? type.key : type.element;
        return t.items.map((item) => this.value(item, params, element, what, text));
      }
    }
  }

  private coerce(type: CqlType, v: unknown, what: string, text: string): unknown {
    if (type.kind === 'native') return coerceNative(type.name, v, what);
    if (type.kind === 'map') {
      const entries: [unknown, unknown][] =
        v instanceof Map ? [...v] : typeof v === 'object' && v !== null ? Object.entries(v) : [];
      if (!(v instanceof Map) && (typeof v !== 'object' || v === null || Array.isArray(v)))
        throw new CqlBindError(`${what}: not a map`);
      return new Map(
        entries.map(([k, x]) => [
          this.coerce(
            type.key,
            type.key.kind === 'native' && type.key.name === 'bigint' && typeof k === 'string' ? BigInt(k) : k,
            what,
            text,
          ),
          this.coerce(type.value, x, what, text),
        ]),
      );
    }
    if (!Array.isArray(v) && !(v instanceof Set)) throw new CqlBindError(`${what}: not a ${type.kind}`);
    return [...v].map((x) => this.coerce(type.element, x, what, text));
  }

  private keyValues(p: Prepared, cols: readonly string[], params: readonly unknown[]): unknown[][] {
    let tuple: unknown[] | null = [];
    let tuples: unknown[][] | null = null;
    for (const c of cols) {
      const col = this.col(p, c);
      const r = p.keyRestrictions.get(c);
      if (!r) throw new CqlUnsupportedError(`no value for key column ${c}`, p.s.text);
      if (r.k === 'eq') {
        const v = this.value(r.term, params, col.type, c, p.s.text);
        if (v === null || v === UNSET) throw new CqlBindError(`${c}: a null key value`);
        if (tuple) tuple.push(v);
        else for (const t of tuples as unknown[][]) t.push(v);
        continue;
      }
      if (r.k !== 'in') throw new CqlUnsupportedError(`key column ${c} not restricted by = or IN`, p.s.text);
      let values: unknown[];
      if (Array.isArray(r.terms)) values = r.terms.map((t) => this.value(t, params, col.type, c, p.s.text));
      else {
        const list = this.value(
          r.terms,
          params,
          { kind: 'list', element: col.type, frozen: true },
          c,
          p.s.text,
        );
        if (!Array.isArray(list)) throw new CqlBindError(`${c}: IN needs a list`);
        values = list;
      }
      for (const v of values) if (v === null || v === UNSET) throw new CqlBindError(`${c}: a null key value`);
      const distinct = [...new Map(values.map((v) => [keyPart(v), v])).values()];
      const base: unknown[][] = tuple ? [tuple] : (tuples as unknown[][]);
      tuples = base.flatMap((t) => distinct.map((v) => [...t, v]));
      tuple = null;
    }
    return tuple ? [tuple] : (tuples as unknown[][]);
  }

  private timestampOf(
    p: Prepared,
    using: { timestamp?: Term },
    params: readonly unknown[],
    clientTs: bigint,
  ): bigint {
    if (!using.timestamp) return clientTs;
    const v = this.value(
      using.timestamp,
      params,
      { kind: 'native', name: 'bigint' },
      'USING TIMESTAMP',
      p.s.text,
    );
    if (typeof v !== 'bigint') throw new CqlBindError('USING TIMESTAMP: null or unset');
    return v;
  }

  private ttlOf(p: Prepared, using: { ttl?: Term }, params: readonly unknown[]): number {
    if (!using.ttl) return p.table.defaultTtl;
    const v = this.value(using.ttl, params, { kind: 'native', name: 'int' }, 'USING TTL', p.s.text);
    if (typeof v !== 'number' || v < 0) throw new CqlBindError('USING TTL: not a non-negative int');
    return v;
  }

  /**
   * Binds a write (INSERT, UPDATE, DELETE) at client timestamp `clientTs`: one `PartitionWrite` per
   * partition it touches. `stmtId` is recorded on every cell it writes.
   */
  bindWrite(query: string, params: readonly unknown[], clientTs: bigint, stmtId: number): PartitionWrite[] {
    const p = this.prepare(query);
    const { s, table } = p;
    if (s.kind === 'select') throw new Error('bindWrite of a SELECT');
    if (params.length !== s.binds)
      throw new CqlBindError(`${s.binds} bind markers, ${params.length} values: ${s.text}`);
    const lwt = s.conditions.length > 0;
    const ts = lwt ? null : this.timestampOf(p, s.using, params, clientTs);
    const ttl = s.kind === 'delete' ? 0 : this.ttlOf(p, s.using, params);
    const conds = s.conditions.map((c) =>
      c.k === 'eq' ? { ...c, v: this.value(c.term, params, this.col(p, c.col).type, c.col, s.text) } : c,
    );
    let pks: unknown[][];
    let cks: unknown[][] | null;
    let body: (part: Partition, row: () => Row, ts: bigint, now: number) => void;
    if (s.kind === 'insert') {
      const val = (c: string) => {
        const v = this.value(s.values[s.cols.indexOf(c)] as Term, params, this.col(p, c).type, c, s.text);
        if (v === null || v === UNSET) throw new CqlBindError(`${c}: a null key value`);
        return v;
      };
      pks = [table.partitionKey.map(val)];
      const hasCk = table.clustering.every((k) => s.cols.includes(k));
      cks = hasCk ? [table.clustering.map(val)] : null;
      const cells = s.cols
        .map((c, j) => ({ col: this.col(p, c), term: s.values[j] as Term }))
        .filter(({ col }) => col.role === 'regular' || col.role === 'static')
        .map(({ col, term }) => ({ col, v: this.value(term, params, col.type, col.name, s.text) }));
      body = (part, row, t, now) => {
        const exp = ttl > 0 ? now + ttl * 1e6 : NEVER;
        if (cks) {
          const r = row();
          const marker: Cell = { v: null, ts: t, dead: false, exp, at: landing ?? now, by: stmtId };
          if (
            !r.marker ||
            marker.ts > r.marker.ts ||
            (marker.ts === r.marker.ts && marker.exp >= r.marker.exp)
          )
            r.marker = marker;
        }
        for (const { col, v } of cells) {
          if (v === UNSET) continue;
          const slots = col.role === 'static' ? part.statics : row().cells;
          this.writeValue(slots, col, v, t, exp, now, stmtId);
        }
      };
    } else {
      pks = this.keyValues(p, table.partitionKey, params);
      const cols = s.kind === 'update' ? s.assignments.map((a) => a.col) : s.targets.map((t) => t.col);
      const allStatic = cols.length > 0 && cols.every((c) => this.col(p, c).role === 'static');
      const fullCk =
        table.clustering.length > 0 &&
        table.clustering.every((k) => s.where.some((r) => (r.k === 'eq' || r.k === 'in') && r.col === k));
      cks = allStatic
        ? null
        : table.clustering.length === 0
          ? [[]]
          : fullCk
            ? this.keyValues(p, table.clustering, params)
            : null;
      if (s.kind === 'update') {
        const assigns = s.assignments.map((a) => this.bindAssignment(p, a, params));
        body = (part, row, t, now) => {
          const exp = ttl > 0 ? now + ttl * 1e6 : NEVER;
          for (const a of assigns) a(part, row, t, exp, now, stmtId);
        };
      } else if (s.targets.length > 0) {
        const targets = s.targets.map((t) => ({
          col: this.col(p, t.col),
          key: t.key
            ? this.value(t.key, params, this.elementKeyType(this.col(p, t.col)), t.col, s.text)
            : undefined,
        }));
        body = (part, row, t, now) => {
          for (const { col, key } of targets) {
            const slots = col.role === 'static' ? part.statics : row().cells;
            if (key !== undefined) this.deleteElement(slots, col, key, t, now, stmtId);
            else this.writeValue(slots, col, null, t, NEVER, now, stmtId);
          }
        };
      } else if (fullCk) {
        body = (_part, row, t) => {
          const r = row();
          if (t > r.del) r.del = t;
        };
      } else {
        // A partition deletion, or a range: the = prefix and an optional slice on the next column.
        const eqPrefix: unknown[] = [];
        let slices: { op: Exclude<Cmp, '='>; v: unknown }[] = [];
        for (const k of table.clustering) {
          const r = s.where.find((x) => (x.k === 'eq' || x.k === 'slice') && x.col === k);
          if (!r) break;
          const col = this.col(p, k);
          if (r.k === 'eq') eqPrefix.push(this.value(r.term, params, col.type, k, s.text));
          else {
            slices = s.where
              .filter((x): x is Extract<Restriction, { k: 'slice' }> => x.k === 'slice' && x.col === k)
              .map((x) => ({ op: x.op, v: this.value(x.term, params, col.type, k, s.text) }));
            break;
          }
        }
        const whole = eqPrefix.length === 0 && slices.length === 0;
        body = (part, _row, t) => {
          if (whole) {
            if (t > part.del) part.del = t;
            this.purge(part, null, t);
            return;
          }
          if (slices.length > 1) throw new CqlUnsupportedError('a closed range deletion', s.text);
          const rt: RangeDel = slices[0]
            ? { eq: eqPrefix, slice: slices[0], ts: t }
            : { eq: eqPrefix, ts: t };
          part.ranges = part.ranges.filter((old) => !this.covers(part.table, rt, old));
          if (!part.ranges.some((old) => this.covers(part.table, old, rt))) part.ranges.push(rt);
          this.purge(part, rt, t);
        };
      }
    }
    const out: PartitionWrite[] = [];
    for (const pk of pks) {
      const key = pk.length === 1 ? keyPart(pk[0]) : pk.map(keyPart).join('|');
      const rowsToWrite = cks ?? [null];
      out.push({
        table: table.name,
        key,
        pk,
        lwt,
        counter: table.counter,
        apply: (part, now, unconditional = false) => {
          const t = ts ?? BigInt(Math.floor(now));
          if (lwt && !unconditional) {
            const ck = rowsToWrite[0] ?? null;
            const verdict = this.checkConditions(p, part, ck, conds as Condition[], now);
            if (!verdict['[applied]']) return verdict;
          }
          for (const ck of rowsToWrite) {
            const row = () => {
              if (!ck) throw new CqlUnsupportedError('a row write without a clustering key', s.text);
              return this.row(part, ck);
            };
            body(part, row, t, now);
          }
          return lwt ? { '[applied]': true } : undefined;
        },
      });
    }
    return out;
  }

  private elementKeyType(col: Column): CqlType {
    if (col.type.kind === 'map') return col.type.key;
    if (col.type.kind === 'set') return col.type.element;
    throw new CqlUnsupportedError(`element of ${col.name}`, col.name);
  }

  private bindAssignment(
    p: Prepared,
    a: Assignment,
    params: readonly unknown[],
  ): (part: Partition, row: () => Row, t: bigint, exp: number, now: number, by: number) => void {
    const col = this.col(p, a.col);
    const slotsOf = (part: Partition, row: () => Row) => (col.role === 'static' ? part.statics : row().cells);
    if (a.k === 'set') {
      const v = this.value(a.term, params, col.type, a.col, p.s.text);
      return (part, row, t, exp, now, by) => {
        if (v === UNSET) return;
        this.writeValue(slotsOf(part, row), col, v, t, exp, now, by);
      };
    }
    if (a.k === 'elem') {
      const type = col.type as Extract<CqlType, { kind: 'map' }>;
      const key = this.value(a.key, params, type.key, a.col, p.s.text);
      const v = this.value(a.term, params, type.value, a.col, p.s.text);
      return (part, row, t, exp, now, by) => {
        if (v === null) this.deleteElement(slotsOf(part, row), col, key, t, now, by);
        else this.addElements(slotsOf(part, row), col, [[key, v]], t, exp, now, by);
      };
    }
    if (a.k === 'add' || a.k === 'sub') {
      if (col.type.kind === 'native') {
        const d = this.value(a.term, params, col.type, a.col, p.s.text);
        if (typeof d !== 'bigint') throw new CqlBindError(`${a.col}: a null counter delta`);
        const delta = a.k === 'add' ? d : -d;
        return (part, row, _t, _exp, now, by) => {
          const slots = slotsOf(part, row);
          const old = slots.get(col.name) as Cell | undefined;
          slots.set(col.name, {
            v: (old ? (old.v as bigint) : 0n) + delta,
            ts: 0n,
            dead: false,
            exp: NEVER,
            at: landing ?? now,
            by,
          });
        };
      }
      const v = this.value(a.term, params, col.type, a.col, p.s.text);
      return (part, row, t, exp, now, by) => {
        if (v === UNSET || v === null) return;
        const slots = slotsOf(part, row);
        if (a.k === 'sub') {
          const keys = v instanceof Map ? [...v.keys()] : (v as unknown[]);
          if (col.type.kind === 'list') throw new CqlUnsupportedError('list element removal', p.s.text);
          for (const k of keys) this.deleteElement(slots, col, k, t, now, by);
        } else this.addElements(slots, col, this.entriesOf(col, v, t), t, exp, now, by);
      };
    }
    throw new CqlUnsupportedError(`assignment ${a.k}`, p.s.text);
  }

  private entriesOf(col: Column, v: unknown, t: bigint): [unknown, unknown][] {
    if (v instanceof Map) return [...v];
    const items = v as unknown[];
    if (col.type.kind === 'set') return items.map((x) => [x, null]);
    // List elements are keyed by write time and index, as a time-UUID would order them.
    return items.map((x, j) => [`${t.toString().padStart(24, '0')}:${String(j).padStart(6, '0')}`, x]);
  }

  private addElements(
    slots: Map<string, Slot>,
    col: Column,
    entries: [unknown, unknown][],
    t: bigint,
    exp: number,
    now: number,
    by: number,
  ): void {
    let coll = slots.get(col.name) as CollCell | undefined;
    if (!coll) {
      coll = { coll: true, del: NO_DEL, elems: new Map() };
      slots.set(col.name, coll);
    }
    const valueType = elementValueType(col);
    for (const [k, v] of entries) {
      const ek = keyPart(k);
      const cell: Cell = { v, ts: t, dead: false, exp, at: landing ?? now, by };
      const old = coll.elems.get(ek);
      if (!old || this.wins(cell, old.cell, valueType)) coll.elems.set(ek, { key: k, cell });
    }
  }

  private deleteElement(
    slots: Map<string, Slot>,
    col: Column,
    key: unknown,
    t: bigint,
    now: number,
    by: number,
  ) {
    let coll = slots.get(col.name) as CollCell | undefined;
    if (!coll) {
      coll = { coll: true, del: NO_DEL, elems: new Map() };
      slots.set(col.name, coll);
    }
    const ek = keyPart(key);
    const cell: Cell = { v: null, ts: t, dead: true, exp: NEVER, at: landing ?? now, by };
    const old = coll.elems.get(ek);
    if (!old || this.wins(cell, old.cell, col.type)) coll.elems.set(ek, { key, cell });
  }

  /** Writes a whole value (or a tombstone for null) of `col` at `t`. */
  private writeValue(
    slots: Map<string, Slot>,
    col: Column,
    v: unknown,
    t: bigint,
    exp: number,
    now: number,
    by: number,
  ): void {
    if (v === NOW) v = new Date(Math.floor(now / 1000));
    const nonFrozen = col.type.kind !== 'native' && !col.type.frozen;
    if (nonFrozen) {
      let coll = slots.get(col.name) as CollCell | undefined;
      if (!coll) {
        coll = { coll: true, del: NO_DEL, elems: new Map() };
        slots.set(col.name, coll);
      }
      if (v === null) {
        if (t > coll.del) coll.del = t;
        return;
      }
      if (t - 1n > coll.del) coll.del = t - 1n;
      this.addElements(slots, col, this.entriesOf(col, v, t), t, exp, now, by);
      return;
    }
    const cell: Cell = { v, ts: t, dead: v === null, exp, at: landing ?? now, by };
    const old = slots.get(col.name) as Cell | undefined;
    if (!old || this.wins(cell, old, col.type)) slots.set(col.name, cell);
  }

  /** Cassandra's reconciliation of two versions of one cell: does `a` replace `b`? */
  private wins(a: Cell, b: Cell, type: CqlType): boolean {
    if (a.ts !== b.ts) return a.ts > b.ts;
    if (a.dead !== b.dead) return a.dead;
    if (a.dead) return false;
    const c = compareSerialized(type, a.v, b.v);
    if (c !== 0) return c > 0;
    return a.exp > b.exp;
  }

  private checkConditions(
    p: Prepared,
    part: Partition,
    ck: unknown[] | null,
    conds: (Condition & { v?: unknown })[],
    now: number,
  ): ResultRow {
    const { table } = p;
    const row = ck ? part.rows.get(ck.map(keyPart).join('|')) : undefined;
    const rowDel = row ? this.rowDeletion(part, row) : part.del;
    const exists = row ? this.rowLive(row, rowDel, now) : false;
    const current = (name: string): unknown => {
      const col = this.col(p, name);
      const slot = col.role === 'static' ? part.statics.get(name) : row?.cells.get(name);
      return this.read(slot, col, col.role === 'static' ? part.del : rowDel, now);
    };
    const first = conds[0];
    if (first?.k === 'notExists' || first?.k === 'exists') {
      const ok = first.k === 'notExists' ? !exists : exists;
      if (ok) return { '[applied]': true };
      const out: ResultRow = { '[applied]': false };
      if (exists && row) {
        table.partitionKey.forEach((k, j) => {
          out[k] = part.pk[j];
        });
        table.clustering.forEach((k, j) => {
          out[k] = row.ck[j];
        });
        for (const col of table.columns.values())
          if (col.role === 'regular' || col.role === 'static') out[col.name] = current(col.name);
      }
      return out;
    }
    let ok = true;
    const out: ResultRow = { '[applied]': false };
    for (const c of conds) {
      if (c.k !== 'eq') continue;
      const col = this.col(p, c.col);
      const cur = current(c.col);
      out[c.col] = cur;
      const want = c.v === UNSET ? null : c.v;
      const same =
        cur === null || want === null
          ? cur === want
          : col.type.kind === 'native'
            ? compareNative(col.type.name, cur, want) === 0
            : compareSerialized(col.type, cur, want) === 0;
      if (!same) ok = false;
    }
    return ok ? { '[applied]': true } : out;
  }

  // ---- storage ----

  private partition(table: string, key: string, pk: unknown[]): Partition {
    const parts = this.data.get(table) as Map<string, Partition>;
    let part = parts.get(key);
    if (!part) {
      part = {
        table: this.schema.get(table) as TableSchema,
        pk,
        key,
        token: null,
        del: NO_DEL,
        statics: new Map(),
        rows: new Map(),
        sorted: null,
        ranges: [],
      };
      parts.set(key, part);
    }
    return part;
  }

  private row(part: Partition, ck: unknown[]): Row {
    const k = ck.length === 1 ? keyPart(ck[0]) : ck.map(keyPart).join('|');
    let r = part.rows.get(k);
    if (!r) {
      r = { ck, marker: null, del: NO_DEL, cells: new Map() };
      part.rows.set(k, r);
      part.sorted = null;
    }
    return r;
  }

  /**
   * Applies writes atomically at true time `now`; returns the LWT verdict when there is one. With
   * `o.landed`, the writes are the statement's as its coordinator took them at `now` (its TTLs,
   * `now()`, an LWT's write time) landing here at `o.landed` (the cells' `at`, the watch's time);
   * with `o.unconditional`, an LWT's write without its condition.
   */
  applyWrites(
    writes: readonly PartitionWrite[],
    now: number,
    o: { landed?: number; unconditional?: boolean } = {},
  ): ResultRow | undefined {
    let verdict: ResultRow | undefined;
    landing = o.landed ?? null;
    try {
      for (const w of writes) {
        const r = w.apply(this.partition(w.table, w.key, w.pk), now, o.unconditional ?? false);
        if (r) verdict = r;
        this.watch?.write(`${w.table}|${w.key}`, o.landed ?? now);
      }
    } finally {
      landing = null;
    }
    return verdict;
  }

  // ---- replicas (`replicas.ts`): a partition's raw cells and tombstones, merged ----

  /** The partitions a SELECT reads: its keys (`=` / `IN` on the partition key), or null for a scan. */
  readScope(query: string, params: readonly unknown[]): { table: string; keys: string[] | null } {
    const p = this.prepare(query);
    const { s, table } = p;
    if (s.kind !== 'select') throw new Error('readScope of a write');
    if (params.length !== s.binds)
      throw new CqlBindError(`${s.binds} bind markers, ${params.length} values: ${s.text}`);
    if ((p.plan as ReadPlan).partitions === 'scan') return { table: table.name, keys: null };
    const keys = this.keyValues(p, table.partitionKey, params).map((pk) =>
      pk.length === 1 ? keyPart(pk[0]) : pk.map(keyPart).join('|'),
    );
    return { table: table.name, keys };
  }

  /** The keys of the partitions of `table` this node holds (data or tombstones). */
  partitionKeys(table: string): string[] {
    return [...(this.data.get(table)?.keys() ?? [])];
  }

  /** A partition's raw cells and tombstones, or null; read only (`mergePartition` copies what it takes). */
  rawPartition(table: string, key: string): RawPartition | null {
    return this.data.get(table)?.get(key) ?? null;
  }

  /**
   * Merges another node's raw partition into this one's as Cassandra reconciles two versions of
   * it: partition, row, range and cell tombstones kept at the newer time, each cell and collection
   * element last-writer-wins (`wins`, the rule one node applies to two writes of a cell), row
   * markers by write time; then what the merged tombstones shadow is dropped, as a write of them
   * would. Counter cells are taken only where this node has none (replicas never differ on a
   * counter: `replicas.ts`). Returns whether anything here changed.
   */
  mergePartition(src: RawPartition): boolean {
    const part = this.partition(src.table.name, src.key, src.pk);
    const table = part.table;
    let changed = false;
    if (src.del > part.del) {
      part.del = src.del;
      changed = true;
    }
    const mergeSlots = (into: Map<string, Slot>, from: Map<string, Slot>) => {
      for (const [name, slot] of from) {
        const col = table.columns.get(name) as Column;
        const cur = into.get(name);
        if ('coll' in slot) {
          let c = cur as CollCell | undefined;
          if (!c) {
            c = { coll: true, del: NO_DEL, elems: new Map() };
            into.set(name, c);
            changed = true;
          }
          if (slot.del > c.del) {
            c.del = slot.del;
            changed = true;
          }
          const valueType = elementValueType(col);
          for (const [ek, e] of slot.elems) {
            const old = c.elems.get(ek);
            if (!old || this.wins(e.cell, old.cell, valueType)) {
              c.elems.set(ek, { key: e.key, cell: { ...e.cell } });
              changed = true;
            }
          }
          continue;
        }
        if (!cur) {
          into.set(name, { ...slot });
          changed = true;
        } else if (
          !(col.type.kind === 'native' && col.type.name === 'counter') &&
          this.wins(slot, cur as Cell, col.type)
        ) {
          into.set(name, { ...slot });
          changed = true;
        }
      }
    };
    mergeSlots(part.statics, src.statics);
    for (const [k, r] of src.rows) {
      let row = part.rows.get(k);
      if (!row) {
        row = { ck: r.ck, marker: null, del: NO_DEL, cells: new Map() };
        part.rows.set(k, row);
        part.sorted = null;
        changed = true;
      }
      const m = r.marker;
      if (m && (!row.marker || m.ts > row.marker.ts || (m.ts === row.marker.ts && m.exp > row.marker.exp))) {
        row.marker = { ...m };
        changed = true;
      }
      if (r.del > row.del) {
        row.del = r.del;
        changed = true;
      }
      mergeSlots(row.cells, r.cells);
    }
    for (const rt of src.ranges) {
      if (part.ranges.some((old) => this.covers(table, old, rt))) continue;
      part.ranges = part.ranges.filter((old) => !this.covers(table, rt, old));
      part.ranges.push({ ...rt });
      changed = true;
    }
    if (changed) {
      if (part.del > NO_DEL) this.purge(part, null, part.del);
      for (const rt of part.ranges) this.purge(part, rt, rt.ts);
    }
    return changed;
  }

  /**
   * A partition's cells and tombstones as a canonical string ('' when absent), without the cells'
   * diagnosis fields: two nodes hold the same version of it exactly when their strings are equal.
   */
  partitionState(table: string, key: string): string {
    const part = this.data.get(table)?.get(key);
    if (!part) return '';
    // What a tombstone shadows is left out: a node that took the tombstone first keeps the shadowed
    // cell (a write below a tombstone is stored), one that took it last dropped it (`purge`).
    const cell = (c: Cell) => [c.v, c.ts, c.dead, c.exp];
    const byName = <T>([a]: [string, T], [b]: [string, T]) => (a < b ? -1 : a > b ? 1 : 0);
    const slots = (m: Map<string, Slot>, del: bigint) =>
      [...m.entries()]
        .sort(byName)
        .map(([name, slot]) => {
          if (!('coll' in slot)) return slot.ts > del || slot.ts === 0n ? [name, cell(slot)] : null;
          const d = slot.del > del ? slot.del : del;
          const elems = [...slot.elems.entries()]
            .sort(byName)
            .filter(([, e]) => e.cell.ts > d)
            .map(([ek, e]) => [ek, cell(e.cell)]);
          return elems.length > 0 || slot.del > del ? [name, slot.del > del ? slot.del : null, elems] : null;
        })
        .filter((x) => x !== null);
    const rows = [...part.rows.entries()]
      .sort(byName)
      .map(([k, r]) => {
        const d = this.rowDeletion(part, r);
        const marker = r.marker && r.marker.ts > d ? cell(r.marker) : null;
        const cells = slots(r.cells, d);
        const own = r.del > part.del ? r.del : null;
        return marker || cells.length > 0 || own !== null ? [k, marker, own, cells] : null;
      })
      .filter((x) => x !== null);
    const ranges = part.ranges.filter((rt) => rt.ts > part.del).map((rt) => [rt.eq, rt.slice ?? null, rt.ts]);
    // Ranges in a canonical order: two nodes may have received them in different orders.
    const canonicalRanges = ranges
      .map((r) => JSON.stringify(r, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)))
      .sort();
    const statics = slots(part.statics, part.del);
    if (part.del === NO_DEL && statics.length === 0 && rows.length === 0 && canonicalRanges.length === 0)
      return '';
    return JSON.stringify([part.del, statics, rows, canonicalRanges], (_, v) =>
      typeof v === 'bigint'
        ? `${v}n`
        : v instanceof Map
          ? [...v.entries()]
          : v instanceof Date
            ? `d${v.getTime()}`
            : v === Number.POSITIVE_INFINITY
              ? 'inf'
              : v,
    );
  }

  private compareCk(table: TableSchema, a: unknown[], b: unknown[]): number {
    for (let i = 0; i < table.clustering.length; i++) {
      const col = table.columns.get(table.clustering[i] as string) as Column;
      const c = compareNative(nativeOf(col.type, col.name, table.name), a[i], b[i]);
      if (c !== 0) return col.desc ? -c : c;
    }
    return 0;
  }

  private sortedRows(table: TableSchema, part: Partition): Row[] {
    if (!part.sorted) part.sorted = [...part.rows.values()].sort((x, y) => this.compareCk(table, x.ck, y.ck));
    return part.sorted;
  }

  private rowDeletion(part: Partition, row: Row): bigint {
    // biome-ignore lint/complexity/useMathMinMax: write times are bigints, which Math.max does not take
    let del = part.del > row.del ? part.del : row.del;
    for (const rt of part.ranges) {
      if (rt.ts > del && this.inRange(part.table, rt, row.ck)) del = rt.ts;
    }
    return del;
  }

  /** Whether tombstone `a` shadows everything `b` does (same prefix, a wider slice, no older). */
  private covers(table: TableSchema, a: RangeDel, b: RangeDel): boolean {
    if (a.ts < b.ts || a.eq.length !== b.eq.length) return false;
    for (let i = 0; i < a.eq.length; i++) {
      const col = table.columns.get(table.clustering[i] as string) as Column;
      if (compareNative(nativeOf(col.type, col.name, table.name), a.eq[i], b.eq[i]) !== 0) return false;
    }
    if (!a.slice) return true;
    if (!b.slice) return false;
    const upper = (op: string) => op === '<' || op === '<=';
    if (upper(a.slice.op) !== upper(b.slice.op)) return false;
    const col = table.columns.get(table.clustering[a.eq.length] as string) as Column;
    const c = compareNative(nativeOf(col.type, col.name, table.name), a.slice.v, b.slice.v);
    const aInclusive = a.slice.op === '<=' || a.slice.op === '>=';
    const bInclusive = b.slice.op === '<=' || b.slice.op === '>=';
    if (c === 0) return aInclusive || !bInclusive;
    return upper(a.slice.op) ? c > 0 : c < 0;
  }

  /**
   * Drops what a new tombstone (`rt`, or the whole partition when null) at `t` shadows: cells and
   * markers written at or below `t`, and rows left with nothing but an older deletion. The
   * tombstone itself stays, so a later write below `t` is still shadowed: reads are unchanged.
   */
  private purge(part: Partition, rt: RangeDel | null, t: bigint): void {
    const dropCells = (slots: Map<string, Slot>) => {
      for (const [name, slot] of slots) {
        if ('coll' in slot) {
          for (const [k, e] of slot.elems) if (e.cell.ts <= t) slot.elems.delete(k);
          if (slot.elems.size === 0 && slot.del <= t) slots.delete(name);
        } else if (slot.ts <= t && slot.ts !== 0n) slots.delete(name);
      }
    };
    if (!rt) dropCells(part.statics);
    for (const [k, row] of part.rows) {
      if (rt && !this.inRange(part.table, rt, row.ck)) continue;
      if (row.marker && row.marker.ts <= t) row.marker = null;
      dropCells(row.cells);
      if (!row.marker && row.cells.size === 0 && row.del <= t) {
        part.rows.delete(k);
        part.sorted = null;
      }
    }
  }

  private inRange(table: TableSchema, rt: RangeDel, ck: unknown[]): boolean {
    for (let i = 0; i < rt.eq.length; i++) {
      const col = table.columns.get(table.clustering[i] as string) as Column;
      if (compareNative(nativeOf(col.type, col.name, table.name), ck[i], rt.eq[i]) !== 0) return false;
    }
    if (rt.slice) {
      const col = table.columns.get(table.clustering[rt.eq.length] as string) as Column;
      const c = compareNative(nativeOf(col.type, col.name, table.name), ck[rt.eq.length], rt.slice.v);
      if (!cmpOk(c, rt.slice.op)) return false;
    }
    return true;
  }

  private live(c: Cell, del: bigint, now: number): boolean {
    return !c.dead && c.ts > del && c.exp > now;
  }

  private read(slot: Slot | undefined, col: Column, del: bigint, now: number): unknown {
    if (!slot) return null;
    if ('coll' in slot) {
      const d = slot.del > del ? slot.del : del;
      const elems = [...slot.elems.values()].filter((e) => this.live(e.cell, d, now));
      if (elems.length === 0) return null;
      const keyType =
        col.type.kind === 'map' ? col.type.key : col.type.kind === 'set' ? col.type.element : null;
      if (keyType && keyType.kind === 'native') {
        const kt = keyType.name;
        elems.sort((x, y) => compareNative(kt, x.key, y.key));
      } else elems.sort((x, y) => ((x.key as string) < (y.key as string) ? -1 : 1));
      if (col.type.kind === 'map') return Object.fromEntries(elems.map((e) => [String(e.key), e.cell.v]));
      if (col.type.kind === 'set') return elems.map((e) => e.key);
      return elems.map((e) => e.cell.v);
    }
    if (col.type.kind === 'native' && col.type.name === 'counter') return slot.v;
    return this.live(slot, del, now) ? slot.v : null;
  }

  private slotLive(slot: Slot, del: bigint, now: number): boolean {
    if ('coll' in slot) {
      const d = slot.del > del ? slot.del : del;
      for (const e of slot.elems.values()) if (this.live(e.cell, d, now)) return true;
      return false;
    }
    return this.live(slot, del, now);
  }

  private rowLive(row: Row, del: bigint, now: number): boolean {
    if (row.marker && this.live(row.marker, del, now)) return true;
    for (const slot of row.cells.values()) if (this.slotLive(slot, del, now)) return true;
    return false;
  }

  private staticsLive(part: Partition, now: number): boolean {
    for (const slot of part.statics.values()) if (this.slotLive(slot, part.del, now)) return true;
    return false;
  }

  // ---- reads ----

  /** Executes a SELECT at true time `now`, one page of at most `fetchSize` rows from `page`. */
  select(
    query: string,
    params: readonly unknown[],
    now: number,
    o: { fetchSize: number; page?: PageState | null; meta?: boolean },
  ): ReadResult {
    const p = this.prepare(query);
    const { s, table } = p;
    if (s.kind !== 'select') throw new Error('select of a write');
    if (params.length !== s.binds)
      throw new CqlBindError(`${s.binds} bind markers, ${params.length} values: ${s.text}`);
    const plan = p.plan as ReadPlan;
    let limit = Number.POSITIVE_INFINITY;
    if (s.limit) {
      const v = this.value(s.limit, params, { kind: 'native', name: 'int' }, 'LIMIT', s.text);
      if (typeof v !== 'number' || v <= 0) throw new CqlBindError('LIMIT must be a positive int');
      limit = v;
    }
    const returned = o.page?.returned ?? 0;
    const from = o.page ?? null;
    const want = Math.min(o.fetchSize, limit - returned);
    // Partitions, in token order.
    let parts: Partition[];
    const all = this.data.get(table.name) as Map<string, Partition>;
    if (plan.partitions === 'scan') {
      const bounds = plan.tokens.map((r) => ({
        op: r.op,
        v: this.value(r.term, params, { kind: 'native', name: 'bigint' }, 'token', s.text) as bigint,
      }));
      parts = [...all.values()].filter((x) => {
        const t = tokenOfPart(x);
        return bounds.every((b) => cmpOk(t < b.v ? -1 : t > b.v ? 1 : 0, b.op));
      });
      this.watch?.read(`${table.name}|*`);
    } else {
      const keys = this.keyValues(p, table.partitionKey, params).map((pk) =>
        pk.length === 1 ? keyPart(pk[0]) : pk.map(keyPart).join('|'),
      );
      if (this.watch) for (const k of keys) this.watch.read(`${table.name}|${k}`);
      parts = keys.map((k) => all.get(k)).filter((x): x is Partition => x !== undefined);
    }
    if (parts.length > 1 || from) {
      for (const x of parts) tokenOfPart(x);
      parts.sort((x, y) => {
        const [a, b] = [x.token as bigint, y.token as bigint];
        return a < b ? -1 : a > b ? 1 : x.key < y.key ? -1 : x.key > y.key ? 1 : 0;
      });
    }
    const filter = this.clusteringFilter(p, plan.clustering, params);
    const reversed =
      s.orderBy.length > 0 &&
      s.orderBy[0]?.desc !== (table.columns.get(table.clustering[0] as string) as Column).desc;
    if (
      s.orderBy.some(
        (ob, i) =>
          (ob.desc !== (table.columns.get(table.clustering[i] as string) as Column).desc) !== reversed,
      )
    )
      throw new CqlUnsupportedError('ORDER BY mixing clustering order and its reverse', s.text);
    const rows: ResultRow[] = [];
    const metas: Record<string, CellMeta>[] = [];
    let next: PageState | null = null;
    let last: PageState | null = null;
    scan: for (const part of parts) {
      const token = tokenOfPart(part);
      if (from && (token < from.token || (token === from.token && part.key < from.key))) continue;
      const samePart = from !== null && token === from.token && part.key === from.key;
      const statics = this.staticsLive(part, now);
      const candidates: (Row | null)[] = [];
      const dels: bigint[] = [];
      if (s.distinct) {
        let live = statics;
        for (const r of part.rows.values()) {
          if (live) break;
          live = this.rowLive(r, this.rowDeletion(part, r), now);
        }
        if (live) {
          candidates.push(null);
          dels.push(part.del);
        }
      } else {
        let ordered = this.sortedRows(table, part);
        if (reversed) ordered = [...ordered].reverse();
        for (const r of ordered) {
          if (!filter(r.ck)) continue;
          const del = this.rowDeletion(part, r);
          if (!this.rowLive(r, del, now)) continue;
          candidates.push(r);
          dels.push(del);
        }
        if (candidates.length === 0 && statics && plan.clustering.length === 0) {
          candidates.push(null);
          dels.push(part.del);
        }
      }
      for (let ci = 0; ci < candidates.length; ci++) {
        const row = candidates[ci] as Row | null;
        if (samePart && from) {
          if (from.ck === null || row === null) continue;
          const c = this.compareCk(table, row.ck, from.ck);
          if (reversed ? c >= 0 : c <= 0) continue;
        }
        if (rows.length >= want) {
          // Another row is there: page on, unless the LIMIT is what filled this page.
          if (returned + rows.length < limit && last) next = { ...last, returned: returned + rows.length };
          break scan;
        }
        rows.push(this.output(p, part, row, dels[ci] as bigint, now));
        if (o.meta) metas.push(this.metaOf(part, row));
        last = { token, key: part.key, ck: row ? row.ck : null, returned: 0 };
      }
    }
    const out: ReadResult = { rows, next };
    if (o.meta) out.meta = metas;
    return out;
  }

  private metaOf(part: Partition, row: Row | null): Record<string, CellMeta> {
    const out: Record<string, CellMeta> = {};
    const add = (slots: Map<string, Slot>) => {
      for (const [name, slot] of slots)
        if (!('coll' in slot)) out[name] = { ts: slot.ts, at: slot.at, by: slot.by };
    };
    add(part.statics);
    if (row) add(row.cells);
    return out;
  }

  private clusteringFilter(
    p: Prepared,
    rs: Restriction[],
    params: readonly unknown[],
  ): (ck: unknown[]) => boolean {
    const { table, s } = p;
    const idx = (c: string) => table.clustering.indexOf(c);
    const typeAt = (i: number) => {
      const col = table.columns.get(table.clustering[i] as string) as Column;
      return nativeOf(col.type, col.name, s.text);
    };
    const tests: ((ck: unknown[]) => boolean)[] = [];
    for (const r of rs) {
      if (r.k === 'eq' || r.k === 'in') {
        const i = idx(r.col);
        const values = this.keyValues(p, [r.col], params).map((t) => t[0]);
        const type = typeAt(i);
        tests.push((ck) => values.some((v) => compareNative(type, ck[i], v) === 0));
      } else if (r.k === 'slice') {
        const i = idx(r.col);
        const type = typeAt(i);
        const v = this.value(r.term, params, { kind: 'native', name: type }, r.col, s.text);
        if (v === null || v === UNSET) throw new CqlBindError(`${r.col}: a null slice bound`);
        tests.push((ck) => cmpOk(compareNative(type, ck[i], v), r.op));
      } else if (r.k === 'tuple') {
        const is = r.cols.map(idx);
        const vs = r.terms.map((t, j) => {
          const v = this.value(
            t,
            params,
            { kind: 'native', name: typeAt(is[j] as number) },
            r.cols[j] as string,
            s.text,
          );
          if (v === null || v === UNSET) throw new CqlBindError('a null tuple bound');
          return v;
        });
        tests.push((ck) => {
          let c = 0;
          for (let j = 0; j < is.length && c === 0; j++)
            c = compareNative(typeAt(is[j] as number), ck[is[j] as number], vs[j]);
          return cmpOk(c, r.op);
        });
      }
    }
    return (ck) => tests.every((t) => t(ck));
  }

  /** The selection as (alias, what, column, key index) entries, `*` expanded; computed once. */
  private outputPlan(p: Prepared): OutputEntry[] {
    if (p.output) return p.output;
    const { s, table } = p;
    if (s.kind !== 'select') throw new Error('unreachable');
    const entry = (alias: string, k: OutputEntry['k'], col: Column | null): OutputEntry => ({
      alias,
      k,
      col,
      index: col
        ? col.role === 'partition'
          ? table.partitionKey.indexOf(col.name)
          : col.role === 'clustering'
            ? table.clustering.indexOf(col.name)
            : -1
        : -1,
    });
    const out: OutputEntry[] = [];
    for (const sel of s.selectors as Selector[]) {
      if (sel.k === 'star') {
        const cols = [...table.columns.values()];
        const rank = (c: Column) => (c.role === 'partition' ? 0 : c.role === 'clustering' ? 1 : 2);
        cols.sort((a, b) => rank(a) - rank(b) || (rank(a) < 2 ? 0 : a.name < b.name ? -1 : 1));
        for (const c of cols) out.push(entry(c.name, 'col', c));
      } else if (sel.k === 'token') out.push(entry(sel.alias, 'token', null));
      else out.push(entry(sel.alias, sel.k, table.columns.get(sel.col) as Column));
    }
    p.output = out;
    return out;
  }

  private output(p: Prepared, part: Partition, row: Row | null, rowDel: bigint, now: number): ResultRow {
    const out: ResultRow = {};
    for (const { alias, k, col, index } of this.outputPlan(p)) {
      if (k === 'token' || !col) {
        out[alias] = tokenOfPart(part);
        continue;
      }
      const isStatic = col.role === 'static';
      if (k === 'col') {
        if (col.role === 'partition') out[alias] = part.pk[index];
        else if (col.role === 'clustering') out[alias] = row ? row.ck[index] : null;
        else if (isStatic) out[alias] = this.read(part.statics.get(col.name), col, part.del, now);
        else out[alias] = row ? this.read(row.cells.get(col.name), col, rowDel, now) : null;
        continue;
      }
      const slot = isStatic ? part.statics.get(col.name) : row?.cells.get(col.name);
      const cell =
        slot && !('coll' in slot) && this.live(slot, isStatic ? part.del : rowDel, now) ? slot : null;
      if (k === 'writetime') out[alias] = cell?.ts ?? null;
      else out[alias] = cell && cell.exp !== NEVER ? Math.ceil((cell.exp - now) / 1e6) : null;
    }
    return out;
  }
}
