/**
 * A store (any: the memory store or the real node's) whose reads are counted by method, and whose
 * next call of a method can be parked after it read, until released: how the cache tests put a
 * reader between its store read and its cache store while a writer changes the value.
 */
import type { GraphStore } from '../../../src/ports/graph-store.js';

/** `store` with its reads counted by method, and a `park(method)` that holds the next call's answer until released. */
export function heldStore(store: GraphStore) {
  const calls = new Map<string, number>();
  const parked = new Map<string, { reached: () => void; release: Promise<void> }>();
  const wrapped = new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      const name = String(prop);
      return async (...a: unknown[]) => {
        if (/^(get|list|has)/.test(name)) calls.set(name, (calls.get(name) ?? 0) + 1);
        const result = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, a);
        const hold = parked.get(name);
        if (hold) {
          parked.delete(name);
          hold.reached();
          await hold.release;
        }
        return result;
      };
    },
  }) as GraphStore;
  return {
    store: wrapped,
    calls,
    reads: (name: string) => calls.get(name) ?? 0,
    /** The next `method` call reads, then waits (its answer read) until `release()`. */
    park(method: string) {
      let release = () => {};
      let reached = () => {};
      const atRead = new Promise<void>((r) => {
        reached = r;
      });
      parked.set(method, {
        reached,
        release: new Promise<void>((r) => {
          release = r;
        }),
      });
      return { atRead, release: () => release() };
    },
  };
}
