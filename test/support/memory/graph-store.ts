/**
 * `GraphStore` in memory, for fast domain tests. It copies Cassandra's resolution rules, which the
 * shared contract suite checks on both stores: a write applies only if its version is at least the
 * stored one; at equal versions a row delete beats a put, and between two puts each cell keeps
 * the larger value (Cassandra's tie-break); a partition drop shadows rows written at or below its
 * version. The inverse edge state is kept apart from the forward one, per bucket code, like the
 * Cassandra table: a probe with the wrong layout misses, as it would there. Counters are plain
 * numbers.
 *
 * The class is built in layers, one module per port (`pair-history-store.ts` … `suggestion-store.ts`)
 * over the tables of `state.ts`. The layers form one chain of subclasses in the order their calls
 * need (a layer calls only layers below it: the edge and list writes call `writeSearchRows`, the
 * user and edge writes write the feed), not because one port is a kind of another. Every method
 * runs on the whole store's `this`, as in one class, so a test's subclass or its override of one
 * method is seen by the methods that call it (`incrementCounts` calls `incrementCount`). Rejected:
 * per-port objects the store delegates to, like the Cassandra store's: a method's calls to its
 * siblings would bypass such overrides.
 */

import type { GraphStore } from '../../../src/ports/graph-store.js';
import { MemorySuggestionStore } from './suggestion-store.js';

export class MemoryGraphStore extends MemorySuggestionStore implements GraphStore {
  /** This process's real clock: tests skew the service's clock against it. */
  async databaseClockMs(): Promise<number> {
    return Date.now();
  }

  async close(): Promise<void> {}
}
