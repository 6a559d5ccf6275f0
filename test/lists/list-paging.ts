/**
 * Two-way paging, time ranges and the member filter (the API contract, Part 2), one suite run on the
 * in-memory store and on the real Cassandra node. A random list (time buckets of 1–12 rows, shared
 * `created_at` values) is walked forward to the end and then back with prev cursors: every page
 * is the reference slice, the backward pages are the forward pages in reverse order, pages are
 * full except the last, the union is the reference restricted to `[since, until)` minus the
 * hidden members. Seeds are printed; replay with `LIST_PAGING_SEED=<seed>`.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MemberFilter, PageOptions } from '../../src/lists/contracts.js';
import type { ListReadStats } from '../../src/lists/list-pages.js';
import { BucketedListService, pageBudget } from '../../src/lists/list-service.js';
import { nowPosition } from '../../src/model/clock.js';
import { InvalidCursorError, InvalidInputError } from '../../src/model/errors.js';
import type { ListEntry, ListKey } from '../../src/model/types.js';
import type { GraphStore } from '../../src/ports/graph-store.js';
import { followersOf, loadTimeRows, newestFirst, syntheticRows } from '../support/list-fixtures.js';

export interface ListPagingFixture {
  store: GraphStore;
  teardown(): Promise<void>;
}

export interface ListPagingSizes {
  /** fast-check runs of the random walk. */
  runs: number;
  /** Largest random list. */
  maxRows: number;
  /** Rows of the list read for the since/until cost check. */
  statsRows: number;
}

const SECRET = 'list-paging-secret-0123456789abcd';
const SEED = Number(process.env.LIST_PAGING_SEED ?? Date.now() % 2_147_483_647);

function service(
  store: GraphStore,
  extra: Partial<ConstructorParameters<typeof BucketedListService>[0]> = {},
) {
  return new BucketedListService({
    store,
    cursorSecret: SECRET,
    bucketThresholds: [1_000_000_000],
    layoutCacheTtlMs: 0,
    ...extra,
  });
}

const keyOf = (e: ListEntry) => `${e.createdAt}|${e.otherId}`;
type Page = ListEntry[];

interface Walk {
  forward: Page[];
  backward: Page[];
  /** prevCursor of the first page, nextCursor of the last. */
  firstPrev: string | null | undefined;
  filterCalls: number;
}

/** Walks forward to the end, then back from the last page's prev cursor to the first page. */
async function walkBothWays(
  svc: BucketedListService,
  list: ListKey,
  limit: number,
  o: Omit<PageOptions, 'direction'>,
  between?: (step: number) => Promise<void>,
): Promise<Walk> {
  const forward: Page[] = [];
  let filterCalls = 0;
  const exclude: MemberFilter | undefined = o.exclude
    ? async (ids) => {
        filterCalls++;
        // A round merges at most what the page still wants or what is left of its budget.
        expect(ids.length).toBeLessThanOrEqual(Math.max(limit + 1, pageBudget(limit)));
        return o.exclude!(ids);
      }
    : undefined;
  const opts: PageOptions = { ...o, ...(exclude ? { exclude } : {}) };
  let cursor: string | null = null;
  let prev: string | null = null;
  let firstPrev: string | null | undefined;
  let step = 0;
  for (;;) {
    const p = await svc.page(list, limit, cursor, opts);
    if (forward.length === 0) firstPrev = p.prevCursor;
    forward.push(p.items.map((i) => ({ createdAt: i.createdAt, otherId: i.id })));
    prev = p.prevCursor ?? null;
    if (between) await between(step++);
    if (!p.nextCursor) break;
    cursor = p.nextCursor;
    expect(forward.length).toBeLessThan(10_000);
  }
  const backward: Page[] = [];
  while (prev) {
    const p = await svc.page(list, limit, prev, { ...opts, direction: 'newer' });
    backward.push(p.items.map((i) => ({ createdAt: i.createdAt, otherId: i.id })));
    expect(p.nextCursor).not.toBeNull();
    prev = p.prevCursor ?? null;
    if (between) await between(step++);
    expect(backward.length).toBeLessThan(10_000);
  }
  return { forward, backward, firstPrev, filterCalls };
}

/** The reference pages: `reference` cut into `limit`-sized slices (one empty page for an empty list). */
function slices(reference: readonly ListEntry[], limit: number): Page[] {
  const out: Page[] = [];
  for (let i = 0; i < reference.length; i += limit) out.push(reference.slice(i, i + limit));
  return out.length === 0 ? [[]] : out;
}

/** The forward walk's pages may end with one empty page (a cursor issued just at the end). */
function withoutTrailingEmpty(pages: Page[]): Page[] {
  return pages.length > 1 && pages.at(-1)!.length === 0 ? pages.slice(0, -1) : pages;
}

const show = (pages: Page[]) => pages.map((p) => p.map(keyOf));

export function describeListPaging(
  name: string,
  make: () => Promise<ListPagingFixture>,
  sizes: ListPagingSizes,
) {
  describe(`list paging: ${name}`, () => {
    let fx: ListPagingFixture;
    let store: GraphStore;
    let nextUser = 9_100_000n;
    beforeAll(async () => {
      fx = await make();
      store = fx.store;
    });
    afterAll(async () => {
      await fx?.teardown();
    });

    /** A fresh list of `rows` in time buckets of `bucketRows` rows each. */
    async function newList(rows: ListEntry[], bucketRows: number): Promise<ListKey> {
      const list = followersOf(nextUser++);
      await loadTimeRows(store, list, rows, bucketRows, { concurrency: 16 });
      return list;
    }

    const T0 = 1_790_000_000_000_000n;
    const arbCase = fc
      .record({
        n: fc.integer({ min: 0, max: sizes.maxRows }),
        // Rows per time bucket.
        buckets: fc.integer({ min: 1, max: 12 }),
        limit: fc.integer({ min: 1, max: 12 }),
        // Few distinct times: many members share a created_at.
        spread: fc.integer({ min: 1, max: 40 }),
        idSeed: fc.integer({ min: 1, max: 1_000_000 }),
        since: fc.option(fc.integer({ min: 0, max: 40 }), { nil: null, freq: 2 }),
        width: fc.option(fc.integer({ min: 1, max: 40 }), { nil: null, freq: 2 }),
        hide: fc.option(fc.integer({ min: 2, max: 5 }), { nil: null, freq: 2 }),
        hideSalt: fc.integer({ min: 0, max: 4 }),
      })
      .map((c) => {
        const rows: ListEntry[] = [];
        const seen = new Set<bigint>();
        let x = c.idSeed;
        while (rows.length < c.n) {
          x = (Math.imul(x, 1103515245) + 12345) & 0x7fffffff;
          const id = 1n + BigInt(x % 5_000_000);
          if (seen.has(id)) continue;
          seen.add(id);
          rows.push({ createdAt: T0 + BigInt((x >> 8) % c.spread) * 1000n, otherId: id });
        }
        const since = c.since === null ? null : T0 + BigInt(c.since) * 1000n;
        const until = c.width === null ? null : (since ?? T0) + BigInt(c.width) * 1000n;
        const hidden = new Set(
          c.hide === null
            ? []
            : rows.filter((r) => Number(r.otherId % BigInt(c.hide!)) === c.hideSalt % c.hide!),
        );
        return { ...c, rows, since, until, hidden: new Set([...hidden].map((r) => r.otherId)) };
      });

    it(`random lists: forward to the end, then back with prev cursors (seed printed, ${sizes.runs} runs)`, async () => {
      console.log(`[list paging ${name}] seed=${SEED} (replay: LIST_PAGING_SEED=${SEED})`);
      const svc = service(store);
      let bounded = 0;
      let filtered = 0;
      let multiPage = 0;
      await fc.assert(
        fc.asyncProperty(arbCase, async (c) => {
          const list = await newList(c.rows, c.buckets);
          const reference = newestFirst(c.rows).filter(
            (r) =>
              (c.since === null || r.createdAt >= c.since) &&
              (c.until === null || r.createdAt < c.until) &&
              !c.hidden.has(r.otherId),
          );
          const exclude: MemberFilter | undefined =
            c.hide === null ? undefined : async (ids) => new Set(ids.filter((id) => c.hidden.has(id)));
          const w = await walkBothWays(svc, list, c.limit, {
            since: c.since,
            until: c.until,
            ...(exclude ? { exclude } : {}),
          });
          const expected = slices(reference, c.limit);
          // Every forward page is the reference slice: full except the last, nothing hidden or
          // outside the range, nothing twice.
          expect(show(withoutTrailingEmpty(w.forward))).toEqual(show(expected));
          expect(w.firstPrev).toBeNull();
          // Back from the last page: the same pages in reverse order, ending at the first page.
          const walked = withoutTrailingEmpty(w.forward);
          const expectedBack = w.forward.length > walked.length ? walked : walked.slice(0, -1);
          expect(show(w.backward)).toEqual(show([...expectedBack].reverse()));
          if (c.since !== null || c.until !== null) bounded++;
          if (c.hide !== null) filtered++;
          if (expected.length > 2) multiPage++;
        }),
        { numRuns: sizes.runs, seed: SEED, endOnFailure: true },
      );
      console.log(
        `[list paging ${name}] runs with bounds ${bounded}, with a filter ${filtered}, 3+ pages ${multiPage}`,
      );
      expect(multiPage).toBeGreaterThan(0);
    });

    it(`random lists under a tiny page budget: short pages resume exactly, both ways (${sizes.runs} runs)`, async () => {
      // Budgets of 1–8 rows stop most filtered pages early and cut rounds mid-bucket: every page
      // still shows the next members in order, and the walks together show each member once.
      let short = 0;
      await fc.assert(
        fc.asyncProperty(arbCase, fc.integer({ min: 1, max: 8 }), async (c, budget) => {
          const list = await newList(c.rows, c.buckets);
          const reference = newestFirst(c.rows).filter(
            (r) =>
              (c.since === null || r.createdAt >= c.since) &&
              (c.until === null || r.createdAt < c.until) &&
              !c.hidden.has(r.otherId),
          );
          const exclude: MemberFilter | undefined =
            c.hide === null ? undefined : async (ids) => new Set(ids.filter((id) => c.hidden.has(id)));
          const svc = service(store, { pageBudget: () => budget });
          const w = await walkBothWays(svc, list, c.limit, {
            since: c.since,
            until: c.until,
            ...(exclude ? { exclude } : {}),
          });
          expect(w.forward.every((p) => p.length <= c.limit)).toBe(true);
          expect(w.forward.flat().map(keyOf)).toEqual(reference.map(keyOf));
          expect(w.firstPrev).toBeNull();
          // Back from the last page: every member newer than that page, each once, ending at the newest.
          const tail = w.forward.at(-1)!.length;
          expect(w.backward.every((p) => p.length <= c.limit)).toBe(true);
          expect([...w.backward].reverse().flat().map(keyOf)).toEqual(
            reference.slice(0, reference.length - tail).map(keyOf),
          );
          short += w.forward.filter((p, i) => p.length < c.limit && i < w.forward.length - 1).length;
        }),
        { numRuns: sizes.runs, seed: SEED, endOnFailure: true },
      );
      console.log(`[list paging ${name}] tiny budget: ${short} short pages before the end (seed=${SEED})`);
      expect(short).toBeGreaterThan(0);
    });

    it('a walk while members join at the top: older pages are unaffected, newer pages show the new members', async () => {
      const rows = syntheticRows(60, { firstId: 41_000_000n });
      const list = await newList(rows, 25);
      const svc = service(store);
      const p1 = await svc.page(list, 10, null);
      const p2 = await svc.page(list, 10, p1.nextCursor);
      const newest = rows.at(-1)!.createdAt; // syntheticRows ascend
      const joined = Array.from({ length: 15 }, (_, i) => ({
        createdAt: newest + BigInt(i + 1) * 1000n,
        otherId: 42_000_000n + BigInt(i),
      }));
      const { codes } = await svc.placement(list);
      await store.writeEdges(
        [],
        joined.map((entry) => ({ list, bucketCodes: codes(entry), entry, op: 'put' as const })),
        nowPosition(),
      );
      const reference = newestFirst([...rows, ...joined]);
      const p3 = await svc.page(list, 10, p2.nextCursor);
      expect(p3.items.map((i) => i.id)).toEqual(reference.slice(35, 45).map((r) => r.otherId));
      // Back from page 2: page 1's members, then the joined ones, newest last reached.
      const back1 = await svc.page(list, 10, p2.prevCursor ?? null, { direction: 'newer' });
      expect(back1.items.map((i) => i.id)).toEqual(reference.slice(15, 25).map((r) => r.otherId));
      const back2 = await svc.page(list, 10, back1.prevCursor ?? null, { direction: 'newer' });
      expect(back2.items.map((i) => i.id)).toEqual(reference.slice(5, 15).map((r) => r.otherId));
      const back3 = await svc.page(list, 10, back2.prevCursor ?? null, { direction: 'newer' });
      expect([back3.items.map((i) => i.id), back3.prevCursor]).toEqual([
        reference.slice(0, 5).map((r) => r.otherId),
        null,
      ]);
    });

    it('since/until pages read from the clustering order: rows read per page stay near limit + buckets', async () => {
      const buckets = 8;
      const limit = 20;
      const rows = syntheticRows(sizes.statsRows, { firstId: 43_000_000n, gapUs: 1000 });
      const list = await newList(rows, Math.ceil(rows.length / buckets));
      const reference = newestFirst(rows);
      // A window in the middle: a quarter of the list is newer than until, half older than since.
      const until = reference[Math.floor(reference.length / 4)]!.createdAt;
      const since = reference[Math.floor(reference.length / 2)]!.createdAt;
      const inRange = reference.filter((r) => r.createdAt >= since && r.createdAt < until);
      // A round reads at most want + 1 rows of a bucket and moves on at its end; a newer page wants limit + 1.
      const roundBound = limit + 1 + 2 * buckets;
      const stats: ListReadStats[] = [];
      const svc = service(store, { onPage: (s) => stats.push(s) });
      const w = await walkBothWays(svc, list, limit, { since, until });
      expect(show(withoutTrailingEmpty(w.forward))).toEqual(show(slices(inRange, limit)));
      const pageStats = stats.map((s) => ({ rowsRead: s.rowsRead, rounds: s.rounds, items: s.items }));
      const worst = Math.max(...pageStats.map((s) => s.rowsRead / Math.max(1, s.rounds)));
      const total = pageStats.reduce((a, s) => a + s.rowsRead, 0);
      console.log(
        `[list paging ${name}] since/until walk: ${stats.length} pages (both ways) over ${inRange.length} members, ` +
          `rows read ${total}, worst rows/round ${worst.toFixed(1)}, first page ${JSON.stringify(pageStats[0])}`,
      );
      for (const s of pageStats) expect(s.rowsRead).toBeLessThanOrEqual(roundBound * s.rounds);

      // An until far above the list (year 9999) must not skew the next pages' fetch sizes.
      stats.length = 0;
      const far = await walkBothWays(svc, list, limit, { since, until: 253_402_300_799_999_999n });
      const fromSince = reference.filter((r) => r.createdAt >= since);
      expect(show(withoutTrailingEmpty(far.forward))).toEqual(show(slices(fromSince, limit)));
      const farStats = stats.map((s) => ({ rowsRead: s.rowsRead, rounds: s.rounds }));
      console.log(
        `[list paging ${name}] until=9999: ${farStats.length} pages, rows read ${farStats.reduce((a, s) => a + s.rowsRead, 0)} ` +
          `for ${fromSince.length} members`,
      );
      for (const s of farStats) expect(s.rowsRead).toBeLessThanOrEqual(roundBound * s.rounds);
      // And per page: a skewed row-spacing estimate would read limit + 1 rows from every bucket.
      for (const s of [...farStats, ...pageStats])
        expect(s.rowsRead).toBeLessThanOrEqual(2 * (limit + buckets));
      // Never a scan from the head: the whole walk reads a small multiple of the range, not the list.
      expect(total).toBeLessThan(4 * 2 * inRange.length);
      expect(total).toBeLessThan(reference.length);
    });

    it('the member filter: pages stay full, one filter call per round, the cursor passes skipped members', async () => {
      const rows = syntheticRows(200, { firstId: 44_000_000n, tieEvery: 4 });
      const list = await newList(rows, 8);
      // Hide a run of 30 members (a page and a half) and every third one elsewhere.
      const ordered = newestFirst(rows);
      const hidden = new Set([
        ...ordered.slice(40, 70).map((r) => r.otherId),
        ...ordered.filter((_, i) => i % 3 === 0).map((r) => r.otherId),
      ]);
      const calls: number[] = [];
      const exclude: MemberFilter = async (ids) => {
        calls.push(ids.length);
        return new Set(ids.filter((id) => hidden.has(id)));
      };
      const stats: ListReadStats[] = [];
      const svc = service(store, { onPage: (s) => stats.push(s) });
      const w = await walkBothWays(svc, list, 20, { exclude });
      const visible = ordered.filter((r) => !hidden.has(r.otherId));
      expect(show(withoutTrailingEmpty(w.forward))).toEqual(show(slices(visible, 20)));
      expect(calls.length).toBeLessThanOrEqual(stats.reduce((a, s) => a + s.rounds, 0));
      // A filtered scan drops the hidden members (pages may be short) and covers the rest once.
      const scanned: bigint[] = [];
      for await (const b of scanAll(svc, list, exclude)) scanned.push(...b);
      expect([...scanned].sort()).toEqual(visible.map((r) => r.otherId).sort());
    });

    it('cursors bind the direction, the bounds and the list', async () => {
      const rows = syntheticRows(30, { firstId: 45_000_000n });
      const list = await newList(rows, 2);
      const other = await newList(rows, 2);
      const svc = service(store);
      const since = newestFirst(rows)[20]!.createdAt;
      const p1 = await svc.page(list, 5, null, { since });
      const p2 = await svc.page(list, 5, p1.nextCursor, { since });
      expect(p2.prevCursor).toEqual(expect.any(String));
      const next = p2.nextCursor!;
      const prev = p2.prevCursor!;
      const refused = async (cursor: string, o: PageOptions, target = list) => {
        const e = await svc.page(target, 5, cursor, o).then(
          () => null,
          (err: unknown) => err,
        );
        expect(e).toBeInstanceOf(InvalidCursorError);
        return (e as Error).message;
      };
      expect(await refused(prev, { since })).toBe('invalid cursor: a prev_cursor pages with direction=newer');
      expect(await refused(next, { since, direction: 'newer' })).toBe(
        'invalid cursor: a next_cursor pages with direction=older',
      );
      expect(await refused(next, {})).toBe('invalid cursor: cursor was issued for other since/until bounds');
      expect(await refused(prev, { since: since + 1n, direction: 'newer' })).toBe(
        'invalid cursor: cursor was issued for other since/until bounds',
      );
      expect(await refused(prev, { since, until: since + 1_000_000n, direction: 'newer' })).toBe(
        'invalid cursor: cursor was issued for other since/until bounds',
      );
      expect(await refused(prev, { since, direction: 'newer' }, other)).toBe(
        'invalid cursor: cursor belongs to another list',
      );
      const e = await svc.page(list, 5, null, { since, until: since }).then(
        () => null,
        (err: unknown) => err,
      );
      expect(e).toEqual(new InvalidInputError('until', 'a time later than since'));
      // direction=newer without a cursor is the first page.
      const first = await svc.page(list, 5, null, { direction: 'newer', since });
      expect(first).toEqual({ ...p1, nextCursor: expect.any(String) });
    });
  });
}

async function* scanAll(svc: BucketedListService, list: ListKey, exclude: MemberFilter) {
  let cursor: string | null = null;
  do {
    const p = await svc.scan(list, 0, 1, 17, cursor, { exclude });
    yield p.ids;
    cursor = p.nextCursor;
  } while (cursor);
}
