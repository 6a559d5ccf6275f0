/**
 * The rename fan-out suite (`support/rename-suite.ts`) on the real node, a keyspace per case, with
 * a 2 s write-path bound (the shared node is loaded; a follow must fit its budget).
 */
import { CassandraGraphStore } from '../../../src/store/cassandra/graph-store.js';
import { testKeyspace } from '../../support/cassandra.js';
import { describeRenameFanout } from '../support/rename-suite.js';

describeRenameFanout(
  'cassandra',
  async () => {
    const ks = await testKeyspace('rename_fanout');
    return { store: new CassandraGraphStore(ks.client), teardown: () => ks.drop() };
  },
  { writeBudgetMs: 500, viewBudgetMs: 500, batchTimeoutMs: 500, clockSkewMs: 250 },
);
