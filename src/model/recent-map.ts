/**
 * A `Map` kept in use order as a bounded LRU: the caches of the graph layer (layouts, list sizes,
 * following-cap budgets) are per process and must not grow with the number of users served.
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
