/**
 * Prometheus metrics (prom-client) on an injected `Registry`.
 *
 * - `flocklist_http_requests_total{method,route,status}` and
 *   `flocklist_http_request_duration_seconds{method,route,status}`: `route` is the matched
 *   pattern (`/v1/users/:id/followers`), or `unmatched`, so label cardinality stays bounded.
 * - `flocklist_db_query_duration_seconds{op,outcome}` and
 *   `flocklist_list_bucket_fetches_per_page{relation,kind}`: fed by the domain and the store through
 *   `MetricsRecorder`, which they receive from the composition root (they never import this
 *   module's types: the interface is structural).
 * - `flocklist_events_read_total{route}` (events served by `GET /v1/events` and `/v1/events/stream`,
 *   `route` = the route pattern) and `flocklist_events_sse_streams` (SSE streams open now): fed by
 *   the event routes through `EventMetrics`; `flocklist_events_written_total` and
 *   `flocklist_feed_lag_seconds` (now − the newest event a feed read returned), through the recorder;
 *   `flocklist_relay_lag_seconds{relay}` from the relays' saved cursors (`registerRelayLag`).
 * - `flocklist_feed_tail_age_seconds` and the tail's row and event counters (`registerFeedTail`).
 * - `flocklist_cache_{hits,misses,refused,invalidations}_total{cache}` and
 *   `flocklist_cache_entries{cache}`: the read caches' counters, read when `/metrics` is scraped
 *   (`registerCacheMetrics`).
 */
import type { MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** What the domain and the store may report; every method must be cheap and never throw. */
export interface MetricsRecorder {
  /** One database statement (or batch) named `op` took `seconds`; `ok` defaults to true. */
  observeQuery(op: string, seconds: number, ok?: boolean): void;
  /** One list page (`kind: page`) or scan page needed `fetches` bucket reads (the merge cost). */
  observeBucketFetches(relation: string, kind: string, fetches: number): void;
  /** `count` feed events were written with their change (`flocklist_events_written_total`). */
  eventsWritten(count: number): void;
  /** A feed read returned events; the newest was `seconds` old (`flocklist_feed_lag_seconds`). */
  feedLag(seconds: number): void;
}

/** What the event routes report; cheap, never throws. */
export interface EventMetrics {
  /** `count` events were sent to a client by the route with pattern `route`. */
  eventsRead(route: string, count: number): void;
  /** An SSE stream opened (`+1`) or closed (`-1`). */
  streamsOpen(delta: 1 | -1): void;
}

export interface HttpMetrics {
  recorder: MetricsRecorder;
  events: EventMetrics;
  middleware: MiddlewareHandler;
}

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export function createHttpMetrics(registry: Registry): HttpMetrics {
  const requests = new Counter({
    name: 'flocklist_http_requests_total',
    help: 'HTTP requests by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'flocklist_http_request_duration_seconds',
    help: 'HTTP request latency by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const dbQuery = new Histogram({
    name: 'flocklist_db_query_duration_seconds',
    help: 'Database statement latency by operation and outcome.',
    labelNames: ['op', 'outcome'],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const bucketFetches = new Histogram({
    name: 'flocklist_list_bucket_fetches_per_page',
    help: 'Bucket partition reads needed to serve one list page.',
    labelNames: ['relation', 'kind'],
    buckets: [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64],
    registers: [registry],
  });

  const eventsRead = new Counter({
    name: 'flocklist_events_read_total',
    help: 'Change-feed events sent to clients, by route pattern.',
    labelNames: ['route'],
    registers: [registry],
  });
  const sseStreams = new Gauge({
    name: 'flocklist_events_sse_streams',
    help: 'Server-Sent Events streams of the change feed open now.',
    registers: [registry],
  });
  const events: EventMetrics = {
    eventsRead: (route, count) => {
      if (count > 0) eventsRead.inc({ route }, count);
    },
    streamsOpen: (delta) => sseStreams.inc(delta),
  };

  const eventsWritten = new Counter({
    name: 'flocklist_events_written_total',
    help: 'Change-feed events written by this instance, with the changes they describe.',
    registers: [registry],
  });
  const feedLag = new Gauge({
    name: 'flocklist_feed_lag_seconds',
    help: 'Now minus the slot of the newest event the last feed read returned (the watermark lag and idle time).',
    registers: [registry],
  });
  const recorder: MetricsRecorder = {
    observeQuery: (op, seconds, ok = true) => dbQuery.observe({ op, outcome: ok ? 'ok' : 'error' }, seconds),
    observeBucketFetches: (relation, kind, fetches) => bucketFetches.observe({ relation, kind }, fetches),
    eventsWritten: (count) => {
      if (count > 0) eventsWritten.inc(count);
    },
    feedLag: (seconds) => feedLag.set(seconds),
  };

  const middleware: MiddlewareHandler = async (c, next) => {
    const start = performance.now();
    try {
      await next();
    } finally {
      const seconds = (performance.now() - start) / 1000;
      const labels = { method: c.req.method, route: routePattern(c), status: String(c.res.status) };
      requests.inc(labels);
      duration.observe(labels, seconds);
    }
  };
  return { recorder, events, middleware };
}

/** The matched route pattern (not the raw path), or `unmatched`. Middleware routes are `ALL`. */
export function routePattern(c: Parameters<MiddlewareHandler>[0]): string {
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i--) {
    const r = routes[i];
    if (r && r.method !== 'ALL') return r.path;
  }
  return 'unmatched';
}

/**
 * `flocklist_relay_lag_seconds{relay}`: for each Kafka relay, now minus the slot of the feed
 * cursor it committed last (the relays save their cursors in the database; `read` lists them and
 * their lag), read when `/metrics` is scraped. A failed read leaves the gauge empty for that scrape.
 */
export function registerRelayLag(
  registry: Registry,
  read: () => Promise<{ relay: string; lagSeconds: number }[]>,
): void {
  new Gauge({
    name: 'flocklist_relay_lag_seconds',
    help: 'Now minus the slot of the feed cursor each Kafka relay committed last.',
    labelNames: ['relay'],
    registers: [registry],
    async collect() {
      this.reset();
      const lags = await read().catch(() => []);
      for (const { relay, lagSeconds } of lags) this.set({ relay }, lagSeconds);
    },
  });
}

/**
 * `flocklist_feed_oldest_intent_seconds`: how long the oldest unresolved feed intent this instance
 * last saw has stood (0: none). The settled feed waits for it; past the delivery bound D (60 s) an
 * alert is due (`docs/operations.md`). From memory: a scrape runs no query.
 */
export function registerOldestIntent(registry: Registry, ageSeconds: () => number): void {
  new Gauge({
    name: 'flocklist_feed_oldest_intent_seconds',
    help: 'Age of the oldest unresolved feed intent this instance last saw (0: none); the settled feed waits for it.',
    registers: [registry],
    collect() {
      this.set(ageSeconds());
    },
  });
}

/** What the feed's tail reports (structural: `Feed`'s `tailPolledAtMs` and `tailStats`). */
export interface FeedTailReport {
  /** ms since the epoch when the last fresh read that caught up began; null: none (or no tail). */
  polledAtMs: number | null;
  rowsRead: number;
  eventsPassed: number;
  eventsLate: number;
}

/**
 * The feed's unsettled tail, from memory (no query per scrape): `flocklist_feed_tail_age_seconds`
 * (now − the start of its last fresh read that caught up; absent while no tail runs),
 * `flocklist_feed_tail_rows_read_total`, `…_events_total` (passed on to the caches and the
 * registry) and `…_late_events_total` (of those, found only by the sweep, 2 s + 2S late).
 */
export function registerFeedTail(
  registry: Registry,
  read: () => FeedTailReport,
  nowMs: () => number = Date.now,
): void {
  new Gauge({
    name: 'flocklist_feed_tail_age_seconds',
    help: "Seconds since the feed tail's last read that caught up began (absent: no tail runs).",
    registers: [registry],
    collect() {
      this.reset();
      const at = read().polledAtMs;
      if (at !== null) this.set(Math.max(0, nowMs() - at) / 1000);
    },
  });
  const counter = (name: string, help: string, key: Exclude<keyof FeedTailReport, 'polledAtMs'>) =>
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(read()[key]);
      },
    });
  counter(
    'flocklist_feed_tail_rows_read_total',
    'Feed rows the tail has read (fresh reads and the sweep).',
    'rowsRead',
  );
  counter(
    'flocklist_feed_tail_events_total',
    'Events the tail passed on to the caches and the registry.',
    'eventsPassed',
  );
  counter(
    'flocklist_feed_tail_late_events_total',
    "Events only the tail's sweep found (landed further behind than the fresh read reached).",
    'eventsLate',
  );
}

/** What one read cache reports (structural: `ReadCacheStats` of `graph/caches/read-cache.ts`). */
export interface CacheStats {
  hits: number;
  misses: number;
  refused: number;
  invalidations: number;
  size: number;
}

/**
 * `flocklist_cache_hits_total{cache}`, `…_misses_total`, `…_refused_total` (read-throughs the race
 * rule refused to store), `…_invalidations_total` and `flocklist_cache_entries{cache}`, from
 * `read()` (every cache's counters since it was built) when `/metrics` is scraped.
 */
export function registerCacheMetrics(registry: Registry, read: () => Record<string, CacheStats>): void {
  const counter = (key: Exclude<keyof CacheStats, 'size'>, name: string, help: string) =>
    new Counter({
      name,
      help,
      labelNames: ['cache'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [cache, s] of Object.entries(read())) this.inc({ cache }, s[key]);
      },
    });
  counter('hits', 'flocklist_cache_hits_total', 'Read-cache lookups answered from memory, by cache.');
  counter(
    'misses',
    'flocklist_cache_misses_total',
    'Read-cache lookups that went to the database, by cache.',
  );
  counter(
    'refused',
    'flocklist_cache_refused_total',
    'Read-throughs not stored because an invalidation came after their read began (or it outlived the TTL), by cache.',
  );
  counter('invalidations', 'flocklist_cache_invalidations_total', 'Read-cache invalidations, by cache.');
  new Gauge({
    name: 'flocklist_cache_entries',
    help: 'Entries held by each read cache now.',
    labelNames: ['cache'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [cache, s] of Object.entries(read())) this.set({ cache }, s.size);
    },
  });
}

/** A job as the worker reports it (structural: `jobs/worker.ts`'s `JobStatus`). */
export interface JobView {
  name: string;
  running: boolean;
  state: {
    lastStartMs: number | null;
    lastEndMs: number | null;
    lastRows: number | null;
    failures: number;
  } | null;
  holder: string | null;
  generation: bigint | null;
}

/** What the worker reports per run; cheap, never throws. */
export interface JobMetrics {
  /** A run of `job` ended: `ok`, `failed` (it backs off), or `lost` (its lease went to another worker). */
  run(job: string, outcome: 'ok' | 'failed' | 'lost', ms: number, rows: number): void;
}

/**
 * The worker's metrics: `flocklist_job_runs_total{job,outcome}`, `flocklist_job_failures_total{job}`
 * and `flocklist_job_last_duration_seconds{job}` / `flocklist_job_last_rows{job}` (this process's
 * runs); from the lease rows as last read (`jobs()`, no query on a scrape):
 * `flocklist_job_last_start_timestamp_seconds{job}`, `flocklist_job_last_end_timestamp_seconds{job}`,
 * `flocklist_job_consecutive_failures{job}`, `flocklist_job_lease_generation{job,holder}` and
 * `flocklist_job_running{job}` (1 while this process runs it).
 */
export function registerJobMetrics(registry: Registry, jobs: () => JobView[]): JobMetrics {
  const runs = new Counter({
    name: 'flocklist_job_runs_total',
    help: 'Runs of each maintenance job in this process, by outcome (ok, failed, lost: its lease went to another worker).',
    labelNames: ['job', 'outcome'],
    registers: [registry],
  });
  const failures = new Counter({
    name: 'flocklist_job_failures_total',
    help: 'Failed runs of each maintenance job in this process (each backs off before the next try).',
    labelNames: ['job'],
    registers: [registry],
  });
  const duration = new Gauge({
    name: 'flocklist_job_last_duration_seconds',
    help: "This process's last run of each job: its duration.",
    labelNames: ['job'],
    registers: [registry],
  });
  const rowsGauge = new Gauge({
    name: 'flocklist_job_last_rows',
    help: "This process's last run of each job that ended: the rows it handled.",
    labelNames: ['job'],
    registers: [registry],
  });
  const fromLeases = (name: string, help: string, value: (j: JobView) => number | null, labels = ['job']) =>
    new Gauge({
      name,
      help,
      labelNames: labels,
      registers: [registry],
      collect() {
        this.reset();
        for (const j of jobs()) {
          const v = value(j);
          if (v === null) continue;
          if (labels.includes('holder')) this.set({ job: j.name, holder: j.holder ?? '' }, v);
          else this.set({ job: j.name }, v);
        }
      },
    });
  const seconds = (ms: number | null | undefined) => (ms == null ? null : ms / 1000);
  fromLeases(
    'flocklist_job_last_start_timestamp_seconds',
    'When the last run of each job started (any worker), as last read from its lease row.',
    (j) => seconds(j.state?.lastStartMs),
  );
  fromLeases(
    'flocklist_job_last_end_timestamp_seconds',
    'When the last run of each job that ended, ended (any worker), as last read from its lease row.',
    (j) => seconds(j.state?.lastEndMs),
  );
  fromLeases(
    'flocklist_job_consecutive_failures',
    'Failed runs of each job since its last run that ended (any worker).',
    (j) => j.state?.failures ?? null,
  );
  fromLeases(
    'flocklist_job_lease_generation',
    "Each job's lease: its generation (one more per takeover) and holder, as last read.",
    (j) => (j.generation === null ? null : Number(j.generation)),
    ['job', 'holder'],
  );
  fromLeases('flocklist_job_running', '1 while this process runs the job.', (j) => (j.running ? 1 : 0));
  return {
    run(job, outcome, ms, rows) {
      runs.inc({ job, outcome });
      duration.set({ job }, ms / 1000);
      if (outcome === 'failed') failures.inc({ job });
      if (outcome === 'ok') rowsGauge.set({ job }, rows);
    },
  };
}
