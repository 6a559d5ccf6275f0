import { type EventKey, eventShard } from '../../src/model/events.js';

/** The feed key of a follow op of `low` → `high` at `slot` (its position the slot, as a live op's). */
export function followKey(low: bigint, high: bigint, slot: bigint): EventKey {
  return { slot, shard: eventShard(low, high), low, high, opPosition: slot, opSource: low, opKind: 'follow' };
}
