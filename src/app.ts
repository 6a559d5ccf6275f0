/**
 * `createApp(deps)`: the Hono application — middleware, routes and the one error handler. It
 * holds no globals; everything it talks to arrives in `deps`, so tests build it in-process on top
 * of the real store and call `app.request()`.
 *
 * Order: request id → metrics → access log → secure headers → (under /v1) body limit →
 * authentication → (under /v1/users/{id}) the account gate (deactivated accounts, `route-kit.ts`)
 * → route (mutations: rate limit → idempotency) → validation → handler. Every error, wherever
 * thrown, reaches `onError` and leaves as problem+json.
 */

import { OpenAPIHono } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { requestId } from 'hono/request-id';
import { secureHeaders } from 'hono/secure-headers';
import type { Registry } from 'prom-client';
import type { Config } from './config.js';
import type { EventFeed, GraphApi } from './graph/contracts.js';
import { authenticate } from './http/auth.js';
import { registerDocs } from './http/docs.js';
import { ApiError, type FieldError, problemResponse, toApiError } from './http/errors.js';
import { idempotency } from './http/idempotency.js';
import { accessLog, type Logger } from './http/logger.js';
import { createHttpMetrics, type HttpMetrics } from './http/metrics.js';
import { rateLimit, TokenBucketLimiter } from './http/rate-limit.js';
import { type ApiApp, type AppEnv, accountGate, type RouteDeps } from './http/route-kit.js';
import { IMPORT_BODY_LIMIT_BYTES, IMPORT_PATH } from './http/routes/following-import.js';
import { registerRoutes } from './http/routes/index.js';
import type { ReceiptStore } from './ports/receipt-store.js';

export interface AppDeps {
  /** The domain; the HTTP layer never talks to the store directly. */
  graph: GraphApi;
  /** The graph's change feed, served by `GET /v1/events` and `GET /v1/events/stream`. */
  feed: EventFeed;
  /** Idempotency receipts (the `GraphStore` satisfies this). */
  receipts: ReceiptStore;
  /** True when the database answers and the schema is present (and we are not draining). */
  ready: () => Promise<boolean>;
  http: {
    jwtSecret: string;
    bodyLimitBytes: number;
    rateLimitPerMinute: number;
    receiptTtlSeconds: number;
    /** Serve `/docs` (the OpenAPI document is always served). */
    docs: boolean;
    /** `Retry-After` seconds on 503 (database unavailable). Default 1. */
    retryAfterSeconds?: number;
    /** The SSE stream: heartbeat after this many ms of silence (default 15 s), events per read (default 100). */
    events?: { heartbeatMs?: number; streamPageSize?: number };
  };
  /** Registry served at `/metrics`. */
  registry: Registry;
  /** HTTP metrics on `registry`; pass the one whose `recorder` the domain received. */
  metrics?: HttpMetrics;
  logger: Logger;
  /** Request spans (`http/tracing.ts`), when tracing is on. */
  tracing?: { middleware: MiddlewareHandler };
  /** Clock for the rate limiter (tests). */
  now?: () => number;
}

/** An SSE stream of the feed writes a heartbeat comment after this much silence. */
export const DEFAULT_HEARTBEAT_MS = 15_000;
/** Events per feed read of an SSE stream. */
export const DEFAULT_STREAM_PAGE_SIZE = 100;

/** The `http` part of `AppDeps` from the parsed config. */
export function httpOptions(config: Config): AppDeps['http'] {
  return {
    jwtSecret: config.graph.jwtSecret,
    bodyLimitBytes: config.http.bodyLimitBytes,
    rateLimitPerMinute: config.graph.rateLimitPerMinute,
    receiptTtlSeconds: config.graph.receiptTtlSeconds,
    docs: config.http.docs,
  };
}

/**
 * Routes whose body limit differs from `http.bodyLimitBytes` (method, OpenAPI path, bytes): the
 * NDJSON import takes up to 1 MiB; every other route keeps the global limit.
 */
const ROUTE_BODY_LIMITS: readonly { method: string; path: string; maxSize: number }[] = [
  { method: 'POST', path: IMPORT_PATH, maxSize: IMPORT_BODY_LIMIT_BYTES },
];

/** `/v1/users/{id}/x` → a matcher of concrete paths (a parameter is one non-empty segment). */
const pathMatcher = (path: string) =>
  new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^/}]+\}/g, '[^/]+')}$`);

/** The body limit middleware: the route's own limit where `ROUTE_BODY_LIMITS` has one, else `defaultMax`. */
function bodyLimits(defaultMax: number): MiddlewareHandler {
  const limit = (maxSize: number) =>
    bodyLimit({
      maxSize,
      onError: () => {
        throw new ApiError('payload_too_large', `the request body exceeds ${maxSize} bytes`);
      },
    });
  const routes = ROUTE_BODY_LIMITS.map((r) => ({ ...r, match: pathMatcher(r.path), run: limit(r.maxSize) }));
  const fallback = limit(defaultMax);
  return (c, next) => {
    const route = routes.find((r) => r.method === c.req.method && r.match.test(c.req.path));
    return (route?.run ?? fallback)(c, next);
  };
}

const VALIDATION_LOCATION: Record<string, string> = {
  param: 'path',
  json: 'body',
  query: 'query',
  header: 'header',
};

export function createApp(deps: AppDeps): ApiApp {
  const retryAfter = deps.http.retryAfterSeconds ?? 1;
  const app: ApiApp = new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (result.success) return;
      const location = VALIDATION_LOCATION[result.target] ?? result.target;
      const errors: FieldError[] = result.error.issues.map((i) => ({
        path: [location, ...i.path.map(String)].join('.'),
        message: i.message,
      }));
      throw new ApiError('validation_failed', `invalid ${location}`, { errors });
    },
  });
  const metrics = deps.metrics ?? createHttpMetrics(deps.registry);

  if (deps.tracing) app.use(deps.tracing.middleware);
  app.use(requestId({ limitLength: 128 }));
  app.use(metrics.middleware);
  app.use(accessLog(deps.logger));
  app.use(secureHeaders());
  app.use(async (c, next) => {
    await next();
    if (c.res.headers.get('Content-Type') === 'application/json') {
      c.res.headers.set('Content-Type', 'application/json; charset=utf-8');
    }
  });

  app.onError((err, c) => {
    const apiError = toApiError(err, retryAfter);
    if (apiError.code === 'internal') {
      deps.logger.error({ request_id: c.get('requestId'), err }, 'unhandled error');
    } else if (apiError.code === 'unavailable') {
      deps.logger.warn({ request_id: c.get('requestId'), err: (err as Error).name }, 'database unavailable');
    }
    return problemResponse(c, apiError);
  });
  app.notFound((c) => problemResponse(c, new ApiError('not_found', 'no such resource')));

  app.get('/healthz', (c) => c.json({ status: 'pass' }));
  app.get('/readyz', async (c) => {
    const ok = await deps.ready().catch(() => false);
    return c.json({ status: ok ? 'pass' : 'fail' }, ok ? 200 : 503);
  });
  app.get('/metrics', async (c) =>
    c.body(await deps.registry.metrics(), 200, { 'Content-Type': deps.registry.contentType }),
  );

  app.use('/v1/*', bodyLimits(deps.http.bodyLimitBytes));
  app.use('/v1/*', authenticate(deps.http.jwtSecret));
  app.use('/v1/users/:id/*', accountGate(deps.graph));

  const tokens = new TokenBucketLimiter(deps.http.rateLimitPerMinute, deps.now);
  const limiter = rateLimit(tokens);
  const routeDeps: RouteDeps = {
    graph: deps.graph,
    limiter: tokens,
    events: {
      feed: deps.feed,
      metrics: metrics.events,
      heartbeatMs: deps.http.events?.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
      streamPageSize: deps.http.events?.streamPageSize ?? DEFAULT_STREAM_PAGE_SIZE,
      onStreamError: (err) => deps.logger.error({ err }, 'event stream failed'),
    },
    mutation: [
      limiter,
      idempotency({
        receipts: deps.receipts,
        ttlSeconds: deps.http.receiptTtlSeconds,
        onStoreError: (err) => deps.logger.warn({ err: (err as Error).name }, 'receipt not stored'),
      }),
    ],
  };
  registerRoutes(app, routeDeps);

  app.openAPIRegistry.registerComponent('securitySchemes', 'bearerAuth', {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: 'HS256 JWT: sub = acting user id; scope may contain graph:admin.',
  });
  app.doc31('/openapi.json', {
    openapi: '3.1.0',
    info: {
      title: 'Flocklist follow-graph API',
      version: '1.0.0',
      description:
        'Errors are application/problem+json (RFC 9457) with a stable `code` and `request_id`. ' +
        'Mutations accept Idempotency-Key and are rate limited per user (per API instance).',
    },
  });
  if (deps.http.docs) registerDocs(app, '/openapi.json');
  return app;
}
