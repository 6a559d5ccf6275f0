/**
 * What every route file shares: the app type, the dependencies a route may use, the standard
 * error responses for the document, and small conversions between wire values and the domain.
 */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import type { EventFeed, GraphApi, MemberPage, MutationOptions } from '../graph/contracts.js';
import type { ListKey, UserId, UserRecord } from '../model/types.js';
import { type AuthVariables, principalOf } from './auth.js';
import { ApiError } from './errors.js';
import { parsePosition, parseUserId } from './ids.js';
import type { EventMetrics } from './metrics.js';
import type { MutationLimiter } from './rate-limit.js';
import { Problem } from './schemas.js';
import { formatTime } from './times.js';

export interface AppEnv {
  /** `owner`: the `{id}` account's row as the account gate read it (absent when it read none). */
  Variables: AuthVariables & { requestId: string; owner?: UserRecord };
}
export type ApiApp = OpenAPIHono<AppEnv>;

/** What a route's `register` function receives. */
export interface RouteDeps {
  graph: GraphApi;
  /** Middleware every mutating route runs first: rate limit, then idempotency. */
  mutation: MiddlewareHandler[];
  /** The per-user mutation budget behind `mutation`, for routes that charge per line (import). */
  limiter: MutationLimiter;
  /** The change feed's routes (`routes/events.ts`). */
  events: EventRouteDeps;
}

/** What the change feed's routes use: the feed, their metrics and the SSE stream's settings. */
export interface EventRouteDeps {
  feed: EventFeed;
  metrics: EventMetrics;
  /** Milliseconds of silence after which an SSE stream writes a heartbeat comment. */
  heartbeatMs: number;
  /** Events per feed read of an SSE stream: with the socket's buffer, all a slow client can cost. */
  streamPageSize: number;
  /** A stream failed after its first byte (it can no longer become a problem response). */
  onStreamError: (err: unknown) => void;
}

const PROBLEM_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid id, query, body or cursor',
  401: 'Missing, invalid or expired token',
  403: 'Not allowed for this token or relationship',
  404: 'Unknown or deactivated user (or hidden by a block); also a caller whose own account is deactivated',
  409: 'Conflict',
  413: 'Body too large',
  415: 'Body is not JSON',
  429: 'Rate limited (see Retry-After)',
  503: 'Database unavailable (see Retry-After)',
};

/** `responses` entries for the given error statuses, all `application/problem+json`. */
export function problems(...statuses: (keyof typeof PROBLEM_DESCRIPTIONS)[]) {
  const out: Record<
    string,
    { description: string; content: { 'application/problem+json': { schema: typeof Problem } } }
  > = {};
  for (const s of [401, ...statuses, 503]) {
    out[String(s)] = {
      description: PROBLEM_DESCRIPTIONS[s] ?? 'Error',
      content: { 'application/problem+json': { schema: Problem } },
    };
  }
  return out;
}

/** Validated path/body id string → bigint (the schema guarantees it parses). */
export function idOf(raw: string): UserId {
  const id = parseUserId(raw);
  if (id === null) throw new ApiError('validation_failed', 'invalid user id');
  return id;
}

/** `Graph-Position` → `MutationOptions`: admin only (403), a positive int64 (400). */
export function mutationOptions(c: Context): MutationOptions {
  const raw = c.req.header('Graph-Position');
  if (raw === undefined) return {};
  if (!principalOf(c).admin) throw new ApiError('forbidden', 'Graph-Position needs the graph:admin scope');
  const position = parsePosition(raw);
  if (position === null) {
    throw new ApiError('validation_failed', 'invalid Graph-Position header', {
      errors: [{ path: 'header.graph-position', message: 'a positive 64-bit integer (µs)' }],
    });
  }
  return { position };
}

/** `/v1/users/{id}` itself: the route where a graph:admin caller still sees a deactivated account. */
const ACCOUNT_PATH = /^\/v1\/users\/[^/]+\/?$/;

/**
 * The deactivation rule (the API contract, Part 3, "Rules settled by review") in one place, mounted on every
 * route on an account (`/v1/users/{id}…`) after authentication and before the route's own
 * middleware (rate limit, idempotency), validation and handler:
 *
 * - a deactivated `{id}` is the 404 of an unknown user on every route for every caller, its own
 *   token included; only a graph:admin caller sees it, on `GET`/`PUT /v1/users/{id}` (with its
 *   `state`; the PUT is how it is reactivated);
 * - a caller whose own account is deactivated gets the 404 naming itself on every route, so its
 *   token reads nothing through another account either (its followees in `followed-by`, its
 *   relationship on a profile), as its mutations already were.
 *
 * An unknown `{id}` is the same 404 here, before the route's authorization: an owner-only route
 * used to answer a stranger 403 for an unknown account, and would otherwise tell it apart from a
 * deactivated one. A malformed `{id}` is left to the route's validation (400). Cost: one batched
 * read of the two user rows per request.
 *
 * @example app.use('/v1/users/:id/*', accountGate(graph)) // also matches /v1/users/:id
 */
export function accountGate(graph: GraphApi): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const id = parseUserId(c.req.param('id') ?? '');
    if (id === null) return next();
    const owner = await graph.assertAccountsActive(
      id,
      principalOf(c),
      ACCOUNT_PATH.test(c.req.path) ? 'account' : 'other',
    );
    // The row just read: the route's visibility check takes it instead of reading it again.
    if (owner) c.set('owner', owner);
    return next();
  };
}

export interface WireListPage {
  items: { id: string; username: string; followed_at: string }[];
  next_cursor: string | null;
  prev_cursor: string | null;
}

/** A domain page → the wire page (the members come with their usernames, read once by the domain). */
export function renderPage(page: MemberPage): WireListPage {
  return {
    items: page.items.map((m) => ({
      id: m.id.toString(),
      username: m.username,
      followed_at: formatTime(m.createdAt),
    })),
    next_cursor: page.nextCursor,
    prev_cursor: page.prevCursor ?? null,
  };
}

/**
 * The `[since, until)` of a list or set query, refused with a 400 naming `until` when it is empty.
 */
export function timeRange(query: { since?: bigint | undefined; until?: bigint | undefined }): {
  since: bigint | null;
  until: bigint | null;
} {
  const { since, until } = query;
  if (since !== undefined && until !== undefined && since >= until) {
    throw new ApiError('validation_failed', 'invalid query', {
      errors: [{ path: 'query.until', message: 'a time later than since' }],
    });
  }
  return { since: since ?? null, until: until ?? null };
}

export async function listPage(
  graph: GraphApi,
  list: ListKey,
  query: {
    limit: number;
    cursor?: string | undefined;
    direction?: 'older' | 'newer' | undefined;
    since?: bigint | undefined;
    until?: bigint | undefined;
  },
): Promise<WireListPage> {
  // No default direction here: the list engine's (older) is the one, and a plain first page
  // (no cursor, direction or bounds) is what the first-page cache serves.
  const page = await graph.listPage(list, query.limit, query.cursor ?? null, {
    ...(query.direction === undefined ? {} : { direction: query.direction }),
    ...timeRange(query),
  });
  return renderPage(page);
}
