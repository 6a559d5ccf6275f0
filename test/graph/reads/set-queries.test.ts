/**
 * Set queries (mutuals, not-followed-back) on the in-memory store behind the real bucketed list
 * service: whole pages against references computed from the whole lists, on random graphs, for
 * several limits, both driving sides; the member filter; the rows-read budget; cursor binding.
 * Replay a failure with `SET_SEED=<seed>` (printed every run).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GraphService } from '../../../src/graph/graph-service.js';
import type { SetPageStats } from '../../../src/graph/reads/set-queries.js';
import type { MemberFilter } from '../../../src/lists/contracts.js';
import { SetCursorCodec } from '../../../src/lists/cursor/set-cursor.js';
import { BucketedListService } from '../../../src/lists/list-service.js';
import { nowPosition } from '../../../src/model/clock.js';
import { InvalidCursorError } from '../../../src/model/errors.js';
import type { UserId } from '../../../src/model/types.js';
import { MemoryGraphStore } from '../../support/memory/graph-store.js';
import {
  chunk,
  expectWalksMatch,
  graphArb,
  reference,
  seedOf,
  walkSet,
  wholeList,
  writeGraph,
} from '../support/set-reference.js';

const SECRET = 'set-queries-secret-0123456789';
const LIMITS = [1, 2, 3, 7, 50];

function build(
  o: { memberFilter?: MemberFilter; setBudget?: (limit: number) => number; caches?: false } = {},
) {
  const store = new MemoryGraphStore();
  const lists = new BucketedListService({
    store,
    cursorSecret: SECRET,
    bucketThresholds: [1_000_000_000],
    layoutCacheTtlMs: 0,
  });
  const graph = new GraphService({ store, lists, maxFollowing: 10_000, setCursorSecret: SECRET, ...o });
  return { store, graph };
}

/** Some users' lists get 4 buckets before any write, so the driving pages merge buckets. */
async function spreadLayouts(store: MemoryGraphStore, ids: readonly UserId[]) {
  for (const id of ids.filter((_, i) => i % 2 === 0)) {
    for (const direction of ['in', 'out'] as const)
      await store.putLayout(
        { userId: id, relation: 'follows', direction },
        { buckets: 4, growingTo: null, copiedThrough: 0 },
      );
  }
}

describe('set queries against whole-list references (random graphs)', () => {
  it('every page equals the reference page, for several limits and both driving sides', async () => {
    const sides = { in: 0, out: 0 };
    await fc.assert(
      fc.asyncProperty(graphArb(9, 6), async (g) => {
        const { store, graph } = build();
        const base = 100n;
        await spreadLayouts(
          store,
          Array.from({ length: g.users }, (_, i) => base + BigInt(i)),
        );
        const ids = await writeGraph(graph, g, base, nowPosition() - 1_000_000_000n);
        await expectWalksMatch(graph, ids, LIMITS, {
          onWalk: (kind, walk) => {
            const driving = walk.stats[0]?.driving ?? 'out';
            if (kind === 'mutuals') sides[driving]++;
            expect(walk.stats.every((s) => s.driving === driving && !s.budgetHit)).toBe(true);
          },
        });
      }),
      { seed: seedOf('set pages'), numRuns: 25 },
    );
    console.log(`mutuals walks by driving side: ${JSON.stringify(sides)}`);
    expect(sides.in > 0 && sides.out > 0).toBe(true);
  });

  it("since / until: every page equals the reference filtered by the driving side's followed_at", async () => {
    let runs = 0;
    let hits = 0;
    await fc.assert(
      fc.asyncProperty(
        graphArb(8, 8),
        fc.option(fc.integer({ min: 0, max: 9 })),
        fc.option(fc.integer({ min: 1, max: 10 })),
        async (g, sinceTick, untilTick) => {
          if (sinceTick !== null && untilTick !== null && sinceTick >= untilTick) return;
          const { store, graph } = build();
          const base = 100n;
          await spreadLayouts(
            store,
            Array.from({ length: g.users }, (_, i) => base + BigInt(i)),
          );
          const origin = nowPosition() - 1_000_000_000n;
          const ids = await writeGraph(graph, g, base, origin);
          runs++;
          const at = (tick: number | null) => (tick === null ? null : origin + BigInt(tick) * 1000n);
          const bounds = { since: at(sinceTick), until: at(untilTick) };
          const inRange = (t: bigint) =>
            (bounds.since === null || t >= bounds.since) && (bounds.until === null || t < bounds.until);
          await expectWalksMatch(graph, ids, [1, 3, 50], {
            bounds,
            keep: (i) => inRange(i.createdAt),
            onWalk: (_kind, _walk, ref) => {
              hits += ref.length;
            },
          });
        },
      ),
      { seed: seedOf('set pages with since/until'), numRuns: 40 },
    );
    console.log(`since/until: ${runs} graphs with a non-empty range, ${hits} items expected in all`);
    expect(runs > 10 && hits > 0).toBe(true);
  });

  it('mutuals drive from the smaller side and keep its order', async () => {
    const { graph } = build();
    const [a, b, c, d] = [1n, 2n, 3n, 4n];
    for (const id of [a, b, c, d]) await graph.putUser({ id, username: `u${id}` });
    const at = nowPosition() - 1_000_000n;
    // a follows b (t1), c (t2); b, c and d follow a (t3, t4, t5): following (2) < followers (3).
    await graph.follow(a, b, { position: at + 1n });
    await graph.follow(a, c, { position: at + 2n });
    await graph.follow(b, a, { position: at + 5n });
    await graph.follow(c, a, { position: at + 4n });
    await graph.follow(d, a, { position: at + 3n });
    const p = await graph.setPage('mutuals', a, 10, null);
    expect([p.items, p.nextCursor, p.stats.driving]).toEqual([
      [
        { id: c, createdAt: at + 2n, username: 'u3' },
        { id: b, createdAt: at + 1n, username: 'u2' },
      ],
      null,
      'out',
    ]);
    // Followers drive for b: b follows a (t5) and follows c, d later; a is b's one follower.
    await graph.follow(b, c, { position: at + 6n });
    await graph.follow(b, d, { position: at + 7n });
    const q = await graph.setPage('mutuals', b, 10, null);
    expect([q.items, q.nextCursor, q.stats.driving]).toEqual([
      [{ id: a, createdAt: at + 1n, username: 'u1' }],
      null,
      'in',
    ]);
  });
});

describe.each([
  ['from the cached whole following list', {}, null],
  ['on the set walk (caches off)', { caches: false as const }, null],
  ['with a cap of 2 (a second service reads: lists over it on the set walk)', {}, 2],
])('followed-by %s', (name, options, readCap) => {
  it('sample = the first `limit` of following(viewer) ∩ followers(id), closest first (close friends, then follow-backs, then following order); total = its size', async () => {
    let ranked = 0;
    let served = 0;
    let overCap = 0;
    await fc.assert(
      fc.asyncProperty(
        graphArb(8, 6),
        fc.array(fc.integer({ min: 0, max: 7 })),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 7 }), fc.integer({ min: 0, max: 7 })), { maxLength: 20 }),
        fc.constantFrom(1, 2, 3, 10),
        async (g, hiddenIdx, closePairs, limit) => {
          const base = 100n;
          const hidden = new Set(hiddenIdx.map((i) => base + BigInt(i)));
          const memberFilter: MemberFilter = async (ids) => new Set(ids.filter((id) => hidden.has(id)));
          const { graph, store } = build({ memberFilter, ...options });
          const ids = await writeGraph(graph, g, base, nowPosition() - 1_000_000_000n);
          const reader =
            readCap === null
              ? graph
              : new GraphService({
                  store,
                  lists: new BucketedListService({
                    store,
                    cursorSecret: SECRET,
                    bucketThresholds: [1_000_000_000],
                    layoutCacheTtlMs: 0,
                  }),
                  maxFollowing: readCap,
                  setCursorSecret: SECRET,
                  memberFilter,
                });
          const close = new Set<string>();
          for (const [a, b] of closePairs) {
            if (a === b || a >= ids.length || b >= ids.length) continue;
            await graph.addCloseFriend(ids[a]!, ids[b]!);
            close.add(`${ids[a]}>${ids[b]}`);
          }
          for (const viewer of ids) {
            const following = await wholeList(graph, viewer, 'out');
            const viewerFollowers = new Set((await wholeList(graph, viewer, 'in')).map((i) => i.id));
            const tier = (x: bigint) => (close.has(`${viewer}>${x}`) ? 0 : viewerFollowers.has(x) ? 1 : 2);
            for (const id of ids) {
              const followers = new Set((await wholeList(graph, id, 'in')).map((i) => i.id));
              const hits = following.filter((i) => followers.has(i.id) && i.id !== id && !hidden.has(i.id));
              // A stable sort by tier keeps the following order (newest first) within a tier.
              const ref = [...hits].sort((a, b) => tier(a.id) - tier(b.id));
              if (new Set(hits.map((h) => tier(h.id))).size > 1) ranked++;
              expect([String(viewer), String(id), await reader.followedBy(viewer, id, limit)]).toEqual([
                String(viewer),
                String(id),
                { sample: ref.slice(0, limit), total: ref.length },
              ]);
            }
            const cached = reader.caches.following.peek(viewer);
            if (cached) served++;
            if (cached === null) overCap++;
          }
        },
      ),
      { seed: seedOf('followed-by'), numRuns: 15 },
    );
    console.log(
      `[followed-by ${name}] queries whose hits span two or more tiers: ${ranked}; viewers served from a cached list: ${served}, over the cap: ${overCap}`,
    );
    // Each variant took the paths it names.
    expect([served > 0, overCap > 0]).toEqual(
      readCap !== null ? [true, true] : 'caches' in options ? [false, false] : [true, false],
    );
    expect(ranked).toBeGreaterThan(0);
  });
});

describe('member filter', () => {
  it('pages stay full except the last; the union is the reference minus the hidden', async () => {
    await fc.assert(
      fc.asyncProperty(graphArb(9, 6), fc.array(fc.integer({ min: 0, max: 8 })), async (g, hiddenIdx) => {
        const base = 100n;
        const hidden = new Set(hiddenIdx.map((i) => base + BigInt(i)));
        const calls: number[] = [];
        const memberFilter: MemberFilter = async (ids) => {
          calls.push(ids.length);
          return new Set(ids.filter((id) => hidden.has(id)));
        };
        const { graph } = build({ memberFilter });
        const ids = await writeGraph(graph, g, base, nowPosition() - 1_000_000_000n);
        await expectWalksMatch(graph, ids, [1, 2, 5], { keep: (i) => !hidden.has(i.id) });
      }),
      { seed: seedOf('member filter'), numRuns: 20 },
    );
  });
});

describe('long lists (batches grow, pages end mid-batch)', () => {
  it('a sparse, uneven filter over 700 followers: every page equals the reference page', async () => {
    const { graph, store } = build();
    const owner = 1n;
    await graph.putUser({ id: owner, username: 'owner' });
    await store.putLayout(
      { userId: owner, relation: 'follows', direction: 'in' },
      { buckets: 4, growingTo: null, copiedThrough: 0 },
    );
    const at = nowPosition() - 1_000_000_000n;
    for (let i = 0; i < 700; i++) {
      const id = 1000n + BigInt(i);
      await graph.putUser({ id, username: `f${id}` });
      await graph.follow(id, owner, { position: at + BigInt(i >> 1) });
    }
    const all = await reference(graph, 'not_followed_back', owner, 'in');
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 60 }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 7, maxLength: 7 }),
        async (limit, density) => {
          // Keep-rates per stretch of 100 rows (newest first), so hits are sparse then dense.
          const keep = (id: UserId) => {
            const rank = all.findIndex((i) => i.id === id);
            return (Number(id) * 7919) % 1000 < 1000 * (density[Math.floor(rank / 100)] ?? 1);
          };
          const filtered = new GraphService({
            store,
            lists: new BucketedListService({ store, cursorSecret: SECRET, bucketThresholds: [1e9] }),
            maxFollowing: 10_000,
            setCursorSecret: SECRET,
            memberFilter: async (ids) => new Set(ids.filter((id) => !keep(id))),
          });
          const walk = await walkSet(filtered, 'not_followed_back', owner, limit);
          expect([limit, walk.pages]).toEqual([
            limit,
            chunk(
              all.filter((i) => keep(i.id)),
              limit,
            ),
          ]);
        },
      ),
      { seed: seedOf('long lists'), numRuns: 40 },
    );
  });
});

describe('rows-read budget', () => {
  it('a page stops at the budget with a cursor; walking on still yields the whole set in order', async () => {
    const { graph } = build({
      setBudget: () => 150,
      memberFilter: async (ids) => new Set(ids.filter((id) => id % 3n !== 0n)),
    });
    const owner = 1n;
    await graph.putUser({ id: owner, username: 'owner' });
    const at = nowPosition() - 1_000_000_000n;
    for (let i = 0; i < 1000; i++) {
      const id = 1000n + BigInt(i);
      await graph.putUser({ id, username: `f${id}` });
      await graph.follow(id, owner, { position: at + BigInt(i) });
    }
    // Only followers whose id is a multiple of 3 pass the filter (333 of 1000).
    const walk = await walkSet(graph, 'not_followed_back', owner, 200);
    const rows = walk.stats.map((s: SetPageStats) => [s.rowsRead, s.budgetHit]);
    console.log(`budget 150, limit 200: rows read per page ${JSON.stringify(rows)}`);
    const ref = (await reference(graph, 'not_followed_back', owner, 'in')).filter((i) => i.id % 3n === 0n);
    expect(walk.pages.flat()).toEqual(ref);
    // Every page but the last stopped at the budget: its first batch is cut to the 150 rows allowed.
    expect(rows).toEqual([
      [150, true],
      [150, true],
      [150, true],
      [150, true],
      [150, true],
      [150, true],
      [100, false],
    ]);
  });
});

describe('resume boundary', () => {
  it('survives a budget stop before the boundary (the limit changed between requests)', async () => {
    // Newest-first rank r is follower 1999 - r; kept: ranks 0–9 and 600–999.
    const kept = (id: UserId) => {
      const rank = 1999 - Number(id);
      return rank < 10 || rank >= 600;
    };
    const { graph } = build({
      setBudget: (limit) => (limit === 1 ? 20 : 1000),
      memberFilter: async (ids) => new Set(ids.filter((id) => !kept(id))),
    });
    const owner = 1n;
    await graph.putUser({ id: owner, username: 'owner' });
    const at = nowPosition() - 1_000_000_000n;
    for (let i = 0; i < 1000; i++) {
      const id = 1000n + BigInt(i);
      await graph.putUser({ id, username: `f${id}` });
      await graph.follow(id, owner, { position: at + BigInt(i) });
    }
    const ref = (await reference(graph, 'not_followed_back', owner, 'in')).filter((i) => kept(i.id));
    // Limit 15: batches of 100, 200, then 400 rows (ranks 300–699); the page fills at rank 604.
    const first = await graph.setPage('not_followed_back', owner, 15, null);
    expect([first.items, first.stats.rowsRead]).toEqual([ref.slice(0, 15), 700]);
    // Limit 1 (budget 20): 15 pages stop at the budget while still before rank 604 (ranks 300–599
    // re-read 20 at a time), then the walk goes on from rank 605.
    const rest: typeof ref = [];
    const rows: number[] = [];
    let cursor = first.nextCursor;
    while (cursor !== null) {
      const p = await graph.setPage('not_followed_back', owner, 1, cursor);
      rest.push(...p.items);
      rows.push(p.stats.rowsRead);
      cursor = p.nextCursor;
    }
    expect(rest).toEqual(ref.slice(15));
    expect(rows.slice(0, 16)).toEqual(Array(16).fill(20));
  });
});

describe('cursors', () => {
  it('are bound to the query kind and the owner', async () => {
    const { graph } = build();
    const at = nowPosition() - 1_000_000n;
    for (const id of [1n, 2n, 3n, 4n]) await graph.putUser({ id, username: `u${id}` });
    for (const [s, t, k] of [
      [1n, 2n, 1n],
      [2n, 1n, 2n],
      [1n, 3n, 3n],
      [3n, 1n, 4n],
      [4n, 1n, 5n],
    ] as const)
      await graph.follow(s, t, { position: at + k });
    const m = await graph.setPage('mutuals', 1n, 1, null);
    const n = await graph.setPage('not_followed_back', 1n, 1, null);
    expect([m.items.length, n.items.length, m.nextCursor !== null]).toEqual([1, 1, true]);
    const errors = await Promise.all(
      [
        graph.setPage('not_followed_back', 1n, 1, m.nextCursor),
        graph.setPage('mutuals', 2n, 1, m.nextCursor),
        graph.setPage('mutuals', 1n, 1, `${m.nextCursor}x`),
        graph.setPage('mutuals', 1n, 1, 'abc'),
      ].map((p) =>
        p.then(
          () => null,
          (e: unknown) => e,
        ),
      ),
    );
    expect(errors.map((e) => [e instanceof InvalidCursorError, (e as Error).message])).toEqual([
      [true, 'invalid cursor: cursor belongs to another query'],
      [true, 'invalid cursor: cursor belongs to another query'],
      [true, 'invalid cursor: signature mismatch'],
      [true, 'invalid cursor: not a cursor'],
    ]);
    // Another secret's token does not verify.
    const foreign = new SetCursorCodec('another-secret-0123456789').encode({
      kind: 'mutuals',
      owner: 1n,
      driving: 'out',
      inner: null,
      boundary: null,
    });
    await expect(graph.setPage('mutuals', 1n, 1, foreign)).rejects.toThrow(
      'invalid cursor: signature mismatch',
    );
  });
});

describe('a first-batch set cursor is bound to since / until', () => {
  it('a cursor from the first driving batch replayed with other bounds is an InvalidCursorError', async () => {
    const { graph } = build();
    const at = nowPosition() - 1_000_000n;
    for (const id of [1n, 2n, 3n, 4n]) await graph.putUser({ id, username: `u${id}` });
    // 1 follows 2, 3, 4 (k1..k3) and all three follow back: mutuals 4, 3, 2, following drives.
    for (const [s, t, k] of [
      [1n, 2n, 1n],
      [1n, 3n, 2n],
      [1n, 4n, 3n],
      [2n, 1n, 4n],
      [3n, 1n, 5n],
      [4n, 1n, 6n],
    ] as const)
      await graph.follow(s, t, { position: at + k });
    const bounds = { since: at + 1n, until: at + 4n };
    const first = await graph.setPage('mutuals', 1n, 1, null, bounds);
    // One page of one item ends inside the first driving batch: the cursor has no inner list cursor.
    expect([first.items, first.nextCursor !== null]).toEqual([
      [{ id: 4n, createdAt: at + 3n, username: 'u4' }],
      true,
    ]);
    const replay = (b: { since?: bigint | null; until?: bigint | null }) =>
      graph.setPage('mutuals', 1n, 1, first.nextCursor, b).then(
        (p) => p.items,
        (e: unknown) => [e instanceof InvalidCursorError, (e as Error).message],
      );
    const refused = [true, 'invalid cursor: cursor was issued for other since/until bounds'];
    expect([
      await replay(bounds),
      await replay({}),
      await replay({ since: at + 1n, until: at + 3n }),
      await replay({ since: at + 2n, until: at + 4n }),
      await replay({ since: at + 1n }),
    ]).toEqual([[{ id: 3n, createdAt: at + 2n, username: 'u3' }], refused, refused, refused, refused]);
  });
});
