/**
 * Feed rows and the events they hold: the events of a stored row with their sealed ids
 * (`rowEvents`), and the row an account update writes (`userUpdatedRow`). Shared by the feed's
 * reads (`feed.ts`), the account writes (`accounts/accounts.ts`) and the recovery
 * (`feed-intents.ts`).
 */

import { type EventRow, edgeEventType, eventShard, type GraphEvent } from '../model/events.js';
import type { Position, UserField, UserId } from '../model/types.js';
import type { FeedCursorSeal } from './feed-cursor.js';

/** The events of a row, in order, with their sealed ids. */
export function rowEvents(row: EventRow, seal: FeedCursorSeal): GraphEvent[] {
  const k = row.key;
  if (row.user)
    return [
      {
        id: seal.seal(k, 0),
        type: 'user.updated',
        source: k.low,
        target: k.low,
        position: k.opPosition,
        slot: k.slot,
        ...(row.fields ? { fields: row.fields } : {}),
      },
    ];
  return row.transitions.map((t, i) => ({
    id: seal.seal(k, i),
    type: edgeEventType(t.relation, t.on),
    source: t.sourceId,
    target: t.targetId,
    position: k.opPosition,
    slot: k.slot,
  }));
}

/**
 * The feed row of an admin change of `account` naming `fields`, at `slot` (the cells' version).
 * `nonce` tells apart the rows of two updates at one version (two PUTs that read the same cells
 * at once, on clocks behind them, both take the version above): stored in the key's `opSource`,
 * it keeps each update's row and its fields. Rows written before it carry the account there.
 */
export function userUpdatedRow(
  account: UserId,
  slot: Position,
  fields: readonly UserField[],
  nonce: bigint,
): EventRow {
  return {
    key: {
      slot,
      shard: eventShard(account, account),
      low: account,
      high: account,
      opPosition: slot,
      opSource: nonce,
      opKind: 'user',
    },
    transitions: [],
    user: true,
    ...(fields ? { fields } : {}),
  };
}
