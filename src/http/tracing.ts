/**
 * Tracing with OpenTelemetry, off unless configured: a span per request named by its route
 * template (`GET /v1/users/:id/followers`), a child per graph operation (`graph/traced-graph.ts`),
 * a grandchild per CQL statement or batch (the executor names each statement; no values), and
 * the cache lookups as events (`cache.hit` / `cache.miss`) on the span they happen in — a span per
 * in-memory lookup would cost more than the lookup. No instrumentation patches a module: the spans
 * come from our own code through the `Tracer` port (`model/tracing.ts`), and the request span from
 * the middleware here. Context flows through AsyncLocalStorage (the Node provider's context
 * manager). Export is batched on a bounded queue (2,048 spans) that drops when full and never
 * blocks a request; sampling is a ratio of new traces, and a request carrying a W3C `traceparent`
 * continues its caller's trace with the caller's decision. The trace id
 * joins every log line (`logger.ts`).
 */
import {
  context,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  trace,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  NodeTracerProvider,
  ParentBasedSampler,
  SimpleSpanProcessor,
  type SpanExporter,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-node';
import type { MiddlewareHandler } from 'hono';
import type { Tracer } from '../model/tracing.js';
import { routePattern } from './metrics.js';

export interface TracingOptions {
  /** Where spans go: OTLP over HTTP in production, an in-memory exporter in tests. */
  exporter: SpanExporter;
  /** The share of new traces recorded, 0..1. */
  sampleRatio: number;
  /** Export on a bounded background queue (default); false exports each span as it ends (tests). */
  batch?: boolean;
  /** The queue's bound (default 2,048 spans); spans beyond it are dropped. */
  maxQueueSize?: number;
}

export interface Tracing {
  /** The port the store's executor and the graph take. */
  tracer: Tracer;
  /** The request-span middleware (first in the chain). */
  middleware: MiddlewareHandler;
  /** Flushes and stops the exporter. */
  shutdown(): Promise<void>;
}

/** The OTLP/HTTP exporter to `url` (e.g. `http://127.0.0.1:4318/v1/traces`). */
export function otlpExporter(url: string): SpanExporter {
  return new OTLPTraceExporter({ url, timeoutMillis: 10_000 });
}

function ended(span: Span, error: unknown): void {
  if (error !== undefined) {
    span.recordException(error instanceof Error ? error : String(error));
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

/** Reads W3C trace context (`traceparent`, `tracestate`) from a request's headers. */
const HEADERS: TextMapGetter<Headers> = {
  keys: (h) => [...h.keys()],
  get: (h, key) => h.get(key) ?? undefined,
};

/**
 * Tracing as configured (`GRAPH_TRACING_ENDPOINT`, `GRAPH_TRACING_SAMPLE_RATIO`): started with the
 * OTLP exporter, or null when no endpoint is set. The service and the worker both start it so.
 */
export function startConfiguredTracing(c: {
  endpoint: string | undefined;
  sampleRatio: number;
}): Tracing | null {
  return c.endpoint ? startTracing({ exporter: otlpExporter(c.endpoint), sampleRatio: c.sampleRatio }) : null;
}

/** Starts tracing for this process (registers the provider and its context manager globally). */
export function startTracing(o: TracingOptions): Tracing {
  const processor =
    o.batch === false
      ? new SimpleSpanProcessor(o.exporter)
      : new BatchSpanProcessor(o.exporter, {
          maxQueueSize: o.maxQueueSize ?? 2048,
          maxExportBatchSize: 512,
          scheduledDelayMillis: 2000,
          exportTimeoutMillis: 10_000,
        });
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'flocklist' }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(o.sampleRatio) }),
    spanProcessors: [processor],
  });
  provider.register();
  const otel = provider.getTracer('flocklist');
  const tracer: Tracer = {
    // Under a span that is not recorded (its trace not sampled) a child would not be either: run
    // `fn` as it is, without a span object or a context switch.
    span: (name, fn, attributes) =>
      trace.getActiveSpan()?.isRecording() === false
        ? fn()
        : otel.startActiveSpan(name, attributes ? { attributes } : {}, async (span) => {
            try {
              const result = await fn();
              ended(span, undefined);
              return result;
            } catch (e) {
              ended(span, e);
              throw e;
            }
          }),
    event: (name, attributes) => trace.getActiveSpan()?.addEvent(name, attributes),
  };
  // A request that carries a `traceparent` continues its caller's trace (and its sampling decision).
  const middleware: MiddlewareHandler = (c, next) =>
    otel.startActiveSpan(
      c.req.method,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': c.req.method } },
      propagation.extract(context.active(), c.req.raw.headers, HEADERS),
      async (span) => {
        try {
          await next();
        } finally {
          const route = routePattern(c);
          span.updateName(`${c.req.method} ${route}`);
          span.setAttribute('http.route', route);
          span.setAttribute('http.response.status_code', c.res.status);
          if (c.res.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        }
      },
    );
  return {
    tracer,
    middleware,
    shutdown: async () => {
      await provider.shutdown();
      trace.disable();
      context.disable();
    },
  };
}

/** The active span's trace id, for log lines (none outside a recorded span). */
export function activeTraceId(): string | undefined {
  const ctx = trace.getActiveSpan()?.spanContext();
  return ctx && (ctx.traceFlags & 1) === 1 ? ctx.traceId : undefined;
}
