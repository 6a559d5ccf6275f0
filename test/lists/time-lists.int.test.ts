import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { testKeyspace } from '../support/cassandra.js';
import { describeTimeLists } from './time-lists.js';

describeTimeLists(
  'cassandra',
  async () => {
    const ks = await testKeyspace('time_lists');
    return { store: new CassandraGraphStore(ks.client), teardown: () => ks.drop() };
  },
  Number(process.env.TIME_LISTS_RUNS ?? 40),
);
