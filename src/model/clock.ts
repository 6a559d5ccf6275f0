/**
 * The clock and the wall-clock write versions. Positions are µs since the epoch; a cell's write
 * version is `position × LENGTH_SLOTS + slot` (see `pairVersion` in `graph/pair-fold.ts`).
 * `nowPosition` is the system clock: the domain reads it only where it is injected.
 */

import type { Position } from './types.js';

export const LENGTH_SLOTS = 1024n;

/**
 * µs since the epoch, at µs resolution (so live ops on one pair within one millisecond rarely
 * share a position). The one clock for positions and wall-clock versions.
 */
export function nowPosition(): Position {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000));
}

/**
 * A write version for writers of the edge and list tables outside the pair fold (e.g. dropping a
 * bucket after a growth): above the version of every pair history whose newest position is at
 * most `now` (µs).
 */
export function wallClockVersion(nowMicros: Position): bigint {
  return nowMicros * LENGTH_SLOTS + (LENGTH_SLOTS - 1n);
}
