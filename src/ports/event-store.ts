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
