/**
 * The graph's operations in spans: `tracedGraph(graph, tracer)` is `graph` with every call through
 * the `GraphApi` in a span `graph.<operation>` (a child of the request's), so a trace shows which
 * operation a request ran and, under it, each statement and cache lookup. Calls the graph makes
 * to itself are not wrapped (they run on the graph, not on this view).
 */
import type { Tracer } from '../model/tracing.js';
import type { GraphApi } from './contracts.js';

export function tracedGraph<G extends GraphApi>(graph: G, tracer: Tracer): G {
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(graph, {
    get(target, key) {
      const value = Reflect.get(target, key, target) as unknown;
      if (typeof value !== 'function' || typeof key !== 'string' || key === 'constructor') return value;
      let fn = wrapped.get(key);
      if (!fn) {
        const method = value as (...a: unknown[]) => Promise<unknown>;
        fn = (...args: unknown[]) => tracer.span(`graph.${key}`, () => method.apply(target, args));
        wrapped.set(key, fn);
      }
      return fn;
    },
  });
}
