/**
 * `GET /v1/events` (long-poll) and `GET /v1/events/stream` (SSE) over a deterministic in-test
 * feed (`support/list-feed.ts`): it stands in for the domain's feed, so these tests pin what the
 * routes do with pages, cursors, waits, aborts and a slow client, not what the feed stores.
 */
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { serve } from '@hono/node-server';
import { describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { ClockSkewError } from '../../src/model/errors.js';
import type { EventType } from '../../src/model/events.js';
import { SingleBucketLists } from '../graph/support/single-bucket-lists.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { bearer, buildTestApp, call, problem, stubGraph } from './support/app.js';
import { FEED_RETENTION_SECONDS, ListFeed, testEvent } from './support/list-feed.js';

const admin = bearer(1, { admin: true });

function setup(feed: ListFeed, events: { heartbeatMs?: number; streamPageSize?: number } = {}) {
  return buildTestApp({
    graph: stubGraph(),
    feed,
    events: { heartbeatMs: 60_000, ...events },
  });
}

/** Event n of the test feed as the routes render it. */
function wire(n: number, type: EventType = 'follow.created') {
  const e = testEvent(n, type);
  return {
    id: `c${n}`,
    type,
    source: String(n),
    target: String(n + 1),
    position: Number(e.position),
    at: `2026-11-30T04:31:18.${String(123_456 + (n - 1) * 1000).padStart(6, '0')}Z`,
  };
}

/** The SSE frame of event n. */
const frame = (n: number, type: EventType = 'follow.created') =>
  `event: ${type}\ndata: ${JSON.stringify(wire(n, type))}\nid: c${n}\n\n`;

const until = async (cond: () => boolean, ms = 2000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
};

/** Reads the stream until `text` ends with `suffix` (or fails after `ms`); returns all text read. */
async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, suffix: string, ms = 2000) {
  const decoder = new TextDecoder();
  let text = '';
  const timeout = setTimeout(() => void reader.cancel(), ms);
  try {
    while (!text.endsWith(suffix)) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`stream ended before ${JSON.stringify(suffix)}; got ${JSON.stringify(text)}`);
      text += decoder.decode(value, { stream: true });
    }
  } finally {
    clearTimeout(timeout);
  }
  return text;
}

function openStream(app: ReturnType<typeof setup>['app'], query = '', headers: Record<string, string> = {}) {
  return app.request(`/v1/events/stream${query}`, {
    headers: {
      Authorization: admin,
      Accept: 'text/event-stream',
      'X-Request-Id': 'req-1',
      ...headers,
    },
  });
}

describe('GET /v1/events', () => {
  it('pages: whole items in feed order, next_cursor resuming exactly after the last item', async () => {
    const feed = new ListFeed();
    feed.append('follow.created', 'block.created', 'user.updated');
    const { app } = setup(feed);
    const pages = [];
    for (const q of ['?limit=2', '?after=c2&limit=2', '?after=c3']) {
      const r = await call(app, 'GET', `/v1/events${q}`, { auth: admin });
      pages.push([r.status, r.json]);
    }
    expect(pages).toEqual([
      [200, { items: [wire(1), wire(2, 'block.created')], next_cursor: 'c2' }],
      [200, { items: [wire(3, 'user.updated')], next_cursor: 'c3' }],
      [200, { items: [], next_cursor: 'c3' }],
    ]);
  });

  it('next_cursor on an empty page: an empty feed answers a cursor at its start', async () => {
    const { app } = setup(new ListFeed());
    const r = await call(app, 'GET', '/v1/events', { auth: admin });
    expect([r.status, r.json]).toEqual([200, { items: [], next_cursor: 'c0' }]);
  });

  it('limit: 100 by default, 1 and 1000 accepted, 0 and 1001 a 400 naming it', async () => {
    const feed = new ListFeed();
    feed.append(...Array.from({ length: 1001 }, () => 'mute.created' as const));
    const { app } = setup(feed);
    const got = [];
    for (const q of ['', '?limit=1', '?limit=1000']) {
      const r = await call(app, 'GET', `/v1/events${q}`, { auth: admin });
      const body = r.json as { items: { id: string }[]; next_cursor: string };
      got.push([r.status, body.items.length, body.items[0]?.id, body.next_cursor]);
    }
    expect(got).toEqual([
      [200, 100, 'c1', 'c100'],
      [200, 1, 'c1', 'c1'],
      [200, 1000, 'c1', 'c1000'],
    ]);
    expect(feed.reads.map((r) => r.limit)).toEqual([100, 1, 1000]);
    const bad = [];
    for (const q of ['?limit=0', '?limit=1001', '?limit=ten']) {
      const r = await call(app, 'GET', `/v1/events${q}`, { auth: admin });
      bad.push([r.status, r.json]);
    }
    const invalid = (message: string) => [
      400,
      problem(400, 'validation_failed', 'invalid query', {
        errors: [{ path: 'query.limit', message }],
      }),
    ];
    expect(bad).toEqual([
      invalid('Too small: expected number to be >=1'),
      invalid('Too big: expected number to be <=1000'),
      invalid('an integer'),
    ]);
    expect(feed.reads).toHaveLength(3);
  });

  it('wait: an event that arrives while the request is held ends the wait at once', async () => {
    const feed = new ListFeed();
    const { app } = setup(feed);
    const started = Date.now();
    const pending = call(app, 'GET', '/v1/events?wait=20', { auth: admin });
    await until(() => feed.reads.length === 1);
    setTimeout(() => feed.append('request.created'), 50);
    const r = await pending;
    expect([r.status, r.json]).toEqual([200, { items: [wire(1, 'request.created')], next_cursor: 'c1' }]);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(feed.reads.map((x) => [x.after, x.waitMs])).toEqual([[null, 20_000]]);
  });

  it('wait: an empty page with the same cursor when the time is up; no wait by default', async () => {
    const feed = new ListFeed();
    feed.append('follow.created');
    const { app } = setup(feed);
    const started = Date.now();
    const r = await call(app, 'GET', '/v1/events?after=c1&wait=1', {
      auth: admin,
    });
    expect([r.status, r.json]).toEqual([200, { items: [], next_cursor: 'c1' }]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(990);
    await call(app, 'GET', '/v1/events?after=c1', { auth: admin });
    expect(feed.reads.map((x) => x.waitMs)).toEqual([1000, 0]);
  });

  it('wait: above 30 s, negative or fractional is a 400 naming it', async () => {
    const feed = new ListFeed();
    const { app } = setup(feed);
    const got = [];
    for (const q of ['?wait=31', '?wait=-1', '?wait=0.5']) {
      const r = await call(app, 'GET', `/v1/events${q}`, { auth: admin });
      got.push([r.status, (r.json.errors as unknown[])[0]]);
    }
    expect(got).toEqual([
      [400, { path: 'query.wait', message: 'Too big: expected number to be <=30' }],
      [400, { path: 'query.wait', message: 'an integer' }],
      [400, { path: 'query.wait', message: 'an integer' }],
    ]);
    expect(feed.reads).toEqual([]);
  });

  it('a malformed cursor is a 400 invalid_cursor; one older than the retention a 410 cursor_expired', async () => {
    const feed = new ListFeed({ expiredBelow: 2 });
    feed.append('follow.created', 'follow.created', 'follow.removed');
    const { app } = setup(feed);
    const got = [];
    for (const q of ['?after=nope', '?after=c9', '?after=c1', '?after=c2', '']) {
      const r = await call(app, 'GET', `/v1/events${q}`, { auth: admin });
      got.push([r.status, r.headers.get('content-type'), r.json]);
    }
    const problemJson = 'application/problem+json; charset=utf-8';
    const badCursor = problem(
      400,
      'invalid_cursor',
      'the cursor is malformed, altered or belongs to another list',
    );
    expect(got).toEqual([
      [400, problemJson, badCursor],
      [400, problemJson, badCursor],
      [
        410,
        problemJson,
        problem(
          410,
          'cursor_expired',
          `the cursor is older than the feed's retention (${FEED_RETENTION_SECONDS} s)`,
        ),
      ],
      [200, 'application/json; charset=utf-8', { items: [wire(3, 'follow.removed')], next_cursor: 'c3' }],
      [200, 'application/json; charset=utf-8', { items: [wire(3, 'follow.removed')], next_cursor: 'c3' }],
    ]);
  });

  it('a client that goes away ends the long-poll: the read is aborted through the request signal', async () => {
    const feed = new ListFeed();
    const { app } = setup(feed);
    const client = new AbortController();
    const pending = app.request('/v1/events?wait=30', {
      headers: { Authorization: admin },
      signal: client.signal,
    });
    await until(() => feed.reads.length === 1);
    client.abort();
    const res = await pending;
    expect([res.status, feed.reads.map((r) => [r.waitMs, r.aborted, r.returned])]).toEqual([
      499,
      [[30_000, true, -1]],
    ]);
  });

  it('security: 401 without a token and 403 for a token without graph:admin, on both routes, before the feed', async () => {
    const feed = new ListFeed();
    feed.append('follow.created');
    const { app } = setup(feed);
    const got = [];
    for (const path of ['/v1/events', '/v1/events/stream']) {
      for (const auth of [undefined, bearer(1), bearer(2)]) {
        const r = await call(app, 'GET', path, auth ? { auth } : {});
        got.push([path, r.status, r.json]);
      }
    }
    const rows = (path: string) => [
      [path, 401, problem(401, 'unauthorized', 'no authorization included in request')],
      [path, 403, problem(403, 'forbidden', 'this call needs the graph:admin scope')],
      [path, 403, problem(403, 'forbidden', 'this call needs the graph:admin scope')],
    ];
    expect(got).toEqual([...rows('/v1/events'), ...rows('/v1/events/stream')]);
    expect(feed.reads).toEqual([]);
  });

  it('metrics: events read per route and the open SSE streams', async () => {
    const feed = new ListFeed();
    feed.append('follow.created', 'follow.created', 'follow.created');
    const { app, registry } = setup(feed);
    await call(app, 'GET', '/v1/events?limit=2', { auth: admin });
    await call(app, 'GET', '/v1/events?after=c3', { auth: admin });
    const res = await openStream(app, '?after=c1');
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await readUntil(reader, frame(3));
    const open = await registry.getSingleMetricAsString('flocklist_events_sse_streams');
    await until(() => feed.reads.length === 4);
    await reader.cancel();
    await until(() => feed.reads.at(-1)?.aborted === true);
    const lines = (name: string) =>
      registry.getSingleMetricAsString(name).then((t) => t.split('\n').filter((l) => !l.startsWith('#')));
    expect([
      await lines('flocklist_events_read_total'),
      open.split('\n').at(-1),
      await lines('flocklist_events_sse_streams'),
    ]).toEqual([
      [
        'flocklist_events_read_total{route="/v1/events"} 2',
        'flocklist_events_read_total{route="/v1/events/stream"} 2',
      ],
      'flocklist_events_sse_streams 1',
      ['flocklist_events_sse_streams 0'],
    ]);
  });
});

describe('GET /v1/events/stream', () => {
  it('frames exactly: an id, event and data line per event, in feed order', async () => {
    const feed = new ListFeed();
    feed.append('follow.created', 'close_friend.added', 'user.updated');
    const { app } = setup(feed, { streamPageSize: 2 });
    const res = await openStream(app);
    expect([res.status, res.headers.get('content-type'), res.headers.get('cache-control')]).toEqual([
      200,
      'text/event-stream',
      'no-cache',
    ]);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const text = await readUntil(reader, frame(3, 'user.updated'));
    expect(text).toBe(frame(1) + frame(2, 'close_friend.added') + frame(3, 'user.updated'));
    await until(() => feed.reads.length === 3);
    await reader.cancel();
    expect(feed.reads.slice(0, 3).map((r) => [r.after, r.limit, r.returned])).toEqual([
      [null, 2, 2],
      ['c2', 2, 1],
      ['c3', 2, -1],
    ]);
  });

  it('resume with Last-Event-ID yields exactly the events after it (the header wins over after)', async () => {
    const feed = new ListFeed();
    feed.append('follow.created', 'follow.created', 'follow.removed', 'block.created', 'block.removed');
    const { app } = setup(feed);
    const first = await openStream(app, '?after=c1');
    const r1 = (first.body as ReadableStream<Uint8Array>).getReader();
    const seen = await readUntil(r1, frame(3, 'follow.removed'));
    await r1.cancel();
    const lastId = /id: (\S+)\n\n$/.exec(seen)?.[1] as string;
    const again = await openStream(app, '?after=c1', {
      'Last-Event-ID': lastId,
    });
    const r2 = (again.body as ReadableStream<Uint8Array>).getReader();
    const text = await readUntil(r2, frame(5, 'block.removed'));
    await r2.cancel();
    expect([seen, lastId, text]).toEqual([
      frame(2) + frame(3, 'follow.removed'),
      'c3',
      frame(4, 'block.created') + frame(5, 'block.removed'),
    ]);
    const empty = await openStream(app, '?after=c4', { 'Last-Event-ID': '' });
    const r3 = (empty.body as ReadableStream<Uint8Array>).getReader();
    expect(await readUntil(r3, frame(5, 'block.removed'))).toBe(frame(5, 'block.removed'));
    await r3.cancel();
  });

  it('heartbeat: a comment line after each heartbeat interval of silence, and events still follow', async () => {
    const feed = new ListFeed();
    feed.append('follow.created');
    const { app } = setup(feed, { heartbeatMs: 40 });
    const res = await openStream(app);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const before = await readUntil(reader, ': heartbeat\n\n');
    feed.append('mute.created');
    const after = await readUntil(reader, frame(2, 'mute.created'));
    const next = await readUntil(reader, ': heartbeat\n\n');
    await reader.cancel();
    expect([before, after.replaceAll(': heartbeat\n\n', ''), next]).toEqual([
      `${frame(1)}: heartbeat\n\n`,
      frame(2, 'mute.created'),
      ': heartbeat\n\n',
    ]);
    expect(feed.reads.slice(1).every((r) => r.waitMs > 0 && r.waitMs <= 40)).toBe(true);
  });

  it('client disconnect ends the feed read: the abort signal fires and the stream closes', async () => {
    const feed = new ListFeed();
    feed.append('follow.created');
    const { app, registry } = setup(feed);
    const res = await openStream(app);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await readUntil(reader, frame(1));
    await until(() => feed.reads.length === 2);
    await reader.cancel();
    await until(() => feed.reads[1]?.aborted === true);
    await new Promise((r) => setTimeout(r, 50));
    // The second read waits until the heartbeat is due: 60 s from the last write, less the
    // milliseconds since (a loaded machine took one).
    expect([
      feed.reads.map((r) => [
        r.after,
        r.waitMs > 59_000 && r.waitMs <= 60_000 ? '≤ 60 s' : r.waitMs,
        r.aborted,
      ]),
      (await registry.getSingleMetricAsString('flocklist_events_sse_streams')).split('\n').at(-1),
    ]).toEqual([
      [
        [null, 0, false],
        ['c1', '≤ 60 s', true],
      ],
      'flocklist_events_sse_streams 0',
    ]);
  });

  it('an invalid or expired cursor answers its problem before the stream starts', async () => {
    const feed = new ListFeed({ expiredBelow: 2 });
    feed.append('follow.created', 'follow.created');
    const { app } = setup(feed);
    const got = [];
    for (const [q, h] of [
      ['?after=zzz', {}],
      ['', { 'Last-Event-ID': 'c1' }],
      ['?after=c2', { 'Last-Event-ID': 'c9' }],
    ] as const) {
      const res = await openStream(app, q, h);
      got.push([res.status, res.headers.get('content-type'), await res.json()]);
    }
    const problemJson = 'application/problem+json; charset=utf-8';
    const badCursor = problem(
      400,
      'invalid_cursor',
      'the cursor is malformed, altered or belongs to another list',
    );
    expect(got).toEqual([
      [400, problemJson, badCursor],
      [
        410,
        problemJson,
        problem(
          410,
          'cursor_expired',
          `the cursor is older than the feed's retention (${FEED_RETENTION_SECONDS} s)`,
        ),
      ],
      [400, problemJson, badCursor],
    ]);
  });

  it('a feed failure after the first byte ends the stream with one error frame carrying the problem', async () => {
    const feed = new ListFeed();
    feed.append('follow.created');
    const { app } = setup(feed);
    const read = feed.read.bind(feed);
    let calls = 0;
    feed.read = async (...args) => {
      if (++calls === 2) throw new Error('boom');
      return read(...args);
    };
    const res = await openStream(app);
    const text = await new Response(res.body).text();
    expect(text).toBe(
      `${frame(1)}event: error\ndata: ${JSON.stringify(problem(500, 'internal', 'an unexpected error occurred'))}\n\n`,
    );
  });

  it('on the real feed, an instance whose clock drifts past the bound: the stream ends with a 503 error frame, a long-poll answers 503 with Retry-After', async () => {
    const store = new MemoryGraphStore();
    let drifted = false;
    const skew = new ClockSkewError(
      "this instance's clock is 30000 ms from the database's (bound 2000 ms)",
      10,
    );
    const graph = new GraphService({
      store,
      lists: new SingleBucketLists(store),
      maxFollowing: 100,
      registry: false,
      feedPollMs: 20,
      clockGuard: {
        assertWritable: () => {
          if (drifted) throw skew;
        },
      },
    });
    const { app } = buildTestApp({ graph: stubGraph(), feed: graph.feed, events: { heartbeatMs: 60_000 } });
    const res = await openStream(app);
    expect(res.status).toBe(200);
    const body = new Response(res.body).text();
    await new Promise((r) => setTimeout(r, 100));
    drifted = true;
    expect(await body).toBe(
      `event: error\ndata: ${JSON.stringify(problem(503, 'unavailable', skew.message))}\n\n`,
    );
    const poll = await call(app, 'GET', '/v1/events?wait=5', { auth: admin });
    expect([poll.status, poll.headers.get('retry-after'), poll.json]).toEqual([
      503,
      '10',
      problem(503, 'unavailable', skew.message),
    ]);
  });

  it('a feed that answers empty pages before the wait is over is read once per wait, not in a spin', async () => {
    const feed = new ListFeed();
    const read = feed.read.bind(feed);
    feed.read = (after, limit, o) => read(after, limit, { ...o, waitMs: 0 });
    const { app } = setup(feed, { heartbeatMs: 100 });
    const res = await openStream(app);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const text = await readUntil(reader, ': heartbeat\n\n: heartbeat\n\n');
    await reader.cancel();
    expect([text, feed.reads.length < 10]).toEqual([': heartbeat\n\n: heartbeat\n\n', true]);
  });

  it('backpressure: a client that does not read stops the feed reads at one page in flight', async () => {
    const feed = new ListFeed({ endless: true });
    const { app } = setup(feed, { streamPageSize: 10 });
    const res = await openStream(app);
    await new Promise((r) => setTimeout(r, 200));
    const stalled = feed.reads.length;
    await new Promise((r) => setTimeout(r, 300));
    const stillStalled = feed.reads.length;
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await readUntil(reader, frame(40));
    await reader.cancel();
    expect([stalled <= 2, stillStalled === stalled, feed.reads.length > stalled]).toEqual([true, true, true]);
  });

  it('over a real socket: a client that stops reading stops the feed reads; one that hangs up ends the stream', async () => {
    const feed = new ListFeed({ endless: true });
    const { app, registry } = setup(feed, { streamPageSize: 100 });
    const openStreams = async () =>
      (await registry.getSingleMetricAsString('flocklist_events_sse_streams')).split('\n').at(-1);
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise<void>((r) => server.once('listening', () => r()));
    const { port } = server.address() as AddressInfo;
    const socket = connect(port, '127.0.0.1');
    try {
      await new Promise<void>((r) => socket.once('connect', () => r()));
      socket.write(
        `GET /v1/events/stream HTTP/1.1\r\nHost: x\r\nAuthorization: ${admin}\r\nAccept: text/event-stream\r\n\r\n`,
      );
      socket.pause();
      // Until the socket buffers on both sides are full, the reads go on; then they must stop.
      let last = -1;
      const deadline = Date.now() + 20_000;
      while (feed.events.length !== last && Date.now() < deadline) {
        last = feed.events.length;
        await new Promise((r) => setTimeout(r, 300));
      }
      const plateau = feed.events.length;
      await new Promise((r) => setTimeout(r, 500));
      // Bounded by the socket buffers (a few MB on loopback, ~200 bytes a frame), not by time.
      expect([feed.events.length === plateau, plateau > 0, plateau < 100_000]).toEqual([true, true, true]);
      // Reading again lets the reads go on: it was backpressure, not a stall.
      socket.resume();
      await until(() => feed.events.length > plateau + 1000, 10_000);
      // Hanging up while the events flow ends the stream, and with it the reads.
      socket.destroy();
      let open = await openStreams();
      for (const end = Date.now() + 5000; open !== 'flocklist_events_sse_streams 0' && Date.now() < end; ) {
        await new Promise((r) => setTimeout(r, 20));
        open = await openStreams();
      }
      const reads = feed.reads.length;
      await new Promise((r) => setTimeout(r, 300));
      expect([open, feed.reads.length]).toEqual(['flocklist_events_sse_streams 0', reads]);
    } finally {
      socket.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    }
  }, 40_000);
});
