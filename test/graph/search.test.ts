/** The search property suite (`support/search-suite.ts`) on the in-memory store, with a 0.4 s write-path bound. */
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { describeSearchProperty } from './support/search-suite.js';

describeSearchProperty('memory', async () => ({ store: new MemoryGraphStore(), teardown: async () => {} }), {
  runs: 30,
  users: 6,
  ops: 30,
  policy: { writeBudgetMs: 100, viewBudgetMs: 100, batchTimeoutMs: 100, clockSkewMs: 50 },
  timeoutMs: 120_000,
});
