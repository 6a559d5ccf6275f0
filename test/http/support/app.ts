/**
 * Builds the app for HTTP tests: `buildTestApp({ graph, receipts })` with a fresh metrics
 * registry, a silent logger and a fixed secret; `bearer(sub, { admin })` mints a token.
 */
import { Registry } from 'prom-client';
import { type AppDeps, createApp } from '../../../src/app.js';
import type { EventFeed, GraphApi } from '../../../src/graph/contracts.js';
import { type ErrorCode, problemType, TITLE } from '../../../src/http/errors.js';
import { createLogger, type Logger } from '../../../src/http/logger.js';
import type { HttpMetrics } from '../../../src/http/metrics.js';
import { mintToken } from '../../../src/jobs/token.js';
import { NotVisibleError } from '../../../src/model/errors.js';
import type { UserId } from '../../../src/model/types.js';
import type { ReceiptStore } from '../../../src/ports/receipt-store.js';
import type { Receipt } from '../../../src/ports/records.js';

export const TEST_SECRET = 'test-secret-0123456789abcdef';

export function bearer(sub: bigint | string | number, o: { admin?: boolean; exp?: number } = {}): string {
  return `Bearer ${mintToken({ sub: String(sub), admin: o.admin ?? false, expiresInSeconds: o.exp ?? 600 }, TEST_SECRET)}`;
}

/** The whole problem+json body `call` gets back (request id `req-1`), for `toEqual`. */
export function problem(status: number, code: ErrorCode, detail: string, extra: object = {}) {
  return {
    type: problemType(code),
    title: TITLE[code],
    status,
    detail,
    code,
    request_id: 'req-1',
    ...extra,
  };
}

/** Receipts in a map (first writer wins), for tests that do not need a store. */
export class MapReceipts implements ReceiptStore {
  readonly map = new Map<string, Receipt>();
  async getReceipt(actorId: UserId, key: string) {
    return this.map.get(`${actorId}/${key}`) ?? null;
  }
  async putReceipt(actorId: UserId, key: string, receipt: Receipt) {
    const k = `${actorId}/${key}`;
    if (!this.map.has(k)) this.map.set(k, receipt);
  }
}

/**
 * A `GraphApi` whose methods throw unless overridden; the account gate (`assertAccountsActive`,
 * run before every route on an account) passes unless overridden, and the lists rule
 * (`assertListsVisible`, `listsVisible`) is the domain's over the stub's own `getUser` and
 * `assertCanViewLists` unless overridden.
 */
export function stubGraph(overrides: Partial<GraphApi> = {}): GraphApi {
  const g: GraphApi = new Proxy(
    {
      assertAccountsActive: async () => undefined,
      assertListsVisible: async (c, owner) => {
        if (c.admin) await g.getUser(owner);
        else await g.assertCanViewLists(c.sub, owner);
      },
      listsVisible: (c, owner) =>
        g.assertListsVisible(c, owner).then(
          () => true,
          (e: unknown) => {
            if (e instanceof NotVisibleError) return false;
            throw e;
          },
        ),
      ...overrides,
    } as GraphApi,
    {
      get(target, prop) {
        const v = (target as unknown as Record<string | symbol, unknown>)[prop];
        if (v !== undefined) return v;
        return () => Promise.reject(new Error(`stub: ${String(prop)} not implemented`));
      },
    },
  );
  return g;
}

/** A feed whose reads fail (a route test that reaches the feed must pass its own). */
export const NO_FEED: EventFeed = {
  read: () => Promise.reject(new Error('stub: feed.read not implemented')),
  subscribe: () => () => undefined,
};

export interface TestAppOptions {
  graph: GraphApi;
  /** The change feed (default `NO_FEED`). */
  feed?: EventFeed;
  /** SSE settings (`AppDeps.http.events`). */
  events?: { heartbeatMs?: number; streamPageSize?: number };
  receipts?: ReceiptStore;
  rateLimitPerMinute?: number;
  bodyLimitBytes?: number;
  now?: () => number;
  ready?: () => Promise<boolean>;
  registry?: Registry;
  metrics?: HttpMetrics;
  logger?: Logger;
  /** Serve `/docs` (default true). */
  docs?: boolean;
  /** Request spans (`http/tracing.ts`). */
  tracing?: AppDeps['tracing'];
}

export function buildTestApp(o: TestAppOptions) {
  const registry = o.registry ?? new Registry();
  const deps: AppDeps = {
    graph: o.graph,
    feed: o.feed ?? NO_FEED,
    receipts: o.receipts ?? new MapReceipts(),
    ready: o.ready ?? (async () => true),
    http: {
      jwtSecret: TEST_SECRET,
      bodyLimitBytes: o.bodyLimitBytes ?? 64 * 1024,
      rateLimitPerMinute: o.rateLimitPerMinute ?? 100_000,
      receiptTtlSeconds: 86_400,
      docs: o.docs ?? true,
      ...(o.events ? { events: o.events } : {}),
    },
    registry,
    logger: o.logger ?? createLogger('silent'),
    ...(o.now ? { now: o.now } : {}),
    ...(o.metrics ? { metrics: o.metrics } : {}),
    ...(o.tracing ? { tracing: o.tracing } : {}),
  };
  return { app: createApp(deps), registry, deps };
}

/** JSON request helper: `call(app, 'PUT', '/v1/…', { auth, body, headers })`. */
export async function call(
  app: { request: (path: string, init?: RequestInit) => Response | Promise<Response> },
  method: string,
  path: string,
  o: { auth?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { 'X-Request-Id': 'req-1', ...o.headers };
  if (o.auth) headers.Authorization = o.auth;
  let body: string | undefined;
  if (o.body !== undefined) {
    body = typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
    headers['Content-Type'] ??= 'application/json';
  }
  const res = await app.request(path, { method, headers, ...(body === undefined ? {} : { body }) });
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json: json as Record<string, unknown> };
}
