/**
 * The interrupted-migration scenario (`list-migration-scenario.ts`) on the real node: a hash list
 * migrated to time buckets while `GraphService` follows and unfollows and a reader walks pages,
 * the job killed mid-copy and right after the flip, then re-run to the end.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { type TestKeyspace, testKeyspace } from '../support/cassandra.js';
import { expectInterruptedTwice, runInterruptedMigration } from './list-migration-scenario.js';

describe('a migration interrupted twice under writes and walks (Cassandra)', () => {
  let ks: TestKeyspace;
  beforeAll(async () => {
    ks = await testKeyspace('list_migration');
  });
  afterAll(async () => {
    await ks?.drop();
  });

  it('keeps every edge, and every walk returns each member present throughout once, in order', async () => {
    const seed = Number(process.env.SEED ?? Date.now() % 2 ** 31);
    console.log(`interrupted migration (Cassandra) seed=${seed}`);
    const r = await runInterruptedMigration(new CassandraGraphStore(ks.client), {
      seed,
      celeb: 700_000n,
      fans: 80,
      initial: 70,
      bucketRows: 8,
      opsPerStep: 3,
      pageLimit: 7,
    });
    console.log(`writer ops ${r.writerOps}, walks ${r.walks.length}, rows ${r.rows.length}`);
    expectInterruptedTwice(r);
  }, 90_000);
});
