/**
 * The list benchmarks' own keyspace (`bench_lists`) and data: one 200,000-follower list whose
 * rows are written under layouts 1, 8, 16 and 64 at once (codes of different layouts never share
 * a partition), so every layout is measured on the same rows. Loaded once; later runs reuse it.
 */

import type { ListKey } from '../../src/model/types.js';
import type { CqlClient } from '../../src/store/cassandra/client.js';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { openMigratedKeyspace } from '../../src/store/cassandra/keyspace.js';
import { followersOf, loadRows, syntheticRows } from '../../test/support/list-fixtures.js';

export const BENCH_LAYOUTS = [1, 8, 16, 64] as const;
export const BENCH_ROWS = 200_000;
export const benchList: ListKey = followersOf(424_242n);
const marker: ListKey = followersOf(424_243n);

export interface BenchLists {
  client: CqlClient;
  store: CassandraGraphStore;
  close(): Promise<void>;
}

export async function openBenchLists(): Promise<BenchLists> {
  const contactPoints = (process.env.CASSANDRA_CONTACT_POINTS ?? '127.0.0.1:9042').split(',');
  const localDataCenter = process.env.CASSANDRA_LOCAL_DC ?? 'datacenter1';
  const client = await openMigratedKeyspace({
    contactPoints,
    localDataCenter,
    keyspace: 'bench_lists',
    replication: { class: 'SimpleStrategy', replication_factor: 1 },
    consistency: 'localQuorum',
    requestTimeoutMs: 30_000,
  });
  const store = new CassandraGraphStore(client);
  const loaded = await store.getLayout(marker);
  if (loaded.buckets !== BENCH_ROWS) {
    const started = performance.now();
    const rows = syntheticRows(BENCH_ROWS, { firstId: 100_000_000n });
    await loadRows(store, benchList, rows, BENCH_LAYOUTS);
    await store.putLayout(marker, { buckets: BENCH_ROWS, growingTo: null, copiedThrough: 0 });
    console.log(
      `loaded ${BENCH_ROWS} rows × ${BENCH_LAYOUTS.length} layouts in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  }
  return { client, store, close: () => client.shutdown() };
}
