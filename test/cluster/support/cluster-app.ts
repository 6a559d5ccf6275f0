/**
 * The service on the test cluster, wired as `main.ts` wires it but in-process: the config comes
 * from `loadConfig` (so the driver settings under test are the service's defaults unless the
 * caller overrides a variable), the keyspace is made (or migrated) at NetworkTopologyStrategy RF 3, and the
 * Hono app is driven with `app.request()`. `call()` times every request and never throws.
 */
import { type Config, loadConfig } from '../../../src/config.js';
import { GraphService } from '../../../src/graph/graph-service.js';
import { createLogger } from '../../../src/http/logger.js';
import { BucketedListService } from '../../../src/lists/list-service.js';
import type { CqlClient } from '../../../src/store/cassandra/client.js';
import { CassandraGraphStore } from '../../../src/store/cassandra/graph-store.js';
import {
  CQL_DIR,
  openBaselineKeyspace,
  openMigratedKeyspace,
} from '../../../src/store/cassandra/keyspace.js';
import { schemaPresent } from '../../../src/store/cassandra/migrations/migrate.js';
import { bearer, buildTestApp } from '../../http/support/app.js';

export const KEYSPACE = 'cluster_faults';

/** The environment the service (and the repair job) would run with against this cluster. */
export function clusterEnv(
  contactPoints: string[],
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    CASSANDRA_CONTACT_POINTS: contactPoints.join(','),
    CASSANDRA_LOCAL_DC: 'datacenter1',
    CASSANDRA_KEYSPACE: KEYSPACE,
    CASSANDRA_REPLICATION: 'datacenter1:3',
    CASSANDRA_CONSISTENCY: 'localQuorum',
    ...extra,
  };
}

export interface Reply {
  status: number;
  ms: number;
  startedAt: number;
  headers: Headers;
  json: Record<string, unknown> | undefined;
}

export interface ClusterApp {
  config: Config;
  client: CqlClient;
  call(
    method: string,
    path: string,
    o?: { as?: bigint; admin?: boolean; key?: string; body?: unknown },
  ): Promise<Reply>;
  close(): Promise<void>;
}

/**
 * `create`: the keyspace is new — made from the schema baseline (the replay of every migration
 * file costs ~95 s on this 3-node cluster, a schema change a second and a half; the baseline is
 * kept equal to the replay by its own test). Otherwise the migrations are checked as at start-up.
 */
export async function clusterApp(
  env: Record<string, string>,
  o: { create?: boolean } = {},
): Promise<ClusterApp> {
  const config = loadConfig(env);
  const { contactPoints = [], ...cassandra } = config.cassandra;
  const open = o.create ? openBaselineKeyspace : openMigratedKeyspace;
  const client = await open({ ...cassandra, contactPoints });
  const store = new CassandraGraphStore(client);
  const lists = new BucketedListService({
    store,
    cursorSecret: config.graph.cursorSecret,
    bucketThresholds: config.graph.bucketThresholds,
  });
  const graph = new GraphService({
    store,
    lists,
    maxFollowing: config.graph.maxFollowing,
    setCursorSecret: config.graph.cursorSecret,
  });
  // As the server does: the feed's intents left behind are resolved every 2 s.
  graph.intentRecovery.start(2000);
  const { app } = buildTestApp({
    graph,
    feed: graph.feed,
    receipts: store,
    ready: () => schemaPresent(client, cassandra.keyspace, CQL_DIR),
    // A 500 is a bug even under faults: log it with its stack (CI keeps the output).
    logger: createLogger(process.env.CLUSTER_LOG_LEVEL ?? 'error'),
  });
  return {
    config,
    client,
    call: async (method, path, o = {}) => {
      const headers: Record<string, string> = {};
      if (o.as !== undefined || o.admin)
        headers.authorization = bearer(o.as ?? 1n, { admin: o.admin ?? false });
      if (o.key) headers['idempotency-key'] = o.key;
      if (o.body !== undefined) headers['content-type'] = 'application/json';
      const startedAt = Date.now();
      const t0 = performance.now();
      let status = 0;
      let json: Record<string, unknown> | undefined;
      let resHeaders = new Headers();
      try {
        const res = await app.request(path, {
          method,
          headers,
          ...(o.body === undefined ? {} : { body: JSON.stringify(o.body) }),
        });
        status = res.status;
        resHeaders = res.headers;
        const text = await res.text();
        json = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
      } catch {
        status = -1;
      }
      return { status, ms: performance.now() - t0, startedAt, headers: resHeaders, json };
    },
    close: async () => {
      graph.intentRecovery.stop();
      await client.shutdown();
    },
  };
}
