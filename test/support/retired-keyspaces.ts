/**
 * The run's list of retired test keyspaces (a file, one name per line) and the drops, shared by
 * the test files (`cassandra.ts`, through `inject`) and the global setup's teardown. No vitest
 * import here: the global setup runs outside the test workers.
 */
import { readFile } from 'node:fs/promises';
import { type CqlClient, createCqlClient, SCHEMA_CHANGE } from '../../src/store/cassandra/client.js';

/**
 * The run's schema-work log beside its list of retired keyspaces: a line per keyspace made
 * (`create 1 MS`) and per batch dropped (`drop N MS`), summed by the global teardown so a CI log
 * shows what the test keyspaces cost.
 */
export function schemaLog(list: string): string {
  return `${list}.schema-work`;
}

/** One line for the run's log: keyspaces made and dropped, and the time the files spent on it. */
export async function schemaWorkSummary(list: string): Promise<string> {
  const lines = (await readFile(schemaLog(list), 'utf8').catch(() => '')).split('\n').filter(Boolean);
  const sum = { create: { n: 0, ms: 0, max: 0 }, drop: { n: 0, ms: 0, max: 0 } };
  for (const line of lines) {
    const [kind, n, ms] = line.split(' ');
    const s = sum[kind as keyof typeof sum];
    if (!s) continue;
    s.n += Number(n);
    s.ms += Number(ms);
    s.max = Math.max(s.max, Number(ms));
  }
  const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  return (
    `test keyspaces: ${sum.create.n} made in ${sec(sum.create.ms)} (slowest ${sec(sum.create.max)}), ` +
    `${sum.drop.n} dropped by the files in ${sec(sum.drop.ms)} (slowest batch ${sec(sum.drop.max)})`
  );
}

/** The names listed in `file`; none when it does not exist. */
export async function readRetired(file: string): Promise<string[]> {
  return (await readFile(file, 'utf8').catch(() => '')).split('\n').filter(Boolean);
}

/**
 * Drops `keyspaces` one after another (each if it still exists), through `client` or, when none
 * is given, a client of its own on `node`. Throws at the first drop that fails; the names not yet
 * dropped are on the error's `remaining`.
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
    for (const [i, k] of keyspaces.entries()) {
      try {
        await client.execute(`DROP KEYSPACE IF EXISTS ${k}`, [], SCHEMA_CHANGE);
      } catch (err) {
        throw new KeyspaceDropError(`dropping ${k} failed: ${String(err)}`, keyspaces.slice(i), {
          cause: err,
        });
      }
    }
  } finally {
    if (!('client' in via)) await client.shutdown();
  }
}

/** A drop failed; `remaining` are the names it did not drop (the failed one first). */
export class KeyspaceDropError extends Error {
  override name = 'KeyspaceDropError';
  constructor(
    message: string,
    readonly remaining: readonly string[],
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
