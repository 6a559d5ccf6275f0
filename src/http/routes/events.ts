/**
 * `GET /v1/events` (a page of the change feed, long-polled with `wait`) and
 * `GET /v1/events/stream` (the same feed as Server-Sent Events), both graph:admin only.
 *
 * Design note. Both routes are thin readers of `EventFeed.read`: the feed owns order, settling,
 * exactly-once per cursor and retention; these routes own the wire shape and the connection.
 *
 * - The client's going away ends the read: the long-poll passes the request's abort signal to the
 *   feed; the stream passes one that fires when the request aborts or the response stream is
 *   cancelled (whichever the server reports first).
 * - The stream reads one page of `streamPageSize` events, writes its frames, and reads the next
 *   page only after every frame of this one was taken by the response stream, which the Node
 *   server drains into the socket only as fast as the socket accepts (`drain`). So a client that
 *   stops reading stops the feed reads: the server holds at most one page plus the socket's
 *   buffers per stream, never a growing queue. Rejected: subscribing to the feed's unsettled tail
 *   and queueing what arrives (memory grows with a slow client, and the tail may repeat or drop).
 * - Where the stream starts: `Last-Event-ID` wins over `after`, because an EventSource reconnects
 *   to the same URL (with its original `after`) and names the last event it got in the header;
 *   an empty header counts as absent. The first page is read before the response starts, so a
 *   malformed or expired cursor answers its problem (400 `invalid_cursor`, 410 `cursor_expired`)
 *   instead of a stream. A failure after the first byte cannot become a status any more: the
 *   stream writes one `event: error` frame carrying the problem body and ends; the client
 *   reconnects with its `Last-Event-ID`.
 * - Heartbeats: while nothing settles, each read waits at most until `heartbeatMs` of silence has
 *   passed, and then a comment line (`: heartbeat`) is written, which keeps proxies from closing an
 *   idle stream and lets the server notice a dead client at the next write. A read that comes back
 *   empty before its wait is over (against the feed's contract) is followed by a sleep for the
 *   rest of it, so such a feed costs a read per wait, never a loop that starves the event loop.
 * - Frames: `id` is the event's `id` (a cursor right after it), `event` its type, `data` the event
 *   JSON exactly as `GET /v1/events` renders it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createRoute } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { type SSEStreamingApi, streamSSE } from 'hono/streaming';
import type { EventPage, GraphEvent } from '../../model/events.js';
import { requireAdmin } from '../auth.js';
import { problemBody, toApiError } from '../errors.js';
import { type ApiApp, type EventRouteDeps, problems, type RouteDeps } from '../route-kit.js';
import {
  EventPageSchema,
  EventSchema,
  EventStreamHeaders,
  EventStreamQuery,
  EventsQuery,
  Problem,
} from '../schemas.js';
import { formatTime } from '../times.js';

/** An event on the wire (`GET /v1/events` items and SSE `data`). */
export interface WireEvent {
  id: string;
  type: GraphEvent['type'];
  source: string;
  target: string;
  position: number;
  at: string;
  /** `user.updated`: the fields the change named, as the PUT body names them. */
  fields?: ('username' | 'private' | 'state' | 'hide_lists')[];
}

/**
 * A feed event → its wire shape. `position` is a JSON integer: positions are at most the clock
 * plus a small skew (µs since 1970, about 1.8e15 today), far below 2^53, so the number is exact.
 *
 * @example renderEvent(e) // { id, type: 'follow.created', source: '7', target: '8', position: 1796…, at: '2026-…Z' }
 */
export function renderEvent(e: GraphEvent): WireEvent {
  return {
    id: e.id,
    type: e.type,
    source: e.source.toString(),
    target: e.target.toString(),
    position: Number(e.position),
    at: formatTime(e.slot),
    ...(e.fields ? { fields: e.fields.map((f) => (f === 'hideLists' ? 'hide_lists' : f)) } : {}),
  };
}

const GONE = {
  410: {
    description: 'The cursor is older than the feed retention (`cursor_expired`)',
    content: { 'application/problem+json': { schema: Problem } },
  },
};

export const listEventsRoute = createRoute({
  operationId: 'listEvents',
  method: 'get',
  path: '/v1/events',
  tags: ['events'],
  summary: "A page of the graph's change feed, optionally long-polled (graph:admin)",
  description:
    'Settled events in feed order after `after` (from the oldest retained event without it). `next_cursor` ' +
    'is always present, also on an empty page, and resumes exactly after the last item. With `wait`, a ' +
    'request that finds nothing is held until something settles (it answers at once) or the time is up ' +
    '(an empty page). A malformed cursor is a 400 `invalid_cursor`; one older than the retention a 410.',
  security: [{ bearerAuth: [] }],
  request: { query: EventsQuery },
  responses: {
    200: { description: 'A page of events', content: { 'application/json': { schema: EventPageSchema } } },
    ...problems(400, 403),
    ...GONE,
  },
});

export const streamEventsRoute = createRoute({
  operationId: 'streamEvents',
  method: 'get',
  path: '/v1/events/stream',
  tags: ['events'],
  summary: "The graph's change feed as Server-Sent Events (graph:admin)",
  description:
    '`text/event-stream`: one frame per event — `id` (the event id, a cursor right after it), `event` (its ' +
    'type), `data` (the Event JSON, as `GET /v1/events` renders it). Starts after `Last-Event-ID` when sent ' +
    '(it wins over `after`: an EventSource reconnects to the same URL), else after `after`, else at the ' +
    'oldest retained event. A comment line `: heartbeat` follows every heartbeat interval of silence. ' +
    'The server reads the feed only as fast as the client reads the stream. A bad or expired cursor is ' +
    'answered with its problem before the stream starts; a failure later ends the stream with one ' +
    '`event: error` frame whose data is the problem body.',
  security: [{ bearerAuth: [] }],
  request: { query: EventStreamQuery, headers: EventStreamHeaders },
  responses: {
    200: {
      description: 'The event stream',
      content: { 'text/event-stream': { schema: EventSchema } },
    },
    ...problems(400, 403),
    ...GONE,
  },
});

/** Status of a long-poll whose client left before the answer (nobody reads it; metrics do). */
const CLIENT_CLOSED = 499;

export function registerEvents(app: ApiApp, deps: RouteDeps) {
  const { feed, metrics } = deps.events;

  app.openapi(listEventsRoute, async (c) => {
    requireAdmin(c);
    const q = c.req.valid('query');
    const signal = c.req.raw.signal;
    let page: EventPage;
    try {
      page = await feed.read(q.after ?? null, q.limit, { waitMs: q.wait * 1000, signal });
    } catch (e) {
      if (signal.aborted) return c.body(null, CLIENT_CLOSED as never) as never;
      throw e;
    }
    if (signal.aborted) return c.body(null, CLIENT_CLOSED as never) as never;
    metrics.eventsRead(listEventsRoute.path, page.items.length);
    return c.json({ items: page.items.map(renderEvent), next_cursor: page.next }, 200);
  });

  app.openapi(streamEventsRoute, async (c) => {
    requireAdmin(c);
    const lastEventId = c.req.valid('header')['last-event-id'];
    const after = lastEventId || c.req.valid('query').after || null;
    const first = await feed.read(after, deps.events.streamPageSize);
    // `@hono/zod-openapi` cannot type a `text/event-stream` response; the body is a plain stream.
    return streamSSE(c, (stream) => pump(c, stream, first, deps.events)) as never;
  });
}

/** Writes `first` and then every page after it until the client leaves or the feed fails. */
async function pump(c: Context, stream: SSEStreamingApi, first: EventPage, deps: EventRouteDeps) {
  const closed = new AbortController();
  const close = () => closed.abort();
  stream.onAbort(close);
  const request = c.req.raw.signal;
  if (request.aborted) close();
  else request.addEventListener('abort', close, { once: true });
  deps.metrics.streamsOpen(1);
  try {
    let page = first;
    let quietSince = performance.now();
    while (!closed.signal.aborted) {
      for (const e of page.items) {
        await stream.writeSSE({ id: e.id, event: e.type, data: JSON.stringify(renderEvent(e)) });
      }
      if (page.items.length > 0) {
        deps.metrics.eventsRead(streamEventsRoute.path, page.items.length);
        quietSince = performance.now();
      } else if (performance.now() - quietSince >= deps.heartbeatMs) {
        await stream.write(': heartbeat\n\n');
        quietSince = performance.now();
      }
      if (closed.signal.aborted) break;
      const waitMs = Math.max(1, Math.ceil(deps.heartbeatMs - (performance.now() - quietSince)));
      const asked = performance.now();
      page = await deps.feed.read(page.next, deps.streamPageSize, { waitMs, signal: closed.signal });
      const early = waitMs - (performance.now() - asked);
      // An empty page before the wait is over must not turn this loop into a spin on microtasks.
      if (page.items.length === 0 && early > 0) await sleep(early, undefined, { signal: closed.signal });
    }
  } catch (e) {
    if (!closed.signal.aborted) {
      const problem = toApiError(e);
      if (problem.code === 'internal') deps.onStreamError(e);
      await stream.writeSSE({
        event: 'error',
        data: JSON.stringify(problemBody(problem, (c.get('requestId') as string | undefined) ?? '')),
      });
    }
  } finally {
    request.removeEventListener('abort', close);
    deps.metrics.streamsOpen(-1);
  }
}
