/**
 * The app on the real node: a fresh keyspace (`testKeyspace`), the Cassandra store, the bucketed
 * list service and the graph service, exactly as `main.ts` wires them.
 */
import { Registry } from 'prom-client';
import { GraphService } from '../../../src/graph/graph-service.js';
import { createHttpMetrics } from '../../../src/http/metrics.js';
import { BucketedListService } from '../../../src/lists/list-service.js';
import { CassandraGraphStore } from '../../../src/store/cassandra/graph-store.js';
import { type TestKeyspace, testKeyspace } from '../../support/cassandra.js';
import { buildTestApp, type TestAppOptions } from './app.js';

export const CURSOR_SECRET = 'cursor-secret-0123456789abcdef';

export interface RealApp {
  app: ReturnType<typeof buildTestApp>['app'];
  registry: Registry;
  store: CassandraGraphStore;
  graph: GraphService;
  ks: TestKeyspace;
  /** Another app on the same keyspace with other options (e.g. a small following cap). */
  variant(o: { maxFollowing?: number; rateLimitPerMinute?: number }): ReturnType<typeof buildTestApp>['app'];
  close(): Promise<void>;
}

export async function realApp(label: string, o: Partial<TestAppOptions> & { maxFollowing?: number } = {}) {
  const ks = await testKeyspace(label);
  const registry = new Registry();
  const metrics = createHttpMetrics(registry);
  const store = new CassandraGraphStore(ks.client, {
    onQuery: (name, seconds, ok) => metrics.recorder.observeQuery(name, seconds, ok),
  });
  const build = (maxFollowing: number) => {
    const lists = new BucketedListService({
      store,
      cursorSecret: CURSOR_SECRET,
      bucketThresholds: [50_000, 200_000, 400_000],
      onPage: (s) => metrics.recorder.observeBucketFetches(s.list.relation, s.kind, s.queries),
    });
    return new GraphService({
      store,
      lists,
      maxFollowing,
      setCursorSecret: CURSOR_SECRET,
      onTaskError: (userId, e) => console.error(`[real-app] account task of ${userId} failed`, e),
    });
  };
  const graph = build(o.maxFollowing ?? 7500);
  const { app } = buildTestApp({ ...o, graph, receipts: store, registry, metrics });
  const real: RealApp = {
    app,
    registry,
    store,
    graph,
    ks,
    variant: (v) =>
      buildTestApp({
        graph: build(v.maxFollowing ?? 7500),
        receipts: store,
        ...(v.rateLimitPerMinute ? { rateLimitPerMinute: v.rateLimitPerMinute } : {}),
      }).app,
    close: () => ks.drop(),
  };
  return real;
}
