/**
 * The list scenarios, one suite run on the in-memory store (small lists) and on the real
 * Cassandra node (a 200,000-follower list): complete ordered walks at several page sizes, a walk
 * under churn, a walk across an online growth, fan-out scans that cover every member once and
 * resume after a kill, and the per-page cost at N = 64. Every assertion compares whole values.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BucketedListService, type ListReadStats } from '../../src/lists/list-service.js';
import type { GrowthProgress } from '../../src/lists/reshape/list-growth.js';
import { writeBucketCodes } from '../../src/model/buckets.js';
import { nowPosition } from '../../src/model/clock.js';
import type { ListEntry, ListKey } from '../../src/model/types.js';
import type { GraphStore } from '../../src/ports/store.js';
import { followersOf, loadRows, newestFirst, syntheticRows } from '../support/list-fixtures.js';

export interface ListScenarioSizes {
  /** Rows of the main list (16 buckets). */
  listSize: number;
  /** Items walked at page size 1 and 7 (prefixes of the main list). */
  prefix1: number;
  prefix7: number;
  /** Rows of the list grown 8 → 16 mid-walk. */
  growthSize: number;
  /** Rows of the list read at N = 64. */
  statsSize: number;
  scanLimit: number;
}

export interface ListScenarioFixture {
  store: GraphStore;
  teardown(): Promise<void>;
}

const SECRET = 'list-scenarios-secret-0123456789';
const key = (e: ListEntry) => `${e.createdAt}|${e.otherId}`;

function service(store: GraphStore, onPage?: (s: ListReadStats) => void, extra = {}) {
  return new BucketedListService({
    store,
    cursorSecret: SECRET,
    bucketThresholds: [1_000_000_000],
    layoutCacheTtlMs: 0,
    ...(onPage ? { onPage } : {}),
    ...extra,
  });
}

/** Walks `list` from `cursor` and returns every item (stops after `max` items when given). */
async function walk(
  svc: BucketedListService,
  list: ListKey,
  limit: number,
  o: {
    max?: number;
    cursor?: string | null;
    between?: (page: number, cursor: string | null) => Promise<void>;
  } = {},
) {
  const items: ListEntry[] = [];
  let cursor = o.cursor ?? null;
  let page = 0;
  do {
    const p = await svc.page(list, limit, cursor);
    expect(p.items.length).toBeLessThanOrEqual(limit);
    for (const i of p.items) items.push({ createdAt: i.createdAt, otherId: i.id });
    cursor = p.nextCursor;
    page++;
    if (o.between) await o.between(page, cursor);
  } while (cursor && (o.max === undefined || items.length < o.max));
  return { items, cursor, pages: page };
}

/**
 * Whole-sequence equality that reports the first difference compactly (a failing `toEqual` on
 * 200,000 rows makes the reporter diff for minutes).
 */
function expectSameSequence(actual: readonly ListEntry[], expected: readonly ListEntry[]) {
  const n = Math.max(actual.length, expected.length);
  for (let i = 0; i < n; i++) {
    const a = actual[i];
    const e = expected[i];
    if (!a || !e || key(a) !== key(e)) {
      expect({
        index: i,
        lengths: [actual.length, expected.length],
        actual: a ?? null,
        expected: e ?? null,
      }).toEqual({
        index: -1,
      });
    }
  }
}

function expectStrictlyNewestFirst(items: readonly ListEntry[]) {
  expectSameSequence(items, newestFirst(items));
  expect(new Set(items.map((i) => i.otherId)).size).toBe(items.length);
}

/** Deterministic pseudo-random picks. */
function picker(seed: number) {
  let x = seed;
  return (n: number) => {
    x = (Math.imul(x, 1103515245) + 12345) & 0x7fffffff;
    return x % n;
  };
}

export function describeListScenarios(
  name: string,
  make: () => Promise<ListScenarioFixture>,
  sizes: ListScenarioSizes,
) {
  describe(`list scenarios: ${name}`, () => {
    let fx: ListScenarioFixture;
    let store: GraphStore;
    const list = followersOf(7_000_001n);
    let rows: ListEntry[];
    let reference: ListEntry[];

    beforeAll(async () => {
      fx = await make();
      store = fx.store;
      rows = syntheticRows(sizes.listSize, { firstId: 10_000_000n });
      reference = newestFirst(rows);
      const started = performance.now();
      await loadRows(store, list, rows, [16]);
      await store.putLayout(list, { buckets: 16, growingTo: null, copiedThrough: 0 });
      console.log(
        `[${name}] loaded ${rows.length} rows in ${((performance.now() - started) / 1000).toFixed(1)} s`,
      );
    });
    afterAll(async () => {
      await fx?.teardown();
    });

    it('walks the whole list newest first with page sizes 50 and 200', async () => {
      for (const limit of [50, 200]) {
        const { items } = await walk(service(store), list, limit);
        expectSameSequence(items, reference);
      }
    });

    it(`walks prefixes with page size 1 (${sizes.prefix1} items) and 7 (${sizes.prefix7} items)`, async () => {
      const one = await walk(service(store), list, 1, { max: sizes.prefix1 });
      expectSameSequence(one.items, reference.slice(0, sizes.prefix1));
      const seven = await walk(service(store), list, 7, { max: sizes.prefix7 });
      expectSameSequence(seven.items, reference.slice(0, seven.items.length));
      expect(seven.items.length).toBeGreaterThanOrEqual(sizes.prefix7);
      // The page-size-7 cursor resumes to the exact rest of the list (nothing when it walked it all).
      const rest = seven.cursor
        ? await walk(service(store), list, 200, { cursor: seven.cursor })
        : { items: [] };
      expectSameSequence([...seven.items, ...rest.items], reference);
    });

    it('scans with 1, 3, 16 and 64 slices (more slices than buckets) cover every follower exactly once', async () => {
      const all = rows.map((r) => r.otherId).sort((a, b) => (a < b ? -1 : 1));
      for (const slices of [1, 3, 16, 64]) {
        const svc = service(store);
        const ids: bigint[] = [];
        for (let slice = 0; slice < slices; slice++) {
          for await (const b of svc.scanBatches(list, { slice, slices, batchSize: sizes.scanLimit }))
            ids.push(...b.ids);
        }
        expect([...ids].sort((a, b) => (a < b ? -1 : 1))).toEqual(all);
      }
    });

    it('64 slices with the layout pinned: 16 slices own whole buckets and read only the rows they return (issue #9)', async () => {
      const all = rows.map((r) => r.otherId).sort((a, b) => (a < b ? -1 : 1));
      const pinnedBuckets = (await store.getLayout(list)).buckets;
      const perSlice: { ids: number; rowsRead: number }[] = [];
      const ids: bigint[] = [];
      for (let slice = 0; slice < 64; slice++) {
        let rowsRead = 0;
        let mine = 0;
        const svc = service(store, (s) => {
          rowsRead += s.rowsRead;
        });
        for await (const b of svc.scanBatches(list, { slice, slices: 64, batchSize: 1000, pinnedBuckets })) {
          ids.push(...b.ids);
          mine += b.ids.length;
        }
        perSlice.push({ ids: mine, rowsRead });
      }
      expect(pinnedBuckets).toBe(16);
      expect([...ids].sort((a, b) => (a < b ? -1 : 1))).toEqual(all);
      expect(perSlice.slice(16)).toEqual(Array(48).fill({ ids: 0, rowsRead: 0 }));
      expect(perSlice.map((p) => p.rowsRead)).toEqual(perSlice.map((p) => p.ids));
    });

    it('a killed scan resumes from its cursor: same ids, none twice', async () => {
      const slice = 1;
      const slices = 3;
      const full: bigint[] = [];
      for await (const b of service(store).scanBatches(list, { slice, slices, batchSize: sizes.scanLimit })) {
        full.push(...b.ids);
      }
      const before: bigint[] = [];
      let saved: string | null = null;
      let n = 0;
      for await (const b of service(store).scanBatches(list, { slice, slices, batchSize: sizes.scanLimit })) {
        before.push(...b.ids);
        saved = b.cursor;
        if (++n === 3) break;
      }
      expect(saved).not.toBeNull();
      const after: bigint[] = [];
      for await (const b of service(store).scanBatches(list, {
        slice,
        slices,
        batchSize: sizes.scanLimit,
        cursor: saved,
      })) {
        after.push(...b.ids);
      }
      expect([...before, ...after]).toEqual(full);
    });

    it(`rows read and queries per page at N = 64, limit 50 (${sizes.statsSize} rows)`, async () => {
      const statsList = followersOf(7_000_064n);
      const statsRows = syntheticRows(sizes.statsSize, { firstId: 30_000_000n });
      await loadRows(store, statsList, statsRows, [64]);
      await store.putLayout(statsList, { buckets: 64, growingTo: null, copiedThrough: 0 });
      const stats: ListReadStats[] = [];
      const { items } = await walk(
        service(store, (s) => stats.push(s)),
        statsList,
        50,
      );
      expectSameSequence(items, newestFirst(statsRows));
      const avg = (f: (s: ListReadStats) => number) => stats.reduce((a, s) => a + f(s), 0) / stats.length;
      const rowsPerPage = avg((s) => s.rowsRead);
      const queriesPerPage = avg((s) => s.queries);
      console.log(
        `[${name}] N=64 limit=50, ${stats.length} pages: ${rowsPerPage.toFixed(1)} rows read, ${queriesPerPage.toFixed(1)} queries, ${avg((s) => s.rounds).toFixed(2)} rounds, ${avg((s) => s.buckets).toFixed(1)} buckets per page; page 1: ${stats[0]?.rowsRead} rows, ${stats[0]?.queries} queries`,
      );
      expect(rowsPerPage).toBeLessThanOrEqual(2 * 50);
      expect(queriesPerPage).toBeLessThanOrEqual(Math.min(64, 50) + 1);
    });

    it('a walk while 10% of the members unfollow and refollow: no id twice, every stable member once', async () => {
      const pick = picker(4242);
      const churn = new Map<bigint, ListEntry>();
      while (churn.size < Math.floor(rows.length / 10)) {
        const r = rows[pick(rows.length)]!;
        churn.set(r.otherId, r);
      }
      const queue = [...churn.values()];
      const svc = service(store);
      const perPage = Math.ceil(queue.length / (rows.length / 50 / 2));
      const { items } = await walk(svc, list, 50, {
        between: async () => {
          const batch = queue.splice(0, perPage);
          await Promise.all(batch.map((r) => churnOnce(store, svc, list, r)));
        },
      });
      await Promise.all(queue.splice(0).map((r) => churnOnce(store, svc, list, r)));
      expectStrictlyNewestFirst(items);
      const stable = reference.filter((r) => !churn.has(r.otherId));
      const returnedStable = items.filter((i) => !churn.has(i.otherId));
      expectSameSequence(returnedStable, stable);
    });

    it('a walk across an online growth 8 → 16 (with churn and a pre-growth cursor reused after the drop)', async () => {
      const growList = followersOf(7_000_008n);
      const gRows = syntheticRows(sizes.growthSize, { firstId: 50_000_000n });
      await loadRows(store, growList, gRows, [8]);
      await store.putLayout(growList, { buckets: 8, growingTo: null, copiedThrough: 0 });
      const gReference = newestFirst(gRows);

      let ticks = 0;
      let free = false;
      const waiters: { target: number; resolve: () => void }[] = [];
      const tick = () => {
        ticks++;
        for (const w of waiters.splice(0)) {
          if (free || w.target <= ticks) w.resolve();
          else waiters.push(w);
        }
      };
      // Growth waits are measured in walker pages: every write issued before them has finished.
      const sleep = () =>
        free
          ? Promise.resolve()
          : new Promise<void>((resolve) => waiters.push({ target: ticks + 3, resolve }));
      const events: { step: string; page: number }[] = [];
      const svc = service(store, undefined, {
        sleep,
        growthCopyPageSize: 200,
        writeGraceMs: 0,
        onGrowthProgress: (_: ListKey, p: GrowthProgress) => events.push({ step: p.step, page: ticks }),
      });

      const pick = picker(99);
      const churn = new Map<bigint, ListEntry>();
      while (churn.size < Math.floor(gRows.length / 10)) {
        const r = gRows[pick(gRows.length)]!;
        churn.set(r.otherId, r);
      }
      const queue = [...churn.values()];
      const totalPages = Math.ceil(gRows.length / 20);
      const perPage = Math.ceil(queue.length / (totalPages / 2));
      let growth: Promise<unknown> | null = null;
      let preGrowthCursor: string | null = null;
      const scanCursors: (string | null)[] = [];
      const scanIds: bigint[] = [];

      const { items } = await walk(svc, growList, 20, {
        between: async (page, cursor) => {
          if (page === 2) {
            preGrowthCursor = cursor;
            for (let slice = 0; slice < 3; slice++) {
              const p = await svc.scan(growList, slice, 3, 25, null);
              scanIds.push(...p.ids);
              scanCursors.push(p.nextCursor);
            }
            growth = svc.growTo(growList, 16).then(() => undefined);
          }
          const batch = queue.splice(0, perPage);
          const done = Promise.all(batch.map((r) => churnOnce(store, svc, growList, r)));
          await done;
          if (page === Math.floor(totalPages / 2)) {
            free = true;
            tick();
            await growth;
          }
          tick();
        },
      });
      free = true;
      tick();
      await growth;
      await Promise.all(queue.splice(0).map((r) => churnOnce(store, svc, growList, r)));
      console.log(`[${name}] growth layout changes (layout @ walker page): ${JSON.stringify(events)}`);
      expect(await store.getLayout(growList)).toEqual({ buckets: 16, growingTo: null, copiedThrough: 0 });
      expect(events.map((e) => e.step)).toEqual([
        'started',
        ...Array(8).fill('copied'),
        'flipped',
        'dropped',
      ]);
      expect(events.at(-1)!.page).toBeLessThan(totalPages);

      expectStrictlyNewestFirst(items);
      const stable = gReference.filter((r) => !churn.has(r.otherId));
      expectSameSequence(
        items.filter((i) => !churn.has(i.otherId)),
        stable,
      );

      // Old buckets are gone; a cursor made under 8 buckets reads the 16 that replaced them.
      for (let b = 0; b < 8; b++) expect(await store.listBucket(growList, 8 | b, null, 1)).toEqual([]);
      const boundary = items[2 * 20 - 1]!;
      const resumed = await walk(service(store), growList, 50, { cursor: preGrowthCursor });
      const finalRows = currentRows(gRows, churn);
      expectSameSequence(
        resumed.items,
        newestFirst(finalRows).filter(
          (r) =>
            r.createdAt < boundary.createdAt ||
            (r.createdAt === boundary.createdAt && r.otherId < boundary.otherId),
        ),
      );

      // Scans started under 8 buckets and finished under 16 still cover every stable member once.
      for (let slice = 0; slice < 3; slice++) {
        let cursor = scanCursors[slice]!;
        while (cursor) {
          const p = await service(store).scan(growList, slice, 3, 25, cursor);
          scanIds.push(...p.ids);
          cursor = p.nextCursor!;
        }
      }
      expect(new Set(scanIds).size).toBe(scanIds.length);
      const stableIds = stable.map((r) => r.otherId).sort((a, b) => (a < b ? -1 : 1));
      expect(scanIds.filter((id) => !churn.has(id)).sort((a, b) => (a < b ? -1 : 1))).toEqual(stableIds);
    });

    /** The list after every churned member refollowed (read back from the store's edge-free rows). */
    function currentRows(original: ListEntry[], churned: Map<bigint, ListEntry>): ListEntry[] {
      return original.map((r) => (churned.has(r.otherId) ? refollowed.get(r.otherId)! : r));
    }
  });
}

const refollowed = new Map<bigint, ListEntry>();
let lastPosition = 0n;

/** Unfollow then refollow `r`, as the write path does: codes from the writer's current layout. */
async function churnOnce(store: GraphStore, svc: BucketedListService, list: ListKey, r: ListEntry) {
  const next = () => {
    const p = nowPosition();
    lastPosition = p > lastPosition ? p : lastPosition + 1n;
    return lastPosition;
  };
  const unfollowAt = next();
  const layout = await svc.currentLayout(list);
  await store.writeEdges(
    [],
    [{ list, bucketCodes: writeBucketCodes(layout, r.otherId), entry: r, op: 'delete' }],
    unfollowAt,
  );
  const followAt = next();
  const entry = { createdAt: followAt, otherId: r.otherId };
  const layout2 = await svc.currentLayout(list);
  await store.writeEdges(
    [],
    [{ list, bucketCodes: writeBucketCodes(layout2, r.otherId), entry, op: 'put' }],
    followAt,
  );
  refollowed.set(r.otherId, entry);
}
