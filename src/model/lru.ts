/**
 * Bounded LRU maps for the per-process caches (list layouts and sizes, follow-cap budgets, pair
 * horizon hints), all `lru-cache`. They are bounded by entry count through `maxSize` with every
 * entry of size 1, not through `max`: with `max` the library allocates its arrays for all `max`
 * entries up front (arrays of 10,000 per cache). A process pays that once; tests and the
 * simulation, which build services per case, paid it per case (1,000 simulation schedules took
 * 11.3 s with `max`, 9.8 s this way, 9.3 s with the hand-written maps before).
 */
import { LRUCache } from 'lru-cache';

/** An LRU map of at most `entries` entries, the least recently set (or got) evicted first. */
export function boundedLru<K extends {}, V extends {}>(entries: number): LRUCache<K, V> {
  return new LRUCache<K, V>({ maxSize: entries, sizeCalculation: () => 1 });
}
