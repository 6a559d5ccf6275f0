/**
 * Tracing on the real node with an in-memory exporter (`src/http/tracing.ts`): a follow and a
 * followers page each give one trace — the request span named by its route template, the graph
 * operations under it, each CQL statement under the operation that sent it, and the cache lookups
 * as events — the trees documented in `docs/operations.md#tracing`. The trace id joins the log line.
 */
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { tracedGraph } from '../../src/graph/traced-graph.js';
import { createLogger } from '../../src/http/logger.js';
import { startTracing, type Tracing } from '../../src/http/tracing.js';
import { BucketedListService } from '../../src/lists/list-service.js';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { type TestKeyspace, testKeyspace } from '../support/cassandra.js';
import { bearer, buildTestApp, call } from './support/app.js';

const exporter = new InMemorySpanExporter();
let tracing: Tracing;
let ks: TestKeyspace;

beforeAll(async () => {
  ks = await testKeyspace('tracing');
  tracing = startTracing({ exporter, sampleRatio: 1, batch: false });
});
afterAll(async () => {
  await tracing?.shutdown();
  await ks?.drop();
});

/**
 * The trace of `root` as lines: each span indented under its parent with its cache events, its
 * child spans in start order, then its statements (leaf `cql` spans) counted by name, sorted — the
 * statements an operation sends at once start in no fixed order.
 */
function tree(spans: ReadableSpan[], root: ReadableSpan): string[] {
  const byStart = (a: ReadableSpan, b: ReadableSpan) =>
    a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1];
  const children = (s: ReadableSpan) =>
    spans.filter((c) => c.parentSpanContext?.spanId === s.spanContext().spanId).sort(byStart);
  const lines: string[] = [];
  const walk = (s: ReadableSpan, depth: number) => {
    const pad = '  '.repeat(depth);
    const events = s.events.map((e) => `${e.name}:${e.attributes?.cache}`);
    lines.push(`${pad}${s.name}${events.length ? ` [${events.join(' ')}]` : ''}`);
    const statements = new Map<string, number>();
    for (const c of children(s)) {
      if (c.name.startsWith('cql ') && children(c).length === 0)
        statements.set(c.name, (statements.get(c.name) ?? 0) + 1);
      else walk(c, depth + 1);
    }
    for (const [name, n] of [...statements].sort(([a], [b]) => (a < b ? -1 : 1)))
      lines.push(`${pad}  ${name}${n > 1 ? ` ×${n}` : ''}`);
  };
  walk(root, 0);
  return lines;
}

function requestTrace(method: string) {
  const spans = exporter.getFinishedSpans();
  const roots = spans.filter((s) => s.name.startsWith(`${method} `) && !s.parentSpanContext);
  expect(roots.length).toBe(1);
  const root = roots[0] as ReadableSpan;
  const same = spans.filter((s) => s.spanContext().traceId === root.spanContext().traceId);
  return { root, spans: same };
}

/** A follow's trace (documented in `docs/operations.md#tracing`). */
const FOLLOW_TREE = [
  'PUT /v1/users/:id/following/:target',
  '  graph.assertAccountsActive [cache.miss:users]',
  '    cql getUser',
  '  graph.follow [cache.hit:users]',
  '    cql appendPair',
  '    cql deleteIntent',
  '    cql getCount ×4',
  '    cql getCountSync ×4',
  '    cql getDirectory',
  '    cql getLayout ×2',
  '    cql getUser',
  '    cql incrementCounts',
  '    cql markDirty',
  '    cql readPairHistory ×2',
  '    cql writeEdges',
];

/** A followers page's trace (the same document). */
const PAGE_TREE = [
  'GET /v1/users/:id/followers',
  '  graph.assertAccountsActive [cache.miss:users]',
  '    cql getUser',
  '  graph.assertListsVisible',
  '  graph.listPage',
  '    cql listBucket',
];

describe('tracing (Cassandra, in-memory exporter)', () => {
  it('a follow and a followers page: the documented span trees, statement spans counted; the trace id in the access log line', async () => {
    const { tracer } = tracing;
    const store = new CassandraGraphStore(ks.client, { tracer });
    const lists = new BucketedListService({
      store,
      cursorSecret: 'cursor-secret-0123456789abcdef',
      bucketThresholds: [50_000, 200_000],
    });
    const graph = new GraphService({ store, lists, maxFollowing: 100, tracer });
    for (const id of [1n, 2n]) await graph.putUser({ id, username: `t${id}` });
    const lines: string[] = [];
    const logger = createLogger('info', { write: (l: string) => void lines.push(l) });
    const { app } = buildTestApp({ graph: tracedGraph(graph, tracer), receipts: store, tracing, logger });

    // Warm: the count source read once, the registry loaded and the feed's tail polled, so the
    // traces below hold the request's own work only.
    expect((await call(app, 'GET', '/v1/users/2/followers?limit=10', { auth: bearer(2) })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1500));

    exporter.reset();
    const follow = await call(app, 'PUT', '/v1/users/1/following/2', { auth: bearer(1) });
    expect(follow.status).toBe(200);
    // The intent's delete is sent off the latency path, unawaited: on a busy machine its span may
    // end after the response. Wait for it (at most 10 s) so the tree is whole.
    for (let i = 0; i < 100 && !exporter.getFinishedSpans().some((s) => s.name === 'cql deleteIntent'); i++)
      await new Promise((r) => setTimeout(r, 100));
    const f = requestTrace('PUT');
    expect(tree(f.spans, f.root)).toEqual(FOLLOW_TREE);

    exporter.reset();
    const page = await call(app, 'GET', '/v1/users/2/followers?limit=10', { auth: bearer(2) });
    expect([page.status, (page.json as { items: { id: string }[] }).items.map((i) => i.id)]).toEqual([
      200,
      ['1'],
    ]);
    const p = requestTrace('GET');
    expect(tree(p.spans, p.root)).toEqual(PAGE_TREE);
    const access = lines
      .map((l) => JSON.parse(l) as { msg: string; trace_id?: string })
      .filter((l) => l.msg === 'request');
    expect(access.slice(1).map((l) => l.trace_id)).toEqual([
      f.root.spanContext().traceId,
      p.root.spanContext().traceId,
    ]);
  });
});
