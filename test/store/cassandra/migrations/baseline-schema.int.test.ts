/**
 * The baseline (`cql/baseline/schema.cql`) against the migrations it stands for: a keyspace made
 * from it and one made by replaying `cql/NNN_*.cql` must have the same `system_schema` (keyspace,
 * tables with their options, columns with kind / position / clustering order / type, indexes,
 * views, types, functions, dropped columns) and the same ledger rows. This is also the guard that
 * a new numbered file comes with its baseline update. And the migrator's own use of it: a new
 * keyspace made in one step (raced, and stopped part way), a keyspace of foreign tables replayed.
 */
import { createHash, randomBytes } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseReplication } from '../../../../src/config.js';
import { type CqlClient, createCqlClient, SCHEMA_CHANGE } from '../../../../src/store/cassandra/client.js';
import {
  BaselineKeyspaceExistsError,
  baselineFile,
  createFromBaseline,
  migrate,
} from '../../../../src/store/cassandra/migrations/migrate.js';
import { CQL_DIR } from '../../../support/cassandra.js';

const REPLICATION = parseReplication(process.env.TEST_REPLICATION ?? 'simple:1');

/** Per keyspace: every `system_schema` table's rows (less the keyspace name and ids), and the ledger. */
async function schemaOf(client: CqlClient, keyspace: string): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const table of [
    'keyspaces',
    'tables',
    'columns',
    'dropped_columns',
    'indexes',
    'triggers',
    'views',
    'types',
    'functions',
    'aggregates',
  ]) {
    const rs = await client.execute(
      `SELECT * FROM system_schema.${table} WHERE keyspace_name = ?`,
      [keyspace],
      {
        prepare: true,
      },
    );
    out[table] = rs.rows
      .map((row) =>
        Object.fromEntries(
          row
            .keys()
            .filter((k) => !['keyspace_name', 'id', 'base_table_id', 'column_name_bytes'].includes(k))
            .map((k) => [k, row.get(k)]),
        ),
      )
      .sort((a, b) => (JSON.stringify(sortKey(a)) < JSON.stringify(sortKey(b)) ? -1 : 1));
  }
  const ledger = await client.execute(`SELECT version, checksum FROM ${keyspace}.schema_migrations`, [], {
    prepare: false,
  });
  out.ledger = ledger.rows
    .map((r) => ({ version: r.version as string, checksum: r.checksum as string }))
    .sort((a, b) => (a.version < b.version ? -1 : 1));
  return out;
}

const sortKey = (row: Record<string, unknown>) =>
  [row.table_name, row.column_name, row.index_name, row.view_name, row.type_name, row.function_name].map(
    (v) => String(v ?? ''),
  );

async function ledgerLine(cqlDir: string, file: string): Promise<string> {
  const checksum = createHash('sha256')
    .update(await readFile(join(cqlDir, file), 'utf8'))
    .digest('hex');
  return `INSERT INTO schema_migrations (version, checksum, applied_at) VALUES ('${file}', '${checksum}', toTimestamp(now()));`;
}

describe('the baseline schema against the migrations, on the real node', () => {
  let client: CqlClient;
  const keyspaces: string[] = [];
  const newKeyspace = (label: string) => {
    const name = `t_baseline_${label}_${randomBytes(4).toString('hex')}`;
    keyspaces.push(name);
    return name;
  };

  /** The replay's schema, from the first test (the later ones compare with it). */
  let replay: Record<string, unknown[]>;
  const leaseRows = async (keyspace: string) =>
    (
      await client.execute(`SELECT name FROM ${keyspace}.schema_migration_lease`, [], { prepare: false })
    ).rows.map((r) => r.name as string);

  beforeAll(async () => {
    client = createCqlClient({
      ...inject('cassandra'),
      consistency: 'localQuorum',
      requestTimeoutMs: 30_000,
    });
    await client.connect();
  });
  afterAll(async () => {
    for (const k of keyspaces) await client.execute(`DROP KEYSPACE IF EXISTS ${k}`, [], SCHEMA_CHANGE);
    await client.shutdown();
  });

  it('a keyspace from the baseline has the system_schema and the ledger of one that replays every cql file', async () => {
    const [fromBaseline, replayed] = [newKeyspace('base'), newKeyspace('replay')];
    const files = (await readdir(CQL_DIR)).filter((f) => /^\d{3}_[\w-]+\.cql$/.test(f)).sort();
    const afterBaseline = await createFromBaseline(client, fromBaseline, REPLICATION, CQL_DIR);
    const lines = await Promise.all(afterBaseline.applied.map((f) => ledgerLine(CQL_DIR, f)));
    expect(
      afterBaseline,
      `cql/ has files ${baselineFile('cql')} does not stand for: ${afterBaseline.applied.join(', ')}. ` +
        `Put each one's final tables, columns and options into the baseline and append its ledger row:\n${lines.join('\n')}`,
    ).toEqual({ applied: [], skipped: files });

    expect(await migrate(client, replayed, REPLICATION, CQL_DIR, undefined, { fromBaseline: false })).toEqual(
      {
        applied: files,
        skipped: [],
      },
    );
    replay = await schemaOf(client, replayed);
    expect(
      await schemaOf(client, fromBaseline),
      `${baselineFile('cql')} no longer gives the schema the numbered cql/ files give ` +
        '(expected: the replay; received: the baseline). Make the baseline match, as the rule atop it says.',
    ).toEqual(replay);
  });

  it('migrate makes a new keyspace from the baseline in one step, once when two runners race, with the schema and ledger of the replay', async () => {
    const keyspace = newKeyspace('first');
    const files = (await readdir(CQL_DIR)).filter((f) => /^\d{3}_[\w-]+\.cql$/.test(f)).sort();
    const lines: string[] = [];
    const runs = await Promise.all([
      migrate(client, keyspace, REPLICATION, CQL_DIR, (l) => lines.push(`a: ${l}`)),
      migrate(client, keyspace, REPLICATION, CQL_DIR, (l) => lines.push(`b: ${l}`)),
    ]);
    // One made it; the other waited for the lease and found every file recorded.
    expect(runs.map((r) => r.baseline ?? false).sort()).toEqual([false, true]);
    expect(runs.map(({ applied, skipped }) => ({ applied, skipped }))).toEqual([
      { applied: [], skipped: files },
      { applied: [], skipped: files },
    ]);
    expect(lines.filter((l) => l.includes(`created ${keyspace} from`))).toHaveLength(1);
    expect(await schemaOf(client, keyspace)).toEqual(replay);
    expect(await leaseRows(keyspace)).toEqual([]);
  });

  it('a baseline stopped part way is finished by the next run, not replayed over', async () => {
    const keyspace = newKeyspace('stopped');
    // The runner's process fails at the baseline's eleventh table.
    let tables = 0;
    const failing = new Proxy(client, {
      get(target, prop) {
        if (prop === 'execute') {
          return (query: string, ...rest: unknown[]) => {
            if (/^CREATE TABLE IF NOT EXISTS \w+\.(?!schema_migration)/.test(query) && ++tables > 10) {
              return Promise.reject(new Error('the runner stopped'));
            }
            return (target.execute as (...a: unknown[]) => unknown)(query, ...rest);
          };
        }
        const value = Reflect.get(target, prop);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    await expect(migrate(failing, keyspace, REPLICATION, CQL_DIR)).rejects.toThrow('the runner stopped');
    expect(await leaseRows(keyspace)).toEqual(['baseline']);
    const ledger = await client.execute(`SELECT version FROM ${keyspace}.schema_migrations`, [], {
      prepare: false,
    });
    expect(ledger.rows).toEqual([]);

    const files = (await readdir(CQL_DIR)).filter((f) => /^\d{3}_[\w-]+\.cql$/.test(f)).sort();
    expect(await migrate(client, keyspace, REPLICATION, CQL_DIR)).toEqual({
      applied: [],
      skipped: files,
      baseline: true,
    });
    expect(await schemaOf(client, keyspace)).toEqual(replay);
    expect(await leaseRows(keyspace)).toEqual([]);
  });

  it("a keyspace with a table that is not the runner's and no ledger is replayed file by file", async () => {
    const keyspace = newKeyspace('foreign');
    await client.execute(
      `CREATE KEYSPACE ${keyspace} WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
      [],
      SCHEMA_CHANGE,
    );
    await client.execute(`CREATE TABLE ${keyspace}.notes (id int PRIMARY KEY, note text)`, [], SCHEMA_CHANGE);
    // Two files and a baseline that would make a table of its own, were it run.
    const dir = await mkdtemp(join(tmpdir(), 'cql-'));
    await mkdir(join(dir, 'baseline'));
    const files = (await readdir(CQL_DIR)).filter((f) => /^00[12]_[\w-]+\.cql$/.test(f)).sort();
    for (const f of files) await copyFile(join(CQL_DIR, f), join(dir, f));
    await writeFile(baselineFile(dir), 'CREATE TABLE IF NOT EXISTS from_baseline (id int PRIMARY KEY);\n');
    expect(await migrate(client, keyspace, REPLICATION, dir)).toEqual({ applied: files, skipped: [] });
    const tables = await client.execute(
      'SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?',
      [keyspace, 'from_baseline'],
      { prepare: true },
    );
    expect(tables.rows).toEqual([]);
  });

  it('a file newer than the baseline is applied on top of it, and then the migrator has nothing to do', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cql-'));
    await mkdir(join(dir, 'baseline'));
    for (const f of (await readdir(CQL_DIR)).filter((x) => x.endsWith('.cql')))
      await copyFile(join(CQL_DIR, f), join(dir, f));
    await copyFile(baselineFile(CQL_DIR), baselineFile(dir));
    await writeFile(
      join(dir, '016_probe.cql'),
      'CREATE TABLE IF NOT EXISTS probe (id bigint PRIMARY KEY, note text);\nALTER TABLE users ADD probe_note text;\n',
    );
    const keyspace = newKeyspace('later');
    const first = await createFromBaseline(client, keyspace, REPLICATION, dir);
    expect(first.applied).toEqual(['016_probe.cql']);
    const columns = async (table: string) =>
      (
        await client.execute(
          'SELECT column_name, kind, type FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?',
          [keyspace, table],
          { prepare: true },
        )
      ).rows
        .map((r) => `${r.column_name} ${r.kind} ${r.type}`)
        .sort();
    expect(await columns('probe')).toEqual(['id partition_key bigint', 'note regular text']);
    expect(await columns('users')).toEqual([
      'hide_lists regular boolean',
      'private regular boolean',
      'probe_note regular text',
      'state regular text',
      'updated_at regular timestamp',
      'user_id partition_key bigint',
      'username regular text',
    ]);
    const files = (await readdir(dir)).filter((f) => /^\d{3}_[\w-]+\.cql$/.test(f)).sort();
    expect(await migrate(client, keyspace, REPLICATION, dir)).toEqual({ applied: [], skipped: files });
  });

  it('refuses a keyspace that already exists and leaves it untouched', async () => {
    const keyspace = newKeyspace('exists');
    await client.execute(
      `CREATE KEYSPACE ${keyspace} WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
      [],
      SCHEMA_CHANGE,
    );
    await expect(createFromBaseline(client, keyspace, REPLICATION, CQL_DIR)).rejects.toBeInstanceOf(
      BaselineKeyspaceExistsError,
    );
    const tables = await client.execute(
      'SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?',
      [keyspace],
    );
    expect(tables.rows).toEqual([]);
  });
});
