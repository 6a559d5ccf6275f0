/**
 * One bounded, expiring read-through cache (`lru-cache`) that a racing invalidation cannot leave
 * stale: the building block of every cache in `graph-caches.ts`.
 *
 * The race rule. A read-through takes a ticket before it reads the store (`begin`): the cache's
 * epoch and the clock. An invalidation of a key bumps the epoch and marks the key with it. The
 * reader may store its value only when no mark on its key (and no wholesale clear, the `floor`)
 * is newer than its ticket: a reader that fetched the old value before a writer's invalidation
 * stores nothing. Marks are kept for the TTL only, in a bounded map; a mark evicted for room
 * raises the floor to its epoch, so forgetting a mark refuses stores instead of letting one in.
 *
 * Expiry. An entry expires `ttlMs` after its reader's ticket (when its read began, not when it was
 * stored), so a value read before a change is served at most `ttlMs` after the read began,
 * whatever happens to events; a ticket older than `ttlMs` stores nothing (a mark it could have
 * missed may be gone).
 *
 * Values may be null (a negative answer is an answer); `undefined` means "not cached".
 */
import { LRUCache } from 'lru-cache';
import type { Tracer } from '../../model/tracing.js';

/** A reader's ticket: the epoch and the clock (ms) when its store read began. */
export interface ReadTicket {
  readonly epoch: number;
  readonly atMs: number;
}

export interface ReadCacheOptions<V = unknown> {
  /**
   * Entries held at most (with `sizeOf`, the sum of their sizes); 0 turns the cache off (every
   * get misses, nothing is stored).
   */
  entries: number;
  /** An entry's size (at least 1); default 1 each. A value larger than `entries` is not kept. */
  sizeOf?: (value: V) => number;
  /** How long an entry lives after its read began (ms). */
  ttlMs: number;
  /** Invalidation marks held at most (default `max(10_000, entries)`). */
  marks?: number;
  /** ms clock (default `performance.now`); tests inject one. */
  nowMs?: () => number;
  /** Each lookup as a `cache.hit` / `cache.miss` event (attribute `cache`: `name`) on the active span. */
  traced?: { tracer: Tracer; name: string };
}

/** Hits, misses, refused stores and invalidations since the cache was built. */
export interface ReadCacheStats {
  hits: number;
  misses: number;
  /** Stores refused by the race rule (or a ticket older than the TTL). */
  refused: number;
  invalidations: number;
  size: number;
}

interface Box<V> {
  value: V;
}

export class ReadCache<K extends {}, V> {
  private readonly entries: LRUCache<K, Box<V>> | null;
  private readonly marks: LRUCache<K, number>;
  private epoch = 0;
  private floor = 0;
  private readonly now: () => number;
  private readonly ttlMs: number;
  private readonly traced: ReadCacheOptions['traced'];
  readonly stats: Omit<ReadCacheStats, 'size'> = { hits: 0, misses: 0, refused: 0, invalidations: 0 };

  constructor(o: ReadCacheOptions<V>) {
    this.now = o.nowMs ?? (() => performance.now());
    this.ttlMs = o.ttlMs;
    this.traced = o.traced;
    const perf = { now: this.now };
    const sizeOf = o.sizeOf;
    this.entries =
      o.entries > 0 && o.ttlMs > 0
        ? new LRUCache<K, Box<V>>({
            maxSize: o.entries,
            sizeCalculation: sizeOf ? (box) => Math.max(1, sizeOf(box.value)) : () => 1,
            ttl: o.ttlMs,
            ttlResolution: 0,
            perf,
          })
        : null;
    this.marks = new LRUCache<K, number>({
      maxSize: Math.max(10_000, o.marks ?? o.entries),
      sizeCalculation: () => 1,
      ttl: Math.max(1, o.ttlMs),
      ttlResolution: 0,
      perf,
      dispose: (epoch, _key, reason) => {
        if (reason === 'evict' && epoch > this.floor) this.floor = epoch;
      },
    });
  }

  /** Whether the cache holds anything at all (size 0 or TTL 0: off). */
  get enabled(): boolean {
    return this.entries !== null;
  }

  /** The cached value (null: a cached negative answer), or undefined on a miss. Counts a hit or a miss. */
  get(key: K): V | undefined {
    const box = this.entries?.get(key);
    if (box) this.stats.hits++;
    else this.stats.misses++;
    if (this.traced) this.traced.tracer.event(box ? 'cache.hit' : 'cache.miss', { cache: this.traced.name });
    return box?.value;
  }

  /** The cached value without counting a hit or a miss (a cache's own bookkeeping reads). */
  peek(key: K): V | undefined {
    return this.entries?.peek(key)?.value;
  }

  /** A ticket to take before reading the store for keys this cache may then `store`. */
  begin(): ReadTicket {
    return { epoch: this.epoch, atMs: this.now() };
  }

  /** Stores what a read that began at `ticket` found, unless the race rule refuses it; returns whether it stored. */
  store(key: K, value: V, ticket: ReadTicket): boolean {
    if (!this.entries) return false;
    const marked = this.marks.get(key) ?? 0;
    if (marked > ticket.epoch || this.floor > ticket.epoch || this.now() - ticket.atMs >= this.ttlMs) {
      this.stats.refused++;
      return false;
    }
    this.entries.set(key, { value }, { start: ticket.atMs });
    return true;
  }

  /** Drops `key` and refuses the stores of every read of it that began before now. */
  invalidate(key: K): void {
    this.stats.invalidations++;
    this.epoch++;
    this.marks.set(key, this.epoch);
    this.entries?.delete(key);
  }

  /**
   * Refuses the stores of every read of `key` that began before now (as `invalidate`), but keeps
   * its entry changed by `change` (which sees the cached value and returns the new one, or
   * undefined to drop it) with its expiry unchanged: the entry's read began when it did, and the
   * change is what the caller knows happened since. No entry: only the refusal.
   */
  patch(key: K, change: (value: V) => V | undefined): void {
    this.stats.invalidations++;
    this.epoch++;
    this.marks.set(key, this.epoch);
    const box = this.entries?.peek(key);
    if (!box) return;
    const next = change(box.value);
    if (next === undefined) this.entries?.delete(key);
    else box.value = next;
  }

  /** Drops every entry and refuses the stores of every read that began before now. */
  clear(): void {
    this.stats.invalidations++;
    this.epoch++;
    this.floor = this.epoch;
    this.entries?.clear();
  }

  /**
   * Read-through for one key: the cached value, else `fetch`'s, stored under the race rule.
   *
   * @example
   * const user = await users.through(id, () => store.getUser(id));
   */
  async through(key: K, fetch: () => Promise<V>): Promise<V> {
    const hit = this.get(key);
    if (hit !== undefined) return hit;
    const ticket = this.begin();
    const value = await fetch();
    this.store(key, value, ticket);
    return value;
  }

  /** The stats with the current entry count. */
  snapshot(): ReadCacheStats {
    return { ...this.stats, size: this.entries?.size ?? 0 };
  }
}
