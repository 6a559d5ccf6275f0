/**
 * Time-bucketed lists under change, one suite run on the in-memory store and on the real
 * Cassandra node. A random list in time buckets of a random size is walked page by page while,
 * between pages, buckets open ahead of the newest row and fill, rows land in old time (closed
 * buckets: imports and replays), rows are deleted, members are renamed (the rename fan-out's row
 * write, `renameRows`) and a closed bucket is split (the split job, interrupted at a random step
 * and finished by a later change, so pages also run over a pending split). Every walk returns its
 * members strictly in list order, each once; every member present throughout is returned; a walk
 * after the changes equals the reference (usernames included), forward and back, and a scan at a
 * random 1–1024 slices covers it once. Scans at 1–1024 slices cover every member once, also across
 * a bucket opening mid-scan. Seeds are printed; replay with `TIME_LISTS_SEED=<seed>`.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renameRows } from '../../src/graph/accounts/rename-fanout.js';
import { BucketedListService } from '../../src/lists/list-service.js';
import { splitBucket } from '../../src/lists/reshape/bucket-split.js';
import { nowPosition } from '../../src/model/clock.js';
import { nextBucketId, upperOf } from '../../src/model/time-buckets.js';
import type { ListEntry, ListKey } from '../../src/model/types.js';
import type { GraphStore } from '../../src/ports/graph-store.js';
import { followersOf, loadTimeRows, newestFirst } from '../support/list-fixtures.js';

export interface TimeListsFixture {
  store: GraphStore;
  teardown(): Promise<void>;
}

const SEED = Number(process.env.TIME_LISTS_SEED ?? Date.now() % 2_147_483_647);
const sortIds = (xs: bigint[]) => [...xs].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
const keyOf = (e: ListEntry) => `${e.createdAt}|${e.otherId}`;
const T0 = 1_790_000_000_000_000n;

type Change =
  | { kind: 'open'; rows: number }
  | { kind: 'old'; at: number }
  | { kind: 'delete'; pick: number }
  | { kind: 'rename'; pick: number; upper: boolean }
  /** Split the fullest closed bucket into about `parts` pieces; stop after `stopAt` steps (0: run to the end). */
  | { kind: 'split'; parts: number; stopAt: number }
  | { kind: 'none' };

const arbChange: fc.Arbitrary<Change> = fc.oneof(
  fc.record({ kind: fc.constant('open' as const), rows: fc.integer({ min: 0, max: 6 }) }),
  fc.record({ kind: fc.constant('old' as const), at: fc.integer({ min: 0, max: 10_000 }) }),
  fc.record({ kind: fc.constant('delete' as const), pick: fc.integer({ min: 0, max: 10_000 }) }),
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('rename' as const),
      pick: fc.integer({ min: 0, max: 10_000 }),
      upper: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('split' as const),
      parts: fc.integer({ min: 2, max: 3 }),
      // Steps: planned, one copied per child, flipped, finalized, deleted.
      stopAt: fc.integer({ min: 0, max: 5 }),
    }),
  },
  fc.constant({ kind: 'none' as const }),
);

/** Thrown from the split's progress callback: the job stops there, as a crash would. */
class Interrupted extends Error {}

const arbCase = fc.record({
  n: fc.integer({ min: 0, max: 120 }),
  bucketRows: fc.integer({ min: 1, max: 30 }),
  limit: fc.integer({ min: 1, max: 9 }),
  spread: fc.integer({ min: 1, max: 200 }),
  idSeed: fc.integer({ min: 1, max: 1_000_000 }),
  changes: fc.array(arbChange, { minLength: 0, maxLength: 30 }),
  /** Slices of the scan over the list after the changes. */
  slices: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constantFrom(64, 1024)),
});

/** A handle with upper and lower case, `.` and `_` (what a rename also writes). */
function nameOf(id: bigint, salt: number): string {
  return `${['Ann', 'bo', 'C.d', 'e_F'][salt % 4]}${id}`;
}

function rowsOf(n: number, spread: number, idSeed: number): ListEntry[] {
  const rows: ListEntry[] = [];
  const seen = new Set<bigint>();
  let x = idSeed;
  while (rows.length < n) {
    x = (Math.imul(x, 1103515245) + 12345) & 0x7fffffff;
    const id = 1n + BigInt(x % 5_000_000);
    if (seen.has(id)) continue;
    seen.add(id);
    rows.push({ createdAt: T0 + BigInt((x >> 8) % spread) * 1000n, otherId: id, username: nameOf(id, x) });
  }
  return rows;
}

export function describeTimeLists(name: string, make: () => Promise<TimeListsFixture>, runs: number) {
  describe(`time-bucketed lists under change: ${name}`, () => {
    let fx: TimeListsFixture;
    let store: GraphStore;
    let nextUser = 9_600_000n;
    let nextMember = 6_000_000n;
    beforeAll(async () => {
      fx = await make();
      store = fx.store;
    });
    afterAll(async () => {
      await fx?.teardown();
    });

    const service = () =>
      new BucketedListService({
        store,
        cursorSecret: 'time-lists-secret-0123456789abcd',
        bucketThresholds: [1_000_000_000],
        layoutCacheTtlMs: 0,
      });

    /** The list's live rows, kept in step with every write the test makes. */
    class Model {
      readonly live = new Map<string, ListEntry>();
      version = nowPosition();
      /** Rename generations (µs), one higher per rename. */
      generation = nowPosition();
      splits = 0;
      /** Splits planned by a change (finished then or later, or pending at the end). */
      splitsStarted = 0;
      renames = 0;
      /** Renames of a member whose row a pending split was moving. */
      renamesMoving = 0;
      constructor(
        readonly list: ListKey,
        rows: readonly ListEntry[],
      ) {
        for (const r of rows) this.live.set(keyOf(r), r);
      }

      async put(entry: ListEntry): Promise<void> {
        const place = await service().placement(this.list);
        await store.writeEdges(
          [],
          [{ list: this.list, bucketCodes: place.codes(entry), entry, op: 'put' }],
          ++this.version,
        );
        this.live.set(keyOf(entry), entry);
      }

      async remove(entry: ListEntry): Promise<void> {
        const place = await service().placement(this.list);
        await store.writeEdges(
          [],
          [{ list: this.list, bucketCodes: place.codes(entry), entry, op: 'delete' }],
          ++this.version,
        );
        this.live.delete(keyOf(entry));
      }

      /**
       * Splits the closed bucket holding the most live rows into about `parts` (or finishes the
       * split pending from an earlier, interrupted change), stopping after `stopAt` progress steps.
       */
      async split(parts: number, stopAt: number): Promise<void> {
        const d = await store.getDirectory(this.list);
        let target: number | null = null;
        let most = 1;
        d.buckets.forEach((b, i) => {
          const upper = upperOf(d, i);
          if (upper === null) return; // the newest bucket is open
          const rows = [...this.live.values()].filter(
            (r) => r.createdAt < upper && (b.start === null || r.createdAt >= b.start),
          ).length;
          if (rows > most) [most, target] = [rows, b.id];
        });
        if (target === null && !d.split) return;
        let steps = 0;
        try {
          const r = await splitBucket(store, this.list, target, {
            settleMs: 0,
            bucketRows: Math.max(1, Math.ceil(most / parts)),
            pageSize: 4,
            sleep: async () => {},
            onProgress: (p) => {
              if (p.step === 'planned') this.splitsStarted++;
              if (++steps === stopAt) throw new Interrupted();
            },
          });
          if (r.outcome === 'split') this.splits++;
        } catch (e) {
          if (!(e instanceof Interrupted)) throw e;
        }
      }

      newest(): bigint {
        let max = T0;
        for (const r of this.live.values()) if (r.createdAt > max) max = r.createdAt;
        return max;
      }

      /** Applies one change between pages; returns the keys it removed. */
      async apply(c: Change): Promise<string[]> {
        if (c.kind === 'open') {
          // A boundary ahead of every row (as a writer adds it, a lead ahead), then rows past it.
          const d = await store.getDirectory(this.list);
          const start = this.newest() + 5000n;
          const ok = await store.updateDirectory(this.list, d.version, {
            add: [{ id: nextBucketId(d), start, base: this.live.size }],
          });
          expect(ok).toBe(true);
          for (let i = 0; i < c.rows; i++) {
            const otherId = nextMember++;
            await this.put({ createdAt: start + BigInt(i) * 7n, otherId, username: nameOf(otherId, i) });
          }
          return [];
        }
        if (c.kind === 'old') {
          // An import or replay in old time: lands in whichever (closed) bucket covers it.
          const span = Number(this.newest() - T0) + 1;
          const otherId = nextMember++;
          await this.put({ createdAt: T0 + BigInt(c.at % span), otherId, username: nameOf(otherId, c.at) });
          return [];
        }
        if (c.kind === 'rename' && this.live.size > 0) {
          // While a split is pending, a member of the range it moves (rows written to two buckets).
          const place = await service().placement(this.list);
          const all = [...this.live.values()];
          const moving = all.filter((r) => place.codes(r).length > 1);
          const pool = moving.length > 0 ? moving : all;
          const member = pool[c.pick % pool.length] as ListEntry;
          const username = `${c.upper ? 'R' : 'r'}.${++this.renames}_${member.otherId}`;
          if (moving.length > 0) this.renamesMoving++;
          await renameRows(store, [{ list: this.list, entry: member }], username, ++this.generation);
          this.live.set(keyOf(member), { ...member, username });
          return [];
        }
        if (c.kind === 'split') {
          await this.split(c.parts, c.stopAt);
          return [];
        }
        if (c.kind === 'delete' && this.live.size > 0) {
          const all = [...this.live.values()];
          const victim = all[c.pick % all.length] as ListEntry;
          await this.remove(victim);
          return [keyOf(victim)];
        }
        return [];
      }
    }

    it(`walks across buckets opening, old-time inserts, deletes, renames and splits: ordered, once, nothing present throughout missed; then pages, names and scans equal the reference (${runs} runs)`, async () => {
      console.log(`[time lists ${name}] seed=${SEED} (replay: TIME_LISTS_SEED=${SEED})`);
      let opened = 0;
      let multiBucket = 0;
      let splits = 0;
      let splitsStarted = 0;
      let renames = 0;
      let renamesMoving = 0;
      let pendingAtEnd = 0;
      await fc.assert(
        fc.asyncProperty(arbCase, async (c) => {
          const list = followersOf(nextUser++);
          const rows = rowsOf(c.n, c.spread, c.idSeed);
          const dir = await loadTimeRows(store, list, rows, c.bucketRows, { concurrency: 8 });
          if (dir.buckets.length > 2) multiBucket++;
          const m = new Model(list, rows);
          const initial = new Set(rows.map(keyOf));
          const removed = new Set<string>();
          const inserted = new Set<string>();
          const svc = service();
          const walked: ListEntry[] = [];
          let cursor: string | null = null;
          let step = 0;
          for (;;) {
            const p = await svc.page(list, c.limit, cursor);
            walked.push(...p.items.map((i) => ({ createdAt: i.createdAt, otherId: i.id })));
            const change = c.changes[step++];
            if (change) {
              const before = new Set(m.live.keys());
              for (const k of await m.apply(change)) removed.add(k);
              for (const k of m.live.keys()) if (!before.has(k)) inserted.add(k);
              if (change.kind === 'open') opened++;
            }
            if (!p.nextCursor) break;
            cursor = p.nextCursor;
            expect(step).toBeLessThan(10_000);
          }
          const keys = walked.map(keyOf);
          // Strictly in list order (so each member once).
          for (let i = 1; i < walked.length; i++) {
            const a = walked[i - 1] as ListEntry;
            const b = walked[i] as ListEntry;
            expect(a.createdAt > b.createdAt || (a.createdAt === b.createdAt && a.otherId > b.otherId)).toBe(
              true,
            );
          }
          // Nothing that never existed; everything present throughout.
          expect(keys.filter((k) => !initial.has(k) && !inserted.has(k))).toEqual([]);
          const throughout = [...initial].filter((k) => !removed.has(k));
          const seen = new Set(keys);
          expect(throughout.filter((k) => !seen.has(k))).toEqual([]);
          // After the changes: a fresh walk is the reference (names included), forward and back.
          const named = (createdAt: bigint, id: bigint, username?: string) =>
            `${createdAt}|${id}|${username ?? '-'}`;
          const reference = newestFirst([...m.live.values()]).map((r) =>
            named(r.createdAt, r.otherId, r.username),
          );
          const pages: string[][] = [];
          let prev: string | null = null;
          cursor = null;
          for (;;) {
            const p = await svc.page(list, c.limit, cursor);
            pages.push(p.items.map((i) => named(i.createdAt, i.id, i.username)));
            prev = p.prevCursor ?? null;
            if (!p.nextCursor) break;
            cursor = p.nextCursor;
          }
          expect(pages.flat()).toEqual(reference);
          // Back from the last page (which may be an empty page after a full one): the pages before
          // it, in reverse order, ending at the first page.
          const trailingEmpty = pages.length > 1 && pages.at(-1)?.length === 0;
          const walkedPages = trailingEmpty ? pages.slice(0, -1) : pages;
          const expectedBack = trailingEmpty ? walkedPages : walkedPages.slice(0, -1);
          const back: string[][] = [];
          let up: string | null = prev;
          while (up) {
            const p = await svc.page(list, c.limit, up, { direction: 'newer' });
            back.push(p.items.map((i) => named(i.createdAt, i.id, i.username)));
            up = p.prevCursor ?? null;
            expect(back.length).toBeLessThan(10_000);
          }
          expect(back).toEqual([...expectedBack].reverse());
          // And a scan in `c.slices` slices covers the list once.
          const scanned: bigint[] = [];
          for (let s = 0; s < c.slices; s++) {
            let at: string | null = null;
            do {
              const p = await svc.scan(list, s, c.slices, 1 + (c.limit % 7), at);
              scanned.push(...p.ids);
              at = p.nextCursor;
            } while (at);
          }
          expect(sortIds(scanned)).toEqual(sortIds([...m.live.values()].map((r) => r.otherId)));
          splits += m.splits;
          splitsStarted += m.splitsStarted;
          renames += m.renames;
          renamesMoving += m.renamesMoving;
          if ((await store.getDirectory(list)).split) pendingAtEnd++;
        }),
        { numRuns: runs, seed: SEED, endOnFailure: true },
      );
      console.log(
        `[time lists ${name}] buckets opened mid-walk ${opened}, lists of 2+ closed buckets ${multiBucket}, ` +
          `splits planned ${splitsStarted}, finished ${splits}, renames ${renames} (${renamesMoving} of rows a pending split moved), lists walked with a split pending ${pendingAtEnd}`,
      );
      expect(opened).toBeGreaterThan(0);
      expect(multiBucket).toBeGreaterThan(0);
      expect(splitsStarted).toBeGreaterThan(0);
      expect(renames).toBeGreaterThan(0);
    });

    it.each([1, 2, 3, 16, 64, 1024])(
      'scans at %i slices cover every member once, across a bucket opening mid-scan',
      async (slices) => {
        const list = followersOf(nextUser++);
        const rows = rowsOf(400, 300, 17 + slices);
        await loadTimeRows(store, list, rows, 9, { concurrency: 16 });
        const m = new Model(list, rows);
        const svc = service();
        const ids: bigint[] = [];
        // Every slice reads its first page, then a bucket opens and fills, then the slices finish.
        const cursors: (string | null)[] = [];
        for (let s = 0; s < slices; s++) {
          const p = await svc.scan(list, s, slices, 5, null);
          ids.push(...p.ids);
          cursors.push(p.nextCursor);
        }
        await m.apply({ kind: 'open', rows: 6 });
        const late = new Set(
          [...m.live.values()].filter((r) => r.createdAt > T0 + 300_000n).map((r) => r.otherId),
        );
        for (let s = 0; s < slices; s++) {
          let cursor = cursors[s] ?? null;
          while (cursor) {
            const p = await svc.scan(list, s, slices, 5, cursor);
            ids.push(...p.ids);
            cursor = p.nextCursor;
          }
        }
        const sorted = (xs: bigint[]) => [...xs].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
        // Each id once; every member present throughout; the late ones at most once.
        expect(ids.length).toBe(new Set(ids).size);
        const early = ids.filter((id) => !late.has(id));
        expect(sorted(early)).toEqual(sorted(rows.map((r) => r.otherId)));
        // And a scan started after the opening covers everything, once.
        const all: bigint[] = [];
        for (let s = 0; s < slices; s++) {
          let cursor: string | null = null;
          do {
            const p = await svc.scan(list, s, slices, 50, cursor);
            all.push(...p.ids);
            cursor = p.nextCursor;
          } while (cursor);
        }
        expect(sorted(all)).toEqual(sorted([...m.live.values()].map((r) => r.otherId)));
      },
    );
  });
}
