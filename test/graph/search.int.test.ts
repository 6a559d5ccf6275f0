/**
 * The search property suite (`support/search-suite.ts`) on the real node, fewer runs, with the
 * rename suite's 2 s write-path bound (the shared node is loaded; a follow must fit its budget).
 */
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { testKeyspace } from '../support/cassandra.js';
import { describeSearchProperty } from './support/search-suite.js';

describeSearchProperty(
  'cassandra',
  async () => {
    const ks = await testKeyspace('list_search');
    return { store: new CassandraGraphStore(ks.client), teardown: () => ks.drop() };
  },
  {
    runs: 4,
    users: 5,
    ops: 20,
    policy: { writeBudgetMs: 500, viewBudgetMs: 500, batchTimeoutMs: 500, clockSkewMs: 250 },
    timeoutMs: 300_000,
  },
);
