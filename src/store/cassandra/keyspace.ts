import { fileURLToPath } from 'node:url';
import { type CassandraConnectOptions, type CqlClient, createCqlClient } from './client.js';
import { createFromBaseline, migrate } from './migrations/migrate.js';

/** The project's schema files. */
export const CQL_DIR = fileURLToPath(new URL('../../../cql', import.meta.url));

export interface OpenKeyspaceOptions extends Omit<CassandraConnectOptions, 'keyspace'> {
  keyspace: string;
  replication: Record<string, string | number>;
  /** Defaults to the project's `cql/`. */
  cqlDir?: string;
  log?: (line: string) => void;
  /** `openMigratedKeyspace`: make a new keyspace from the baseline (default) or replay every file. */
  fromBaseline?: boolean;
}

/**
 * Creates the keyspace if needed, applies every pending migration (a new keyspace in one step
 * from the baseline, see `migrate.ts`), and returns a client connected to it. The one way the
 * service, the jobs and the benchmarks reach a keyspace.
 */
export async function openMigratedKeyspace(o: OpenKeyspaceOptions): Promise<CqlClient> {
  return openWith(o, migrate);
}

/**
 * Creates a new keyspace from the baseline of `cql/` (then applies any file the baseline lags),
 * and returns a client connected to it: what the tests use, the same schema as
 * `openMigratedKeyspace` without replaying every migration. Throws `BaselineKeyspaceExistsError`
 * when the keyspace exists.
 */
export async function openBaselineKeyspace(o: OpenKeyspaceOptions): Promise<CqlClient> {
  return openWith(o, createFromBaseline);
}

async function openWith(o: OpenKeyspaceOptions, prepare: typeof migrate): Promise<CqlClient> {
  const { keyspace, replication, cqlDir = CQL_DIR, log, fromBaseline, ...connection } = o;
  // The runner waits for schema agreement itself, where its statements' order needs it.
  const admin = createCqlClient({ ...connection, schemaAgreementWaitSeconds: 0 });
  try {
    await prepare(admin, keyspace, replication, cqlDir, log, fromBaseline === false ? { fromBaseline } : {});
  } finally {
    await admin.shutdown();
  }
  const client = createCqlClient({ ...connection, keyspace });
  await client.connect();
  return client;
}
