/**
 * The storage wiring, written once: the keyspace (pending migrations applied), the Cassandra store
 * and the list engine, configured from `Config`. The server (`main.ts`) adds its metrics and logs
 * through the hooks; the jobs CLI (`cli.ts`) opens the same through `openJobRuntime`. Only
 * entry points import this file.
 */

import type { Registry } from 'prom-client';
import type { Config } from './config.js';
import type { EventFeed } from './graph/contracts.js';
import { GraphService } from './graph/graph-service.js';
import { newHolderName } from './graph/lease.js';
import { ClockGuard, type WriteClock } from './graph/pair/clock-guard.js';
import { DEFAULT_HISTORY_POLICY } from './graph/pair/pair-history.js';
import type { Logger } from './http/logger.js';
import { type JobMetrics, registerJobMetrics } from './http/metrics.js';
import { DEFAULT_LIST_JOB_SETTLE_MS } from './jobs/list-jobs.js';
import type { ContactPointsResolver, JobRuntime } from './jobs/runtime.js';
import { Worker, type WorkerEvents } from './jobs/worker.js';
import { type WorkerJobDeps, workerJob } from './jobs/worker-jobs.js';
import type { ListService } from './lists/contracts.js';
import { BucketedListService, type ListServiceOptions } from './lists/list-service.js';
import { nowPosition } from './model/clock.js';
import type { Tracer } from './model/tracing.js';
import type { GraphStore } from './ports/graph-store.js';
import type { LeaseStore } from './ports/lease-store.js';
import type { CqlClient } from './store/cassandra/client.js';
import { CqlExecutor } from './store/cassandra/executor.js';
import { CassandraGraphStore, type CassandraGraphStoreOptions } from './store/cassandra/graph-store.js';
import { openMigratedKeyspace } from './store/cassandra/keyspace.js';
import { CassandraLeaseStore } from './store/cassandra/lease-store.js';

export interface Storage {
  client: CqlClient;
  store: CassandraGraphStore;
  lists: BucketedListService;
  /** The maintenance jobs' leases (`job_leases`). */
  leases: LeaseStore;
}

/** The hooks a caller may attach: query timing on the store; page, growth and error reports on the lists. */
export interface StorageHooks {
  onQuery?: CassandraGraphStoreOptions['onQuery'];
  /** Each statement in a span (`http/tracing.ts`), when tracing is on. */
  tracer?: CassandraGraphStoreOptions['tracer'];
  lists?: Pick<ListServiceOptions, 'onPage' | 'onGrowthProgress' | 'onGrowthError'>;
}

/** Connects to `contactPoints`, migrates the configured keyspace and builds the store and the list engine on it. */
export async function openStorage(
  config: Config,
  contactPoints: string[],
  log: (line: string) => void,
  hooks: StorageHooks = {},
): Promise<Storage> {
  const client = await openMigratedKeyspace({ ...config.cassandra, contactPoints, log });
  const store = new CassandraGraphStore(client, {
    eventRetentionSeconds: config.graph.eventRetentionSeconds,
    ...(hooks.onQuery ? { onQuery: hooks.onQuery } : {}),
    ...(hooks.tracer ? { tracer: hooks.tracer } : {}),
  });
  const lists = new BucketedListService({
    store,
    cursorSecret: config.graph.cursorSecret,
    bucketThresholds: config.graph.bucketThresholds,
    timeBucketRows: config.graph.timeBucketRows,
    clockSkewMs: config.graph.clockSkewMs,
    positionLeadMs: Number(DEFAULT_HISTORY_POLICY.maxSkewMicros / 1000n),
    ...hooks.lists,
  });
  const leases = new CassandraLeaseStore(
    new CqlExecutor(client, hooks.onQuery ? { onQuery: hooks.onQuery } : {}),
  );
  return { client, store, lists, leases };
}

/**
 * The worker (`jobs/worker.ts`) on `storage`, with the configured jobs and periods, not started:
 * what `npm run worker` runs alone and `npm start` runs in the service process.
 */
export function createWorker(
  config: Config,
  storage: Storage,
  clockGuard: ClockGuard,
  o: { logger: Logger; registry: Registry; log: (line: string) => void; tracer?: Tracer },
): Worker {
  // Each run counted on `registry` (`registerJobMetrics`) and logged: info when it ended, warn else.
  let metrics: JobMetrics | null = null;
  let feed: EventFeed | undefined;
  const onRun: WorkerEvents['onRun'] = (job, outcome, ms, rows, error) => {
    metrics?.run(job, outcome, ms, rows);
    const line = { job, outcome, ms: Math.round(ms), rows, ...(error ? { err: String(error) } : {}) };
    if (outcome === 'ok') o.logger.info(line, 'job run');
    else o.logger.warn(line, 'job run');
  };
  const deps: WorkerJobDeps = {
    store: storage.store,
    lists: storage.lists,
    settleMs: DEFAULT_LIST_JOB_SETTLE_MS,
    bucketRows: config.graph.timeBucketRows,
    sweepRowsPerSecond: config.worker.sweepRowsPerSecond,
    requestsPerHour: config.worker.jobRequestsPerHour,
    clockGuard,
    log: (job, line) => o.log(`${job}: ${line}`),
    ...(config.worker.relay ? { relay: config.worker.relay } : {}),
    feed: () => {
      feed ??= jobFeed(config, storage.store, storage.lists, clockGuard, storage.leases);
      return feed;
    },
  };
  const worker = new Worker({
    leases: storage.leases,
    holder: newHolderName(),
    jobs: config.worker.jobs.map(({ name, everyMs }) => ({ job: workerJob(name, deps), everyMs })),
    clockBoundMs: config.graph.clockSkewMs,
    leaseTtlMs: config.worker.leaseTtlMs,
    backoffMs: config.worker.backoffMs,
    ...(o.tracer ? { tracer: o.tracer } : {}),
    events: {
      onRun,
      onTickError: (e) => o.log(`could not read the job leases: ${String(e)}`),
    },
  });
  metrics = registerJobMetrics(o.registry, () => worker.jobs());
  return worker;
}

/** This process's clock guard against the database's clock, checked now and every 10 s after. */
export async function startClockGuard(
  config: Config,
  store: Pick<GraphStore, 'databaseClockMs'>,
): Promise<ClockGuard> {
  const guard = new ClockGuard({
    boundMs: config.graph.clockSkewMs,
    databaseClockMs: () => store.databaseClockMs(),
    clock: nowPosition,
    monotonic: () => performance.now(),
  });
  await guard.start();
  return guard;
}

/** The feed's cursor secrets from the config: the current one, then the previous during a rotation. */
export function feedCursorSecrets(config: Config): string[] {
  const { cursorSecret, previousCursorSecret } = config.graph;
  return previousCursorSecret ? [cursorSecret, previousCursorSecret] : [cursorSecret];
}

/**
 * The settled feed a job reads (the relay), as the server configures it: its lag follows from the
 * same bounds. Built through the service with everything that would read in the background off —
 * no deactivated-accounts registry, no caches, so no tail poll — since a job serves no reads.
 */
export function jobFeed(
  config: Config,
  store: GraphStore,
  lists: ListService,
  clockGuard?: WriteClock,
  leases?: LeaseStore,
): EventFeed {
  const graph = new GraphService({
    store,
    lists,
    maxFollowing: config.graph.maxFollowing,
    historyPolicy: { clockSkewMs: config.graph.clockSkewMs, writeBudgetMs: config.graph.writeBudgetMs },
    eventRetentionSeconds: config.graph.eventRetentionSeconds,
    feedCursorSecrets: feedCursorSecrets(config),
    registry: false,
    caches: false,
    ...(clockGuard ? { clockGuard } : {}),
    ...(leases ? { leases } : {}),
  });
  // A relay reads the settled feed, which waits for the intents left behind: from its first read
  // it resolves them too, so it never depends on a server instance running (a job that reads no
  // feed starts nothing).
  const { feed } = graph;
  return {
    read: (...a) => {
      graph.intentRecovery.start(config.graph.intentRecoveryMs);
      return feed.read(...a);
    },
    subscribe: (listener) => feed.subscribe(listener),
  };
}

/**
 * A job's runtime: the configured contact points, or a local node from `resolve` (which `close()`
 * stops when this run started it), and the storage on them.
 */
export async function openJobRuntime(config: Config, resolve: ContactPointsResolver): Promise<JobRuntime> {
  const { contactPoints, node } = await resolve(config.cassandra.contactPoints, config.cassandra.localHeap);
  const { client, store, lists, leases } = await openStorage(config, contactPoints, (line) =>
    console.log(`[schema] ${line}`),
  );
  // The feed a job reads is clock-guarded as the server's is (a relay whose clock runs ahead would
  // save cursors past slots still being written): checked now and every 10 s.
  const clockGuard = await startClockGuard(config, store);
  const feed = jobFeed(config, store, lists, clockGuard, leases);
  return {
    store,
    lists,
    feed,
    close: async () => {
      clockGuard.stop();
      await client.shutdown();
      await node?.stop();
    },
  };
}
