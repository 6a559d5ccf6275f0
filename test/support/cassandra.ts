/**
 * Per-file keyspaces on the real node: `await testKeyspace('edges')` creates a fresh keyspace,
 * applies `cql/`, and returns a connected client; `drop()` removes it.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { type CqlClient, createCqlClient } from '../../src/store/cassandra/client.js';
import { migrate } from '../../src/store/cassandra/migrate.js';

export const CQL_DIR = fileURLToPath(new URL('../../cql', import.meta.url));

export interface TestKeyspace {
  client: CqlClient;
  keyspace: string;
  drop(): Promise<void>;
}

export async function testKeyspace(label: string): Promise<TestKeyspace> {
  const { contactPoints, localDataCenter } = inject('cassandra');
  const keyspace = `t_${label.replace(/\W/g, '_').toLowerCase().slice(0, 24)}_${randomBytes(4).toString('hex')}`;
  const admin = createCqlClient({
    contactPoints,
    localDataCenter,
    consistency: 'localOne',
    requestTimeoutMs: 30_000,
  });
  await migrate(admin, keyspace, { class: 'SimpleStrategy', replication_factor: 1 }, CQL_DIR);
  await admin.shutdown();
  const client = createCqlClient({
    contactPoints,
    localDataCenter,
    keyspace,
    consistency: 'localQuorum',
    requestTimeoutMs: 30_000,
  });
  await client.connect();
  return {
    client,
    keyspace,
    drop: async () => {
      await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`, [], { prepare: false });
      await client.shutdown();
    },
  };
}
