/**
 * The reference semantics for convergence tests, written independently of `src/graph/pair/pair-fold.ts`:
 * apply the ops in position order, checking each relation's rule at that position. Plus a seeded
 * shuffle so a fast-check seed replays the same delivery order.
 */
import type { Relation } from '../../../src/model/types.js';
import { mulberry32 } from '../../support/random.js';

export const CALLS = [
  'follow',
  'unfollow',
  'removeFollower',
  'acceptRequest',
  'declineRequest',
  'block',
  'unblock',
  'mute',
  'unmute',
  'addCloseFriend',
  'removeCloseFriend',
  'restrict',
  'unrestrict',
] as const;
export type Call = (typeof CALLS)[number];

export interface Op {
  call: Call;
  actor: bigint;
  other: bigint;
  position: bigint;
}

/**
 * The reference semantics, written independently of `pair-fold.ts`: ops in position order, each
 * relation's rule checked at that position. Returns `source relation target` → created_at.
 */
export function reference(privateIds: Set<bigint>, ops: readonly Op[]): Map<string, bigint> {
  const edges = new Map<string, bigint>();
  const k = (s: bigint, r: Relation, t: bigint) => `${s} ${r} ${t}`;
  const has = (s: bigint, r: Relation, t: bigint) => edges.has(k(s, r, t));
  const set = (s: bigint, r: Relation, t: bigint, p: bigint) => {
    if (!has(s, r, t)) edges.set(k(s, r, t), p);
  };
  const del = (s: bigint, r: Relation, t: bigint) => edges.delete(k(s, r, t));
  const blocked = (a: bigint, b: bigint) => has(a, 'blocks', b) || has(b, 'blocks', a);
  for (const { call, actor: a, other: o, position: p } of [...ops].sort((x, y) =>
    x.position < y.position ? -1 : 1,
  )) {
    switch (call) {
      case 'follow':
        if (blocked(a, o)) break;
        if (privateIds.has(o)) {
          if (!has(a, 'follows', o)) set(a, 'requests', o, p);
        } else {
          set(a, 'follows', o, p);
          del(a, 'requests', o);
        }
        break;
      case 'acceptRequest':
        if (has(o, 'requests', a)) {
          del(o, 'requests', a);
          set(o, 'follows', a, p);
        }
        break;
      case 'declineRequest':
        del(o, 'requests', a);
        break;
      case 'unfollow':
        del(a, 'follows', o);
        del(a, 'requests', o);
        break;
      case 'removeFollower':
        del(o, 'follows', a);
        break;
      case 'block':
        set(a, 'blocks', o, p);
        for (const [s, t] of [
          [a, o],
          [o, a],
        ] as const) {
          del(s, 'follows', t);
          del(s, 'requests', t);
        }
        break;
      case 'unblock':
        del(a, 'blocks', o);
        break;
      case 'mute':
        set(a, 'mutes', o, p);
        break;
      case 'unmute':
        del(a, 'mutes', o);
        break;
      case 'addCloseFriend':
        set(a, 'close_friends', o, p);
        break;
      case 'removeCloseFriend':
        del(a, 'close_friends', o);
        break;
      // Owner-private, untouched by blocks (which delete follows and requests only, above).
      case 'restrict':
        set(a, 'restricts', o, p);
        break;
      case 'unrestrict':
        del(a, 'restricts', o);
        break;
    }
  }
  return edges;
}

/** Deterministic shuffle (mulberry32), so a seed replays the same delivery order. */
export function shuffled<T>(items: readonly T[], seed: number): T[] {
  const rnd = mulberry32(seed);
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}
