/**
 * The scorer against a naive reference (Maps, whole sorts) on random small follow graphs: same
 * candidates, scores, order and `via` for every user, with random deactivated accounts and fan-out
 * limits. The seed is printed; rerun one with `SUGGEST_SEED=…`.
 */
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { FollowSnapshotBuilder, SuggestionScratch, topCandidates, VIA } from '../../src/jobs/suggest.js';

type Item = { id: bigint; score: number; via: bigint[] };

function naive(edges: [bigint, bigint][], dead: Set<bigint>, u: bigint, k: number, limit: number): Item[] {
  const out = new Map<bigint, Set<bigint>>();
  for (const [a, b] of edges) if (a !== b) out.set(a, (out.get(a) ?? new Set()).add(b));
  const mine = out.get(u) ?? new Set<bigint>();
  const deg = (z: bigint) => out.get(z)?.size ?? 0;
  const zs = [...mine].filter((z) => deg(z) > 0 && deg(z) <= limit);
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
    .map(([id, s]) => ({ id, score: Math.round(s * 1e6) / 1e6, via: via.get(id) ?? [] }))
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
      fc.integer({ min: 1, max: 8 }),
      fc.integer({ min: 1, max: 6 }),
      (pairs, deadIds, limit, k) => {
        const edges = pairs.map(([a, b]) => [BigInt(a) * 1000n, BigInt(b) * 1000n] as [bigint, bigint]);
        const dead = new Set(deadIds.map((d) => BigInt(d) * 1000n));
        const b = new FollowSnapshotBuilder();
        for (const [x, y] of edges) b.add(x, y);
        const g = b.build();
        const excluded = new Uint8Array(g.n);
        g.ids.forEach((id, i) => {
          if (dead.has(id)) excluded[i] = 1;
        });
        const s = new SuggestionScratch(g.n);
        for (let u = 0; u < g.n; u++) {
          const got = topCandidates(g, u, k, limit, excluded, s).map((c) => ({
            id: g.ids[c.x] as bigint,
            score: c.score,
            via: c.via.map((z) => g.ids[z] as bigint),
          }));
          expect(got).toEqual(naive(edges, dead, g.ids[u] as bigint, k, limit));
        }
      },
    ),
    { seed, numRuns: 200 },
  );
});
