/**
 * The list benchmarks' own keyspace (`bench_lists`) and data: one 200,000-follower list in its
 * first time bucket (partition code 1). Loaded once; later runs reuse it. Another `--rows` (the
 * smoke run's tiny list) gets its own keyspace, `bench_lists_<rows>`.
 */

import type { ListKey } from '../../src/model/types.js';
import type { CqlClient } from '../../src/store/cassandra/client.js';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { followersOf, loadRows, syntheticRows } from '../../test/support/list-fixtures.js';
import type { Bench } from './harness.js';

export const BENCH_ROWS = 200_000;
export const benchList: ListKey = followersOf(424_242n);
const marker: ListKey = followersOf(424_243n);

export interface BenchLists {
  client: CqlClient;
  store: CassandraGraphStore;
  close(): Promise<void>;
}

/** The list of `rows` rows, loaded on first use (marked when complete). */
export async function openBenchLists(bench: Bench<unknown>, rows: number = BENCH_ROWS): Promise<BenchLists> {
  const client = await bench.keyspace(rows === BENCH_ROWS ? 'bench_lists' : `bench_lists_${rows}`);
  const store = new CassandraGraphStore(client);
  const loaded = await store.getLayout(marker);
  if (loaded.buckets !== rows) {
    const started = performance.now();
    await loadRows(store, benchList, syntheticRows(rows, { firstId: 100_000_000n }), [1]);
    await store.putLayout(marker, { buckets: rows, growingTo: null, copiedThrough: 0 });
    console.log(`loaded ${rows} rows in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  return { client, store, close: () => bench.close() };
}
