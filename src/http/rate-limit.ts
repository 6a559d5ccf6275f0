/**
 * Per-user rate limit on mutations: a token bucket per acting user, **in this process only**.
 *
 * Design note. Each user's bucket holds up to `perMinute` tokens and refills continuously at
 * `perMinute / 60` per second; a mutation takes one token, and an empty bucket answers 429 with
 * `Retry-After` = seconds until one token is back. With N API instances behind a balancer a user
 * can get up to N× the configured rate; a shared limiter (Redis, or a Cassandra counter) would be
 * needed for a global cap and was rejected for now as another moving part on the write path.
 * Memory is bounded: buckets that would be full again are dropped by a sweep every `maxKeys`
 * inserts, and the map never exceeds `maxKeys` (the oldest entries go first).
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

export class TokenBucketLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly perMs: number;

  constructor(
    readonly perMinute: number,
    private readonly now: () => number = Date.now,
    private readonly maxKeys = 100_000,
  ) {
    this.perMs = perMinute / 60_000;
  }

  /** Takes one token for `key` if there is one. */
  take(key: string): RateDecision {
    const now = this.now();
    let b = this.buckets.get(key);
    if (b) {
      b.tokens = Math.min(this.perMinute, b.tokens + (now - b.updatedMs) * this.perMs);
      b.updatedMs = now;
    } else {
      if (this.buckets.size >= this.maxKeys) this.sweep(now);
      b = { tokens: this.perMinute, updatedMs: now };
      this.buckets.set(key, b);
    }
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return { ok: true, retryAfterSeconds: 0, remaining: Math.floor(b.tokens) };
    }
    return {
      ok: false,
      retryAfterSeconds: Math.max(1, Math.ceil((1 - b.tokens) / this.perMs / 1000)),
      remaining: 0,
    };
  }

  private sweep(now: number) {
    for (const [k, b] of this.buckets) {
      if (b.tokens + (now - b.updatedMs) * this.perMs >= this.perMinute) this.buckets.delete(k);
    }
    for (const k of this.buckets.keys()) {
      if (this.buckets.size < this.maxKeys) break;
      this.buckets.delete(k);
    }
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
