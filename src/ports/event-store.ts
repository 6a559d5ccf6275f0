import type { EventKey, EventRow } from '../model/events.js';
import type { Position } from '../model/types.js';

/**
 * The graph's change feed as stored: rows keyed by `EventKey`, written only with the change they
 * describe (`writeEdges`, `putUser`), each cell at its writer's version, so a row written from a
 * fuller view of a pair's history replaces one written from a partial view (an empty row: no
 * events). Rows expire after the retention the store was opened with.
 */
export interface EventStore {
  /**
   * The non-empty rows strictly after `after` (null: from the start of the retention) with
   * `slot <= until`, in feed order (`compareEventKeys`), at most `limit`.
   */
  readEventRows(after: EventKey | null, until: Position, limit: number): Promise<EventRow[]>;
}

/**
 * The feed's intents (`feed_intents`): one row per op between its slot and its resolution, keyed
 * like the op's feed row (`EventKey`). A writer puts its op's intent before the append and
 * deletes it (its own statement) once the view batch carrying its feed rows is acknowledged; the
 * recovery resolves the ones left behind (`intent-recovery.ts`). Readers stop below the oldest
 * one (`feed.ts`), so a change that lands late is still read by every reader.
 */
export interface FeedIntentStore {
  /** Writes an intent, acknowledged at a quorum within `timeoutMs` or failing. */
  putIntent(key: EventKey, timeoutMs?: number): Promise<void>;
  /** Deletes an intent (idempotent). */
  deleteIntent(key: EventKey): Promise<void>;
  /** The intents of one shard with `after < slot <= until`, oldest first, at most `limit`. */
  readIntents(shard: number, after: Position, until: Position, limit: number): Promise<EventKey[]>;
  /**
   * The bound below which no intent stands, as some process last saw it (null: none saved), and
   * its save: the larger value wins, whatever the order of saves (a fact about the feed, the same
   * for every process: each starts looking from it instead of from the retention).
   */
  readIntentBound(): Promise<Position | null>;
  saveIntentBound(through: Position): Promise<void>;
  /**
   * Records how the recovery resolves the intent at `key` unless a decision is recorded already,
   * atomically (a lightweight transaction: of two recoveries deciding at once, one wins), and
   * returns the decision that stands — this one, or the earlier. Never retried by the driver; a
   * timeout leaves it unknown, and deciding again returns what stood.
   */
  decideIntent(key: EventKey, decision: IntentDecision): Promise<IntentDecision>;
  /**
   * Claims `key.slot` as the feed slot of the op `key` names (its pair, position, source and kind)
   * unless a slot is claimed for it already, atomically (a lightweight transaction: of two
   * deliveries claiming at once, one wins), and returns the slot that stands — this one, or the
   * earlier. Called only for ops delivered at an explicit position, after their intent is
   * acknowledged. Never retried by the driver; a timeout leaves it unknown, and claiming again
   * returns what stood.
   */
  claimOpSlot(key: EventKey): Promise<Position>;
}

/** How the recovery resolved an intent: its op was in the pair's history, or it was fenced out. */
export type IntentDecision = 'present' | 'fenced';
