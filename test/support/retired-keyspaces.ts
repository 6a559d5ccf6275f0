/**
 * The run's list of retired test keyspaces (a file, one name per line) and the drops, shared by
 * the test files (`cassandra.ts`, through `inject`) and the global setup's teardown. No vitest
 * import here: the global setup runs outside the test workers.
 */
import { readFile } from 'node:fs/promises';
import { type CqlClient, createCqlClient } from '../../src/store/cassandra/client.js';

/** The names listed in `file`; none when it does not exist. */
export async function readRetired(file: string): Promise<string[]> {
  return (await readFile(file, 'utf8').catch(() => '')).split('\n').filter(Boolean);
}

/**
 * Drops `keyspaces` one after another (each if it still exists), through `client` or, when none
 * is given, a client of its own on `node`.
 */
export async function dropKeyspaces(
  keyspaces: readonly string[],
  via: { client: CqlClient } | { node: { contactPoints: string[]; localDataCenter: string } },
): Promise<void> {
  if (keyspaces.length === 0) return;
  const client =
    'client' in via
      ? via.client
      : createCqlClient({ ...via.node, consistency: 'one', requestTimeoutMs: 30_000 });
  try {
    for (const k of keyspaces) await client.execute(`DROP KEYSPACE IF EXISTS ${k}`, [], { prepare: false });
  } finally {
    if (!('client' in via)) await client.shutdown();
  }
}
