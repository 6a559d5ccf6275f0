/**
 * Review finding 9 on the real node, once: 3,000 deactivated followers at the head of a list,
 * `GET /followers?limit=1` walked through HTTP with the Cassandra store's reads counted per page.
 * Each page stops at its work budget (short, with a cursor), and the walk shows every active
 * member once, in order (the memory-store twin, with the other lists and 30,000 members, is
 * `page-budget.test.ts`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ListKey } from '../../src/model/types.js';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { type TestKeyspace, testKeyspace } from '../support/cassandra.js';
import {
  countingStore,
  membersWithHiddenRun,
  OWNER,
  ReadCounter,
  readyBudgetApp,
  seedList,
  walkPages,
} from './support/page-budget.js';

const FOLLOWERS: ListKey = { userId: OWNER, relation: 'follows', direction: 'in' };

let ks: TestKeyspace;
beforeAll(async () => {
  ks = await testKeyspace('page_budget');
});
afterAll(async () => {
  await ks?.drop();
});

describe('list pages have a work budget on the real node', () => {
  it('3,000 deactivated followers at the head: limit=1 pages read at most ~1,000 rows each and resume exactly', async () => {
    const store = new CassandraGraphStore(ks.client);
    const started = Date.now();
    await seedList(store, FOLLOWERS, membersWithHiddenRun(3, 3000, 2));
    console.log(`[page budget cassandra] seeded 3,005 users and rows in ${Date.now() - started} ms`);
    const counter = new ReadCounter();
    // Ready: the registry's own load (a read of every registered account) is not a page's cost.
    const app = await readyBudgetApp(countingStore(store, counter));
    const { pages } = await walkPages(app, counter, `/v1/users/${OWNER}/followers`, { limit: 1 });
    console.log(`[page budget cassandra] reads per page: ${JSON.stringify(pages.map((p) => p.reads))}`);
    expect(pages.map((p) => p.ids)).toEqual([
      ['13004'],
      ['13003'],
      [],
      [],
      [],
      ['10002'],
      ['10001'],
      ['10000'],
    ]);
    expect(pages.map((p) => p.next)).toEqual([true, true, true, true, true, true, true, false]);
    const worst = (k: 'bucketReads' | 'rowsRead' | 'userReads') => Math.max(...pages.map((p) => p.reads[k]));
    expect([worst('bucketReads') <= 12, worst('rowsRead') <= 1010, worst('userReads') <= 1010]).toEqual([
      true,
      true,
      true,
    ]);
  });
});
