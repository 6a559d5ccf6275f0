/**
 * The search-split suite (`search-split-suite.ts`) on the real node: one run in CI (the memory
 * store's six cover the protocol's steps; this one the store's statements), four with `SOAK=1`.
 */
import { afterAll, beforeAll, describe } from 'vitest';
import { CassandraGraphStore } from '../../../src/store/cassandra/graph-store.js';
import { type TestKeyspace, testKeyspace } from '../../support/cassandra.js';
import { knob } from '../../support/soak.js';
import { describeSearchSplits } from './search-split-suite.js';

describe('search partitions split into name ranges: Cassandra', () => {
  let ks: TestKeyspace;
  beforeAll(async () => {
    ks = await testKeyspace('search_split');
  });
  afterAll(async () => {
    await ks?.drop();
  });
  describeSearchSplits(
    'cassandra',
    async () => ({ store: new CassandraGraphStore(ks.client), teardown: async () => {} }),
    {
      runs: knob('SEARCH_SPLIT_INT_RUNS', 4, 1),
      members: 20,
      rangeRows: 3,
      // The search suite's budgets on the shared node (a follow must fit them under CI's load).
      policy: { writeBudgetMs: 500, viewBudgetMs: 500, batchTimeoutMs: 500, clockSkewMs: 250 },
      timeoutMs: 300_000,
    },
  );
});
