/**
 * The storage ports: narrow role interfaces, one per job, that the domain (`src/graph`) and the list
 * engine (`src/lists`) take — each consumer the narrowest it needs. The domain decides *what* to
 * write; a store only reads and writes. Two implementations are held to one contract suite (`test/store/contract.ts`): the
 * Cassandra store and an in-memory store for fast domain tests.
 *
 * Write discipline: every edge and list-row write carries the caller's `version` as its cell
 * write time (`USING TIMESTAMP version` in Cassandra), so the store's own last-writer-wins
 * resolves races and replays; a write with a lower version never shadows a higher one. At equal
 * versions a delete wins over a put (Cassandra's tie rule; the memory store copies it).
 */

import type { AccountTaskStore } from './account-task-store.js';
import type { CountStore } from './count-store.js';
import type { EdgeStore } from './edge-store.js';
import type { EventStore, FeedIntentStore } from './event-store.js';
import type { ListStore } from './list-store.js';
import type { PairHistoryStore } from './pair-history-store.js';
import type { ReceiptStore } from './receipt-store.js';
import type { RelayCursorStore } from './relay-cursor-store.js';
import type { ScanStore } from './scan-store.js';
import type { SearchStore } from './search-store.js';
import type { SuggestionStore } from './suggestion-store.js';
import type { UserStore } from './user-store.js';

/**
 * Everything the service needs from storage: the role interfaces it extends plus the database clock.
 * Components take the narrowest role they use. (Readiness is not asked of the store: `/readyz`
 * asks whether every migration is applied: `schemaPresent`, wired in `src/main.ts`.)
 */
export interface GraphStore
  extends UserStore,
    RelayCursorStore,
    PairHistoryStore,
    EdgeStore,
    ListStore,
    SearchStore,
    CountStore,
    ReceiptStore,
    AccountTaskStore,
    ScanStore,
    SuggestionStore,
    EventStore,
    FeedIntentStore {
  /** The database's clock, ms since the epoch (what the clock guard compares this instance's with). */
  databaseClockMs(): Promise<number>;
  close(): Promise<void>;
}
