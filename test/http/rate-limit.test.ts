/**
 * The per-user token bucket under many keys: each call is O(1) at 100k+ keys, and
 * memory pressure never hands a drained bucket a fresh one.
 *
 * Replay a failure: `RATE_LIMIT_SEED=<seed> npx vitest run --config test/vitest.config.ts
 * test/http/rate-limit.test.ts` (the seed is printed every run).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type RateDecision, TokenBucketLimiter } from '../../src/http/rate-limit.js';

const SEED = Number(process.env.RATE_LIMIT_SEED ?? Date.now() % 2 ** 31);

const keysOf = (l: TokenBucketLimiter) => [
  ...(l as unknown as { buckets: Map<string, unknown> }).buckets.keys(),
];

describe('rate limiter at scale', () => {
  // Timing is a benchmark's business, not a test's: this pins the behaviour that makes each call
  // O(1) (no sweep: a new key looks at the least-recently-used bucket only).
  it('with 100,000 keys held: new keys are refused while all drain, and each later key evicts exactly one full bucket', () => {
    let now = 0;
    const l = new TokenBucketLimiter(60, () => now, 100_000);
    for (let i = 0; i < 100_000; i++) l.take(`held-${i}`);
    // Every held bucket is one token short: nothing may be evicted, and nothing may be swept.
    const refused: RateDecision[] = [];
    for (let i = 0; i < 20_000; i++) refused.push(l.take(`new-${i}`));
    // A minute later every held bucket is full again: each new key evicts exactly one of them.
    now = 60_000;
    let admitted = 0;
    for (let i = 0; i < 100_000; i++) if (l.take(`later-${i}`).ok) admitted++;
    expect({
      refused: new Set(refused.map((d) => JSON.stringify(d))),
      admitted,
      size: keysOf(l).length,
    }).toEqual({
      refused: new Set([JSON.stringify({ ok: false, retryAfterSeconds: 1, remaining: 0 })]),
      admitted: 100_000,
      size: 100_000,
    });
  });

  it('a drained bucket is never evicted and refilled by other keys arriving', () => {
    let now = 0;
    const l = new TokenBucketLimiter(60, () => now, 100);
    for (let i = 0; i < 60; i++) l.take('attacker');
    for (let i = 0; i < 1000; i++) {
      now += 10;
      l.take(`filler-${i}`);
    }
    now = 10_500;
    // 10.5 s after draining: 10.5 tokens have come back, no more.
    const taken: boolean[] = [];
    for (let i = 0; i < 12; i++) taken.push(l.take('attacker').ok);
    expect(taken).toEqual([...Array(10).fill(true), false, false]);
  });

  it(`no key ever gets more than its budget in any window, whatever the key churn (seed ${SEED})`, () => {
    console.log(`[rate-limit] seed=${SEED} (replay: RATE_LIMIT_SEED=${SEED})`);
    const perMinute = 6;
    const step = fc.record({
      key: fc.integer({ min: 0, max: 5 }),
      burst: fc.integer({ min: 1, max: 8 }),
      dtMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 30_000 })),
    });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 100 }), fc.integer({ min: 1, max: 4 }), (steps, maxKeys) => {
        let now = 0;
        const l = new TokenBucketLimiter(perMinute, () => now, maxKeys);
        const oks = new Map<number, number[]>();
        for (const s of steps) {
          now += s.dtMs;
          for (let i = 0; i < s.burst; i++) {
            if (l.take(String(s.key)).ok) oks.set(s.key, [...(oks.get(s.key) ?? []), now]);
          }
        }
        const violations: string[] = [];
        for (const [key, times] of oks) {
          for (let i = 0; i < times.length; i++) {
            for (let j = i; j < times.length; j++) {
              const budget = perMinute + ((times[j]! - times[i]!) * perMinute) / 60_000;
              if (j - i + 1 > budget + 1e-9)
                violations.push(`${key}: ${j - i + 1} in [${times[i]}, ${times[j]}]`);
            }
          }
        }
        expect(violations).toEqual([]);
        expect(keysOf(l).length).toBeLessThanOrEqual(maxKeys);
      }),
      { seed: SEED, numRuns: 300 },
    );
  });
});

describe('per-line charging (import)', () => {
  it('refund gives a token back up to a full bucket; secondsUntilAvailable counts up to a full bucket', () => {
    let now = 0;
    const l = new TokenBucketLimiter(6, () => now);
    expect(l.secondsUntilAvailable('a', 3)).toBe(0);
    const taken = Array.from({ length: 7 }, () => l.take('a').ok);
    const waits = [1, 3, 6, 100].map((n) => l.secondsUntilAvailable('a', n));
    l.refund('a');
    const afterRefund = [l.secondsUntilAvailable('a', 1), l.take('a').ok, l.take('a').ok];
    // Refunds never lift a bucket above full, and an unknown key stays unknown (full).
    now = 600_000;
    l.refund('a', 5);
    l.refund('b', 5);
    const full = [...Array.from({ length: 7 }, () => l.take('a').ok), keysOf(l).includes('b')];
    expect({ taken, waits, afterRefund, full }).toEqual({
      taken: [true, true, true, true, true, true, false],
      // 6 a minute: a token every 10 s; more than a bucket holds waits for a full bucket.
      waits: [10, 30, 60, 60],
      afterRefund: [0, true, false],
      full: [true, true, true, true, true, true, false, false],
    });
  });
});
