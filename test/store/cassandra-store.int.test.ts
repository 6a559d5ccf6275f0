import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { testKeyspace } from '../support/cassandra.js';
import { describeStoreContract } from './contract.js';

describeStoreContract('cassandra', async () => {
  const ks = await testKeyspace('store_contract');
  return { store: new CassandraGraphStore(ks.client), teardown: () => ks.drop() };
});
