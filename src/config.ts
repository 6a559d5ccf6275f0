/**
 * The only reader of `process.env`: one zod schema turns the environment into a typed, nested
 * config. A bad value stops the process with a message naming the variable.
 */
import { z } from 'zod';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const csv = z.string().transform((v) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);

/** The maintenance jobs the worker can run (`jobs/worker-jobs.ts`). */
export const WORKER_JOB_NAMES = [
  'split-search',
  'split-buckets',
  'repair-sweep',
  'reconcile-dirty',
  'index-search',
  'suggest',
  'relay',
] as const;
export type WorkerJobName = (typeof WORKER_JOB_NAMES)[number];

/** Each job's period by default (`off`: not run; the heavy ones are off or rate-limited). */
const DEFAULT_WORKER_JOBS =
  'split-search=1h,split-buckets=1h,repair-sweep=24h,reconcile-dirty=off,index-search=off,suggest=off,relay=off';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * `WORKER_JOBS`: `name=period` pairs (`30s`, `15m`, `1h`, `1d`, or `off`), laid over the defaults;
 * a period is at least 1 s. An unknown name or a bad period stops the start with a message.
 */
const workerJobs = z.string().transform((v, ctx) => {
  const periods = new Map<WorkerJobName, number | null>();
  for (const part of `${DEFAULT_WORKER_JOBS},${v}`
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const m = /^([a-z-]+)=(?:(off)|(\d{1,9})(ms|s|m|h|d))$/.exec(part);
    const name = m?.[1] as WorkerJobName | undefined;
    if (!m || !name || !(WORKER_JOB_NAMES as readonly string[]).includes(name)) {
      ctx.addIssue({
        code: 'custom',
        message: `"${part}": expected name=period with a name among ${WORKER_JOB_NAMES.join(', ')} and a period like 30s, 15m, 1h, 1d or off`,
      });
      return z.NEVER;
    }
    const ms = m[2] ? null : Number(m[3]) * (UNIT_MS[m[4] as string] as number);
    if (ms !== null && ms < 1000) {
      ctx.addIssue({ code: 'custom', message: `"${part}": a period is at least 1s` });
      return z.NEVER;
    }
    periods.set(name, ms);
  }
  return [...periods].flatMap(([name, everyMs]) => (everyMs === null ? [] : [{ name, everyMs }]));
});

const EnvSchema = z.object({
  PORT: int(0, 65535).default(3000),
  HOST: z.string().default('127.0.0.1'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  CASSANDRA_CONTACT_POINTS: csv.optional(),
  CASSANDRA_LOCAL_DC: z.string().default('datacenter1'),
  CASSANDRA_KEYSPACE: z
    .string()
    .regex(/^[a-z][a-z0-9_]{0,47}$/, 'lower-case CQL identifier')
    .default('flocklist'),
  CASSANDRA_REPLICATION: z
    .string()
    .regex(/^(simple:\d+|(\w+:\d+)(,\w+:\d+)*)$/, 'simple:RF or dc1:RF,dc2:RF')
    .default('simple:1'),
  CASSANDRA_CONSISTENCY: z.enum(['localOne', 'localQuorum', 'quorum', 'one', 'all']).default('localQuorum'),
  CASSANDRA_USERNAME: z.string().optional(),
  CASSANDRA_PASSWORD: z.string().optional(),
  CASSANDRA_REQUEST_TIMEOUT_MS: int(100, 120_000).default(5000),
  CASSANDRA_SPECULATIVE_DELAY_MS: int(0, 60_000).default(200),
  CASSANDRA_BATCHLOG_RETRY: z.enum(['true', 'false', '1', '0', 'yes', 'no']).default('false').pipe(bool),
  CASSANDRA_HEAP: z
    .string()
    .regex(/^\d+[MG]$/)
    .default('1G'),

  GRAPH_JWT_SECRET: z.string().min(16, 'at least 16 characters').default('dev-only-secret-change-me-please'),
  GRAPH_CURSOR_SECRET: z.string().min(16).optional(),
  /** The cursor secret before a rotation: feed cursors sealed under it are still accepted. */
  GRAPH_CURSOR_SECRET_PREVIOUS: z.string().min(16).optional(),
  GRAPH_MAX_FOLLOWING: int(1, 10_000_000).default(7500),
  GRAPH_BUCKET_THRESHOLDS: z
    .string()
    .regex(/^\d+(,\d+)*$/, 'comma-separated list sizes, ascending')
    .default('250000,500000,1000000,2000000,4000000,8000000')
    .transform((v) => v.split(',').map(Number))
    .refine((a) => a.every((n, i) => n > 0 && (i === 0 || n > (a[i - 1] as number))), 'must be ascending'),
  GRAPH_TIME_BUCKET_ROWS: int(1000, 10_000_000).default(250_000),
  GRAPH_RATE_LIMIT_PER_MINUTE: int(1, 1_000_000).default(300),
  GRAPH_BODY_LIMIT_BYTES: int(1024, 16 * 1024 * 1024).default(64 * 1024),
  GRAPH_RECEIPT_TTL_SECONDS: int(86_400, 30 * 86_400).default(2 * 86_400),
  GRAPH_RECONCILE_INTERVAL_MS: int(0, 3_600_000).default(5000),
  GRAPH_RECONCILE_IDLE_MAX_MS: int(0, 3_600_000).default(30_000),
  GRAPH_CLOCK_SKEW_MS: int(10, 60_000).default(2000),
  GRAPH_WRITE_BUDGET_MS: int(50, 60_000).default(2000),
  GRAPH_EVENT_RETENTION_SECONDS: int(3600, 30 * 86_400).default(7 * 86_400),
  GRAPH_FEED_MAX_WAITERS: int(1, 100_000).default(1000),
  GRAPH_INTENT_RECOVERY_MS: int(0, 60_000).default(2000),
  GRAPH_CACHE_TTL_MS: int(0, 2000).default(1000),
  GRAPH_CACHE_USERS: int(0, 10_000_000).default(300_000),
  GRAPH_CACHE_EDGES: int(0, 20_000_000).default(500_000),
  GRAPH_CACHE_COUNTS: int(0, 10_000_000).default(100_000),
  GRAPH_CACHE_PAGES: int(0, 1_000_000).default(1000),
  GRAPH_CACHE_PAGE_MIN_LIST: int(0, 1_000_000_000).default(10_000),
  GRAPH_CACHE_FOLLOWING: int(0, 100_000_000).default(1_000_000),
  GRAPH_DOCS: z.enum(['true', 'false', '1', '0', 'yes', 'no']).default('true').pipe(bool),
  /** OTLP/HTTP traces endpoint (e.g. http://127.0.0.1:4318/v1/traces); unset: tracing off. */
  GRAPH_TRACING_ENDPOINT: z.url().optional(),
  GRAPH_TRACING_SAMPLE_RATIO: z.coerce.number().min(0).max(1).default(0.01),
  /** `npm start` runs the worker in the service process unless this is off (`npm run worker` runs it alone). */
  GRAPH_WORKER: z.enum(['on', 'off']).default('on'),
  WORKER_JOBS: z.string().default('').pipe(workerJobs),
  WORKER_PORT: int(0, 65535).default(3001),
  WORKER_LEASE_TTL_MS: int(3000, 600_000).default(30_000),
  WORKER_BACKOFF_MS: int(100, 3_600_000).default(10_000),
  WORKER_SWEEP_ROWS_PER_SECOND: int(1, 1_000_000).default(1000),
  /** Each walking job's database requests an hour at most (`jobs/request-budget.ts`); 0: no budget. */
  WORKER_JOB_REQUESTS_PER_HOUR: int(0, 1_000_000_000)
    .default(720_000)
    .refine((n) => n === 0 || n >= 60, 'at least 60 (or 0: no budget)'),
  /** The worker's relay (`relay` in `WORKER_JOBS`): Kafka bootstrap brokers, topic, name, page size. */
  WORKER_RELAY_BROKERS: csv.optional(),
  WORKER_RELAY_TOPIC: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,249}$/)
    .default('graph-events'),
  WORKER_RELAY_NAME: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,100}$/)
    .default('relay'),
  WORKER_RELAY_BATCH: int(1, 1000).default(500),
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
});

export type Env = z.infer<typeof EnvSchema>;

export interface Config {
  http: { host: string; port: number; bodyLimitBytes: number; docs: boolean };
  /** Tracing (OpenTelemetry over OTLP/HTTP): off without an endpoint; the share of new traces recorded. */
  tracing: { endpoint: string | undefined; sampleRatio: number };
  worker: {
    /** Whether `npm start` runs the worker in the service process (`GRAPH_WORKER`). */
    embedded: boolean;
    /** The port of `npm run worker`'s `/metrics` and `/healthz` (on `HOST`). */
    port: number;
    /** The jobs to run and each one's period (ms); a job left out is off. */
    jobs: { name: WorkerJobName; everyMs: number }[];
    leaseTtlMs: number;
    /** A failing job's first backoff (ms), doubled per failure up to its period. */
    backoffMs: number;
    /** The repair sweep's rows read per second at most. */
    sweepRowsPerSecond: number;
    /** Each walking job's store calls an hour at most; 0: none. */
    jobRequestsPerHour: number;
    /** The relay job's Kafka topic (set when `relay` is scheduled). */
    relay: { brokers: string[]; topic: string; name: string; batch: number } | undefined;
  };
  log: { level: Env['LOG_LEVEL'] };
  cassandra: {
    /** Undefined: start (or reuse) the local Maven-jar node. */
    contactPoints: string[] | undefined;
    localDataCenter: string;
    keyspace: string;
    replication: Record<string, string | number>;
    consistency: Env['CASSANDRA_CONSISTENCY'];
    credentials: { username: string; password: string } | undefined;
    /** Client-side timeout of one attempt; a stalled node costs a request at most this. */
    requestTimeoutMs: number;
    /** Reads (single SELECTs) also go to the next replica after this delay; 0 = off. */
    speculativeDelayMs: number;
    /** Retry a BATCH_LOG write timeout once on the same coordinator (the driver's default). */
    batchlogRetry: boolean;
    localHeap: string;
  };
  graph: {
    jwtSecret: string;
    cursorSecret: string;
    /** The secret before a rotation (`GRAPH_CURSOR_SECRET_PREVIOUS`): feed cursors under it still open. */
    previousCursorSecret?: string;
    maxFollowing: number;
    /** List sizes at which a list grows from 1→2→4… buckets; index i: threshold for 2^(i+1). */
    bucketThresholds: number[];
    /** Rows at which a list's newest time bucket closes (`model/time-buckets.ts`). */
    timeBucketRows: number;
    rateLimitPerMinute: number;
    receiptTtlSeconds: number;
    /** Pause between passes of the in-service count reconciler; 0 turns it off. */
    reconcileIntervalMs: number;
    /** The longest wait of an idle in-service reconciler (`startDirtyReconciler`'s `idleMaxMs`). */
    reconcileIdleMaxMs: number;
    /** S: the largest distance allowed between this instance's clock and the database's (writes 503 beyond). */
    clockSkewMs: number;
    /** B: longest a write may take from its first read to an acknowledged append (503 beyond). */
    writeBudgetMs: number;
    /** How long the change feed keeps events (its rows' TTL); an older cursor answers 410. */
    eventRetentionSeconds: number;
    /** Feed reads that may wait at once on one instance (long-polls, SSE streams); beyond, 503. */
    feedMaxWaiters: number;
    /** How often an instance resolves the feed's intents left behind (ms; 0: never). */
    intentRecoveryMs: number;
    /**
     * The read caches (`graph/caches/graph-caches.ts`): the staleness bound (ms; 0 turns every cache
     * off) and each cache's entries (0 turns it off). Full, the default users and edges caches hold
     * 240 MB of heap (`bench/cache-memory.ts`); the counts and the pages (1000 first pages, each up
     * to its limit) were not measured.
     */
    caches: {
      ttlMs: number;
      users: number;
      edges: number;
      counts: number;
      pages: number;
      pageMinListSize: number;
      following: number;
    };
  };
}

/** `simple:3` → SimpleStrategy RF 3; `dc1:3,dc2:3` → NetworkTopologyStrategy. */
export function parseReplication(spec: string): Record<string, string | number> {
  if (spec.startsWith('simple:')) {
    return { class: 'SimpleStrategy', replication_factor: Number(spec.slice('simple:'.length)) };
  }
  const out: Record<string, string | number> = { class: 'NetworkTopologyStrategy' };
  for (const part of spec.split(',')) {
    const [dc, rf] = part.split(':');
    out[dc as string] = Number(rf);
  }
  return out;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parses the environment once; throws `ConfigError` naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  if (e.WORKER_JOBS.some((j) => j.name === 'relay') && !e.WORKER_RELAY_BROKERS?.length) {
    throw new ConfigError(
      'invalid configuration:\n  WORKER_RELAY_BROKERS: required when WORKER_JOBS schedules relay (host:port, comma-separated)',
    );
  }
  if (e.NODE_ENV === 'production' && e.GRAPH_JWT_SECRET === 'dev-only-secret-change-me-please') {
    throw new ConfigError('invalid configuration:\n  GRAPH_JWT_SECRET: must be set in production');
  }
  return {
    http: { host: e.HOST, port: e.PORT, bodyLimitBytes: e.GRAPH_BODY_LIMIT_BYTES, docs: e.GRAPH_DOCS },
    log: { level: e.LOG_LEVEL },
    tracing: { endpoint: e.GRAPH_TRACING_ENDPOINT, sampleRatio: e.GRAPH_TRACING_SAMPLE_RATIO },
    worker: {
      embedded: e.GRAPH_WORKER === 'on',
      port: e.WORKER_PORT,
      jobs: e.WORKER_JOBS,
      leaseTtlMs: e.WORKER_LEASE_TTL_MS,
      backoffMs: e.WORKER_BACKOFF_MS,
      sweepRowsPerSecond: e.WORKER_SWEEP_ROWS_PER_SECOND,
      jobRequestsPerHour: e.WORKER_JOB_REQUESTS_PER_HOUR,
      relay: e.WORKER_RELAY_BROKERS?.length
        ? {
            brokers: e.WORKER_RELAY_BROKERS,
            topic: e.WORKER_RELAY_TOPIC,
            name: e.WORKER_RELAY_NAME,
            batch: e.WORKER_RELAY_BATCH,
          }
        : undefined,
    },
    cassandra: {
      contactPoints: e.CASSANDRA_CONTACT_POINTS,
      localDataCenter: e.CASSANDRA_LOCAL_DC,
      keyspace: e.CASSANDRA_KEYSPACE,
      replication: parseReplication(e.CASSANDRA_REPLICATION),
      consistency: e.CASSANDRA_CONSISTENCY,
      credentials:
        e.CASSANDRA_USERNAME && e.CASSANDRA_PASSWORD
          ? { username: e.CASSANDRA_USERNAME, password: e.CASSANDRA_PASSWORD }
          : undefined,
      requestTimeoutMs: e.CASSANDRA_REQUEST_TIMEOUT_MS,
      speculativeDelayMs: e.CASSANDRA_SPECULATIVE_DELAY_MS,
      batchlogRetry: e.CASSANDRA_BATCHLOG_RETRY,
      localHeap: e.CASSANDRA_HEAP,
    },
    graph: {
      jwtSecret: e.GRAPH_JWT_SECRET,
      cursorSecret: e.GRAPH_CURSOR_SECRET ?? `${e.GRAPH_JWT_SECRET}:cursor`,
      ...(e.GRAPH_CURSOR_SECRET_PREVIOUS ? { previousCursorSecret: e.GRAPH_CURSOR_SECRET_PREVIOUS } : {}),
      maxFollowing: e.GRAPH_MAX_FOLLOWING,
      reconcileIntervalMs: e.GRAPH_RECONCILE_INTERVAL_MS,
      reconcileIdleMaxMs: e.GRAPH_RECONCILE_IDLE_MAX_MS,
      bucketThresholds: e.GRAPH_BUCKET_THRESHOLDS,
      timeBucketRows: e.GRAPH_TIME_BUCKET_ROWS,
      rateLimitPerMinute: e.GRAPH_RATE_LIMIT_PER_MINUTE,
      receiptTtlSeconds: e.GRAPH_RECEIPT_TTL_SECONDS,
      clockSkewMs: e.GRAPH_CLOCK_SKEW_MS,
      writeBudgetMs: e.GRAPH_WRITE_BUDGET_MS,
      eventRetentionSeconds: e.GRAPH_EVENT_RETENTION_SECONDS,
      feedMaxWaiters: e.GRAPH_FEED_MAX_WAITERS,
      intentRecoveryMs: e.GRAPH_INTENT_RECOVERY_MS,
      caches: {
        ttlMs: e.GRAPH_CACHE_TTL_MS,
        users: e.GRAPH_CACHE_USERS,
        edges: e.GRAPH_CACHE_EDGES,
        counts: e.GRAPH_CACHE_COUNTS,
        pages: e.GRAPH_CACHE_PAGES,
        pageMinListSize: e.GRAPH_CACHE_PAGE_MIN_LIST,
        following: e.GRAPH_CACHE_FOLLOWING,
      },
    },
  };
}
