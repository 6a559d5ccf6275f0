/**
 * Per-user rate limit on mutations: a token bucket per acting user, **in this process only**.
 *
 * Design note. Each user's bucket holds up to `perMinute` tokens and refills continuously at
 * `perMinute / 60` per second; a mutation takes one token, and an empty bucket answers 429 with
 * `Retry-After` = seconds until one token is back. With N API instances behind a balancer a user
 * can get up to N× the configured rate; a shared limiter (Redis, or a Cassandra counter) would be
 * needed for a global cap and was rejected for now as another moving part on the write path.
 *
 * Memory is bounded by `maxKeys`, in O(1) per call at any number of keys: the map is kept in
 * least-recently-used order (a call moves its key to the end). A new key past the bound may evict
 * only the least recently used bucket, and only if that bucket is full again — a full bucket is
 * exactly what a new one would be, so eviction never hands a drained bucket fresh tokens. The LRU
 * bucket is the longest idle, so if *it* is not full yet, every held bucket was used within the
 * last refill period (`60 s`): more than `maxKeys` actors are mutating at once. Then the new key
 * is refused (429, `Retry-After` = when the LRU bucket is full and can go) rather than admitted at
 * an attacker's expense: the limiter fails closed under overload instead of open.
 * Rejected: sweeping every key when full (O(maxKeys) per new key: 1.3 ms at 100,000 keys);
 * evicting the oldest bucket whatever its level (a drained actor came back full after other
 * keys pushed it out) — which is also why this is a hand-kept `Map` and not the `lru-cache` the
 * list caches use: that library evicts on every insert past `max`, whatever the evicted bucket
 * holds, where this limiter must refuse the new key instead.
 *
 * Import (`following/import`) is one request that may write many lines, so it takes one token per
 * line that writes, through `MutationLimiter`, not one per request: it takes a token before a
 * line's follow and `refund`s it when the follow was refused before writing (unknown account,
 * block, cap). A refund never lifts a bucket above full, and an absent bucket (never used, or
 * evicted, which happens only when full) stays absent.
 */
import type { MiddlewareHandler } from 'hono';
import { principalOf } from './auth.js';
import { ApiError } from './errors.js';

export interface RateDecision {
  ok: boolean;
  /** Whole seconds until a token is available (0 when `ok`). */
  retryAfterSeconds: number;
  remaining: number;
}

interface Bucket {
  tokens: number;
  updatedMs: number;
}

/** The per-actor mutation budget as a route that charges per unit of work sees it. */
export interface MutationLimiter {
  readonly perMinute: number;
  /** Takes one token for `key` if there is one. */
  take(key: string): RateDecision;
  /** Gives back `tokens` taken for work that did not happen; never above a full bucket. */
  refund(key: string, tokens?: number): void;
  /** Whole seconds until `key` holds `tokens` (at most a full bucket's worth); 0 when it does now. */
  secondsUntilAvailable(key: string, tokens: number): number;
}

/** A token bucket per key, in memory, bounded as the module note says. */
export class TokenBucketLimiter implements MutationLimiter {
  /**
   * Least recently used first. Not an `lru-cache`: a new key past `maxKeys` is refused, not let
   * in by evicting a bucket that has not refilled (see the module note).
   */
  private readonly buckets = new Map<string, Bucket>();
  private readonly perMs: number;

  constructor(
    readonly perMinute: number,
    private readonly now: () => number = Date.now,
    private readonly maxKeys = 100_000,
  ) {
    this.perMs = perMinute / 60_000;
  }

  /** Takes one token for `key` if there is one. O(1). */
  take(key: string): RateDecision {
    const now = this.now();
    let b = this.buckets.get(key);
    if (b) {
      b.tokens = this.level(b, now);
      b.updatedMs = now;
      this.buckets.delete(key);
    } else {
      const refused = this.makeRoom(now);
      if (refused) return refused;
      b = { tokens: this.perMinute, updatedMs: now };
    }
    this.buckets.set(key, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return { ok: true, retryAfterSeconds: 0, remaining: Math.floor(b.tokens) };
    }
    return { ok: false, retryAfterSeconds: this.secondsUntil(1 - b.tokens), remaining: 0 };
  }

  /** Gives back `tokens` to `key`'s bucket, capped at full. O(1); does not change the LRU order. */
  refund(key: string, tokens = 1): void {
    const b = this.buckets.get(key);
    if (!b) return;
    const now = this.now();
    b.tokens = Math.min(this.perMinute, this.level(b, now) + tokens);
    b.updatedMs = now;
  }

  /** Whole seconds until `key` holds `min(tokens, perMinute)` tokens; 0 when it does now. O(1). */
  secondsUntilAvailable(key: string, tokens: number): number {
    const b = this.buckets.get(key);
    const level = b ? this.level(b, this.now()) : this.perMinute;
    const want = Math.min(tokens, this.perMinute);
    return level >= want ? 0 : this.secondsUntil(want - level);
  }

  private level(b: Bucket, now: number): number {
    return Math.min(this.perMinute, b.tokens + Math.max(0, now - b.updatedMs) * this.perMs);
  }

  private secondsUntil(tokens: number): number {
    return Math.max(1, Math.ceil(tokens / this.perMs / 1000));
  }

  /** Frees a slot for a new key by evicting the LRU bucket if it is full; else the refusal. */
  private makeRoom(now: number): RateDecision | null {
    if (this.buckets.size < this.maxKeys) return null;
    const oldest = this.buckets.entries().next();
    if (oldest.done) return null;
    const [key, b] = oldest.value;
    const level = this.level(b, now);
    if (level < this.perMinute) {
      return { ok: false, retryAfterSeconds: this.secondsUntil(this.perMinute - level), remaining: 0 };
    }
    this.buckets.delete(key);
    return null;
  }
}

/** Route middleware for mutations: 429 + Retry-After when the actor's bucket is empty. */
export function rateLimit(limiter: TokenBucketLimiter): MiddlewareHandler {
  return async (c, next) => {
    const p = principalOf(c);
    if (!p.admin) {
      const d = limiter.take(p.sub.toString());
      if (!d.ok) {
        throw new ApiError('rate_limited', `at most ${limiter.perMinute} changes per minute; retry later`, {
          headers: { 'Retry-After': String(d.retryAfterSeconds) },
        });
      }
    }
    await next();
  };
}
