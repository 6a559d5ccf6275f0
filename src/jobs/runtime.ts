/**
 * What a job runs on outside the server: a connected store and list service on the migrated
 * keyspace, and the local node when no contact points are configured (reused if it is already
 * running, started and stopped otherwise). The CLI (`src/cli.ts`, an entry point) opens it
 * through the one storage wiring (`src/services.ts`) and passes the dev launcher, so only entry
 * points import `src/local-cassandra/`, and nothing in `jobs/` imports the wiring.
 */
import type { EventFeed } from '../graph/contracts.js';
import type { BucketedListService } from '../lists/list-service.js';
import type { CassandraGraphStore } from '../store/cassandra/graph-store.js';

export interface JobRuntime {
  store: CassandraGraphStore;
  lists: BucketedListService;
  /** The settled change feed, configured as the server's (`GraphService.feed`). */
  feed: EventFeed;
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

/** `--users 1,2,3` → ids; exits with a usage message when missing or malformed. */
export function parseUserIds(value: string | undefined, usage: string): bigint[] {
  if (!value || !/^[1-9]\d{0,18}(,[1-9]\d{0,18})*$/.test(value)) {
    console.error(usage);
    process.exit(2);
  }
  return value.split(',').map(BigInt);
}
