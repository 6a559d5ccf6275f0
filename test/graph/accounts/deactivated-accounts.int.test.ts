/** The registry's cross-instance suite (`support/registry-suite.ts`) on the real node, a keyspace per case. */
import { CassandraGraphStore } from '../../../src/store/cassandra/graph-store.js';
import { testKeyspace } from '../../support/cassandra.js';
import { describeRegistryAcrossInstances } from '../support/registry-suite.js';

describeRegistryAcrossInstances('cassandra', async () => {
  const ks = await testKeyspace('registry');
  return { store: new CassandraGraphStore(ks.client), teardown: () => ks.drop() };
});
