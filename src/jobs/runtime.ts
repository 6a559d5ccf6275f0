/**
 * What a job needs to run outside the server: the parsed config, a connected store and list
 * service on the migrated keyspace (pending migrations are applied first), and the local node
 * when no contact points are configured (reused if it is already running, started and stopped
 * otherwise). The local node comes from the entry point (`cli.ts` passes the dev launcher), so
 * only entry points import `src/local-cassandra/`.
 */
import { loadConfig } from '../config.js';
import { BucketedListService } from '../lists/list-service.js';
import { CassandraGraphStore } from '../store/cassandra/graph-store.js';
import { openMigratedKeyspace } from '../store/cassandra/keyspace.js';

export interface JobRuntime {
  store: CassandraGraphStore;
  lists: BucketedListService;
  close(): Promise<void>;
}

/**
 * The configured contact points when there are any; otherwise the contact points of a local node
 * and the node, which `close()` stops (a no-op for a node that was reused).
 */
export type ContactPointsResolver = (
  configured: string[] | undefined,
  heap: string,
) => Promise<{ contactPoints: string[]; node: { stop(): Promise<void> } | undefined }>;

/** Opens a job's runtime; each command receives one from the CLI. */
export type OpenJobRuntime = () => Promise<JobRuntime>;

export async function openJobRuntime(resolveContactPoints: ContactPointsResolver): Promise<JobRuntime> {
  const config = loadConfig();
  const { contactPoints, node } = await resolveContactPoints(
    config.cassandra.contactPoints,
    config.cassandra.localHeap,
  );
  const client = await openMigratedKeyspace({
    ...config.cassandra,
    contactPoints,
    log: (line) => console.log(`[schema] ${line}`),
  });
  const store = new CassandraGraphStore(client);
  const lists = new BucketedListService({
    store,
    cursorSecret: config.graph.cursorSecret,
    bucketThresholds: config.graph.bucketThresholds,
  });
  return {
    store,
    lists,
    close: async () => {
      await client.shutdown();
      await node?.stop();
    },
  };
}

/** `--users 1,2,3` → ids; exits with a usage message when missing or malformed. */
export function parseUserIds(value: string | undefined, usage: string): bigint[] {
  if (!value || !/^[1-9]\d{0,18}(,[1-9]\d{0,18})*$/.test(value)) {
    console.error(usage);
    process.exit(2);
  }
  return value.split(',').map(BigInt);
}
