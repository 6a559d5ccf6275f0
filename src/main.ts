/**
 * Entry point: load config → start (or reuse) the local Cassandra node when no contact points are
 * configured → connect → migrate → build store, list service, graph service and app → serve.
 * SIGINT/SIGTERM: flip readiness, stop accepting, drain in-flight requests, close the driver, stop
 * the node this process started.
 */
import { serve } from '@hono/node-server';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { createApp, httpOptions } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { GraphService } from './graph/graph-service.js';
import { relayLagSampler } from './graph/relay-lag.js';
import { tracedGraph } from './graph/traced-graph.js';
import { createLogger } from './http/logger.js';
import {
  createHttpMetrics,
  registerCacheMetrics,
  registerFeedTail,
  registerOldestIntent,
  registerRelayLag,
} from './http/metrics.js';
import { startConfiguredTracing } from './http/tracing.js';
import { type DirtyReconcilerHandle, startDirtyReconciler } from './jobs/reconcile-dirty.js';
import { contactPointsOrLocalNode } from './local-cassandra/node.js';
import { whenOrphaned } from './local-cassandra/orphan-watch.js';
import { nowPosition } from './model/clock.js';
import { createWorker, feedCursorSecrets, openStorage, startClockGuard } from './services.js';
import { CQL_DIR } from './store/cassandra/keyspace.js';
import { schemaPresent } from './store/cassandra/migrations/migrate.js';

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
  const logger = createLogger(config.log.level);

  // The start's breakdown, logged with "listening": the node (its launch or reuse), the schema,
  // the rest (performance.now() counts from the process's start).
  const started = { cassandra: performance.now(), schema: 0, service: 0 };
  const { contactPoints, node } = await contactPointsOrLocalNode(
    config.cassandra.contactPoints,
    config.cassandra.localHeap,
    (line) => logger.info(`cassandra: ${line}`),
  );
  if (node) {
    logger.info(
      { owned: node.owned, startupMs: node.startupMs, resolveMs: node.resolveMs },
      'cassandra ready',
    );
  }

  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const metrics = createHttpMetrics(registry);
  const tracing = startConfiguredTracing(config.tracing);
  const { keyspace } = config.cassandra;
  started.schema = performance.now();
  // Started once the graph is built; the statement hook below nudges it.
  let reconciler: DirtyReconcilerHandle | null = null;
  const storage = await openStorage(config, contactPoints, (l) => logger.info(`schema: ${l}`), {
    onQuery: (name, seconds, ok) => {
      metrics.recorder.observeQuery(name, seconds, ok);
      // A mark this instance wrote (a write's, an account task's, a repair's): its reconciler
      // comes back to the interval if it had slowed down while idle.
      if (name === 'markDirty') reconciler?.nudge();
    },
    lists: {
      onPage: (s) => metrics.recorder.observeBucketFetches(s.list.relation, s.kind, s.queries),
      onGrowthProgress: (list, p) =>
        logger.info({ list: { ...list, userId: String(list.userId) }, ...p }, 'list growth'),
      onGrowthError: (list, error) =>
        logger.error(
          { list: { ...list, userId: String(list.userId) }, err: String(error) },
          'list growth failed',
        ),
    },
  });
  const { client, store, lists } = storage;
  started.service = performance.now();
  // Writes wait for the first check of this instance's clock against the database's.
  const clockGuard = await startClockGuard(config, store);
  const skew = clockGuard.distanceMs();
  if (skew === null || skew > config.graph.clockSkewMs) {
    logger.error(
      { distanceMs: skew, boundMs: config.graph.clockSkewMs },
      'clock check failed: writes answer 503',
    );
  }
  const graph = new GraphService({
    store,
    lists,
    maxFollowing: config.graph.maxFollowing,
    clockGuard,
    historyPolicy: { clockSkewMs: config.graph.clockSkewMs, writeBudgetMs: config.graph.writeBudgetMs },
    setCursorSecret: config.graph.cursorSecret,
    feedCursorSecrets: feedCursorSecrets(config),
    feedMaxWaiters: config.graph.feedMaxWaiters,
    eventRetentionSeconds: config.graph.eventRetentionSeconds,
    caches: config.graph.caches,
    // The intent recovery resolves in one instance at a time (the others look only).
    leases: storage.leases,
    ...(tracing ? { tracer: tracing.tracer } : {}),
    onEventsWritten: (n) => metrics.recorder.eventsWritten(n),
    onFeedRead: (_, age) => age !== null && metrics.recorder.feedLag(age),
    onTaskError: (userId, error) =>
      logger.error(
        { userId: String(userId), err: String(error) },
        'account task failed; it resumes on the next PUT or start',
      ),
  });
  // The feed's intents left behind by writers that failed after taking a slot: resolved here, so
  // readers held below them move on (`graph/feed-intents.ts`).
  graph.intentRecovery.start(config.graph.intentRecoveryMs);
  graph
    .resumeAccountTasks()
    .then((n) => n > 0 && logger.info({ tasks: n }, 'resumed unfinished account tasks'))
    .catch((e: unknown) => logger.error({ err: String(e) }, 'could not list unfinished account tasks'));

  reconciler =
    config.graph.reconcileIntervalMs > 0
      ? startDirtyReconciler(store, {
          intervalMs: config.graph.reconcileIntervalMs,
          idleMaxMs: config.graph.reconcileIdleMaxMs,
          clockGuard,
          onPass: (r, ms) => r.lists > 0 && logger.debug({ ...r, ms }, 'counts reconciled'),
          onError: (e) => logger.error({ err: String(e) }, 'count reconciliation pass failed'),
        })
      : null;

  // The maintenance jobs, in this process unless GRAPH_WORKER=off (`npm run worker` runs them alone).
  const worker = config.worker.embedded
    ? createWorker(config, storage, clockGuard, {
        logger,
        registry,
        log: (line) => logger.debug(`worker: ${line}`),
        ...(tracing ? { tracer: tracing.tracer } : {}),
      })
    : null;
  worker?.start();

  // The relays' lags from a background sample every 15 s: a scrape runs no query.
  const relayLag = relayLagSampler(store, nowPosition);
  registerRelayLag(registry, async () => relayLag.lags());
  registerCacheMetrics(registry, () => graph.caches.stats());
  registerOldestIntent(registry, () => graph.intentRecovery.oldestIntentAgeSeconds());
  registerFeedTail(registry, () => ({ polledAtMs: graph.feed.tailPolledAtMs(), ...graph.feed.tailStats() }));

  let draining = false;
  const app = createApp({
    graph: tracing ? tracedGraph(graph, tracing.tracer) : graph,
    feed: graph.feed,
    receipts: store,
    ready: async () => !draining && (await schemaPresent(client, keyspace, CQL_DIR)),
    http: httpOptions(config),
    registry,
    metrics,
    logger,
    ...(tracing ? { tracing } : {}),
  });
  const server = serve({ fetch: app.fetch, port: config.http.port, hostname: config.http.host }, (info) => {
    const now = performance.now();
    const ms = (from: number, to: number) => Math.round(to - from);
    logger.info(
      {
        url: `http://${info.address}:${info.port}`,
        startupMs: {
          total: Math.round(now),
          process: ms(0, started.cassandra),
          cassandra: ms(started.cassandra, started.schema),
          schema: ms(started.schema, started.service),
          service: ms(started.service, now),
        },
      },
      'listening',
    );
  });

  const shutdown = async (signal: string) => {
    if (draining) return;
    draining = true;
    logger.info({ signal }, 'shutting down: draining');
    const force = setTimeout(() => process.exit(1), 60_000);
    force.unref();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await reconciler?.stop();
    await worker?.stop();
    graph.intentRecovery.stop();
    relayLag.stop();
    clockGuard.stop();
    await tracing?.shutdown();
    await client.shutdown();
    if (node) await node.stop();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  whenOrphaned(() => void shutdown('parent exited'));
}

await main();
