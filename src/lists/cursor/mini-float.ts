/**
 * A 16-bit unsigned float for non-negative 64-bit magnitudes: 6 bits of exponent, 10 of mantissa,
 * always rounded *down* (relative error under 0.1%). Cursors use it for per-bucket distances, where
 * rounding down only ever makes a ceiling more conservative.
 */

/** Reserved: never produced by `encodeMiniFloat` (magnitudes stay below 2^64). */
export const MINI_FLOAT_RESERVED = 0xffff;

const MANTISSA_BITS = 10n;

export function encodeMiniFloat(value: bigint): number {
  if (value < 0n) throw new RangeError('mini-float encodes non-negative values only');
  if (value < 1n << MANTISSA_BITS) return Number(value);
  const bits = BigInt(value.toString(2).length);
  const exponent = bits - MANTISSA_BITS;
  const mantissa = value >> (exponent - 1n);
  return Number((exponent << MANTISSA_BITS) | (mantissa & ((1n << MANTISSA_BITS) - 1n)));
}

export function decodeMiniFloat(code: number): bigint {
  const c = BigInt(code);
  const exponent = c >> MANTISSA_BITS;
  const mantissa = c & ((1n << MANTISSA_BITS) - 1n);
  if (exponent === 0n) return mantissa;
  return (mantissa | (1n << MANTISSA_BITS)) << (exponent - 1n);
}
