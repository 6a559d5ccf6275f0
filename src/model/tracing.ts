/**
 * Spans around units of work, for a tracer the composition root may pass (OpenTelemetry in
 * `http/tracing.ts`); `NO_TRACER` does nothing and is the default everywhere, so code that traces
 * costs one call when tracing is off. Attribute values name things (a statement, a route, a
 * cache), never the values a request carries.
 */
export type SpanAttributes = Record<string, string | number | boolean>;

export interface Tracer {
  /**
   * Runs `fn` in a span named `name`, a child of the span active where it is called (a root when
   * none is); the span ends when `fn` settles and is marked as an error when it throws.
   */
  span<T>(name: string, fn: () => Promise<T>, attributes?: SpanAttributes): Promise<T>;
  /** Records `name` as an event on the active span (nothing when none is active). */
  event(name: string, attributes?: SpanAttributes): void;
}

export const NO_TRACER: Tracer = {
  span: (_name, fn) => fn(),
  event: () => {},
};
