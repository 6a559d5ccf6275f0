/**
 * Per-file keyspaces on the real node: `await testKeyspace('edges')` creates a fresh keyspace,
 * applies `cql/`, and returns a connected client; `drop()` removes it. `TEST_REPLICATION`
 * (e.g. `simple:3`, with `CASSANDRA_CONTACT_POINTS` naming a cluster) runs the same tests with
 * replicas at LOCAL_QUORUM.
 */
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { parseReplication } from '../../src/config.js';
import type { CqlClient } from '../../src/store/cassandra/client.js';
import { openMigratedKeyspace } from '../../src/store/cassandra/keyspace.js';

export { CQL_DIR } from '../../src/store/cassandra/keyspace.js';

export interface TestKeyspace {
  client: CqlClient;
  keyspace: string;
  drop(): Promise<void>;
}

export async function testKeyspace(label: string): Promise<TestKeyspace> {
  const { contactPoints, localDataCenter } = inject('cassandra');
  const keyspace = `t_${label.replace(/\W/g, '_').toLowerCase().slice(0, 24)}_${randomBytes(4).toString('hex')}`;
  const client = await openMigratedKeyspace({
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
