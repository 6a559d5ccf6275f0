/**
 * The scorer against a naive reference (Maps, whole sorts) on random small follow graphs: same
 * candidates, scores, order and `via` for every user, with random deactivated and hide_lists
 * accounts and fan-out limits. The seed is printed; rerun one with `SUGGEST_SEED=…`. Then the
 * whole job on the in-memory store for the intermediaries a viewer may not see through.
 */
import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import {
  EXCLUDE_CANDIDATE,
  EXCLUDE_VIA,
  FollowSnapshotBuilder,
  runSuggestions,
  SuggestionScratch,
  topCandidates,
  VIA,
} from '../../src/jobs/suggest.js';
import { SingleBucketLists } from '../graph/support/single-bucket-lists.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';

type Item = { id: bigint; score: number; via: bigint[] };

/** Deactivated accounts are neither candidates nor intermediaries; hide_lists ones are not intermediaries. */
function naive(
  edges: [bigint, bigint][],
  dead: Set<bigint>,
  hidden: Set<bigint>,
  u: bigint,
  k: number,
  limit: number,
): Item[] {
  const out = new Map<bigint, Set<bigint>>();
  for (const [a, b] of edges) if (a !== b) out.set(a, (out.get(a) ?? new Set()).add(b));
  const mine = out.get(u) ?? new Set<bigint>();
  const deg = (z: bigint) => out.get(z)?.size ?? 0;
  const zs = [...mine].filter((z) => deg(z) > 0 && deg(z) <= limit && !dead.has(z) && !hidden.has(z));
  zs.sort((a, b) => deg(a) - deg(b) || (a < b ? -1 : 1));
  const score = new Map<bigint, number>();
  const via = new Map<bigint, bigint[]>();
  for (const z of zs) {
    const w = 1 / Math.log(1 + deg(z));
    for (const x of [...(out.get(z) ?? [])].sort((a, b) => (a < b ? -1 : 1))) {
      if (x === u || mine.has(x) || dead.has(x)) continue;
      score.set(x, (score.get(x) ?? 0) + w);
      const v = via.get(x) ?? [];
      if (v.length < VIA) v.push(z);
      via.set(x, v);
    }
  }
  return [...score]
    .map(([id, s]) => ({
      id,
      score: Math.round(s * 1e6) / 1e6,
      via: via.get(id) ?? [],
    }))
    .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1))
    .slice(0, k);
}

it('topCandidates equals the naive Adamic–Adar reference', () => {
  const seed = Number(process.env.SUGGEST_SEED ?? Date.now() % 2 ** 31);
  console.log(`suggest scorer property seed: ${seed}`);
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 12 })), { maxLength: 80 }),
      fc.array(fc.integer({ min: 1, max: 12 }), { maxLength: 3 }),
      fc.array(fc.integer({ min: 1, max: 12 }), { maxLength: 3 }),
      fc.integer({ min: 1, max: 8 }),
      fc.integer({ min: 1, max: 6 }),
      (pairs, deadIds, hiddenIds, limit, k) => {
        const edges = pairs.map(([a, b]) => [BigInt(a) * 1000n, BigInt(b) * 1000n] as [bigint, bigint]);
        const dead = new Set(deadIds.map((d) => BigInt(d) * 1000n));
        const hidden = new Set(hiddenIds.map((d) => BigInt(d) * 1000n));
        const b = new FollowSnapshotBuilder();
        for (const [x, y] of edges) b.add(x, y);
        const g = b.build();
        const excluded = new Uint8Array(g.n);
        g.ids.forEach((id, i) => {
          if (dead.has(id)) excluded[i] = EXCLUDE_CANDIDATE | EXCLUDE_VIA;
          else if (hidden.has(id)) excluded[i] = EXCLUDE_VIA;
        });
        const s = new SuggestionScratch(g.n);
        for (let u = 0; u < g.n; u++) {
          const got = topCandidates(g, u, k, limit, excluded, s).map((c) => ({
            id: g.ids[c.x] as bigint,
            score: c.score,
            via: c.via.map((z) => g.ids[z] as bigint),
          }));
          expect(got).toEqual(naive(edges, dead, hidden, g.ids[u] as bigint, k, limit));
        }
      },
    ),
    { seed, numRuns: 200 },
  );
});

describe('the job and its read on the in-memory store', () => {
  let store: MemoryGraphStore;
  let graph: GraphService;
  const w1 = 1 / Math.log(2); // an intermediary following one account
  const round = (x: number) => Math.round(x * 1e6) / 1e6;
  const suggested = async (u: bigint) =>
    (await graph.suggestions(u, 20)).map((s) => ({
      id: s.id,
      score: s.score,
      via: s.via,
    }));

  beforeEach(async () => {
    store = new MemoryGraphStore();
    graph = new GraphService({
      store,
      lists: new SingleBucketLists(store),
      maxFollowing: 7500,
    });
    for (let id = 1n; id <= 12n; id++) await graph.putUser({ id, username: `u${id}` });
  });

  it('a deactivated or hide_lists intermediary is neither in via nor in the score (via would reveal its follows)', async () => {
    // 1 → 2, 3, 4; 2 → 5; 3 (hide_lists) → 5, 6; 4 (deactivated) → 5, 7.
    for (const [a, b] of [
      [1n, 2n],
      [1n, 3n],
      [1n, 4n],
      [2n, 5n],
      [3n, 5n],
      [3n, 6n],
      [4n, 5n],
      [4n, 7n],
    ] as const)
      await graph.follow(a, b);
    await graph.putUser({ id: 3n, hideLists: true });
    await graph.putUser({ id: 4n, state: 'deactivated' });
    await graph.settleAccountTasks();
    await runSuggestions(store, { top: 100, limitFanout: 5000 });
    // Only 2 may be seen through: 5 ← 2 alone; 6 (only via 3) and 7 (only via 4) are not suggested.
    expect(await suggested(1n)).toEqual([{ id: 5n, score: round(w1), via: [2n] }]);
  });

  it('an intermediary hidden since the run leaves via at read time, and a candidate with no named intermediary left is dropped', async () => {
    // 1 → 2, 3, 4, 5, 6; 2, 3, 4 → 9; 5 → 10; 6 → 11 (every intermediary follows one account).
    for (const [a, b] of [
      [1n, 2n],
      [1n, 3n],
      [1n, 4n],
      [1n, 5n],
      [1n, 6n],
      [2n, 9n],
      [3n, 9n],
      [4n, 9n],
      [5n, 10n],
      [6n, 11n],
    ] as const)
      await graph.follow(a, b);
    await runSuggestions(store, { top: 100, limitFanout: 5000 });
    expect(await suggested(1n)).toEqual([
      { id: 9n, score: round(3 * w1), via: [2n, 3n, 4n] },
      { id: 10n, score: round(w1), via: [5n] },
      { id: 11n, score: round(w1), via: [6n] },
    ]);
    await graph.putUser({ id: 2n, hideLists: true });
    await graph.putUser({ id: 3n, state: 'deactivated' });
    await graph.block(5n, 1n); // 5 now blocks 1 (which also ends 1 → 5)
    await graph.unfollow(1n, 6n); // 1 no longer follows 6
    await graph.settleAccountTasks();
    // The score is the run's (it is not recomputed at read time); only what 1 may see is named.
    expect(await suggested(1n)).toEqual([{ id: 9n, score: round(3 * w1), via: [4n] }]);
  });
});
