/**
 * A churn-heavy list: a burst of 5,000 unfollows at the head of a 6,000-row list (a spam purge).
 * The first page is still exact, and Cassandra's own tracing shows what each bucket's first-page
 * read cost, in one bucket and spread over 16: exactly the bucket's purged rows as tombstones
 * stepped over (all of them are newer than every survivor) and `min(50, survivors)` live rows —
 * the cost the design note in cql/003_lists.cql accepts until compaction purges them after
 * gc_grace_seconds. The counts are asserted per bucket, so a read that skipped the tombstones
 * (or a trace that never arrived) fails here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bucketCode, bucketCodeOf } from '../../src/model/buckets.js';
import type { ListEntry, ListKey } from '../../src/model/types.js';
import type { ListRowWrite } from '../../src/ports/records.js';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { type TestKeyspace, testKeyspace } from '../support/cassandra.js';

const ROWS = 6000;
const PURGED = 5000;

/** What the traced first-page read of one bucket reports: live rows read, tombstones stepped over. */
interface ReadCost {
  live: number;
  tombstones: number;
}

async function firstPageCost(ks: TestKeyspace, list: ListKey, code: number): Promise<ReadCost | null> {
  const rs = await ks.client.execute(
    'SELECT created_at, other_id FROM followers WHERE user_id = ? AND bucket = ? LIMIT 50',
    [list.userId, code],
    { prepare: true, traceQuery: true },
  );
  const traceId = rs.info.traceId;
  if (!traceId) return null;
  for (let attempt = 0; attempt < 20; attempt++) {
    const trace = await ks.client.metadata.getTrace(traceId);
    const reads = trace.events
      .map((e) => /Read (\d+) live rows and (\d+) tombstone cells/.exec(e.activity))
      .filter((m): m is RegExpExecArray => m !== null);
    if (reads.length > 0) {
      const zero: ReadCost = { live: 0, tombstones: 0 };
      return reads.reduce(
        (s, m) => ({ live: s.live + Number(m[1]), tombstones: s.tombstones + Number(m[2]) }),
        zero,
      );
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return null;
}

describe('tombstones at the head of a list', () => {
  let ks: TestKeyspace;
  let store: CassandraGraphStore;
  beforeAll(async () => {
    ks = await testKeyspace('tombstones');
    store = new CassandraGraphStore(ks.client);
  });
  afterAll(async () => {
    await ks.drop();
  });

  for (const buckets of [1, 16]) {
    it(`a purge of ${PURGED} newest rows leaves exact pages (N = ${buckets})`, async () => {
      const list: ListKey = { userId: BigInt(7000 + buckets), relation: 'follows', direction: 'in' };
      const entries: ListEntry[] = Array.from({ length: ROWS }, (_, i) => ({
        createdAt: 1_000_000n + BigInt(i) * 1000n,
        otherId: BigInt(100_000 + i),
      }));
      const rows = (op: 'put' | 'delete', es: ListEntry[]): ListRowWrite[] =>
        es.map((entry) => ({
          list,
          op,
          entry,
          bucketCodes: [bucketCodeOf(buckets, entry.otherId)],
        }));
      const newestFirst = [...entries].reverse();
      for (let i = 0; i < ROWS; i += 200)
        await store.writeEdges([], rows('put', entries.slice(i, i + 200)), 10n);
      const purged = newestFirst.slice(0, PURGED);
      for (let i = 0; i < PURGED; i += 200)
        await store.writeEdges([], rows('delete', purged.slice(i, i + 200)), 20n);

      const survivors = newestFirst.slice(PURGED);
      const firstPages = await Promise.all(
        Array.from({ length: buckets }, (_, b) => store.listBucket(list, bucketCode(buckets, b), null, 50)),
      );
      const merged = firstPages
        .flat()
        .sort((a, b) => (a.createdAt === b.createdAt ? 0 : a.createdAt > b.createdAt ? -1 : 1))
        .slice(0, 50);
      expect(merged).toEqual(survivors.slice(0, 50));

      const costs = await Promise.all(
        Array.from({ length: buckets }, (_, b) => firstPageCost(ks, list, bucketCode(buckets, b))),
      );
      const inBucket = (es: ListEntry[], b: number) =>
        es.filter((e) => bucketCodeOf(buckets, e.otherId) === bucketCode(buckets, b)).length;
      const expected = Array.from({ length: buckets }, (_, b) => ({
        live: Math.min(50, inBucket(survivors, b)),
        tombstones: inBucket(purged, b),
      }));
      const stepped = costs.map((c) => c?.tombstones);
      console.log(
        `[tombstones] N=${buckets}: first-page reads stepped over ${stepped.join('+')} tombstones ` +
          `(warn threshold 1000, failure 100000)`,
      );
      expect(costs).toEqual(expected);
      expect(expected.reduce((s, c) => s + c.tombstones, 0)).toBe(PURGED);
    });
  }
});
