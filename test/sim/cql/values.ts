/**
 * CQL values as the driver hands them over (`useBigIntAsLong`): bigint and counter as `bigint`,
 * int and double as `number`, text as `string`, timestamp as `Date`, boolean; lists and sets as
 * arrays, maps as plain objects. Binding coerces what the store passes the way the driver does for
 * a prepared statement, and refuses what the driver would refuse.
 */
import type { CqlType, NativeType } from './syntax.js';

export class CqlBindError extends TypeError {
  override name = 'CqlBindError';
}

const INT_MIN = -(2 ** 31);
const INT_MAX = 2 ** 31 - 1;
const LONG_MIN = -(2n ** 63n);
const LONG_MAX = 2n ** 63n - 1n;

/** A bound native value, or throws as the driver's encoder would. */
export function coerceNative(type: NativeType, v: unknown, what: string): unknown {
  switch (type) {
    case 'bigint':
    case 'counter': {
      const b = typeof v === 'bigint' ? v : typeof v === 'number' && Number.isInteger(v) ? BigInt(v) : null;
      if (b === null || b < LONG_MIN || b > LONG_MAX)
        throw new CqlBindError(`${what}: not a ${type}: ${String(v)}`);
      return b;
    }
    case 'int':
      if (typeof v !== 'number' || !Number.isInteger(v) || v < INT_MIN || v > INT_MAX)
        throw new CqlBindError(`${what}: not an int: ${String(v)}`);
      return v;
    case 'double':
      if (typeof v !== 'number') throw new CqlBindError(`${what}: not a double: ${String(v)}`);
      return v;
    case 'text':
      if (typeof v !== 'string') throw new CqlBindError(`${what}: not text: ${String(v)}`);
      return v;
    case 'boolean':
      if (typeof v !== 'boolean') throw new CqlBindError(`${what}: not a boolean: ${String(v)}`);
      return v;
    case 'timestamp':
      if (v instanceof Date) return new Date(v.getTime());
      if (typeof v === 'number' && Number.isInteger(v)) return new Date(v);
      if (typeof v === 'bigint') return new Date(Number(v));
      throw new CqlBindError(`${what}: not a timestamp: ${String(v)}`);
  }
}

/** Natural order of two non-null values of a native type (the clustering comparator, ascending). */
export function compareNative(type: NativeType, a: unknown, b: unknown): number {
  switch (type) {
    case 'bigint':
    case 'counter':
      return (a as bigint) < (b as bigint) ? -1 : (a as bigint) > (b as bigint) ? 1 : 0;
    case 'int':
    case 'double':
      return (a as number) - (b as number);
    case 'timestamp':
      return (a as Date).getTime() - (b as Date).getTime();
    case 'boolean':
      return Number(a) - Number(b);
    case 'text':
      return compareUtf8(a as string, b as string);
  }
}

/** UTF-8 byte order (Cassandra's text order) = code point order; UTF-16 order differs only at surrogates. */
function compareUtf8(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const sx = x >= 0xd800 && x <= 0xdfff;
    const sy = y >= 0xd800 && y <= 0xdfff;
    if (sx === sy) return x - y;
    return sx ? 1 : -1;
  }
  return a.length - b.length;
}

/**
 * Cassandra's tie rule between two live cells of equal write time: the larger value wins, values
 * compared as their serialized bytes, unsigned (so a negative bigint beats a positive one).
 */
export function compareSerialized(type: CqlType, a: unknown, b: unknown): number {
  if (type.kind !== 'native') {
    const x = JSON.stringify(a, (_, v) => (typeof v === 'bigint' ? v.toString() : v));
    const y = JSON.stringify(b, (_, v) => (typeof v === 'bigint' ? v.toString() : v));
    return x === y ? 0 : Buffer.compare(Buffer.from(x), Buffer.from(y));
  }
  switch (type.name) {
    case 'bigint':
    case 'counter': {
      const x = BigInt.asUintN(64, a as bigint);
      const y = BigInt.asUintN(64, b as bigint);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 'timestamp': {
      const x = BigInt.asUintN(64, BigInt((a as Date).getTime()));
      const y = BigInt.asUintN(64, BigInt((b as Date).getTime()));
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 'int': {
      const x = (a as number) >>> 0;
      const y = (b as number) >>> 0;
      return x - y;
    }
    case 'double': {
      const bx = Buffer.alloc(8);
      const by = Buffer.alloc(8);
      bx.writeDoubleBE(a as number);
      by.writeDoubleBE(b as number);
      return Buffer.compare(bx, by);
    }
    case 'boolean':
      return Number(a) - Number(b);
    case 'text':
      return compareNative('text', a, b);
  }
}

/** A stable string for a key value (partition and clustering keys, collection element keys). */
export function keyPart(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v instanceof Date) return `t${v.getTime()}`;
  return String(v);
}

/**
 * A stand-in for the partitioner's token: a signed 64-bit FNV-1a hash of the partition key. Only
 * the order matters to the scans that use it (as in the memory store); it is not Murmur3.
 */
export function tokenOf(key: string): bigint {
  let h = 0xcbf29ce484222325n;
  for (let i = 0; i < key.length; i++) {
    h ^= BigInt(key.charCodeAt(i));
    h = BigInt.asUintN(64, h * 0x100000001b3n);
  }
  const signed = BigInt.asIntN(64, h);
  return signed === -(2n ** 63n) ? signed + 1n : signed;
}
