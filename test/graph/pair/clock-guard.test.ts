/**
 * The clock-skew guard: writes pass only while this instance's clock is known to be within the
 * bound of the database's — measured with the round trip's uncertainty, carried forward on the
 * monotonic clock (so a wall-clock step counts before the next check), and only while the last
 * good check is recent.
 */
import { describe, expect, it } from 'vitest';
import { ClockGuard } from '../../../src/graph/pair/clock-guard.js';
import { ClockSkewError } from '../../../src/model/errors.js';

/** A database clock, our wall clock (µs) and a monotonic clock (ms), each settable. */
function clocks(o: { dbMs: number; wallMs: number; roundTripMs?: number }) {
  const c = { db: o.dbMs, wall: o.wallMs, mono: 1000, roundTrip: o.roundTripMs ?? 2 };
  const guard = new ClockGuard({
    boundMs: 2000,
    intervalMs: 10_000,
    databaseClockMs: async () => {
      // The answer is taken half-way through the round trip.
      c.mono += c.roundTrip / 2;
      c.wall += c.roundTrip / 2;
      const at = c.db + c.roundTrip / 2;
      c.mono += c.roundTrip / 2;
      c.wall += c.roundTrip / 2;
      c.db += c.roundTrip;
      return at;
    },
    clock: () => BigInt(Math.round(c.wall * 1000)),
    monotonic: () => c.mono,
  });
  /** Lets `ms` pass on every clock. */
  const pass = (ms: number) => {
    c.db += ms;
    c.wall += ms;
    c.mono += ms;
  };
  return { c, guard, pass };
}

const refusal = (g: ClockGuard): [string, number] | null => {
  try {
    g.assertWritable();
    return null;
  } catch (e) {
    if (!(e instanceof ClockSkewError)) throw e;
    return [e.message, e.retryAfterSeconds];
  }
};

describe('clock guard', () => {
  it('refuses writes until the first check, then allows them within the bound', async () => {
    const { guard } = clocks({ dbMs: 1_000_000, wallMs: 1_000_000 + 1500 });
    expect(refusal(guard)).toEqual([
      "writes and feed reads are refused: this instance's clock has not been checked against the database's lately",
      10,
    ]);
    expect(await guard.check()).toEqual({
      offsetMs: -1500,
      uncertaintyMs: 2,
      anchorMs: 1_000_000 + 1500 - 1000,
      atMs: 1002,
    });
    expect(guard.distanceMs()).toBe(1502);
    expect(refusal(guard)).toBeNull();
  });

  it('refuses writes from a clock 3 s ahead or 3 s behind the database, naming the distance', async () => {
    for (const [wall, distance] of [
      [1_003_000, 3002],
      [997_000, 3002],
    ] as const) {
      const { guard } = clocks({ dbMs: 1_000_000, wallMs: wall });
      await guard.check();
      expect(refusal(guard)).toEqual([
        `writes and feed reads are refused: this instance's clock is ${distance} ms from the database's (bound 2000 ms)`,
        10,
      ]);
    }
  });

  it('counts half the round trip against the bound: 1,900 ms off with a 400 ms round trip is refused', async () => {
    const { guard } = clocks({ dbMs: 1_000_000, wallMs: 1_001_900, roundTripMs: 400 });
    await guard.check();
    expect(guard.distanceMs()).toBe(2101);
    expect(refusal(guard)?.[0]).toMatch(/clock is 2101 ms/);
  });

  it('a step of the wall clock after a good check counts at once, before the next check', async () => {
    const { c, guard, pass } = clocks({ dbMs: 1_000_000, wallMs: 1_000_500 });
    await guard.check();
    expect(refusal(guard)).toBeNull();
    pass(3000);
    expect(guard.distanceMs()).toBe(502);
    c.wall += 2500; // an NTP step forward
    expect(guard.distanceMs()).toBe(3002);
    expect(refusal(guard)?.[0]).toMatch(/clock is 3002 ms/);
    c.wall -= 2500; // and back
    expect(refusal(guard)).toBeNull();
  });

  it('a check older than four intervals no longer counts (the database unreachable since)', async () => {
    const { guard, pass } = clocks({ dbMs: 1_000_000, wallMs: 1_000_000 });
    await guard.check();
    pass(40_000);
    expect(refusal(guard)).toBeNull();
    pass(1);
    expect(refusal(guard)?.[0]).toMatch(/has not been checked/);
  });
});
