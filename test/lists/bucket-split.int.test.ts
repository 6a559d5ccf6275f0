/**
 * The interrupted-split scenario (`bucket-split-scenario.ts`) on the real node: a closed bucket
 * overfilled by old-time writes split while rows keep landing in its range and are deleted, a
 * reader walks pages and a 16-slice scan runs, the job killed mid-copy and right after the flip,
 * then re-run to the end (the range tombstone included).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { type TestKeyspace, testKeyspace } from '../support/cassandra.js';
import { runInterruptedSplit } from './bucket-split-scenario.js';

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
    const n = r.children.length;
    expect(n).toBeGreaterThanOrEqual(4);
    expect(r.runs).toEqual([
      ['planned', 'copied 0', 'copied 1'],
      [...Array.from({ length: n - 2 }, (_, i) => `copied ${i + 2}`), 'flipped'],
      ['flipped', 'finalized', 'deleted'],
    ]);
    expect(r.errors).toEqual(['killed at copied 1', 'killed at flipped']);
    expect([r.pendingSplit, r.outOfRange]).toEqual([null, 0]);
    expect(r.rows).toEqual(r.reference);
    const bad = (v: { missing: bigint[]; duplicates: bigint[]; outOfOrder: number }) =>
      v.missing.length + v.duplicates.length + v.outOfOrder > 0;
    expect(r.walks.filter(bad)).toEqual([]);
    expect(r.scans.filter(bad)).toEqual([]);
    const across = (v: { stages: string[] }) => v.stages.includes('dual') && v.stages.includes('flipped');
    expect([r.walks.some(across), r.scans.some(across)]).toEqual([true, true]);
  }, 90_000);
});
