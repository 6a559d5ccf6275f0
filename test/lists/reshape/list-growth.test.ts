import { describe, expect, it } from 'vitest';
import { BucketedListService, bucketsForSize } from '../../../src/lists/list-service.js';
import { GrowthConflictError, growList } from '../../../src/lists/reshape/list-growth.js';
import { bucketCode, writeBucketCodes } from '../../../src/model/buckets.js';
import type { ListEntry, ListKey } from '../../../src/model/types.js';
import { followersOf, loadRows, newestFirst, syntheticRows } from '../../support/list-fixtures.js';
import { MemoryGraphStore } from '../../support/memory/graph-store.js';

const noSleep = () => Promise.resolve();

async function allRows(store: MemoryGraphStore, list: ListKey, buckets: number): Promise<ListEntry[]> {
  const out: ListEntry[] = [];
  for (let b = 0; b < buckets; b++)
    out.push(...(await store.listBucket(list, bucketCode(buckets, b), null, 1e9)));
  return newestFirst(out);
}

describe('growList', () => {
  it('a growth killed mid-copy resumes from copiedThrough and ends with every row in 2N', async () => {
    const store = new MemoryGraphStore();
    const list = followersOf(1n);
    const rows = syntheticRows(1500);
    await loadRows(store, list, rows, [4]);
    await store.putLayout(list, { buckets: 4, growingTo: null, copiedThrough: 0 });
    const kill = new Error('killed');
    await expect(
      growList(store, list, {
        settleMs: 0,
        sleep: noSleep,
        copyPageSize: 100,
        onProgress: (p) => {
          if (p.step === 'copied' && p.bucket === 1) throw kill;
        },
      }),
    ).rejects.toBe(kill);
    expect(await store.getLayout(list)).toEqual({ buckets: 4, growingTo: 8, copiedThrough: 2 });
    const steps: string[] = [];
    const layout = await growList(store, list, {
      settleMs: 0,
      sleep: noSleep,
      copyPageSize: 100,
      onProgress: (p) => {
        steps.push(p.step === 'copied' ? `copied ${p.bucket}` : p.step);
      },
    });
    expect(steps).toEqual(['started', 'copied 2', 'copied 3', 'flipped', 'dropped']);
    expect(layout).toEqual({ buckets: 8, growingTo: null, copiedThrough: 0 });
    expect(await allRows(store, list, 8)).toEqual(newestFirst(rows));
    expect(await allRows(store, list, 4)).toEqual([]);
  });
});

describe('noteSize', () => {
  it('maps sizes to layouts by the thresholds', () => {
    const t = [100, 200, 400];
    expect([0, 99, 100, 199, 200, 399, 400, 10_000].map((s) => bucketsForSize(s, t))).toEqual([
      1, 1, 2, 2, 4, 4, 8, 8,
    ]);
    expect(bucketsForSize(10_000, t, 4)).toBe(4);
  });

  it('starts a background growth when a list crosses a threshold', async () => {
    const store = new MemoryGraphStore();
    const list = followersOf(2n);
    const rows = syntheticRows(300);
    await loadRows(store, list, rows, [1]);
    const svc = new BucketedListService({
      store,
      cursorSecret: 'note-size-secret-0123456789',
      bucketThresholds: [100, 200, 400],
      layoutCacheTtlMs: 0,
      writeGraceMs: 0,
      sleep: noSleep,
    });
    svc.noteSize(list, 50);
    expect(svc.growthOf(list)).toBeUndefined();
    svc.noteSize(list, 300);
    svc.noteSize(list, 300);
    await svc.growthOf(list);
    expect(await store.getLayout(list)).toEqual({ buckets: 4, growingTo: null, copiedThrough: 0 });
    const page = await svc.page(list, 500, null);
    expect(page.items.map((i) => i.id)).toEqual(newestFirst(rows).map((r) => r.otherId));
  });

  it('a background growth that fails reports to onGrowthError, settles, and leaves the list as it was', async () => {
    const store = new MemoryGraphStore();
    const list = followersOf(7n);
    const rows = syntheticRows(20);
    await loadRows(store, list, rows, [1]);
    const down = new Error('down');
    const errors: [ListKey, unknown][] = [];
    const broken = new BucketedListService({
      store: Object.assign(Object.create(store) as MemoryGraphStore, {
        getLayout: () => Promise.reject(down),
      }),
      cursorSecret: 'note-size-secret-0123456789',
      bucketThresholds: [1],
      onGrowthError: (l, e) => {
        errors.push([l, e]);
      },
    });
    broken.noteSize(list, 5);
    const growth = broken.growthOf(list);
    expect(growth).toBeInstanceOf(Promise);
    await expect(growth).resolves.toBeUndefined();
    expect(errors).toEqual([[list, down]]);
    expect(broken.growthOf(list)).toBeUndefined();
    expect(await store.getLayout(list)).toEqual({ buckets: 1, growingTo: null, copiedThrough: 0 });
    expect(await allRows(store, list, 1)).toEqual(newestFirst(rows));
  });
});

describe('growList conflicts', () => {
  it('stops with GrowthConflictError instead of un-flipping a layout another runner moved', async () => {
    const store = new MemoryGraphStore();
    const list = followersOf(3n);
    await loadRows(store, list, syntheticRows(200), [2]);
    await store.putLayout(list, { buckets: 2, growingTo: null, copiedThrough: 0 });
    const run = growList(store, list, {
      settleMs: 0,
      sleep: noSleep,
      onProgress: async (p) => {
        if (p.step === 'started')
          await store.putLayout(list, { buckets: 4, growingTo: null, copiedThrough: 0 });
      },
    });
    await expect(run).rejects.toBeInstanceOf(GrowthConflictError);
    expect(await store.getLayout(list)).toEqual({ buckets: 4, growingTo: null, copiedThrough: 0 });
  });
});

describe('regression: a follow written right after the flip was invisible to readers still on N', () => {
  it('writers keep writing the old layout until every reader has moved to 2N', async () => {
    const store = new MemoryGraphStore();
    const list = followersOf(5n);
    const rows = syntheticRows(300);
    await loadRows(store, list, rows, [2]);
    await store.putLayout(list, { buckets: 2, growingTo: null, copiedThrough: 0 });
    const late = { createdAt: 9_000_000_000_000_000n, otherId: 777n };
    const seenByStaleReader: ListEntry[][] = [];
    const layout = await growList(store, list, {
      settleMs: 0,
      sleep: noSleep,
      onProgress: async (p) => {
        if (p.step !== 'flipped') return;
        const writerLayout = await store.getLayout(list);
        await store.writeEdges(
          [],
          [{ list, bucketCodes: writeBucketCodes(writerLayout, late.otherId), entry: late, op: 'put' }],
          10n,
        );
        seenByStaleReader.push(await allRows(store, list, 2));
      },
    });
    expect(layout).toEqual({ buckets: 4, growingTo: null, copiedThrough: 0 });
    expect(seenByStaleReader).toEqual([newestFirst([...rows, late])]);
    expect(await allRows(store, list, 4)).toEqual(newestFirst([...rows, late]));
  });

  it('a growth that crashed right after the flip resumes by finalizing and dropping', async () => {
    const store = new MemoryGraphStore();
    const list = followersOf(6n);
    const rows = syntheticRows(100);
    await loadRows(store, list, rows, [2, 4]);
    await store.putLayout(list, { buckets: 4, growingTo: 2, copiedThrough: 0 });
    const steps: string[] = [];
    const layout = await growList(store, list, {
      settleMs: 0,
      sleep: noSleep,
      onProgress: (p) => {
        steps.push(`${p.step} ${p.from}→${p.to}`);
      },
    });
    expect([layout, steps]).toEqual([
      { buckets: 4, growingTo: null, copiedThrough: 0 },
      ['flipped 2→4', 'dropped 2→4'],
    ]);
    expect(await allRows(store, list, 2)).toEqual([]);
    expect(await allRows(store, list, 4)).toEqual(newestFirst(rows));
  });
});

describe('two runners growing the same list', () => {
  it('exactly one wins; the other stops with GrowthConflictError; every row ends in 2N once', async () => {
    const store = new MemoryGraphStore();
    const list = followersOf(4n);
    const rows = syntheticRows(600);
    await loadRows(store, list, rows, [2]);
    await store.putLayout(list, { buckets: 2, growingTo: null, copiedThrough: 0 });
    const grow = () => growList(store, list, { settleMs: 0, sleep: noSleep, copyPageSize: 50 });
    const outcomes = await Promise.allSettled([grow(), grow()]);
    const fulfilled = outcomes.filter((o) => o.status === 'fulfilled');
    const rejected = outcomes.filter((o) => o.status === 'rejected');
    expect(fulfilled.map((o) => o.value)).toEqual([{ buckets: 4, growingTo: null, copiedThrough: 0 }]);
    expect(rejected.map((o) => o.reason instanceof GrowthConflictError)).toEqual([true]);
    expect(await store.getLayout(list)).toEqual({ buckets: 4, growingTo: null, copiedThrough: 0 });
    expect(await allRows(store, list, 4)).toEqual(newestFirst(rows));
  });
});

describe('regression: dropping the old layout did not shadow rows written at pair-fold versions', () => {
  it('after a growth of a list filled through the graph service, the old buckets are empty', async () => {
    const { GraphService } = await import('../../../src/graph/graph-service.js');
    const store = new MemoryGraphStore();
    const lists = new BucketedListService({
      store,
      cursorSecret: 'secret-secret-secret',
      bucketThresholds: [1e9],
    });
    const graph = new GraphService({ store, lists, maxFollowing: 100 });
    const celeb = 1n;
    await graph.putUser({ id: celeb, username: 'celeb' });
    const fans = Array.from({ length: 40 }, (_, i) => BigInt(i + 2));
    for (const fan of fans) {
      await graph.putUser({ id: fan, username: `fan${fan}` });
      await graph.follow(fan, celeb);
    }
    const list = followersOf(celeb);
    const before = await allRows(store, list, 1);
    expect(before.map((e) => e.otherId).sort()).toEqual([...fans].sort());
    await growList(store, list, { settleMs: 0, sleep: noSleep });
    expect(await allRows(store, list, 2)).toEqual(before);
    expect(await allRows(store, list, 1)).toEqual([]);
  });
});

describe('an `in` list growth carries the owner’s inverse edge state', () => {
  it('probes at every step read the reader layout and find every edge, removed ones included', async () => {
    const store = new MemoryGraphStore();
    const list = followersOf(8n);
    const sources = Array.from({ length: 40 }, (_, i) => 8_000n + BigInt(i));
    const edgeOf = (s: bigint) => ({
      sourceId: s,
      targetId: 8n,
      relation: 'follows' as const,
      state: s % 5n === 0n ? ('removed' as const) : ('active' as const),
      position: 100n + s,
      createdAt: 100n + s,
    });
    await store.putLayout(list, { buckets: 2, growingTo: null, copiedThrough: 0 });
    for (const s of sources) {
      await store.writeEdges(
        [{ edge: edgeOf(s), inBucketCodes: writeBucketCodes(await store.getLayout(list), s) }],
        [],
        1000n + s,
      );
    }
    const expected = new Map(sources.map((s) => [s, edgeOf(s)]));
    const probes: string[] = [];
    await growList(store, list, {
      settleMs: 0,
      sleep: noSleep,
      copyPageSize: 7,
      onProgress: async (p) => {
        const layout = await store.getLayout(list);
        const seen = await store.getEdgesIn(8n, 'follows', sources, layout);
        probes.push(`${p.step} N=${layout.buckets} ${seen.size === expected.size ? 'all' : seen.size}`);
        expect(seen).toEqual(expected);
      },
    });
    expect(probes).toEqual([
      'started N=2 all',
      'copied N=2 all',
      'copied N=2 all',
      'flipped N=4 all',
      'dropped N=4 all',
    ]);
    expect(
      await store.getEdgesIn(8n, 'follows', sources, { buckets: 2, growingTo: null, copiedThrough: 0 }),
    ).toEqual(new Map());
  });
});
