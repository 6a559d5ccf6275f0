import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/http/errors.js';
import { TimeInput } from '../../src/http/schemas.js';
import { formatTime, MAX_TIME_US, MIN_TIME_US, parseTime, parseTimeOrNull } from '../../src/http/times.js';

describe('µs times on the wire', () => {
  it('renders six fraction digits from the µs position', () => {
    expect(
      [1_796_000_000_123_456n, 1_796_000_000_123_457n, 1_796_000_000_000_000n, 1n, 0n, -1n].map(formatTime),
    ).toEqual([
      '2026-11-30T00:53:20.123456Z',
      '2026-11-30T00:53:20.123457Z',
      '2026-11-30T00:53:20.000000Z',
      '1970-01-01T00:00:00.000001Z',
      '1970-01-01T00:00:00.000000Z',
      '1969-12-31T23:59:59.999999Z',
    ]);
  });
  it('rendering is total: positions outside the Date range are clamped, never thrown', () => {
    expect([2n ** 63n - 1n, MAX_TIME_US + 1n, -(2n ** 63n), MIN_TIME_US].map(formatTime)).toEqual([
      '9999-12-31T23:59:59.999999Z',
      '9999-12-31T23:59:59.999999Z',
      '0000-01-01T00:00:00.000000Z',
      '0000-01-01T00:00:00.000000Z',
    ]);
  });
  it('parses any precision up to microseconds, Z or an offset', () => {
    expect(
      [
        '2026-11-30T00:53:20.123456Z',
        '2026-11-30T00:53:20.1Z',
        '2026-11-30T00:53:20Z',
        '2026-11-30t01:53:20.123456+01:00',
        '2026-11-29T23:53:20.000001-01:00',
        '0000-01-01T00:00:00Z',
        '2024-02-29T00:00:00Z',
      ].map(parseTimeOrNull),
    ).toEqual([
      1_796_000_000_123_456n,
      1_796_000_000_100_000n,
      1_796_000_000_000_000n,
      1_796_000_000_123_456n,
      1_796_000_000_000_001n,
      MIN_TIME_US,
      1_709_164_800_000_000n,
    ]);
  });
  it.each([
    '2026-11-30T00:53:20.1234567Z',
    '2026-11-30T00:53:20.Z',
    '2026-11-30T00:53:20',
    '2026-11-30 00:53:20Z',
    '2026-02-30T00:00:00Z',
    '2025-02-29T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-11-30T24:00:00Z',
    '2026-11-30T23:60:00Z',
    '2026-11-30T23:59:60Z',
    '2026-11-30T00:00:00+24:00',
    '+2026-11-30T00:00:00Z',
    '1796000000123456',
    '',
  ])('rejects %j with a 400 naming the field', (raw) => {
    expect(parseTimeOrNull(raw)).toBeNull();
    let thrown: unknown;
    try {
      parseTime(raw, 'query.since');
    } catch (e) {
      thrown = e;
    }
    expect(
      thrown instanceof ApiError && [thrown.status, thrown.code, thrown.extra.errors?.[0]?.path],
    ).toEqual([400, 'validation_failed', 'query.since']);
    expect(TimeInput.safeParse(raw).success).toBe(false);
  });
  it('format then parse is the identity on every writable µs time', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: MIN_TIME_US, max: MAX_TIME_US }), (us) => {
        expect(parseTimeOrNull(formatTime(us))).toBe(us);
      }),
    );
  });
});
