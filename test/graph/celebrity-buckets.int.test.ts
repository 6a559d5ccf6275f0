/**
 * Bounded partitions at celebrity size, in miniature: with bucket thresholds lowered to
 * [10, 20, 40], a celebrity followed by 50 accounts grows online to 8 buckets while it is being
 * followed. Its inverse edge rows and its followers list rows must then sit in exactly the
 * buckets murmur placement names (and nowhere else: the old layouts' partitions are dropped), and
 * a `contains` over k ids must issue exactly one single-partition read per distinct bucket among
 * them — at most min(N, k). Probes taken at every growth step must be correct.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { BucketedListService } from '../../src/lists/list-service.js';
import { bucketCode, bucketOf } from '../../src/model/buckets.js';
import type { ListKey } from '../../src/model/types.js';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { type TestKeyspace, testKeyspace } from '../support/cassandra.js';

const CELEB = 900_000n;
const FANS = Array.from({ length: 50 }, (_, i) => 900_001n + BigInt(i));
const STRANGERS = Array.from({ length: 10 }, (_, i) => 900_101n + BigInt(i));
const followersOf: ListKey = { userId: CELEB, relation: 'follows', direction: 'in' };

describe('a celebrity list at 8 buckets (thresholds 10, 20, 40)', () => {
  let ks: TestKeyspace;
  const statements: string[] = [];
  let store: CassandraGraphStore;
  let lists: BucketedListService;
  let graph: GraphService;
  const started = new Set<bigint>();
  const done = new Set<bigint>();
  const probes: { step: string; ok: boolean }[] = [];
  // The follow in flight, if any: the growth's settle waits for it, as the real settle (layout
  // cache TTL plus the longest write in flight) waits out every write that read the old layout.
  let inFlight: Promise<unknown> = Promise.resolve();

  beforeAll(async () => {
    ks = await testKeyspace('celebrity_buckets');
    store = new CassandraGraphStore(ks.client, { onQuery: (name) => statements.push(name) });
    lists = new BucketedListService({
      store,
      cursorSecret: 'celebrity-buckets-secret',
      bucketThresholds: [10, 20, 40],
      layoutCacheTtlMs: 0,
      writeGraceMs: 0,
      sleep: () => inFlight.then(() => undefined),
      onGrowthProgress: async (list, p) => {
        if (list.userId !== CELEB || list.direction !== 'in') return;
        // Every follow finished before the probe's read began must be found; nothing not yet
        // started when it ended may be. (`done` is taken before the read: a follow finishing
        // during the read may or may not be seen.)
        const before = new Set(done);
        const seen = new Set(await graph.contains(CELEB, 'follows', 'in', [...FANS, ...STRANGERS]));
        const ok = [...before].every((f) => seen.has(f)) && [...seen].every((f) => started.has(f));
        probes.push({ step: `${p.step} ${p.from}→${p.to}`, ok });
      },
    });
    // The statements a read costs against the bucket layout: without the read caches.
    graph = new GraphService({ store, lists, maxFollowing: 100, caches: false });
    for (const id of [CELEB, ...FANS, ...STRANGERS]) await graph.putUser({ id, username: `u${id}` });
    for (const fan of FANS) {
      started.add(fan);
      inFlight = graph.follow(fan, CELEB);
      await inFlight;
      done.add(fan);
    }
    for (let g = lists.growthOf(followersOf); g; g = lists.growthOf(followersOf)) await g;
    await lists.growTo(followersOf, 8);
  });
  afterAll(async () => {
    await ks?.drop();
  });

  it('grew online to 8 buckets, and every probe taken during the growths was correct', async () => {
    expect(await store.getLayout(followersOf)).toEqual({ buckets: 8, growingTo: null, copiedThrough: 0 });
    expect(probes.filter((p) => p.step.startsWith('dropped')).map((p) => p.step)).toEqual([
      'dropped 1→2',
      'dropped 2→4',
      'dropped 4→8',
    ]);
    expect(probes.filter((p) => !p.ok)).toEqual([]);
  });

  it('inverse edge rows sit in exactly the murmur buckets of the 8-layout; follower rows stay in their time bucket', async () => {
    const byCode = async (table: 'edges_in' | 'followers', code: number) => {
      const rs =
        table === 'edges_in'
          ? await ks.client.execute(
              'SELECT source_id FROM edges_in WHERE target_id = ? AND relation = ? AND bucket = ?',
              [CELEB, 'follows', code],
            )
          : await ks.client.execute('SELECT other_id FROM followers WHERE user_id = ? AND bucket = ?', [
              CELEB,
              code,
            ]);
      return rs.rows.map((r) => (r.source_id ?? r.other_id) as bigint).sort((a, b) => (a < b ? -1 : 1));
    };
    const expected = Array.from({ length: 8 }, (_, b) => FANS.filter((f) => bucketOf(f, 8) === b));
    const codes = expected.map((_, b) => bucketCode(8, b));
    expect(await Promise.all(codes.map((c) => byCode('edges_in', c)))).toEqual(expected);
    // The list is time-bucketed (the inverse layout's growth stores no list mode: lists are read
    // from time buckets only): every row in the one time bucket (id 1, far below a bucket's size),
    // none in the inverse layouts' codes.
    expect(await store.getDirectory(followersOf)).toEqual({
      mode: null,
      version: 0,
      buckets: [{ id: 1, start: null, base: 0 }],
    });
    const sorted = [...FANS].sort((a, b) => (a < b ? -1 : 1));
    expect(await byCode('followers', 1)).toEqual(sorted);
    const hashCodes = Array.from({ length: 14 }, (_, i) => i + 2);
    expect(await Promise.all(hashCodes.map((c) => byCode('followers', c)))).toEqual(hashCodes.map(() => []));
    // The inverse layouts the list grew out of (codes 1..7) were dropped.
    const old = [1, 2, 3, 4, 5, 6, 7];
    expect(await Promise.all(old.map((c) => byCode('edges_in', c)))).toEqual(old.map(() => []));
    expect(expected.every((b) => b.length > 0 && b.length < FANS.length)).toBe(true);
  });

  it('contains reads one partition per distinct bucket among the ids: at most min(N, k)', async () => {
    const reads = async (ids: bigint[]) => {
      statements.length = 0;
      const hits = await graph.contains(CELEB, 'follows', 'in', ids);
      return { hits, partitions: statements.filter((s) => s === 'getEdgesIn').length };
    };
    const inBucket = (b: number) => FANS.filter((f) => bucketOf(f, 8) === b);
    const oneEach = [0, 1, 2].map((b) => inBucket(b)[0]!);
    expect(await reads(oneEach)).toEqual({ hits: oneEach, partitions: 3 });
    const sameBucket = inBucket(5);
    expect(await reads(sameBucket)).toEqual({ hits: sameBucket, partitions: 1 });
    const everyone = [...STRANGERS, ...FANS];
    const distinct = new Set(everyone.map((id) => bucketOf(id, 8))).size;
    expect(distinct).toBe(8);
    expect(await reads(everyone)).toEqual({ hits: FANS, partitions: 8 });
    expect(await reads([])).toEqual({ hits: [], partitions: 0 });
  });

  it('the private-list visibility check reads the one bucket of the viewer', async () => {
    await graph.putUser({ id: CELEB, username: `u${CELEB}`, private: true });
    statements.length = 0;
    await graph.assertCanViewLists(FANS[7]!, CELEB);
    expect(statements.filter((s) => s === 'getEdgesIn')).toEqual(['getEdgesIn']);
    await expect(graph.assertCanViewLists(STRANGERS[0]!, CELEB)).rejects.toThrow();
  });
});
