/**
 * A `Map` kept in use order as a bounded LRU, for the following-cap budgets of `graph-service.ts`
 * (per process; must not grow with the number of users served). The list engine's caches use
 * `lru-cache`; this file goes once the budgets do too.
 */

/** Sets `key` as the most recently used entry of `map`, dropping the least recently used past `max`. */
export function setRecent<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > max) {
    const oldest = map.keys().next();
    if (oldest.done) break;
    map.delete(oldest.value);
  }
}
