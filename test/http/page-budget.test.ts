/**
 * Review finding 9: a list page had no work bound. With 3,000 deactivated followers at the head,
 * `GET /followers?limit=1` made 3,001 bucket reads and 3,002 user reads, so sock puppets that follow
 * a victim and deactivate made every viewer of the victim's lists pay. Every list page now stops
 * at its work budget (`PAGE_BUDGET_PER_ITEM` × limit rows read, at least `PAGE_MIN_BUDGET`) with a
 * short page and a non-null cursor that resumes exactly there. Here, on the memory store through
 * HTTP, with the store's reads counted per page: followers, requests, a typed list and
 * `direction=newer`, at 3,000 and at 30,000 deactivated members.
 */
import { describe, expect, it } from 'vitest';
import type { ListKey } from '../../src/model/types.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import {
  countingStore,
  membersWithHiddenRun,
  OWNER,
  ReadCounter,
  readyBudgetApp,
  seedList,
  type WalkedPage,
  walkPages,
} from './support/page-budget.js';

/**
 * A page's reads stay under these whatever the number of deactivated members (limit 1 or 2):
 * the budget's 1,000 rows plus the last round's overfetch (a few rows per bucket), a user row per
 * row merged, and a dozen rounds of bucket queries.
 */
const bound = (buckets: number) => ({
  bucketReads: 12 * buckets,
  rowsRead: 1_000 + 10 * buckets,
  userReads: 1_000 + 10 * buckets,
});

const ids = (pages: WalkedPage[]) => pages.map((p) => p.ids);
const worst = (pages: WalkedPage[]) => ({
  bucketReads: Math.max(...pages.map((p) => p.reads.bucketReads)),
  rowsRead: Math.max(...pages.map((p) => p.reads.rowsRead)),
  userReads: Math.max(...pages.map((p) => p.reads.userReads)),
});
const withinBudget = { bucketReads: true, rowsRead: true, userReads: true };
const checkBudget = (w: ReturnType<typeof worst>, buckets = 1) => ({
  bucketReads: w.bucketReads <= bound(buckets).bucketReads,
  rowsRead: w.rowsRead <= bound(buckets).rowsRead,
  userReads: w.userReads <= bound(buckets).userReads,
});

async function setup(list: ListKey, hidden: number, buckets = 1) {
  const counter = new ReadCounter();
  const memory = new MemoryGraphStore();
  // 3 active members, then `hidden` deactivated ones, then the 2 newest, active.
  await seedList(memory, list, membersWithHiddenRun(3, hidden, 2), buckets);
  const app = await readyBudgetApp(countingStore(memory, counter));
  counter.reset();
  const newest = [String(10_000 + 3 + hidden + 1), String(10_000 + 3 + hidden)];
  const oldest = ['10002', '10001', '10000'];
  return { app, counter, newest, oldest };
}

const ROUTES: [string, string, ListKey][] = [
  ['followers', `/v1/users/${OWNER}/followers`, { userId: OWNER, relation: 'follows', direction: 'in' }],
  ['requests', `/v1/users/${OWNER}/requests`, { userId: OWNER, relation: 'requests', direction: 'in' }],
  [
    'blocks (a typed list)',
    `/v1/users/${OWNER}/blocks`,
    { userId: OWNER, relation: 'blocks', direction: 'out' },
  ],
];

describe('list pages have a work budget', () => {
  it.each(ROUTES)(
    '%s: 3,000 deactivated members at the head cost a bounded page each, and the cursor resumes exactly',
    async (_, path, list) => {
      const { app, counter, newest, oldest } = await setup(list, 3000);
      const older = await walkPages(app, counter, path, { limit: 1 });
      console.log(
        `[page budget] ${path}: ${older.pages.length} pages, worst ${JSON.stringify(worst(older.pages))}`,
      );
      expect(ids(older.pages)).toEqual([
        [newest[0]],
        [newest[1]],
        [],
        [],
        [],
        [oldest[0]],
        [oldest[1]],
        [oldest[2]],
      ]);
      // Short pages carry a cursor: only the last page's next_cursor is null.
      expect(older.pages.map((p) => p.next)).toEqual([true, true, true, true, true, true, true, false]);
      expect(checkBudget(worst(older.pages))).toEqual(withinBudget);
    },
  );

  it('direction=newer: back from the oldest member across 3,000 deactivated ones, bounded pages, ends at the newest', async () => {
    const path = `/v1/users/${OWNER}/followers`;
    const { app, counter, newest, oldest } = await setup(ROUTES[0]![2], 3000);
    const down = await walkPages(app, counter, path, { limit: 1 });
    const up = await walkPages(app, counter, path, { limit: 1, direction: 'newer', cursor: down.last.prev });
    console.log(`[page budget] newer: ${up.pages.length} pages, worst ${JSON.stringify(worst(up.pages))}`);
    expect(ids(up.pages)).toEqual([[oldest[1]], [oldest[0]], [], [], [newest[1]], [newest[0]]]);
    expect(up.pages.map((p) => p.prev)).toEqual([true, true, true, true, true, false]);
    expect(checkBudget(worst(up.pages))).toEqual(withinBudget);
  });

  it('set pages (not-followed-back) keep their rows-read budget over the same 3,000 deactivated followers', async () => {
    const path = `/v1/users/${OWNER}/followers/not-followed-back`;
    const { app, counter, newest, oldest } = await setup(ROUTES[0]![2], 3000);
    const pages = (await walkPages(app, counter, path, { limit: 1 })).pages;
    console.log(
      `[page budget] not-followed-back: ${pages.length} pages, worst ${JSON.stringify(worst(pages))}`,
    );
    expect(ids(pages)).toEqual([[newest[0]], [newest[1]], [], [], [oldest[0]], [oldest[1]], [oldest[2]]]);
    expect(pages.map((p) => p.next)).toEqual([true, true, true, true, true, true, false]);
    expect(checkBudget(worst(pages))).toEqual(withinBudget);
  });

  it('10× (30,000 deactivated members): the reads per page stay within the same bound', async () => {
    const path = `/v1/users/${OWNER}/followers`;
    const { app, counter, newest, oldest } = await setup(ROUTES[0]![2], 30_000);
    const older = await walkPages(app, counter, path, { limit: 1 });
    console.log(
      `[page budget] 30,000: ${older.pages.length} pages, worst ${JSON.stringify(worst(older.pages))}`,
    );
    expect(ids(older.pages).flat()).toEqual([...newest, ...oldest]);
    expect(older.pages.every((p, i) => p.next === i < older.pages.length - 1)).toBe(true);
    expect(checkBudget(worst(older.pages))).toEqual(withinBudget);
  }, 120_000);
});
