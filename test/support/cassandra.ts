/**
 * Per-file keyspaces on the real node: `await testKeyspace('edges')` creates a fresh keyspace
 * from the baseline of `cql/` (`TEST_SCHEMA=migrations` replays every file instead), and returns
 * a connected client; `drop()` removes it. `TEST_REPLICATION` (e.g. `simple:3`, with
 * `CASSANDRA_CONTACT_POINTS` naming a cluster) runs the same tests with replicas at LOCAL_QUORUM.
 * Both ways give the same schema
 * (`test/store/cassandra/migrations/baseline-schema.int.test.ts`).
 */
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { parseReplication } from '../../src/config.js';
import { type CqlClient, createCqlClient } from '../../src/store/cassandra/client.js';
import { openBaselineKeyspace, openMigratedKeyspace } from '../../src/store/cassandra/keyspace.js';

export { CQL_DIR } from '../../src/store/cassandra/keyspace.js';

export interface TestKeyspace {
  client: CqlClient;
  keyspace: string;
  drop(): Promise<void>;
}

/** `TEST_SCHEMA`: `baseline` (default) or `migrations`. */
function schemaSource(): typeof openBaselineKeyspace {
  const source = process.env.TEST_SCHEMA ?? 'baseline';
  if (source === 'baseline') return openBaselineKeyspace;
  if (source === 'migrations') return openMigratedKeyspace;
  throw new Error(`TEST_SCHEMA must be baseline or migrations, not ${source}`);
}

export async function testKeyspace(label: string): Promise<TestKeyspace> {
  const { contactPoints, localDataCenter } = inject('cassandra');
  const keyspace = `t_${label.replace(/\W/g, '_').toLowerCase().slice(0, 24)}_${randomBytes(4).toString('hex')}`;
  const client = await schemaSource()({
    contactPoints,
    localDataCenter,
    keyspace,
    replication: parseReplication(process.env.TEST_REPLICATION ?? 'simple:1'),
    consistency: 'localQuorum',
    requestTimeoutMs: 30_000,
  });
  return {
    client,
    keyspace,
    drop: async () => {
      await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`, [], { prepare: false });
      await client.shutdown();
    },
  };
}

/** Drops `keyspace` on the test node, if it exists (for keyspaces a test's own process created). */
export async function dropKeyspace(keyspace: string): Promise<void> {
  const { contactPoints, localDataCenter } = inject('cassandra');
  const client = createCqlClient({
    contactPoints,
    localDataCenter,
    consistency: 'one',
    requestTimeoutMs: 30_000,
  });
  try {
    await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
  } finally {
    await client.shutdown();
  }
}
