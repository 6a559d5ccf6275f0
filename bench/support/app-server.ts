/**
 * The real app over a loaded celebrity keyspace, served on loopback for the HTTP benches
 * (`bench:http`, `bench:walk`): `Bench.celebrity`'s services wired into `createApp` as `src/main.ts`
 * wires it (default metrics and HTTP metrics on one registry, the store as the receipts store,
 * readiness from the schema), with a silent logger, no `/docs`, a rate limit that never bites and
 * the bench JWT secret. The store's per-statement timings and the list engine's per-page bucket
 * reads feed `/metrics` as in `main.ts` (`flocklist_db_query_duration_seconds{op}`,
 * `flocklist_list_bucket_fetches_per_page`), through `CelebrityServices.hooks`. Not wired:
 * account-task resumption, the reconciler.
 */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { type AppDeps, createApp } from '../../src/app.js';
import type { GraphService } from '../../src/graph/graph-service.js';
import { createLogger } from '../../src/http/logger.js';
import { createHttpMetrics } from '../../src/http/metrics.js';
import { mintToken } from '../../src/jobs/token.js';
import { CQL_DIR } from '../../src/store/cassandra/keyspace.js';
import { schemaPresent } from '../../src/store/cassandra/migrations/migrate.js';
import { type Bench, keyspaceFor } from './harness.js';

export const BENCH_JWT_SECRET = 'bench-secret-0123456789abcdef';

/** Serves the app for the celebrity keyspace of `followers` on 127.0.0.1 (a free port). */
export async function startCelebrityApp(bench: Bench<unknown>, followers: number) {
  const { client, store, lists, graph, hooks } = await bench.celebrity(followers);
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const metrics = createHttpMetrics(registry);
  hooks.onQuery = (name, seconds, ok) => metrics.recorder.observeQuery(name, seconds, ok);
  hooks.onPage = (s) => metrics.recorder.observeBucketFetches(s.list.relation, s.kind, s.queries);
  const served = await serveApp({
    graph,
    receipts: store,
    ready: () => schemaPresent(client, bench.config.keyspace ?? keyspaceFor(followers), CQL_DIR),
    registry,
    metrics,
  });
  return {
    ...served,
    graph,
    lists,
    store,
    client,
    async close() {
      await served.close();
      await bench.close();
    },
  };
}

/**
 * Serves `createApp` over `graph` on 127.0.0.1 (a free port) as `main.ts` wires it, with a silent
 * logger, no `/docs`, a rate limit that never bites and the bench JWT secret.
 */
export async function serveApp(o: {
  graph: GraphService;
  receipts: AppDeps['receipts'];
  ready: AppDeps['ready'];
  registry: Registry;
  metrics: ReturnType<typeof createHttpMetrics>;
  /** Request spans (`src/http/tracing.ts`), for the tracing bench. */
  tracing?: AppDeps['tracing'];
}) {
  const app = createApp({
    graph: o.graph,
    feed: o.graph.feed,
    receipts: o.receipts,
    ready: o.ready,
    http: {
      jwtSecret: BENCH_JWT_SECRET,
      bodyLimitBytes: 64 * 1024,
      rateLimitPerMinute: 1_000_000_000,
      receiptTtlSeconds: 86_400,
      docs: false,
    },
    registry: o.registry,
    metrics: o.metrics,
    logger: createLogger('silent'),
    ...(o.tracing ? { tracing: o.tracing } : {}),
  });
  const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** A bearer token (without the `Bearer ` prefix) for `sub`, valid for 24 hours. */
    token: (sub: bigint, admin = false) =>
      mintToken(
        { sub: String(sub), expiresInSeconds: 86_400, ...(admin ? { admin: true } : {}) },
        BENCH_JWT_SECRET,
      ),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
