import { describe, expect, it } from 'vitest';
import {
  createdAtsOldestFirst,
  DirectoryPlanner,
  MigrationBlockedError,
  MigrationConflictError,
  type MigrationOptions,
  migrateList,
} from '../../src/lists/list-migration.js';
import { bucketCode, writeBucketCodes } from '../../src/model/buckets.js';
import { bucketFor, planDirectory, writeCodes } from '../../src/model/time-buckets.js';
import type { ListEntry, ListKey } from '../../src/model/types.js';
import { followersOf, loadRows, newestFirst, syntheticRows } from '../support/list-fixtures.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { mulberry32 } from '../support/random.js';
import { expectInterruptedTwice, runInterruptedMigration } from './list-migration-scenario.js';

const noSleep = () => Promise.resolve();
const quick: MigrationOptions = { settleMs: 0, sleep: noSleep, bucketRows: 50, copyPageSize: 20 };

/** A hash list of `count` synthetic rows in `buckets` hash buckets, as lists grown before time buckets. */
async function hashList(store: MemoryGraphStore, list: ListKey, count: number, buckets = 4) {
  const rows = syntheticRows(count);
  await loadRows(store, list, rows, [buckets], { version: 1000n });
  await store.putLayout(list, { buckets, growingTo: null, copiedThrough: 0 });
  return rows;
}

/** Every row of the list's time buckets, newest bucket first. */
async function timeRows(store: MemoryGraphStore, list: ListKey): Promise<ListEntry[]> {
  const directory = await store.getDirectory(list);
  const out: ListEntry[] = [];
  for (const b of directory.buckets) out.push(...(await store.listBucket(list, b.id, null, 1e9)));
  return out;
}

describe('DirectoryPlanner', () => {
  it('plans exactly what planDirectory plans, over random lists with ties', () => {
    const seed = Number(process.env.SEED ?? Date.now() % 2 ** 31);
    console.log(`DirectoryPlanner property seed=${seed}`);
    const random = mulberry32(seed);
    for (let trial = 0; trial < 200; trial++) {
      const n = Math.floor(random() * 300);
      let t = 1_000n;
      const createdAts = Array.from({ length: n }, () => {
        if (random() > 0.3) t += BigInt(1 + Math.floor(random() * 5));
        return t;
      });
      const bucketRows = 1 + Math.floor(random() * 40);
      const planner = new DirectoryPlanner(bucketRows);
      for (const c of createdAts) planner.add(c);
      expect({ trial, plan: planner.buckets() }).toEqual({
        trial,
        plan: planDirectory(createdAts, bucketRows),
      });
    }
  });
});

describe('createdAtsOldestFirst', () => {
  it('streams every created_at of the hash buckets oldest first, a few rows per bucket at a time', async () => {
    const store = new MemoryGraphStore();
    const list = followersOf(11n);
    const rows = await hashList(store, list, 333, 8);
    const out: bigint[] = [];
    for await (const c of createdAtsOldestFirst(store, list, 8, 7)) out.push(c);
    expect(out).toEqual(rows.map((r) => r.createdAt).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
  });
});

describe('migrateList', () => {
  it('moves every row to the planned time bucket, drops the hash partitions, and logs each step', async () => {
    const store = new MemoryGraphStore();
    const list = followersOf(1n);
    const rows = await hashList(store, list, 230);
    const steps: string[] = [];
    const result = await migrateList(store, list, {
      ...quick,
      onProgress: (p) => {
        steps.push(p.step === 'copied' ? `copied ${p.bucket} (${p.rows})` : p.step);
      },
    });
    const perBucket = [0, 1, 2, 3].map(
      (b) =>
        rows.filter(
          (r) =>
            writeBucketCodes({ buckets: 4, growingTo: null, copiedThrough: 0 }, r.otherId)[0] ===
            bucketCode(4, b),
        ).length,
    );
    expect(steps).toEqual([
      'planned',
      ...perBucket.map((n, b) => `copied ${b} (${n})`),
      'flipped',
      'finalized',
      'dropped',
    ]);
    const directory = await store.getDirectory(list);
    const planned = planDirectory(
      newestFirst(rows)
        .reverse()
        .map((r) => r.createdAt),
      50,
    );
    expect(result).toEqual({ outcome: 'migrated', from: 4, buckets: planned.length });
    expect({ ...directory, version: 0 }).toEqual({ mode: 'time', version: 0, buckets: planned });
    expect(await store.getListMigration(list)).toBeNull();
    expect(await timeRows(store, list)).toEqual(newestFirst(rows));
    for (let b = 0; b < 4; b++) expect(await store.listBucket(list, bucketCode(4, b), null, 1e9)).toEqual([]);
    expect(await migrateList(store, list, quick)).toEqual({ outcome: 'already-time' });
  });

  it('leaves a list already in time buckets alone', async () => {
    const store = new MemoryGraphStore();
    const list = followersOf(2n);
    await loadRows(store, list, syntheticRows(20), [1]);
    expect(await migrateList(store, list, quick)).toEqual({ outcome: 'already-time' });
    expect(await store.getDirectory(list)).toEqual({
      mode: null,
      version: 0,
      buckets: [{ id: 1, start: null, base: 0 }],
    });
  });

  it('refuses a list whose layout is growing, and changes nothing', async () => {
    const store = new MemoryGraphStore();
    const list = followersOf(3n);
    await hashList(store, list, 40);
    await store.putLayout(list, { buckets: 4, growingTo: 8, copiedThrough: 1 });
    await expect(migrateList(store, list, quick)).rejects.toBeInstanceOf(MigrationBlockedError);
    expect([await store.getDirectory(list), await store.getListMigration(list)]).toEqual([
      { mode: null, version: 0, buckets: [{ id: 1, start: null, base: 0 }] },
      null,
    ]);
  });

  it('stops with MigrationBlockedError when a growth slipped in before the dual mark settled', async () => {
    const store = new MemoryGraphStore();
    const list = followersOf(4n);
    await hashList(store, list, 40);
    const run = migrateList(store, list, {
      ...quick,
      onProgress: async (p) => {
        if (p.step === 'planned') await store.putLayout(list, { buckets: 4, growingTo: 8, copiedThrough: 0 });
      },
    });
    await expect(run).rejects.toBeInstanceOf(MigrationBlockedError);
    expect(await store.getListMigration(list)).toEqual({ from: 4, copiedThrough: 0 });
  });

  it('two runners: exactly one wins, the other stops with MigrationConflictError; every row kept once', async () => {
    const store = new MemoryGraphStore();
    const list = followersOf(5n);
    const rows = await hashList(store, list, 300);
    const outcomes = await Promise.allSettled([
      migrateList(store, list, quick),
      migrateList(store, list, quick),
    ]);
    expect(
      outcomes.map((o) => (o.status === 'fulfilled' ? o.value.outcome : o.reason.constructor.name)).sort(),
    ).toEqual([MigrationConflictError.name, 'migrated']);
    expect((await store.getDirectory(list)).mode).toBe('time');
    expect(await timeRows(store, list)).toEqual(newestFirst(rows));
  });
});

describe('regression: a follow by a writer still on the hash directory was never copied', () => {
  it('the settle after the dual mark outwaits it, so the copy finds the row', async () => {
    const store = new MemoryGraphStore();
    const list = followersOf(6n);
    const rows = await hashList(store, list, 60);
    const layout = await store.getLayout(list);
    const late: ListEntry = { createdAt: rows.at(-1)!.createdAt + 5n, otherId: 6_000_000n };
    let inFlight: Promise<void> = Promise.resolve();
    await migrateList(store, list, {
      ...quick,
      // The real settle lasts longer than a directory read plus a write in flight.
      sleep: () => inFlight,
      onProgress: (p) => {
        if (p.step !== 'planned') return;
        // A writer that read the directory (no mode: hash) before the dual mark, still writing.
        inFlight = new Promise<void>((resolve) => setTimeout(resolve, 20)).then(() =>
          store.writeEdges(
            [],
            [{ list, bucketCodes: writeBucketCodes(layout, late.otherId), entry: late, op: 'put' }],
            2000n,
          ),
        );
      },
    });
    expect(await timeRows(store, list)).toEqual(newestFirst([...rows, late]));
  });
});

describe('the rolling-deploy rule: no previous-version writer while a list migrates', () => {
  // The previous version writes only hash codes (it never reads the directory). After the copy
  // passed its row's bucket, that row never reaches the time buckets: lost at the flip. A writer
  // of this version writes both layouts in `dual`, so the same follow is kept.
  async function followDuringCopy(writer: 'previous' | 'current') {
    const store = new MemoryGraphStore();
    const list = followersOf(7n);
    const rows = await hashList(store, list, 80);
    const layout = await store.getLayout(list);
    const late: ListEntry = { createdAt: rows.at(-1)!.createdAt + 5n, otherId: 7_000_001n };
    const lateBucket = writeBucketCodes(layout, late.otherId)[0]! - 4;
    await migrateList(store, list, {
      ...quick,
      onProgress: async (p) => {
        if (p.step !== 'copied' || p.bucket !== lateBucket) return;
        const directory = await store.getDirectory(list);
        const codes =
          writer === 'previous'
            ? writeBucketCodes(layout, late.otherId)
            : writeCodes(layout, directory, late);
        await store.writeEdges([], [{ list, bucketCodes: codes, entry: late, op: 'put' }], 2000n);
      },
    });
    const directory = await store.getDirectory(list);
    return {
      kept: (await timeRows(store, list)).some((r) => r.otherId === late.otherId),
      bucket: bucketFor(directory, late.createdAt).id,
    };
  }

  it('a follow written by a previous-version instance during the copy is lost', async () => {
    expect((await followDuringCopy('previous')).kept).toBe(false);
  });

  it('the same follow written by an instance of this version is kept', async () => {
    expect((await followDuringCopy('current')).kept).toBe(true);
  });
});

describe('a migration interrupted twice under writes and walks (memory)', () => {
  it('keeps every edge, and every walk returns each member present throughout once, in order', async () => {
    const seed = Number(process.env.SEED ?? Date.now() % 2 ** 31);
    console.log(`interrupted migration (memory) seed=${seed}`);
    const r = await runInterruptedMigration(new MemoryGraphStore(), {
      seed,
      celeb: 100n,
      fans: 80,
      initial: 60,
      bucketRows: 9,
      opsPerStep: 3,
      pageLimit: 7,
    });
    expectInterruptedTwice(r);
    // Walks ran under every mode.
    expect([...new Set(r.walks.flatMap((w) => w.modes))].sort()).toEqual(['dual', 'flipped', 'hash', 'time']);
  });
});
