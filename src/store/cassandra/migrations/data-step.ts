/**
 * Data steps: the part of a migration that moves rows, which a `.cql` file cannot do. A file
 * names one with a `-- @data <name>` line; the runner (`migrate.ts`) runs the file's statements,
 * then its data steps, then records the file.
 *
 * Design note. A data step is a sequence of table copies. Each copy is a full scan of one source
 * table, paged by the driver; after every page the copy records, in one row of
 * `schema_migration_progress`, the driver's paging state *and* the running row count, so a crash
 * anywhere resumes at the first page not recorded and re-copies at most that page. Re-copying is
 * harmless because every copied cell is written `USING TIMESTAMP` its original write time (rows
 * are identical, last-writer-wins is unchanged), and the count cannot double because it moves
 * only with the paging state. A finished copy is marked `done` and skipped on rerun. Rejected:
 * token-range bookkeeping of our own (the paging state already is an exact resume point, and is
 * valid across connections and coordinator restarts for the same statement).
 */
import type cassandra from 'cassandra-driver';
import { type CqlClient, SCHEMA_CHANGE } from '../client.js';

/** Progress of one table copy, reported after every page (and once for a copy already done). */
export interface CopyProgress {
  step: string;
  /** The copy's name inside the step, e.g. `following → legacy_following`. */
  copy: string;
  /** Rows copied so far (recorded; a resumed copy starts from the recorded count). */
  rows: number;
  /** Rows per second over this run of the copy. */
  rowsPerSecond: number;
  done: boolean;
}

export interface DataStepContext {
  client: CqlClient;
  keyspace: string;
  /** Rows per page of a copy. */
  pageSize: number;
  /** Throws when this runner no longer holds the migration lease. */
  assertLease(): void;
  progress(p: CopyProgress): Promise<void>;
}

/** A registered data step: idempotent and resumable. */
export type DataStep = (ctx: DataStepContext, step: string) => Promise<void>;

/** One row to write: its table, key columns and regular columns (cell → value and write time). */
export interface RowWrite {
  table: string;
  key: Record<string, unknown>;
  cells: Record<string, { value: unknown; writetime: bigint | null }>;
}

export interface TableCopy {
  /** Progress key, unique inside the step. */
  name: string;
  /** Source table. */
  from: string;
  /** Primary-key columns of the source, partition key first. */
  keyColumns: string[];
  /** Regular columns of the source; each is read with its write time. */
  cells: string[];
  /** The rows to write for one source row (none to skip it). */
  map(row: cassandra.types.Row): RowWrite[] | Promise<RowWrite[]>;
}

const progressTable = (ks: string) => `${ks}.schema_migration_progress`;

/** Creates the progress table (called by the runner before any step). */
export async function createProgressTable(client: CqlClient, keyspace: string): Promise<void> {
  await client.execute(
    `CREATE TABLE IF NOT EXISTS ${progressTable(keyspace)} (step text, copy text, page_state text, rows bigint, done boolean, updated_at timestamp, PRIMARY KEY ((step), copy))`,
    [],
    SCHEMA_CHANGE,
  );
}

/**
 * Copies every row of `c.from` through `c.map`, page by page, resuming from the recorded paging
 * state. Idempotent: a finished copy is skipped; a repeated page rewrites identical cells.
 */
export async function copyTable(ctx: DataStepContext, step: string, c: TableCopy): Promise<number> {
  const { client, keyspace } = ctx;
  const prog = await client.execute(
    `SELECT page_state, rows, done FROM ${progressTable(keyspace)} WHERE step = ? AND copy = ?`,
    [step, c.name],
  );
  const recorded = prog.first();
  let rows = Number((recorded?.rows as bigint | null) ?? 0n);
  if (recorded?.done) {
    await ctx.progress({ step, copy: c.name, rows, rowsPerSecond: 0, done: true });
    return rows;
  }
  let pageState = (recorded?.page_state as string | null) ?? undefined;
  const columns = [...c.keyColumns, ...c.cells, ...c.cells.map((x) => `writetime(${x}) AS wt_${x}`)];
  const select = `SELECT ${columns.join(', ')} FROM ${keyspace}.${c.from}`;
  const started = performance.now();
  let copiedNow = 0;
  for (;;) {
    ctx.assertLease();
    const rs = await client.execute(select, [], {
      prepare: true,
      fetchSize: ctx.pageSize,
      ...(pageState ? { pageState } : {}),
    });
    const writes = (await Promise.all(rs.rows.map((r) => c.map(r)))).flat();
    await writeRows(client, keyspace, writes);
    rows += rs.rows.length;
    copiedNow += rs.rows.length;
    pageState = rs.pageState ?? undefined;
    const done = pageState === undefined;
    await client.execute(
      `INSERT INTO ${progressTable(keyspace)} (step, copy, page_state, rows, done, updated_at) VALUES (?, ?, ?, ?, ?, toTimestamp(now()))`,
      [step, c.name, pageState ?? null, BigInt(rows), done],
    );
    const seconds = (performance.now() - started) / 1000;
    await ctx.progress({
      step,
      copy: c.name,
      rows,
      rowsPerSecond: seconds > 0 ? Math.round(copiedNow / seconds) : 0,
      done,
    });
    if (done) return rows;
  }
}

/** Cells grouped by write time: one INSERT per group, so every cell keeps its own write time. */
function statementsFor(keyspace: string, w: RowWrite): { query: string; params: unknown[] }[] {
  const keyNames = Object.keys(w.key);
  const keyValues = Object.values(w.key);
  const groups = new Map<bigint | null, [string, unknown][]>();
  for (const [name, cell] of Object.entries(w.cells)) {
    if (cell.value === null || cell.value === undefined) continue;
    const group = groups.get(cell.writetime) ?? [];
    group.push([name, cell.value]);
    groups.set(cell.writetime, group);
  }
  if (groups.size === 0) groups.set(null, []);
  return [...groups].map(([writetime, cells]) => {
    const names = [...keyNames, ...cells.map(([n]) => n)];
    const values = [...keyValues, ...cells.map(([, v]) => v)];
    const marks = names.map(() => '?').join(', ');
    const using = writetime === null ? '' : ' USING TIMESTAMP ?';
    return {
      query: `INSERT INTO ${keyspace}.${w.table} (${names.join(', ')}) VALUES (${marks})${using}`,
      params: writetime === null ? values : [...values, writetime],
    };
  });
}

async function writeRows(client: CqlClient, keyspace: string, writes: readonly RowWrite[]): Promise<void> {
  const statements = writes.flatMap((w) => statementsFor(keyspace, w));
  const inFlight = 64;
  for (let i = 0; i < statements.length; i += inFlight) {
    await Promise.all(
      statements.slice(i, i + inFlight).map((s) => client.execute(s.query, s.params, { prepare: true })),
    );
  }
}

/** The source row's regular cells with their write times, for `RowWrite.cells`. */
export function cellsOf(row: cassandra.types.Row, names: readonly string[]): RowWrite['cells'] {
  const out: RowWrite['cells'] = {};
  for (const n of names) out[n] = { value: row[n], writetime: (row[`wt_${n}`] as bigint | null) ?? null };
  return out;
}
