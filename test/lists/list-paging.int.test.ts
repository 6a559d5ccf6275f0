import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { testKeyspace } from '../support/cassandra.js';
import { describeListPaging } from './list-paging.js';

describeListPaging(
  'cassandra',
  async () => {
    const ks = await testKeyspace('list_paging');
    return { store: new CassandraGraphStore(ks.client), teardown: () => ks.drop() };
  },
  { runs: Number(process.env.LIST_PAGING_RUNS ?? 40), maxRows: 120, statsRows: 4000 },
);
