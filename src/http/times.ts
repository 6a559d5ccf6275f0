/**
 * Times on the wire: RFC 3339 UTC with microsecond precision, the precision of positions.
 *
 * Design note. A position is µs since the epoch (bigint); `formatTime` renders all six fraction
 * digits from it, so two rows that share a millisecond still show their order. Rendering is total:
 * an accepted position is at most the clock plus a small skew, but a value outside what RFC 3339
 * can write (years 0000–9999; `Date` itself stops at ±8.64e15 ms, below int64 µs) is clamped to
 * the nearest writable instant instead of throwing, so a bad row can never turn a page into a 500.
 * `parseTime` is the one reader of client times: RFC 3339 with 0–6 fraction digits and `Z` or a
 * numeric offset; anything else (7+ digits, no zone, Feb 30, hour 24, leap second 60) is a 400.
 * Rejected: `Date.parse` (accepts many non-RFC 3339 shapes, keeps milliseconds only).
 */
import { ApiError } from './errors.js';

/** `0000-01-01T00:00:00.000000Z` in µs. */
export const MIN_TIME_US = -62_167_219_200_000_000n;
/** `9999-12-31T23:59:59.999999Z` in µs. */
export const MAX_TIME_US = 253_402_300_799_999_999n;

/**
 * µs position → RFC 3339 UTC with six fraction digits. Total: never throws; out-of-range values
 * are clamped to `MIN_TIME_US` / `MAX_TIME_US`.
 *
 * @example formatTime(1_796_000_000_123_456n) // '2026-11-30T00:53:20.123456Z'
 */
export function formatTime(us: bigint): string {
  const t = us < MIN_TIME_US ? MIN_TIME_US : us > MAX_TIME_US ? MAX_TIME_US : us;
  let ms = t / 1000n;
  if (t < ms * 1000n) ms -= 1n;
  const subMs = t - ms * 1000n;
  const iso = new Date(Number(ms)).toISOString();
  return `${iso.slice(0, -1)}${subMs.toString().padStart(3, '0')}Z`;
}

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/**
 * RFC 3339 time (0–6 fraction digits, `Z` or `±hh:mm`) → µs since the epoch; null when `raw` is
 * anything else or names no real instant.
 *
 * @example parseTimeOrNull('2026-11-30T04:31:18.5+01:00') // 1796009478500000n
 */
export function parseTimeOrNull(raw: string): bigint | null {
  const m = RFC3339.exec(raw);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) return null;
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) {
    return null;
  }
  let offsetMinutes = 0;
  if (m[8] === undefined) {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) return null;
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const seconds = BigInt(date.getTime() / 1000 + hour * 3600 + minute * 60 + second - offsetMinutes * 60);
  return seconds * 1_000_000n + BigInt((m[7] ?? '').padEnd(6, '0'));
}

export const TIME_MESSAGE =
  'an RFC 3339 time with at most 6 fraction digits, e.g. 2026-11-30T04:31:18.123456Z';

/**
 * `parseTimeOrNull` for request input: throws a 400 `validation_failed` naming `path`
 * (e.g. `query.since`) when `raw` is not an RFC 3339 time with at most microseconds.
 */
export function parseTime(raw: string, path: string): bigint {
  const us = parseTimeOrNull(raw);
  if (us === null) {
    throw new ApiError('validation_failed', `invalid ${path}`, { errors: [{ path, message: TIME_MESSAGE }] });
  }
  return us;
}
