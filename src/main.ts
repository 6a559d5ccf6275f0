/**
 * Entry point: load config → start (or reuse) the local Cassandra node when no contact points are
 * configured → connect → migrate → serve. SIGINT/SIGTERM: flip readiness, stop accepting, drain,
 * close the driver, stop the node this process started.
 */
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import { createApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { type LocalNode, startLocalNode } from './local-cassandra/node.js';
import { defaultNodeOptions } from './local-cassandra/node-options.js';
import { createCqlClient } from './store/cassandra/client.js';
import { migrate, schemaPresent } from './store/cassandra/migrate.js';

const CQL_DIR = fileURLToPath(new URL('../cql', import.meta.url));

function log(msg: string, extra: Record<string, unknown> = {}) {
  console.log(JSON.stringify({ level: 'info', time: new Date().toISOString(), msg, ...extra }));
}

async function main() {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }

  let node: LocalNode | undefined;
  let contactPoints = config.cassandra.contactPoints;
  if (!contactPoints) {
    node = await startLocalNode(defaultNodeOptions({ heap: config.cassandra.localHeap }), {
      log: (line) => log(`cassandra: ${line}`),
    });
    contactPoints = [`${node.address}:${node.nativePort}`];
    log('cassandra ready', { owned: node.owned, startupMs: node.startupMs, resolveMs: node.resolveMs });
  }

  const { keyspace, ...connection } = config.cassandra;
  const admin = createCqlClient({ ...connection, contactPoints });
  await migrate(admin, keyspace, config.cassandra.replication, CQL_DIR, (l) =>
    log(`schema: ${l}`),
  );
  await admin.shutdown();

  const client = createCqlClient({ ...connection, contactPoints, keyspace });
  await client.connect();

  let shuttingDown = false;
  const app = createApp({
    ready: async () => !shuttingDown && (await schemaPresent(client, keyspace, CQL_DIR)),
  });
  const server = serve({ fetch: app.fetch, port: config.http.port, hostname: config.http.host }, (info) =>
    log('listening', { url: `http://${info.address}:${info.port}` }),
  );

  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    log('shutting down', { signal });
    const force = setTimeout(() => process.exit(1), 60_000);
    force.unref();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await client.shutdown();
    if (node) await node.stop();
    log('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

await main();
