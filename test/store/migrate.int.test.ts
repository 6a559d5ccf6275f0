import { copyFile, mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MigrationChecksumError,
  migrate,
  schemaPresent,
  splitStatements,
} from '../../src/store/cassandra/migrate.js';
import { CQL_DIR, type TestKeyspace, testKeyspace } from '../support/cassandra.js';

describe('schema migrations on the real node', () => {
  let ks: TestKeyspace;
  beforeAll(async () => {
    ks = await testKeyspace('migrate');
  });
  afterAll(async () => {
    await ks.drop();
  });

  it('records every cql file and a second run applies nothing', async () => {
    const files = (await readdir(CQL_DIR)).filter((f) => f.endsWith('.cql')).sort();
    const rs = await ks.client.execute(`SELECT version FROM ${ks.keyspace}.schema_migrations`);
    expect(rs.rows.map((r) => r.version).sort()).toEqual(files);
    const again = await migrate(
      ks.client,
      ks.keyspace,
      { class: 'SimpleStrategy', replication_factor: 1 },
      CQL_DIR,
    );
    expect(again).toEqual({ applied: [], skipped: files });
    expect(await schemaPresent(ks.client, ks.keyspace, CQL_DIR)).toBe(true);
  });

  it('two runners racing on a new keyspace both succeed and agree', async () => {
    const keyspace = `${ks.keyspace}_race`;
    const replication = { class: 'SimpleStrategy', replication_factor: 1 };
    const [a, b] = await Promise.all([
      migrate(ks.client, keyspace, replication, CQL_DIR),
      migrate(ks.client, keyspace, replication, CQL_DIR),
    ]);
    expect(new Set([...a.applied, ...a.skipped])).toEqual(new Set([...b.applied, ...b.skipped]));
    expect(await schemaPresent(ks.client, keyspace, CQL_DIR)).toBe(true);
    await ks.client.execute(`DROP KEYSPACE ${keyspace}`);
  });

  it('refuses a migration whose file changed after it was applied', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cql-'));
    for (const f of await readdir(CQL_DIR)) await copyFile(join(CQL_DIR, f), join(dir, f));
    await writeFile(
      join(dir, '001_users.cql'),
      '-- edited\nCREATE TABLE IF NOT EXISTS users (user_id bigint PRIMARY KEY);\n',
    );
    await expect(
      migrate(ks.client, ks.keyspace, { class: 'SimpleStrategy', replication_factor: 1 }, dir),
    ).rejects.toBeInstanceOf(MigrationChecksumError);
  });

  it('splits statements on semicolons at line ends and drops comments', () => {
    expect(splitStatements('-- c\nCREATE TABLE a (x int);\nCREATE TABLE b (y text) -- t\n;\n')).toEqual([
      'CREATE TABLE a (x int)',
      'CREATE TABLE b (y text)',
    ]);
  });
});
