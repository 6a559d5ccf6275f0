/**
 * The username cell of a list row as stored: a plain name, or a rename's name tagged with the
 * rename's generation.
 *
 * Design note. A put writes its row's name one below the row's write time; a rename's fan-out
 * writes the name at the row's own write time (`ListStore.setListUsernames`), so a delete at or
 * above it still wins and the rename replaces the put's name. Two renames of one account then
 * write the same row at the same write time, and Cassandra resolves two live cells at one write
 * time to the larger value: a plain second name would lose to a first one that sorts after it
 * ("john" → "zed" → "amy" leaves "zed"). So a rename's cell is `~`, its generation as 16 hex
 * digits, `~`, the name: `~` sorts after every username character (`[A-Za-z0-9._]`), so at one
 * write time a rename's cell beats a plain name and the newer generation beats the older,
 * whatever the names. Readers see the name only (`plainUsername`); a copy keeps the cell whole.
 * Rejected: a second column for the generation (a schema change, and two cells that can resolve
 * independently); a write time above the row's (a delete can follow its put by one version).
 */
import type { Position } from './types.js';

const TAG = '~';
const GENERATION_DIGITS = 16;

/** The cell a rename of generation `generation` (µs, non-negative) writes for `username`. */
export function renamedUsername(username: string, generation: Position): string {
  if (generation < 0n || generation >= 1n << 64n) throw new RangeError('generation must fit 64 bits');
  return `${TAG}${generation.toString(16).padStart(GENERATION_DIGITS, '0')}${TAG}${username}`;
}

/** The name a cell holds (a plain name, or a rename's cell without its tag). */
export function plainUsername(cell: string): string {
  return cell.startsWith(TAG) ? cell.slice(GENERATION_DIGITS + 2) : cell;
}
