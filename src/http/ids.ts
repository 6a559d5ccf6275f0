/**
 * Ids at the edge. A user id on the wire is a decimal string of a positive signed 64-bit integer
 * without leading zeros; inside, a `bigint`. Times are in `times.ts`.
 */

const MAX_I64 = 9223372036854775807n;
const ID_PATTERN = /^[1-9][0-9]{0,18}$/;

/** The id, or null when `raw` is not `"1"` … `"9223372036854775807"` exactly. */
export function parseUserId(raw: string): bigint | null {
  if (!ID_PATTERN.test(raw)) return null;
  const id = BigInt(raw);
  return id <= MAX_I64 ? id : null;
}

/** A position (µs): the same shape as a user id, positive signed 64-bit; null otherwise. */
export function parsePosition(raw: string): bigint | null {
  return parseUserId(raw);
}
