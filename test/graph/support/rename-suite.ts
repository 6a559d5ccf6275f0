/**
 * The rename fan-out (`src/graph/accounts/rename-fanout.ts`) held to one suite on any store: a rename
 * reaches every list row that names the account (follows both ways, `relation_lists`), resumes
 * after a crash with its progress, and survives its three races — an unfollow while it runs, a
 * follow that read the old name, and a second rename — with every page asserted whole.
 */
import { describe, expect, it } from 'vitest';
import { decodeRenameCursor, runRenameFanout } from '../../../src/graph/accounts/rename-fanout.js';
import { GraphService } from '../../../src/graph/graph-service.js';
import type { HistoryPolicy } from '../../../src/graph/pair/pair-history.js';
import { BucketedListService } from '../../../src/lists/list-service.js';
import { type ListKey, listIn, listOut, type UserId } from '../../../src/model/types.js';
import type { GraphStore } from '../../../src/ports/graph-store.js';

/**
 * Hooks run once, before the next call of the store method they name (`beforeSetNames`: every
 * call waits for it, so it runs before any name of the page is written).
 */
export interface StoreHooks {
  beforeSetNames: (() => Promise<void>) | null;
  beforeWriteEdges: (() => Promise<void>) | null;
  /** Runs once after a `listBucketVersions` read of one of `userId`'s lists returns, before the caller sees it. */
  afterVersionsOf: { userId: UserId; run: () => Promise<void> } | null;
  /** Fails the next `setListUsernames` calls while above 0. */
  failSetNames: number;
}

/** `store` with `StoreHooks` (a proxy, so one helper serves the memory store and the real node). */
export function hooked(store: GraphStore): { store: GraphStore; hooks: StoreHooks } {
  const hooks: StoreHooks = {
    beforeSetNames: null,
    beforeWriteEdges: null,
    afterVersionsOf: null,
    failSetNames: 0,
  };
  let naming: Promise<void> | null = null;
  const wrapped = new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      const fn = (value as (...a: unknown[]) => Promise<unknown>).bind(target);
      if (prop === 'setListUsernames')
        return async (...a: unknown[]) => {
          if (hooks.failSetNames > 0) {
            hooks.failSetNames--;
            throw new Error('injected: setListUsernames failed');
          }
          const hook = hooks.beforeSetNames;
          hooks.beforeSetNames = null;
          if (hook) naming = hook();
          await naming;
          return fn(...a);
        };
      if (prop === 'listBucketVersions')
        return async (...a: unknown[]) => {
          const rows = await fn(...a);
          const hook = hooks.afterVersionsOf;
          if (hook && (a[0] as ListKey).userId === hook.userId) {
            hooks.afterVersionsOf = null;
            await hook.run();
          }
          return rows;
        };
      if (prop === 'writeEdges')
        return async (...a: unknown[]) => {
          const hook = hooks.beforeWriteEdges;
          hooks.beforeWriteEdges = null;
          await hook?.();
          return fn(...a);
        };
      return fn;
    },
  });
  return { store: wrapped, hooks };
}

export interface RenameSuiteFixture {
  store: GraphStore;
  teardown: () => Promise<void>;
}

const X = 1n;
let nextId = 100n;

export function describeRenameFanout(
  name: string,
  make: () => Promise<RenameSuiteFixture>,
  /** The write path's bounds: the fan-out waits B + V + T + 2S after a rename. */
  policy: Pick<HistoryPolicy, 'writeBudgetMs' | 'viewBudgetMs' | 'batchTimeoutMs' | 'clockSkewMs'>,
) {
  describe(`rename fan-out: ${name}`, () => {
    async function setup() {
      const fixture = await make();
      const { store, hooks } = hooked(fixture.store);
      const errors: unknown[] = [];
      const progress: number[] = [];
      const service = () =>
        new GraphService({
          store,
          lists: new BucketedListService({
            store,
            cursorSecret: 'rename-fanout-secret-0123456789',
            bucketThresholds: [1_000_000_000],
            layoutCacheTtlMs: 0,
          }),
          maxFollowing: 7500,
          countLeaseMs: 0,
          historyPolicy: policy,
          events: false,
          onTaskError: (_id, e) => errors.push(e),
          onRenameProgress: (_id, done) => progress.push(done),
        });
      const graph = service();
      const ids = (n: number) => Array.from({ length: n }, () => nextId++);
      const users = async (list: UserId[]) => {
        for (const id of list) await graph.putUser({ id, username: `u${id}` });
      };
      await graph.putUser({ id: X, username: 'xavier' });
      /** A whole page of `list` (50 items, both cursors left out when null). */
      const page = async (list: ListKey) => {
        const p = await graph.listPage(list, 50, null);
        return { items: p.items, nextCursor: p.nextCursor };
      };
      /** X as the member of a counterpart's list, named `username`. */
      const xAs = (createdAt: bigint, username: string) => ({
        items: [{ id: X, createdAt, username }],
        nextCursor: null,
      });
      const task = () => store.getAccountTask(X, 'rename_fanout');
      return { fixture, store, hooks, graph, service, ids, users, page, xAs, errors, progress, task };
    }

    it('a rename reaches every row that names the account: following and followers rows both ways, relation lists', async () => {
      const s = await setup();
      try {
        const fans = s.ids(5);
        const followed = s.ids(2);
        const muted = s.ids(1);
        await s.users([...fans, ...followed, ...muted]);
        const fanAt = new Map<UserId, bigint>();
        for (const f of fans) fanAt.set(f, (await s.graph.follow(f, X)).position);
        const followedAt = new Map<UserId, bigint>();
        for (const g of followed) followedAt.set(g, (await s.graph.follow(X, g)).position);
        const mutedAt = (await s.graph.mute(X, muted[0] as UserId)).position;
        for (const f of fans)
          expect(await s.page(listOut(f, 'follows'))).toEqual(s.xAs(fanAt.get(f) as bigint, 'xavier'));

        await s.graph.putUser({ id: X, username: 'xena' });
        await s.graph.settleAccountTasks();

        for (const f of fans)
          expect(await s.page(listOut(f, 'follows'))).toEqual(s.xAs(fanAt.get(f) as bigint, 'xena'));
        for (const g of followed)
          expect(await s.page(listIn(g, 'follows'))).toEqual(s.xAs(followedAt.get(g) as bigint, 'xena'));
        expect(await s.store.listBucket(listIn(muted[0] as UserId, 'mutes'), 1, null, 10)).toEqual([
          { createdAt: mutedAt, otherId: X, username: 'xena' },
        ]);
        // The account's own lists name the others, unchanged.
        expect((await s.page(listIn(X, 'follows'))).items.map((i) => i.username)).toEqual(
          [...fans].reverse().map((f) => `u${f}`),
        );
        expect(await s.task()).toBeNull();
        expect(s.errors).toEqual([]);
      } finally {
        await s.fixture.teardown();
      }
    });

    it('a crashed run resumes from its last committed page, with its progress', async () => {
      const s = await setup();
      try {
        const fans = s.ids(7);
        await s.users(fans);
        const at = new Map<UserId, bigint>();
        for (const f of fans) at.set(f, (await s.graph.follow(f, X)).position);
        // The service's own run fails at once; the task stays recorded.
        s.hooks.failSetNames = 1;
        await s.graph.putUser({ id: X, username: 'xena' });
        await s.graph.settleAccountTasks();
        expect(s.errors).toHaveLength(1);
        // A run of pages of 2 (a partition, so a write, per row) fails at its third page, after
        // two committed pages.
        let writes = 0;
        const wrapped = new Proxy(s.store, {
          get(target, prop) {
            const v = Reflect.get(target, prop, target) as unknown;
            if (prop === 'setListUsernames')
              return async (...a: unknown[]) => {
                if (++writes === 5) throw new Error('injected crash');
                return (v as (...a: unknown[]) => Promise<void>).apply(target, a);
              };
            return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
          },
        });
        const progress: number[] = [];
        await expect(
          runRenameFanout(wrapped, X, { pageSize: 2, onProgress: (_o, d) => progress.push(d) }),
        ).rejects.toThrow('injected crash');
        expect(progress).toEqual([2, 4]);
        const stored = decodeRenameCursor((await s.task())?.cursor ?? null);
        expect({ done: stored.done, relation: stored.relation, direction: stored.direction }).toEqual({
          done: 4,
          relation: 'follows',
          direction: 'in',
        });
        // Resumed: the rest only (the list `follows/in` from its cursor, then the empty lists).
        const after: number[] = [];
        const visited = await runRenameFanout(s.store, X, {
          pageSize: 2,
          onProgress: (_o, d) => after.push(d),
        });
        expect(visited).toBe(3);
        expect(after.at(-1)).toBe(7);
        for (const f of fans)
          expect(await s.page(listOut(f, 'follows'))).toEqual(s.xAs(at.get(f) as bigint, 'xena'));
        expect(await s.task()).toBeNull();
      } finally {
        await s.fixture.teardown();
      }
    });

    it('regression: an unfollow while the fan-out runs is not undone (the name is written at the row’s own write time)', async () => {
      const s = await setup();
      try {
        const fans = s.ids(4) as [UserId, UserId, UserId, UserId];
        await s.users(fans);
        const at = new Map<UserId, bigint>();
        for (const f of fans) at.set(f, (await s.graph.follow(f, X)).position);
        // After the task read the write time of fans[1]'s row for X, before it writes: fans[1] unfollows.
        s.hooks.afterVersionsOf = {
          userId: fans[1],
          run: async () => {
            await s.graph.unfollow(fans[1], X);
          },
        };
        await s.graph.putUser({ id: X, username: 'xena' });
        await s.graph.settleAccountTasks();
        expect(await s.page(listOut(fans[1], 'follows'))).toEqual({ items: [], nextCursor: null });
        expect(await s.store.listBucket(listOut(fans[1], 'follows'), 1, null, 10)).toEqual([]);
        for (const f of [fans[0], fans[2], fans[3]])
          expect(await s.page(listOut(f, 'follows'))).toEqual(s.xAs(at.get(f) as bigint, 'xena'));
        expect((await s.page(listIn(X, 'follows'))).items.map((i) => i.id)).toEqual([
          fans[3],
          fans[2],
          fans[0],
        ]);
        expect(s.errors).toEqual([]);
      } finally {
        await s.fixture.teardown();
      }
    });

    it('regression: a follow that read the old name and landed after the rename is rewritten (the walk waits out the write path’s bound)', async () => {
      const s = await setup();
      try {
        const [late] = s.ids(1) as [UserId];
        await s.users([late]);
        // The follow has read both users ("xavier"); before its rows land, X is renamed, and the
        // rows land 30 ms later, well within the follow's budget.
        s.hooks.beforeWriteEdges = async () => {
          await s.graph.putUser({ id: X, username: 'xena' });
          await new Promise((r) => setTimeout(r, 30));
        };
        const { position } = await s.graph.follow(late, X);
        expect(await s.page(listOut(late, 'follows'))).toEqual(s.xAs(position, 'xavier'));
        await s.graph.settleAccountTasks();
        expect(await s.page(listOut(late, 'follows'))).toEqual(s.xAs(position, 'xena'));
        expect(s.errors).toEqual([]);
      } finally {
        await s.fixture.teardown();
      }
    });

    it('regression: a rename back to an earlier name (A → B → A) keeps the account in search (seed 930922898)', async () => {
      const s = await setup();
      try {
        const fans = s.ids(3);
        await s.users(fans);
        const at = new Map<UserId, bigint>();
        for (const f of fans) at.set(f, (await s.graph.follow(f, X)).position);
        const found = async (q: string) => {
          const out: [UserId, string[]][] = [];
          for (const f of fans) {
            const p = await s.graph.search(listOut(f, 'follows'), q, 10, null);
            out.push([f, p.items.map((i) => i.username)]);
          }
          return out;
        };
        for (const username of ['xena', 'xavier', 'xena', 'xavier']) {
          await s.graph.putUser({ id: X, username });
          await s.graph.settleAccountTasks();
          expect(await found('x')).toEqual(fans.map((f) => [f, [username]]));
          for (const f of fans)
            expect(await s.page(listOut(f, 'follows'))).toEqual(s.xAs(at.get(f) as bigint, username));
        }
        // An unfollow after the renames still removes the row (the renames wrote below its version).
        await s.graph.unfollow(fans[0] as UserId, X);
        expect(await found('x')).toEqual([
          [fans[0], []],
          [fans[1], ['xavier']],
          [fans[2], ['xavier']],
        ]);
        expect(s.errors).toEqual([]);
      } finally {
        await s.fixture.teardown();
      }
    });

    it('regression: two renames in a row leave the newer name, whatever the names’ order', async () => {
      const s = await setup();
      try {
        const fans = s.ids(6);
        await s.users(fans);
        const at = new Map<UserId, bigint>();
        for (const f of fans) at.set(f, (await s.graph.follow(f, X)).position);
        // The first rename ("zed") writes its first partition; then X is renamed "amy".
        s.hooks.beforeSetNames = async () => {
          s.hooks.beforeSetNames = null;
          await s.graph.putUser({ id: X, username: 'amy' });
        };
        await s.graph.putUser({ id: X, username: 'zed' });
        await s.graph.settleAccountTasks();
        for (const f of fans)
          expect(await s.page(listOut(f, 'follows'))).toEqual(s.xAs(at.get(f) as bigint, 'amy'));
        expect(await s.task()).toBeNull();
        expect(s.errors).toEqual([]);
      } finally {
        await s.fixture.teardown();
      }
    });
  });
}
