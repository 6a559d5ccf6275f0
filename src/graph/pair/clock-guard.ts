/**
 * The clock-skew guard: writes are taken only while this instance's clock is known to be within
 * `boundMs` of the database's.
 *
 * Design note. Positions, the pair protocol's observation times and every write stamped with the
 * service's clock (user rows, the deactivation registry, dirty marks) compare clocks of different
 * processes. The pair protocol's settle window is derived from one number, the largest distance
 * between an instance's clock and the database's (`pair-history.ts`), so that number must hold.
 * A check reads the database's clock (ms) between two readings of ours; the offset is the
 * database's time minus the midpoint, uncertain by half the round trip. Between checks the offset
 * is carried forward on the monotonic clock: a step of the wall clock (an NTP correction, a paused
 * VM) changes `wall − monotonic` and counts at once, before the next check. A write is allowed
 * while `|offset| + uncertainty + step` stays within the bound and the last good check is younger
 * than `maxAgeMs`; otherwise it is refused (`ClockSkewError`, HTTP 503) and nothing is written.
 * A failed check (the database unreachable) keeps the last good one until it ages out.
 */

import { ClockSkewError } from '../../model/errors.js';
import type { Position } from '../../model/types.js';
import type { WriteClock } from '../contracts.js';

export interface ClockGuardOptions {
  /** Largest allowed distance between this instance's clock and the database's (ms). */
  boundMs: number;
  /** Reads the database's clock (ms since the epoch). */
  databaseClockMs: () => Promise<number>;
  /** This instance's wall clock (µs since the epoch): the clock positions come from. */
  clock: () => Position;
  /** A monotonic clock (ms). */
  monotonic: () => number;
  /** How often `start()` checks. */
  intervalMs?: number;
  /** How long a good check stays valid without a newer one (default 4 × the interval). */
  maxAgeMs?: number;
}

/** What the last check found. */
export interface ClockReading {
  /** Database clock minus ours, ms. */
  offsetMs: number;
  /** Half the round trip of the check, ms. */
  uncertaintyMs: number;
  /** `wall − monotonic` at the check (ms), to see steps of the wall clock later. */
  anchorMs: number;
  /** Monotonic time of the check. */
  atMs: number;
}

export type { WriteClock } from '../contracts.js';

export class ClockGuard implements WriteClock {
  private last: ClockReading | null = null;
  private timer: NodeJS.Timeout | null = null;
  private readonly intervalMs: number;
  private readonly maxAgeMs: number;

  constructor(private readonly o: ClockGuardOptions) {
    this.intervalMs = o.intervalMs ?? 10_000;
    this.maxAgeMs = o.maxAgeMs ?? 4 * this.intervalMs;
  }

  private wallMs(): number {
    return Number(this.o.clock() / 1000n);
  }

  /** Reads the database's clock once and keeps the reading; rethrows a failed read. */
  async check(): Promise<ClockReading> {
    const m0 = this.o.monotonic();
    const w0 = this.wallMs();
    const db = await this.o.databaseClockMs();
    const m1 = this.o.monotonic();
    const roundTrip = m1 - m0;
    const reading: ClockReading = {
      offsetMs: db - (w0 + roundTrip / 2),
      uncertaintyMs: roundTrip / 2 + 1, // + the database clock's ms resolution
      anchorMs: w0 - m0,
      atMs: m1,
    };
    this.last = reading;
    return reading;
  }

  /** Checks now and every `intervalMs` after (the timer does not keep the process alive). */
  async start(): Promise<void> {
    await this.check().catch(() => undefined);
    this.timer = setInterval(() => {
      this.check().catch(() => undefined);
    }, this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** The distance to the database's clock as of now (ms), or null when no valid check stands. */
  distanceMs(): number | null {
    const r = this.last;
    if (!r || this.o.monotonic() - r.atMs > this.maxAgeMs) return null;
    const step = this.wallMs() - this.o.monotonic() - r.anchorMs;
    return Math.abs(r.offsetMs - step) + r.uncertaintyMs;
  }

  assertWritable(): void {
    const d = this.distanceMs();
    const retry = Math.max(1, Math.ceil(this.intervalMs / 1000));
    if (d === null)
      throw new ClockSkewError(
        "this instance's clock has not been checked against the database's lately",
        retry,
      );
    if (d > this.o.boundMs)
      throw new ClockSkewError(
        `this instance's clock is ${Math.round(d)} ms from the database's (bound ${this.o.boundMs} ms)`,
        retry,
      );
  }
}

/** A guard that always allows writes (tests and tools that run with one clock). */
export const UNGUARDED: WriteClock = { assertWritable: () => undefined };
