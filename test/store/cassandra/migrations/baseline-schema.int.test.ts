/**
 * The baseline (`cql/baseline/schema.cql`) against the migrations it stands for: a keyspace made
 * from it and one made by replaying `cql/NNN_*.cql` must have the same `system_schema` (keyspace,
 * tables with their options, columns with kind / position / clustering order / type, indexes,
 * views, types, functions, dropped columns) and the same ledger rows. This is also the guard that
 * a new numbered file comes with its baseline update.
 */
import { createHash, randomBytes } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseReplication } from '../../../../src/config.js';
import { type CqlClient, createCqlClient } from '../../../../src/store/cassandra/client.js';
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

  beforeAll(async () => {
    client = createCqlClient({
      ...inject('cassandra'),
      consistency: 'localQuorum',
      requestTimeoutMs: 30_000,
    });
    await client.connect();
  });
  afterAll(async () => {
    for (const k of keyspaces) await client.execute(`DROP KEYSPACE IF EXISTS ${k}`, [], { prepare: false });
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

    await migrate(client, replayed, REPLICATION, CQL_DIR);
    expect(
      await schemaOf(client, fromBaseline),
      `${baselineFile('cql')} no longer gives the schema the numbered cql/ files give ` +
        '(expected: the replay; received: the baseline). Make the baseline match, as the rule atop it says.',
    ).toEqual(await schemaOf(client, replayed));
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
      { prepare: false },
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
