/** The rename fan-out suite (`support/rename-suite.ts`) on the in-memory store, with a 0.4 s write-path bound. */
import { MemoryGraphStore } from '../../support/memory/graph-store.js';
import { describeRenameFanout } from '../support/rename-suite.js';

describeRenameFanout('memory', async () => ({ store: new MemoryGraphStore(), teardown: async () => {} }), {
  writeBudgetMs: 100,
  viewBudgetMs: 100,
  batchTimeoutMs: 100,
  clockSkewMs: 50,
});
