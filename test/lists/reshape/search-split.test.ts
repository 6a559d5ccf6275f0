/** The search-split suite (`search-split-suite.ts`) on the in-memory store. */
import { describe } from 'vitest';
import { MemoryGraphStore } from '../../support/memory/graph-store.js';
import { describeSearchSplits } from './search-split-suite.js';

describe('search partitions split into name ranges: memory', () => {
  describeSearchSplits('memory', async () => ({ store: new MemoryGraphStore(), teardown: async () => {} }), {
    runs: 6,
    members: 30,
    rangeRows: 3,
    policy: { writeBudgetMs: 60, viewBudgetMs: 60, batchTimeoutMs: 60, clockSkewMs: 20 },
    timeoutMs: 240_000,
  });
});
