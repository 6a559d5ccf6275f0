/**
 * The power-law background graph `bench:load` writes beside the celebrity: `users` accounts
 * (ids `BACKGROUND_FIRST + i`), each following `outDegree(i)` distinct others.
 *
 * - Out-degrees are Pareto (α = 2, so the mean is twice the scale), scaled to `meanFollows` and
 *   capped at `maxFollows` and `users − 1`: most accounts follow a few, a few follow thousands.
 * - Targets are Zipf (s = 1) over popularity ranks, rank r being user r: in-degrees follow a
 *   power law, user 0 the most followed.
 *
 * Everything is a pure function of (seed, i): a resumed load regenerates the very same follows
 * for any chunk of users, so writes stay idempotent. Construction makes one pass over every
 * follow to know each user's in-degree (its follower count, hence its bucket layout) and the
 * prefix sums of out-degrees (each follow's unique position): O(users) memory in typed arrays,
 * never one object per edge.
 */

import { mulberry32 } from '../../test/support/random.js';

/** The first background id: above the celebrity's followers, below `bench:follow`'s fresh ids. */
export const BACKGROUND_FIRST = 9_000_000_000n;
export const MAX_BACKGROUND_USERS = 100_000_000;

export interface BackgroundGraph {
  users: number;
  edges: number;
  /** The follows of user i, as user indexes (distinct, never i), in generation order. */
  targets(i: number): number[];
  /** Index of user i's first follow in the global sequence (follow k of i is `offset(i) + k`). */
  offset(i: number): number;
  outDegree(i: number): number;
  inDegree(i: number): number;
}

/** splitmix32-style mix of two integers into a 32-bit seed. */
function mix(a: number, b: number): number {
  let h = (Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) + Math.imul(b, 0xc2b2ae35)) | 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
  return (h ^ (h >>> 16)) >>> 0;
}

export function backgroundGraph(o: {
  users: number;
  meanFollows: number;
  maxFollows: number;
  seed: number;
}): BackgroundGraph {
  const users = o.users;
  if (!Number.isInteger(users) || users < 0 || users > MAX_BACKGROUND_USERS) {
    throw new Error(`background users must be an integer in [0, ${MAX_BACKGROUND_USERS}]`);
  }
  const cap = Math.max(0, Math.min(o.maxFollows, users - 1));
  // Zipf(1) over ranks: cumulative weights 1/1, 1/2, …, searched by bisection.
  const cdf = new Float64Array(users);
  let total = 0;
  for (let r = 0; r < users; r++) {
    total += 1 / (r + 1);
    cdf[r] = total;
  }
  const pick = (u: number) => {
    const x = u * total;
    let lo = 0;
    let hi = users - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((cdf[mid] as number) < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const scale = o.meanFollows / 2;
  const outDeg = (i: number) => {
    if (cap === 0) return 0;
    const r = mulberry32(mix(o.seed, i));
    // Pareto(α = 2, scale): scale / sqrt(u), u in (0, 1].
    return Math.min(cap, Math.max(1, Math.floor(scale / Math.sqrt(1 - r()))));
  };
  const targets = (i: number): number[] => {
    const k = outDeg(i);
    const r = mulberry32(mix(o.seed ^ 0x5bd1e995, i));
    const chosen = new Set<number>();
    const out: number[] = [];
    // Zipf draws repeat the popular ranks; after enough misses, fall back to uniform draws so
    // that a heavy follower of a small graph still terminates.
    let misses = 0;
    while (out.length < k) {
      const t = misses < 64 * k ? pick(r()) : Math.floor(r() * users);
      if (t === i || chosen.has(t)) {
        misses++;
        continue;
      }
      chosen.add(t);
      out.push(t);
    }
    return out;
  };
  const offsets = new Float64Array(users + 1);
  const inDeg = new Int32Array(users);
  for (let i = 0; i < users; i++) {
    const ts = targets(i);
    offsets[i + 1] = (offsets[i] as number) + ts.length;
    for (const t of ts) inDeg[t] = (inDeg[t] as number) + 1;
  }
  return {
    users,
    edges: offsets[users] as number,
    targets,
    offset: (i) => offsets[i] as number,
    outDegree: (i) => (offsets[i + 1] as number) - (offsets[i] as number),
    inDegree: (i) => inDeg[i] as number,
  };
}
