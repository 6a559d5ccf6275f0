/** The search-cut suite (`search-cut-suite.ts`) on the in-memory store. */
import { describe } from 'vitest';
import { MemoryGraphStore } from '../../../src/store/memory/memory-store.js';
import { describeSearchCuts } from './search-split-suite.js';

describe('search partitions cut into name ranges: memory', () => {
  describeSearchCuts('memory', async () => ({ store: new MemoryGraphStore(), teardown: async () => {} }), {
    runs: 6,
    members: 30,
    rangeRows: 3,
    policy: { writeBudgetMs: 60, viewBudgetMs: 60, batchTimeoutMs: 60, clockSkewMs: 20 },
    timeoutMs: 240_000,
  });
});
