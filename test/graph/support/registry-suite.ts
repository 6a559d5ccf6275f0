/**
 * The in-memory registry of deactivated accounts (`src/graph/accounts/deactivated-accounts.ts`) across
 * instances, on any store: two `GraphService` instances share one store; a deactivation or a
 * reactivation acknowledged by A is enforced on B's followers page within the API's 1 s bound,
 * read from memory; when B's feed tail stops polling, B's pages fall back to per-member reads once
 * the staleness bound has passed, and stay right. Every page is asserted whole.
 */
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { GraphService } from '../../../src/graph/graph-service.js';
import { BucketedListService } from '../../../src/lists/list-service.js';
import { listIn, type UserId } from '../../../src/model/types.js';
import type { GraphStore } from '../../../src/ports/graph-store.js';

export interface RegistrySuiteFixture {
  store: GraphStore;
  teardown: () => Promise<void>;
}

/** The API's cross-instance bound for a deactivation (spec Part 3). */
const CROSS_INSTANCE_MS = 1000;

/**
 * `store` counting the ids of every user read, with a switch that fails every feed read and a
 * delay every feed read answers after (read at once, answered late).
 */
function observed(store: GraphStore) {
  const state = { userReads: [] as UserId[], failFeed: false, feedDelayMs: 0 };
  const wrapped = new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      const fn = (value as (...a: unknown[]) => Promise<unknown>).bind(target);
      if (prop === 'getUsers')
        return (ids: readonly UserId[]) => {
          state.userReads.push(...ids);
          return fn(ids);
        };
      if (prop === 'getUser')
        return (id: UserId) => {
          state.userReads.push(id);
          return fn(id);
        };
      if (prop === 'readEventRows')
        return async (...a: unknown[]) => {
          if (state.failFeed) throw new Error('injected: feed read failed');
          const rows = await fn(...a);
          if (state.feedDelayMs > 0) await sleep(state.feedDelayMs);
          return rows;
        };
      return fn;
    },
  });
  return { store: wrapped, state };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function describeRegistryAcrossInstances(name: string, make: () => Promise<RegistrySuiteFixture>) {
  describe(`deactivated registry across instances: ${name}`, () => {
    const OWNER = 1n;
    const FANS = [11n, 12n, 13n, 14n, 15n] as const;

    /** Two instances; A's clock `aheadMicros` ahead of B's (and of the real one). */
    async function setup(aheadMicros = 0n) {
      const fixture = await make();
      const b = observed(fixture.store);
      const service = (store: GraphStore, offsetMicros = 0n) =>
        new GraphService({
          store,
          clock: () => BigInt(Date.now()) * 1000n + offsetMicros,
          lists: new BucketedListService({
            store,
            cursorSecret: 'registry-suite-secret-0123456789',
            bucketThresholds: [1_000_000_000],
            layoutCacheTtlMs: 0,
          }),
          maxFollowing: 7500,
          countLeaseMs: 0,
        });
      const A = service(fixture.store, aheadMicros);
      const B = service(b.store);
      for (const id of [OWNER, ...FANS]) await A.putUser({ id, username: `u${id}` });
      const at = new Map<UserId, bigint>();
      for (const f of FANS) at.set(f, (await A.follow(f, OWNER)).position);
      /** B's followers page of the owner, whole, and the user rows it read. */
      const pageOnB = async () => {
        b.state.userReads = [];
        const p = await B.listPage(listIn(OWNER, 'follows'), 50, null);
        return { page: { items: p.items, nextCursor: p.nextCursor }, userReads: [...b.state.userReads] };
      };
      /** The page that shows `fans`, newest first. */
      const expected = (fans: readonly UserId[]) => ({
        items: [...fans].reverse().map((id) => ({ id, createdAt: at.get(id) as bigint, username: `u${id}` })),
        nextCursor: null,
      });
      /** B's registry loaded and its tail polled (so its pages read from memory). */
      const warm = async () => {
        await B.registry?.filter([0n]);
        while (!B.registry?.fresh()) await sleep(20);
      };
      /** Polls B's page until it equals `want`, or `withinMs` passed; returns the ms it took. */
      const until = async (want: ReturnType<typeof expected>, withinMs: number) => {
        const started = Date.now();
        for (;;) {
          const { page } = await pageOnB();
          const took = Date.now() - started;
          if (isDeepStrictEqual(page, want) || took > withinMs) return { page, took };
          await sleep(25);
        }
      };
      const close = async () => {
        for (const g of [A, B]) {
          g.registry?.close();
          g.feed.close();
        }
        await fixture.teardown();
      };
      return { A, B, b, pageOnB, expected, warm, until, close };
    }

    it('a deactivation on A is enforced on B’s followers page within 1 s, from B’s registry (no user rows read); a reactivation likewise', async () => {
      const s = await setup();
      try {
        await s.warm();
        expect(await s.pageOnB()).toEqual({ page: s.expected(FANS), userReads: [] });

        await s.A.putUser({ id: 12n, state: 'deactivated' });
        const hidden = await s.until(s.expected([11n, 13n, 14n, 15n]), 3 * CROSS_INSTANCE_MS);
        console.log(`deactivation seen on B after ${hidden.took} ms`);
        expect(hidden.page).toEqual(s.expected([11n, 13n, 14n, 15n]));
        expect(hidden.took).toBeLessThanOrEqual(CROSS_INSTANCE_MS);
        expect(await s.pageOnB()).toEqual({ page: s.expected([11n, 13n, 14n, 15n]), userReads: [] });

        await s.A.putUser({ id: 12n, state: 'active' });
        const shown = await s.until(s.expected(FANS), 3 * CROSS_INSTANCE_MS);
        console.log(`reactivation seen on B after ${shown.took} ms`);
        expect(shown.page).toEqual(s.expected(FANS));
        expect(shown.took).toBeLessThanOrEqual(CROSS_INSTANCE_MS);
        expect(await s.pageOnB()).toEqual({ page: s.expected(FANS), userReads: [] });
      } finally {
        await s.close();
      }
    });

    // B's tail must read A's row as soon as it lands: not only once B's clock passes its slot (A
    // ahead), and however far behind B's clock its slot looks (A behind), within the 2 s bound.
    for (const [how, aheadMicros] of [
      ['1.5 s ahead of', 1_500_000n],
      ['2.5 s behind', -2_500_000n],
    ] as const) {
      it(`with A’s clock ${how} B’s (the clocks within their 2 s bound), a deactivation on A is still enforced on B within 1 s`, async () => {
        const s = await setup(aheadMicros);
        try {
          await s.warm();
          await s.A.putUser({ id: 13n, state: 'deactivated' });
          const hidden = await s.until(s.expected([11n, 12n, 14n, 15n]), 3 * CROSS_INSTANCE_MS);
          console.log(`deactivation by a clock ${how} B's seen on B after ${hidden.took} ms`);
          expect(hidden.page).toEqual(s.expected([11n, 12n, 14n, 15n]));
          expect(hidden.took).toBeLessThanOrEqual(CROSS_INSTANCE_MS);
          expect(await s.pageOnB()).toEqual({ page: s.expected([11n, 12n, 14n, 15n]), userReads: [] });
        } finally {
          await s.close();
        }
      });
    }

    it('while B’s tail polls answer 0.9 s late, B’s registry never answers from what it knew more than 1 s ago', async () => {
      // Fresh is dated from the start of the last poll that caught up (what it read as of), not its
      // end: B's registry may then say "don't know" (per-member reads), never "active" past 1 s.
      const s = await setup();
      try {
        await s.warm();
        s.b.state.feedDelayMs = 900;
        await sleep(1000);
        const stale: number[] = [];
        for (const id of [12n, 13n, 14n]) {
          await s.A.putUser({ id, state: 'deactivated' });
          const acked = Date.now();
          while (Date.now() - acked < 2500) {
            const since = Date.now() - acked;
            if (since > CROSS_INSTANCE_MS && s.B.registry?.isDeactivated(id) === false) stale.push(since);
            await sleep(10);
          }
        }
        expect(stale).toEqual([]);
        const { page } = await s.pageOnB();
        expect(page).toEqual(s.expected([11n, 15n]));
      } finally {
        await s.close();
      }
    });

    it('when B’s feed tail stops polling, B’s pages read members’ rows once the registry is stale (1 s), and stay right', async () => {
      const s = await setup();
      try {
        await s.warm();
        await s.A.putUser({ id: 12n, state: 'deactivated' });
        await s.until(s.expected([11n, 13n, 14n, 15n]), 3 * CROSS_INSTANCE_MS);
        // B's tail fails from now on; A deactivates 14, which B's registry never hears of.
        s.b.state.failFeed = true;
        await s.A.putUser({ id: 14n, state: 'deactivated' });
        await sleep(CROSS_INSTANCE_MS + 300);
        expect(s.B.registry?.fresh()).toBe(false);
        const { page, userReads } = await s.pageOnB();
        expect(page).toEqual(s.expected([11n, 13n, 15n]));
        expect([...new Set(userReads)].sort()).toEqual([...FANS].sort());
      } finally {
        await s.close();
      }
    });
  });
}
