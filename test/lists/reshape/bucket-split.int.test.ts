/**
 * The interrupted-split scenario (`bucket-split-scenario.ts`) on the real node: a closed bucket
 * overfilled by old-time writes split while rows keep landing in its range and are deleted, a
 * reader walks pages and a 16-slice scan runs, the job killed mid-copy and right after the flip,
 * then re-run to the end (the range tombstone included).
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { CassandraGraphStore } from '../../../src/store/cassandra/graph-store.js';
import { type TestKeyspace, testKeyspace } from '../../support/cassandra.js';
import { expectSplitInterruptedTwice, runInterruptedSplit } from './bucket-split-scenario.js';

describe('a split interrupted twice under old-time writes, walks and a 16-slice scan (Cassandra)', () => {
  let ks: TestKeyspace;
  beforeAll(async () => {
    ks = await testKeyspace('bucket_split');
  });
  afterAll(async () => {
    await ks?.drop();
  });

  it('keeps every row in its range, and every walk and scan sees each member present throughout once', async () => {
    const seed = Number(process.env.SEED ?? Date.now() % 2 ** 31);
    console.log(`interrupted split (Cassandra) seed=${seed}`);
    const r = await runInterruptedSplit(new CassandraGraphStore(ks.client), {
      seed,
      celeb: 910_000n,
      initial: 40,
      bucketRows: 8,
      opsPerStep: 3,
      pageLimit: 5,
      slices: 16,
    });
    console.log(
      `writer ops ${r.writerOps}, walks ${r.walks.length}, scans ${r.scans.length}, rows ${r.rows.length}`,
    );
    expectSplitInterruptedTwice(r);
  }, 90_000);
});
