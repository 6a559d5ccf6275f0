import { resolve } from 'node:path';

/** Everything that distinguishes one local node from another; a 3-node cluster varies `address`. */
export interface NodeOptions {
  /** cassandra-all version resolved from Maven Central. */
  version: string;
  /** Loopback address the node binds (127.0.0.1, 127.0.0.2, …). */
  address: string;
  nativePort: number;
  storagePort: number;
  /** Seeds as `host:port`. */
  seeds: string[];
  /** This node's single token (fixed tokens skip allocation and its waits). */
  initialToken: string;
  clusterName: string;
  /** Jar cache, shared by all nodes. */
  cacheDir: string;
  /** This node's data, commitlog, logs and written config. */
  nodeDir: string;
  heap: string;
  commitlogSync: 'periodic' | 'batch' | 'group';
  /** Failure-detector sensitivity (Cassandra accepts 5–16; 8 is its default). */
  phiConvictThreshold: number;
  /** Hinted handoff; off makes a node that was down come back stale until read repair or repair. */
  hintedHandoff: boolean;
  /**
   * How long a starting node waits to hear from a seed (and other gossip waits). 1 s suits a
   * single node; a joining node on a busy machine needs more or it gives up ("Unable to contact
   * any seeds").
   */
  ringDelayMs: number;
  /** False: join with the fixed token without streaming (a fresh local cluster has no data). */
  autoBootstrap: boolean;
  /**
   * False only for a throwaway test node: schema changes stay in memory until the next flush
   * (Cassandra's own test switch `cassandra.test.flush_local_schema_changes`), so a keyspace of
   * ~40 tables is made in ~1 s instead of ~3 and dropped likewise. A clean stop flushes them; a
   * `kill -9` loses the schema made since the last flush.
   */
  flushSchemaChanges: boolean;
}

export const CASSANDRA_VERSION = '5.0.8';

/** The project-relative home of jars and node data; git-ignored. */
export function defaultHome(): string {
  return resolve(process.cwd(), '.cassandra');
}

export function defaultNodeOptions(overrides: Partial<NodeOptions> = {}): NodeOptions {
  const home = defaultHome();
  const address = overrides.address ?? '127.0.0.1';
  return {
    version: CASSANDRA_VERSION,
    address,
    nativePort: 9042,
    storagePort: 7000,
    seeds: [`${address}:${overrides.storagePort ?? 7000}`],
    initialToken: '0',
    clusterName: 'flocklist',
    cacheDir: resolve(home, 'cache'),
    nodeDir: resolve(home, 'nodes', address),
    heap: '1G',
    commitlogSync: 'periodic',
    phiConvictThreshold: 8,
    hintedHandoff: true,
    ringDelayMs: 1000,
    autoBootstrap: true,
    flushSchemaChanges: true,
    ...overrides,
  };
}
