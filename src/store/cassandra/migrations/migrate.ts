/**
 * A small schema migration runner: `cql/NNN_name.cql` files applied in order, each once.
 *
 * Design note. The keyspace (name and replication from config) is created first; applied
 * versions are recorded in `schema_migrations` with a checksum, and a changed checksum of an
 * applied file stops start-up rather than silently diverging. Every statement is written
 * `IF NOT EXISTS`, so two runners racing (two service instances starting together) are safe: the
 * loser's DDL is a no-op and its record insert rewrites the same values. After each DDL the runner
 * waits for schema agreement, which matters on a multi-node cluster (the baseline, whose tables
 * do not depend on one another, waits once after them).
 *
 * Files may also drop tables and move rows: a `-- @data <name>` line names a data step
 * (`data-step.ts`, e.g. the list-table migration in `list-tables-migration.ts`) that runs after
 * the file's statements and before the file is recorded. Such files are not safe to race (a
 * second runner replaying a `DROP` would destroy what the first one is copying back), so whenever
 * anything is pending the runner first takes a lease: a row written with a lightweight
 * transaction and a TTL, renewed while it works (off the edge path, like username claims). A
 * runner that finds the lease taken waits, then re-reads what was applied. A runner that loses
 * its lease (paused longer than the TTL) stops before its next statement or page.
 *
 * A new keyspace skips the replay: `cql/baseline/schema.cql` holds the final tables of every
 * numbered file plus their ledger rows, and the runner applies only the files it does not record.
 * `migrate` takes that path itself for a new keyspace (no ledger row, no table but the runner's
 * own) when `cqlDir` has a baseline — a first `npm start` or a fresh bench keyspace — under the
 * lease, so two instances starting on one new keyspace do not both run it; it first writes a
 * marker row (`name = 'baseline'` in the lease table) and deletes it after the last ledger row,
 * so a run stopped part way is finished by the next one rather than taken for a keyspace with
 * foreign tables (which is replayed, file by file). Running the baseline again is harmless: its
 * tables are `IF NOT EXISTS` in their final shapes and its rows rewrite the same ledger.
 * `createFromBaseline` (the tests') takes the same path without the lease, on a keyspace it
 * creates and so owns. The baseline is never run over tables that came from elsewhere: its
 * `IF NOT EXISTS` would leave an older shape in place under ledger rows that claim the newer
 * one. Kept equal to the replay by `test/store/cassandra/migrations/baseline-schema.int.test.ts`.
 * Rejected: generating the baseline from a replayed keyspace at start (it is the replay's cost,
 * once per keyspace) and computing its ledger rows from the files' checksums (a stale baseline
 * would then claim files it does not contain).
 */
import { createHash, randomUUID } from 'node:crypto';
import { access, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import cassandra from 'cassandra-driver';
import { type CqlClient, SCHEMA_CHANGE } from '../client.js';
import { type CopyProgress, createProgressTable, type DataStep } from './data-step.js';
import { DEACTIVATED_REGISTRY_STEPS } from './deactivated-registry.js';
import { LIST_TABLE_STEPS } from './list-tables-migration.js';

export interface MigrationResult {
  /** The files this run applied one by one. */
  applied: string[];
  /** The files already recorded, or recorded by the baseline this run ran. */
  skipped: string[];
  /** Present when this run made the keyspace from the baseline. */
  baseline?: true;
}

export interface MigrateOptions {
  /** Told after every page of a data step's copy (also through `log`); may throw to abort. */
  onProgress?: (p: CopyProgress) => void | Promise<void>;
  /** Rows per data-step page. Default 1,000. */
  copyPageSize?: number;
  /** The data steps files may name. Default: the project's (list tables, deactivated registry). */
  dataSteps?: Record<string, DataStep>;
  /** Lease TTL in seconds (renewed every third of it). Default 30. */
  leaseTtlSeconds?: number;
  /**
   * A new keyspace is made from `cqlDir`'s baseline when it has one (see the design note).
   * Default true; false replays every file (what the baseline is checked against).
   */
  fromBaseline?: boolean;
}

export class MigrationChecksumError extends Error {
  override name = 'MigrationChecksumError';
}

/** Another runner took over (this one's lease expired), or a file names an unknown data step. */
export class MigrationAbortedError extends Error {
  override name = 'MigrationAbortedError';
}

function replicationCql(replication: Record<string, string | number>): string {
  const body = Object.entries(replication)
    .map(([k, v]) => `'${k}': ${typeof v === 'number' ? v : `'${v}'`}`)
    .join(', ');
  return `{${body}}`;
}

/** Splits a CQL file into statements: `;` at a line end ends one; `--` lines are comments. */
export function splitStatements(text: string): string[] {
  const withoutComments = text
    .split('\n')
    .map((l) => l.replace(/--.*$/, ''))
    .join('\n');
  return withoutComments
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.trim())
    .filter(Boolean);
}

/** The `-- @data name` lines of a file, in order. */
export function dataStepNames(text: string): string[] {
  return [...text.matchAll(/^--\s*@data\s+(\w+)\s*$/gm)].map((m) => m[1] as string);
}

/**
 * Qualifies `CREATE … IF NOT EXISTS name`, `DROP TABLE IF EXISTS name`, `ALTER TABLE name` and
 * `INSERT INTO name` with the keyspace.
 */
export function qualify(statement: string, keyspace: string): string {
  return statement.replace(
    /^((?:CREATE\s+(?:TABLE|TYPE|INDEX|CUSTOM INDEX)\s+IF\s+NOT\s+EXISTS|DROP\s+TABLE\s+IF\s+EXISTS|ALTER\s+TABLE|INSERT\s+INTO)\s+)(\w+)(?=\s|$)/i,
    (_m, head: string, name: string) => `${head}${keyspace}.${name}`,
  );
}

/** `checkSchemaAgreement` exists in the driver but is missing from its type declarations. */
type AgreementCheck = { checkSchemaAgreement(): Promise<boolean> };

/**
 * Polls until every node reports the same schema version, for at most 10 s: soon at first (a
 * local cluster agrees within ~1 s), then every 250 ms. Gives up silently, as the driver does.
 */
async function waitForAgreement(client: CqlClient): Promise<void> {
  const metadata = client.metadata as unknown as AgreementCheck;
  const deadline = Date.now() + 10_000;
  for (let pause = 20; ; pause = Math.min(250, pause * 2)) {
    if (await metadata.checkSchemaAgreement()) return;
    if (Date.now() >= deadline) return;
    await new Promise((r) => setTimeout(r, pause));
  }
}

/**
 * Creates the keyspace if needed and applies every pending file of `cqlDir` in name order, each
 * file's statements then its data steps, recording the file only when all of it succeeded. Safe to
 * re-run and to race (see the design note); a rerun after a crash resumes a data step at its last
 * recorded page. Throws `MigrationChecksumError` when an applied file changed.
 *
 * @example
 * await migrate(client, 'flocklist', { class: 'SimpleStrategy', replication_factor: 1 }, CQL_DIR,
 *   (line) => console.log(line)); // "… legacy_edges_in → edges_in: 12000 rows, 3400 rows/s"
 */
export async function migrate(
  client: CqlClient,
  keyspace: string,
  replication: Record<string, string | number>,
  cqlDir: string,
  log: (line: string) => void = () => {},
  o: MigrateOptions = {},
): Promise<MigrationResult> {
  await client.execute(
    `CREATE KEYSPACE IF NOT EXISTS ${keyspace} WITH replication = ${replicationCql(replication)}`,
    [],
    SCHEMA_CHANGE,
  );
  await waitForAgreement(client);
  await createLedgerTables(client, keyspace);
  return applyPending(client, keyspace, cqlDir, log, o);
}

/** The runner's own tables: the ledger, the lease, the data steps' progress. Idempotent. */
async function createLedgerTables(client: CqlClient, keyspace: string): Promise<void> {
  await client.execute(
    `CREATE TABLE IF NOT EXISTS ${keyspace}.schema_migrations (version text PRIMARY KEY, checksum text, applied_at timestamp)`,
    [],
    SCHEMA_CHANGE,
  );
  await client.execute(
    `CREATE TABLE IF NOT EXISTS ${keyspace}.schema_migration_lease (name text PRIMARY KEY, owner text)`,
    [],
    SCHEMA_CHANGE,
  );
  await createProgressTable(client, keyspace);
  await waitForAgreement(client);
}

async function applyPending(
  client: CqlClient,
  keyspace: string,
  cqlDir: string,
  log: (line: string) => void,
  o: MigrateOptions,
): Promise<MigrationResult> {
  const files: { file: string; text: string; checksum: string }[] = [];
  for (const file of (await readdir(cqlDir)).filter((f) => /^\d{3}_[\w-]+\.cql$/.test(f)).sort()) {
    const text = await readFile(join(cqlDir, file), 'utf8');
    files.push({ file, text, checksum: createHash('sha256').update(text).digest('hex') });
  }
  const steps = o.dataSteps ?? { ...LIST_TABLE_STEPS, ...DEACTIVATED_REGISTRY_STEPS };
  for (const f of files) {
    for (const name of dataStepNames(f.text)) {
      if (!steps[name]) throw new MigrationAbortedError(`${f.file} names unknown data step ${name}`);
    }
  }

  const pendingOf = (applied: Map<string, string>) => {
    const result: MigrationResult = { applied: [], skipped: [] };
    for (const f of files) {
      const known = applied.get(f.file);
      if (known === undefined) continue;
      if (known !== f.checksum) {
        throw new MigrationChecksumError(
          `migration ${f.file} was changed after it was applied (checksum mismatch)`,
        );
      }
      result.skipped.push(f.file);
    }
    return { result, pending: files.filter((f) => !applied.has(f.file)) };
  };
  let { result, pending } = pendingOf(await appliedVersions(client, keyspace));
  if (pending.length === 0) return result;

  const lease = await MigrationLease.acquire(client, keyspace, o.leaseTtlSeconds ?? 30, log);
  try {
    let applied = await appliedVersions(client, keyspace);
    if (o.fromBaseline !== false && (await baselineDue(client, keyspace, cqlDir, applied))) {
      await client.execute(
        `INSERT INTO ${keyspace}.schema_migration_lease (name, owner) VALUES ('baseline', ?)`,
        [lease.owner],
        { prepare: true },
      );
      await runBaseline(client, keyspace, cqlDir, () => lease.assert());
      lease.assert();
      await client.execute(`DELETE FROM ${keyspace}.schema_migration_lease WHERE name = 'baseline'`, [], {
        prepare: false,
      });
      log(`created ${keyspace} from ${baselineFile(cqlDir)}`);
      applied = await appliedVersions(client, keyspace);
      ({ result, pending } = pendingOf(applied));
      result.baseline = true;
    } else {
      ({ result, pending } = pendingOf(applied));
    }
    for (const f of pending) {
      for (const statement of splitStatements(f.text)) {
        lease.assert();
        await client.execute(qualify(statement, keyspace), [], SCHEMA_CHANGE).catch((e: unknown) => {
          // `ALTER TABLE … ADD` has no IF NOT EXISTS on every server we support: a column a
          // crashed earlier run already added is the outcome this statement wants.
          if (!(/^ALTER\s+TABLE\b.*\bADD\b/is.test(statement) && /already exists/i.test(String(e)))) throw e;
        });
        await waitForAgreement(client);
      }
      for (const name of dataStepNames(f.text)) {
        await (steps[name] as DataStep)(
          {
            client,
            keyspace,
            pageSize: o.copyPageSize ?? 1000,
            assertLease: () => lease.assert(),
            progress: async (p) => {
              log(`${f.file} ${p.copy}: ${p.rows} rows${p.done ? ' (done)' : ''}, ${p.rowsPerSecond} rows/s`);
              await o.onProgress?.(p);
            },
          },
          name,
        );
      }
      lease.assert();
      await client.execute(
        `INSERT INTO ${keyspace}.schema_migrations (version, checksum, applied_at) VALUES (?, ?, toTimestamp(now()))`,
        [f.file, f.checksum],
      );
      log(`applied ${f.file}`);
      result.applied.push(f.file);
    }
  } finally {
    await lease.release();
  }
  return result;
}

/** Where a `cql/` folder keeps its baseline (see the design note). */
export function baselineFile(cqlDir: string): string {
  return join(cqlDir, 'baseline', 'schema.cql');
}

const ALREADY_EXISTS = cassandra.types.responseErrorCodes.alreadyExists;

/** `createFromBaseline` was pointed at a keyspace that already exists. */
export class BaselineKeyspaceExistsError extends Error {
  override name = 'BaselineKeyspaceExistsError';
}

/**
 * Creates a new keyspace from `cqlDir`'s baseline (tables and ledger rows), then runs `migrate`
 * for the numbered files the baseline does not record; returns what that run applied (nothing
 * while the baseline is current). The result's schema and ledger equal `migrate`'s on an empty
 * keyspace. Throws `BaselineKeyspaceExistsError` when the keyspace exists (use `migrate`); not
 * for the service's keyspace, whose data steps must run on the rows they move. A run that fails
 * part way leaves a keyspace to drop, not to migrate (its ledger may be partly written).
 *
 * @example
 * const { applied } = await createFromBaseline(client, 't_lists_1a2b', replication, CQL_DIR);
 * // applied: [] (or ['016_new.cql'] when the baseline lags the files)
 */
export async function createFromBaseline(
  client: CqlClient,
  keyspace: string,
  replication: Record<string, string | number>,
  cqlDir: string,
  log: (line: string) => void = () => {},
  o: MigrateOptions = {},
): Promise<MigrationResult> {
  await client
    .execute(
      `CREATE KEYSPACE ${keyspace} WITH replication = ${replicationCql(replication)}`,
      [],
      SCHEMA_CHANGE,
    )
    .catch((e: unknown) => {
      if (e instanceof cassandra.errors.ResponseError && e.code === ALREADY_EXISTS) {
        throw new BaselineKeyspaceExistsError(`keyspace ${keyspace} already exists; migrate it instead`, {
          cause: e,
        });
      }
      throw e;
    });
  await waitForAgreement(client);
  await createLedgerTables(client, keyspace);
  await runBaseline(client, keyspace, cqlDir);
  log(`created ${keyspace} from ${baselineFile(cqlDir)}`);
  return applyPending(client, keyspace, cqlDir, log, { ...o, fromBaseline: false });
}

/** The runner's own tables: a keyspace holding only these is new. */
const RUNNER_TABLES = new Set(['schema_migrations', 'schema_migration_lease', 'schema_migration_progress']);

/**
 * Whether `migrate` should make this keyspace from the baseline: `cqlDir` has one, and either a
 * run began it and stopped part way (the marker row) or the keyspace is new (no ledger row and
 * no table but the runner's own).
 */
async function baselineDue(
  client: CqlClient,
  keyspace: string,
  cqlDir: string,
  applied: ReadonlyMap<string, string>,
): Promise<boolean> {
  if (
    !(await access(baselineFile(cqlDir)).then(
      () => true,
      () => false,
    ))
  )
    return false;
  const marker = await client.execute(
    `SELECT owner FROM ${keyspace}.schema_migration_lease WHERE name = 'baseline'`,
    [],
    { prepare: false },
  );
  if (marker.rowLength > 0) return true;
  if (applied.size > 0) return false;
  const tables = await client.execute(
    'SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?',
    [keyspace],
    { prepare: true },
  );
  return tables.rows.every((r) => RUNNER_TABLES.has(r.table_name as string));
}

/**
 * Runs the baseline's statements into `keyspace` (whose ledger tables exist), `assert` before each.
 * The baseline's tables are independent of one another and its rows come after them: every table
 * goes to one coordinator (each change there builds on the last), and the cluster is asked to
 * agree once, before the first row, instead of after each table (on a 3-node local cluster ~1 s a
 * table, most of it the peers applying the change: 32 s → 7 s). A caller whose client waits for
 * agreement after every DDL (the driver's default) still pays per table.
 */
async function runBaseline(
  client: CqlClient,
  keyspace: string,
  cqlDir: string,
  assert: () => void = () => {},
): Promise<void> {
  const text = await readFile(baselineFile(cqlDir), 'utf8');
  const coordinator = client.getState().getConnectedHosts()[0];
  let agreed = true;
  for (const statement of splitStatements(text)) {
    const row = /^INSERT\b/i.test(statement);
    if (row && !agreed) await waitForAgreement(client);
    assert();
    await client.execute(qualify(statement, keyspace), [], {
      ...SCHEMA_CHANGE,
      ...(row || !coordinator ? {} : { host: coordinator }),
    });
    agreed = row;
  }
  if (!agreed) await waitForAgreement(client);
}

async function appliedVersions(client: CqlClient, keyspace: string): Promise<Map<string, string>> {
  const applied = new Map<string, string>();
  const rs = await client.execute(`SELECT version, checksum FROM ${keyspace}.schema_migrations`, [], {
    prepare: false,
  });
  for (const row of rs.rows) applied.set(row.version as string, row.checksum as string);
  return applied;
}

/** The one-runner-at-a-time lease (see the design note). */
class MigrationLease {
  private lost = false;
  private timer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly client: CqlClient,
    private readonly table: string,
    readonly owner: string,
    private readonly ttl: number,
  ) {}

  static async acquire(
    client: CqlClient,
    keyspace: string,
    ttl: number,
    log: (line: string) => void,
  ): Promise<MigrationLease> {
    const lease = new MigrationLease(client, `${keyspace}.schema_migration_lease`, randomUUID(), ttl);
    let waited = false;
    for (;;) {
      const rs = await client.execute(
        `INSERT INTO ${lease.table} (name, owner) VALUES ('migrate', ?) IF NOT EXISTS USING TTL ${ttl}`,
        [lease.owner],
        { isIdempotent: false },
      );
      if (rs.first()?.['[applied]']) break;
      if (!waited) log('another runner holds the migration lease; waiting');
      waited = true;
      await new Promise((r) => setTimeout(r, 250));
    }
    lease.timer = setInterval(() => void lease.renew(), (ttl * 1000) / 3);
    lease.timer.unref();
    return lease;
  }

  assert(): void {
    if (this.lost) throw new MigrationAbortedError('the migration lease was lost to another runner');
  }

  private async renew(): Promise<void> {
    try {
      const rs = await this.client.execute(
        `UPDATE ${this.table} USING TTL ${this.ttl} SET owner = ? WHERE name = 'migrate' IF owner = ?`,
        [this.owner, this.owner],
        { isIdempotent: false },
      );
      if (!rs.first()?.['[applied]']) this.lost = true;
    } catch {
      // A failed renewal is retried at the next tick; the TTL bounds how long that may go on.
    }
  }

  async release(): Promise<void> {
    clearInterval(this.timer);
    await this.client
      .execute(`DELETE FROM ${this.table} WHERE name = 'migrate' IF owner = ?`, [this.owner], {
        isIdempotent: false,
      })
      .catch(() => undefined);
  }
}

/** True when the keyspace has every migration in `cqlDir` recorded (readiness). */
export async function schemaPresent(client: CqlClient, keyspace: string, cqlDir: string): Promise<boolean> {
  const files = (await readdir(cqlDir)).filter((f) => /^\d{3}_[\w-]+\.cql$/.test(f));
  const rs = await client.execute(`SELECT version FROM ${keyspace}.schema_migrations`, [], {
    prepare: false,
  });
  const have = new Set(rs.rows.map((r) => r.version as string));
  return files.every((f) => have.has(f));
}
