/**
 * Entry point of `npm run worker`: the maintenance jobs on their schedules (`WORKER_JOBS`), under
 * their leases, beside any number of service instances and other workers on one cluster; its
 * `/metrics` and `/healthz` on `HOST:WORKER_PORT`. Load config → start (or reuse) the local node
 * when no contact points are configured → connect → migrate → clock guard → worker.
 * SIGINT/SIGTERM: stop ticking, give up the leases (each job keeps its saved position), close.
 */
import { collectDefaultMetrics, Registry } from 'prom-client';
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './http/logger.js';
import { startConfiguredTracing } from './http/tracing.js';
import { createWorkerApp, serveWorkerApp } from './http/worker-app.js';
import { contactPointsOrLocalNode } from './local-cassandra/node.js';
import { whenOrphaned } from './local-cassandra/orphan-watch.js';
import { createWorker, openStorage, startClockGuard } from './services.js';

async function runWorker() {
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
  const logger = createLogger(config.log.level);
  const { contactPoints, node } = await contactPointsOrLocalNode(
    config.cassandra.contactPoints,
    config.cassandra.localHeap,
    (line) => logger.info(`cassandra: ${line}`),
  );
  // Tracing as the service configures it: each job run a root span, its statements under it.
  const tracing = startConfiguredTracing(config.tracing);
  const storage = await openStorage(
    config,
    contactPoints,
    (l) => logger.info(`schema: ${l}`),
    tracing ? { tracer: tracing.tracer } : {},
  );
  const clockGuard = await startClockGuard(config, storage.store);
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const worker = createWorker(config, storage, clockGuard, {
    logger,
    registry,
    log: (line) => logger.info(line),
    ...(tracing ? { tracer: tracing.tracer } : {}),
  });
  const http = await serveWorkerApp(createWorkerApp(registry, worker), config.http.host, config.worker.port);
  worker.start();
  logger.info(
    { url: http.url, jobs: config.worker.jobs.map((j) => `${j.name} every ${j.everyMs / 1000} s`) },
    'worker running',
  );

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'worker stopping');
    const force = setTimeout(() => process.exit(1), 60_000);
    force.unref();
    await worker.stop();
    await http.close();
    clockGuard.stop();
    await tracing?.shutdown();
    await storage.client.shutdown();
    if (node) await node.stop();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  whenOrphaned(() => void shutdown('parent exited'));
}

await runWorker();
