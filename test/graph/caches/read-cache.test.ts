import { describe, expect, it } from 'vitest';
import { ReadCache } from '../../../src/graph/caches/read-cache.js';

function clock(start = 1000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe('ReadCache', () => {
  it('holds at most `entries` entries, the least recently used evicted first', () => {
    const c = clock();
    const cache = new ReadCache<string, number>({ entries: 2, ttlMs: 1000, nowMs: c.now });
    for (const k of ['a', 'b']) cache.store(k, 1, cache.begin());
    cache.get('a');
    cache.store('c', 3, cache.begin());
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([1, undefined, 3]);
    expect(cache.snapshot().size).toBe(2);
  });

  it('an entry expires ttlMs after its read began, not after it was stored', () => {
    const c = clock();
    const cache = new ReadCache<string, number>({ entries: 10, ttlMs: 1000, nowMs: c.now });
    const ticket = cache.begin();
    c.advance(600);
    expect(cache.store('a', 1, ticket)).toBe(true);
    c.advance(399);
    expect(cache.get('a')).toBe(1);
    c.advance(2);
    expect(cache.get('a')).toBeUndefined();
  });

  it('a ticket older than the TTL stores nothing', () => {
    const c = clock();
    const cache = new ReadCache<string, number>({ entries: 10, ttlMs: 1000, nowMs: c.now });
    const ticket = cache.begin();
    c.advance(1000);
    expect(cache.store('a', 1, ticket)).toBe(false);
    expect(cache.stats.refused).toBe(1);
  });

  it('caches negative answers (null) apart from misses (undefined)', () => {
    const cache = new ReadCache<string, number | null>({ entries: 10, ttlMs: 1000 });
    cache.store('a', null, cache.begin());
    expect(cache.get('a')).toBeNull();
    expect(cache.get('b')).toBeUndefined();
    expect(cache.stats).toMatchObject({ hits: 1, misses: 1 });
  });

  it('the read-through race: a read that began before an invalidation of its key stores nothing', () => {
    const cache = new ReadCache<string, string>({ entries: 10, ttlMs: 1000 });
    const reader = cache.begin(); // the reader fetches the old value …
    cache.invalidate('k'); // … the writer changes it and invalidates …
    expect(cache.store('k', 'old', reader)).toBe(false); // … the reader's store is refused
    expect(cache.get('k')).toBeUndefined();
    const after = cache.begin();
    expect(cache.store('k', 'new', after)).toBe(true);
    expect(cache.get('k')).toBe('new');
    // Another key's invalidation does not refuse it.
    const other = cache.begin();
    cache.invalidate('x');
    expect(cache.store('k', 'newer', other)).toBe(true);
  });

  it('clear() refuses every read that began before it', () => {
    const cache = new ReadCache<string, string>({ entries: 10, ttlMs: 1000 });
    const reader = cache.begin();
    cache.clear();
    expect(cache.store('k', 'old', reader)).toBe(false);
  });

  it('a mark evicted for room refuses stores instead of letting a stale one in', () => {
    const cache = new ReadCache<string, string>({ entries: 10, ttlMs: 1000, marks: 10_000 });
    const reader = cache.begin();
    cache.invalidate('k');
    for (let i = 0; i < 10_000; i++) cache.invalidate(`other${i}`); // pushes k's mark out
    expect(cache.store('k', 'old', reader)).toBe(false);
  });

  it('size 0 or TTL 0 is off: nothing is stored, every get misses', () => {
    for (const o of [
      { entries: 0, ttlMs: 1000 },
      { entries: 10, ttlMs: 0 },
    ]) {
      const cache = new ReadCache<string, number>(o);
      expect(cache.enabled).toBe(false);
      expect(cache.store('a', 1, cache.begin())).toBe(false);
      expect(cache.get('a')).toBeUndefined();
    }
  });

  it('through() reads once and then serves from memory', async () => {
    const cache = new ReadCache<string, number>({ entries: 10, ttlMs: 1000 });
    let reads = 0;
    const fetch = async () => ++reads;
    expect(await cache.through('a', fetch)).toBe(1);
    expect(await cache.through('a', fetch)).toBe(1);
    expect(reads).toBe(1);
    expect(cache.snapshot()).toMatchObject({ hits: 1, misses: 1, size: 1 });
  });
});
