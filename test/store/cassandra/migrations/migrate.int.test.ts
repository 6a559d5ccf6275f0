import { copyFile, mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createCqlClient, SCHEMA_CHANGE } from '../../../../src/store/cassandra/client.js';
import { CassandraGraphStore } from '../../../../src/store/cassandra/graph-store.js';
import type { CopyProgress } from '../../../../src/store/cassandra/migrations/data-step.js';
import {
  MigrationChecksumError,
  migrate,
  schemaPresent,
  splitStatements,
} from '../../../../src/store/cassandra/migrations/migrate.js';
import { CQL_DIR, type TestKeyspace, testKeyspace } from '../../../support/cassandra.js';

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
    await ks.client.execute(`DROP KEYSPACE ${keyspace}`, [], SCHEMA_CHANGE);
  });

  it('refuses a migration whose file changed after it was applied', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cql-'));
    for (const f of (await readdir(CQL_DIR)).filter((x) => x.endsWith('.cql')))
      await copyFile(join(CQL_DIR, f), join(dir, f));
    await writeFile(
      join(dir, '001_users.cql'),
      '-- edited\nCREATE TABLE IF NOT EXISTS users (user_id bigint PRIMARY KEY);\n',
    );
    await expect(
      migrate(ks.client, ks.keyspace, { class: 'SimpleStrategy', replication_factor: 1 }, dir),
    ).rejects.toBeInstanceOf(MigrationChecksumError);
  });

  it('014 registers the accounts already deactivated, at their state write time; the store keeps the registry after it', async () => {
    const keyspace = `${ks.keyspace}_registry`;
    const replication = { class: 'SimpleStrategy', replication_factor: 1 };
    const dir = await mkdtemp(join(tmpdir(), 'cql-'));
    for (const f of (await readdir(CQL_DIR)).filter((x) => x < '014'))
      await copyFile(join(CQL_DIR, f), join(dir, f));
    await migrate(ks.client, keyspace, replication, dir);
    // 300 users, every seventh deactivated, each state written at its own known write time.
    const ids = Array.from({ length: 300 }, (_, i) => 9_000_000n + BigInt(i));
    const writeTime = (id: bigint) => 1_700_000_000_000_000n + id;
    for (const id of ids) {
      await ks.client.execute(
        `INSERT INTO ${keyspace}.users (user_id, username, private, state, hide_lists) VALUES (?, ?, false, ?, false) USING TIMESTAMP ?`,
        [id, `u${id}`, id % 7n === 0n ? 'deactivated' : 'active', writeTime(id)],
        { prepare: true },
      );
    }
    const progress: CopyProgress[] = [];
    const r = await migrate(ks.client, keyspace, replication, CQL_DIR, undefined, {
      copyPageSize: 64,
      onProgress: (p) => {
        progress.push(p);
      },
    });
    expect(r.applied).toEqual(
      (await readdir(CQL_DIR)).filter((f) => f >= '014' && f.endsWith('.cql')).sort(),
    );
    expect(progress.filter((p) => p.done).map((p) => [p.copy, p.rows])).toEqual([
      ['users → deactivated_accounts', 300],
    ]);
    const deactivated = ids.filter((id) => id % 7n === 0n);
    const rows = await ks.client.execute(
      `SELECT shard, user_id, since, writetime(since) AS wt FROM ${keyspace}.deactivated_accounts`,
    );
    const got = rows.rows.map((row) => `${row.shard} ${row.user_id} ${row.since} ${row.wt}`).sort();
    expect(got).toEqual(
      deactivated.map((id) => `${id % 16n} ${id} ${writeTime(id)} ${writeTime(id)}`).sort(),
    );

    const client = createCqlClient({
      ...inject('cassandra'),
      keyspace,
      consistency: 'localQuorum',
      requestTimeoutMs: 30_000,
    });
    try {
      const store = new CassandraGraphStore(client);
      const sorted = (l: bigint[] | null) => (l === null ? null : [...l].sort((x, y) => (x < y ? -1 : 1)));
      expect(sorted(await store.listDeactivated(1000))).toEqual(deactivated);
      expect(await store.listDeactivated(deactivated.length - 1)).toBeNull();
      // A reactivation unregisters (its write time is now, above the backfilled one); a
      // deactivation through the store registers; a profile write of an active account leaves
      // the registry alone.
      const [back, gone] = [deactivated[0] as bigint, ids[1] as bigint];
      const put = (id: bigint, state: 'active' | 'deactivated', username = `u${id}`, priv = false) =>
        store.putUser({ id, username, private: priv, state, hideLists: false });
      await put(back, 'active');
      await put(gone, 'deactivated');
      await put(ids[2] as bigint, 'active', 'renamed', true);
      expect(sorted(await store.listDeactivated(1000))).toEqual(
        sorted([...deactivated.filter((id) => id !== back), gone]),
      );
    } finally {
      await client.shutdown();
      await ks.client.execute(`DROP KEYSPACE ${keyspace}`, [], SCHEMA_CHANGE);
    }
  });

  it('splits statements on semicolons at line ends and drops comments', () => {
    expect(splitStatements('-- c\nCREATE TABLE a (x int);\nCREATE TABLE b (y text) -- t\n;\n')).toEqual([
      'CREATE TABLE a (x int)',
      'CREATE TABLE b (y text)',
    ]);
  });
});
