/**
 * The interrupted-migration scenario (`list-migration-scenario.ts`) on the real node: a hash list
 * migrated to time buckets while `GraphService` follows and unfollows and a reader walks pages,
 * the job killed mid-copy and right after the flip, then re-run to the end.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { type TestKeyspace, testKeyspace } from '../support/cassandra.js';
import { runInterruptedMigration } from './list-migration-scenario.js';

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
    expect(r.runs).toEqual([
      ['planned', 'copied 0', 'copied 1'],
      ['copied 2', 'copied 3', 'flipped'],
      ['flipped', 'finalized', 'dropped'],
    ]);
    expect(r.errors).toEqual(['killed at copied 1', 'killed at flipped']);
    expect([r.finalMode, r.progress, r.misplaced, r.hashRows]).toEqual(['time', null, 0, 0]);
    expect(r.rows).toEqual(r.edges);
    expect(r.edges.map((e) => e.otherId).sort((a, b) => (a < b ? -1 : 1))).toEqual(r.followers);
    expect(r.walks.filter((w) => w.missing.length + w.duplicates.length + w.outOfOrder > 0)).toEqual([]);
    expect(
      r.walks.some(
        (w) => w.modes.includes('dual') && (w.modes.includes('flipped') || w.modes.includes('time')),
      ),
    ).toBe(true);
  }, 90_000);
});
