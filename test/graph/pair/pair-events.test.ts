/**
 * `pair-events.ts`: the rows a view implies (transitions at each op's slot, in slot order), and the
 * compaction rule that keeps prefix folds exact (`mayFold`, `foldableHorizon`).
 */
import { describe, expect, it } from 'vitest';
import { foldableHorizon, mayFold, pairEventRows } from '../../../src/graph/pair/pair-events.js';
import { compareOps, foldPair, OP_RELATION } from '../../../src/graph/pair/pair-fold.js';
import { eventShard } from '../../../src/model/events.js';
import type { OpKind, Relation } from '../../../src/model/types.js';
import type { PairCheckpoint, StoredPairOp } from '../../../src/ports/records.js';
import { mulberry32 } from '../../support/random.js';

const A = 10n;
const B = 20n;
const op = (kind: OpKind, position: bigint, slot?: bigint, source = A): StoredPairOp => ({
  sourceId: source,
  targetId: source === A ? B : A,
  kind,
  position,
  base: 0,
  ...(slot === undefined ? {} : { slot }),
});

describe('pairEventRows', () => {
  it('places each transition at its op’s slot, computed in slot order: a replay below a follow emits at its own slot', () => {
    // follow at 100 (slot 1000), then a block replayed at position 50 (slot 2000): in position
    // order the block refuses the follow; in feed order the follow was delivered first, so the
    // block's row carries block.created and the follow's removal.
    const view = { checkpoint: null, ops: [op('follow', 100n, 1000n), op('block', 50n, 2000n)] };
    const key = (slot: bigint, position: bigint, kind: string) => ({
      slot,
      shard: eventShard(A, B),
      low: A,
      high: B,
      opPosition: position,
      opSource: A,
      opKind: kind,
    });
    expect(pairEventRows(view, 0n)).toEqual([
      {
        key: key(1000n, 100n, 'follow'),
        transitions: [{ sourceId: A, relation: 'follows', targetId: B, on: true }],
      },
      {
        key: key(2000n, 50n, 'block'),
        transitions: [
          { sourceId: A, relation: 'blocks', targetId: B, on: true },
          { sourceId: A, relation: 'follows', targetId: B, on: false },
        ],
      },
    ]);
    // Only slots from `from` on; ops without a slot (appended before the feed) never get rows.
    expect(pairEventRows(view, 1500n).map((r) => r.key.slot)).toEqual([2000n]);
    expect(pairEventRows({ checkpoint: null, ops: [op('follow', 100n)] }, 0n)).toEqual([]);
  });

  it('writes an empty row for an op that changes nothing (a fuller view replaces a partial one’s row)', () => {
    const view = { checkpoint: null, ops: [op('follow', 100n, 1000n), op('follow', 200n, 2000n)] };
    expect(pairEventRows(view, 0n).map((r) => r.transitions.length)).toEqual([1, 0]);
  });
});

describe('pairEventRows equals the definition (a fold of each slot-ordered prefix), seeded', () => {
  it('on 2,000 random histories with replays, checkpoints and ties', () => {
    const seed = Number(process.env.EVENTS_SEED ?? Math.floor(Math.random() * 2 ** 31));
    console.log(`pair events: EVENTS_SEED=${seed}`);
    const random = mulberry32(seed);
    const kinds = Object.keys(OP_RELATION) as OpKind[];
    for (let round = 0; round < 2000; round++) {
      const n = Math.floor(random() * 14);
      const ops: StoredPairOp[] = [];
      for (let i = 0; i < n; i++) {
        const kind = kinds[Math.floor(random() * kinds.length)] as OpKind;
        const position = BigInt(1 + Math.floor(random() * 40));
        const slot = random() < 0.1 ? undefined : BigInt(Math.floor(random() * 30));
        const o = op(kind, position, slot, random() < 0.5 ? A : B);
        if (!ops.some((x) => x.position === o.position && x.sourceId === o.sourceId && x.kind === o.kind))
          ops.push(o);
      }
      const checkpoint =
        random() < 0.3
          ? {
              horizon: 0n,
              count: 1,
              newestBase: 0,
              edges: [
                {
                  sourceId: B,
                  relation: 'follows' as const,
                  targetId: A,
                  state: 'active' as const,
                  position: 1n,
                  createdAt: 1n,
                },
              ],
            }
          : null;
      const from = BigInt(Math.floor(random() * 20));
      const view = { checkpoint, ops };
      expect(pairEventRows(view, from), `round ${round}`).toEqual(reference(view, from));
    }
  });
});

/** The definition, folded from scratch for every op. */
function reference(view: { checkpoint: PairCheckpoint | null; ops: StoredPairOp[] }, from: bigint) {
  const order = (x: StoredPairOp, y: StoredPairOp) => {
    const sx = x.slot ?? -1n;
    const sy = y.slot ?? -1n;
    return sx !== sy ? (sx < sy ? -1 : 1) : compareOps(x, y);
  };
  const ops = [...view.ops].sort(order);
  const active = (f: ReturnType<typeof foldPair>) =>
    new Map([...f.edges].map(([k, e]) => [k, e.state === 'active']));
  return ops.flatMap((o, i) => {
    if (o.slot === undefined || o.slot < from) return [];
    const before = active(foldPair(ops.slice(0, i), view.checkpoint?.edges));
    const after = active(foldPair(ops.slice(0, i + 1), view.checkpoint?.edges));
    const keys = [...new Set([...before.keys(), ...after.keys()])].sort();
    const [low, high] = o.sourceId < o.targetId ? [o.sourceId, o.targetId] : [o.targetId, o.sourceId];
    return [
      {
        key: {
          slot: o.slot,
          shard: eventShard(low, high),
          low,
          high,
          opPosition: o.position,
          opSource: o.sourceId,
          opKind: o.kind,
        },
        transitions: keys
          .filter((k) => (before.get(k) === true) !== (after.get(k) === true))
          .map((k) => {
            const [s, r, t] = k.split('|') as [string, Relation, string];
            return { sourceId: BigInt(s), relation: r, targetId: BigInt(t), on: after.get(k) === true };
          }),
      },
    ];
  });
}

describe('mayFold / foldableHorizon', () => {
  const live = [op('follow', 100n, 1100n), op('unfollow', 200n, 2100n), op('follow', 300n, 3100n)];

  it('folds freely when positions and slots agree', () => {
    expect(foldableHorizon(live, [100n, 200n], 0n)).toBe(200n);
    expect(mayFold(live, 300n, 0n)).toBe(true);
  });

  it('holds the horizon below a replay whose slot is newer than an op left in the tail, until that slot leaves the window', () => {
    // A replay at position 150 appended last (slot 5000): folding through 200 would put it in the
    // checkpoint ahead of the op at 300, whose slot (3100) is older.
    const ops = [...live, op('block', 150n, 5000n)];
    expect(mayFold(ops, 200n, 0n)).toBe(false);
    expect(foldableHorizon(ops, [100n, 150n, 200n], 0n)).toBe(100n);
    // Once the op at 300 is outside the window (its slot before `from`), nothing holds it back.
    expect(foldableHorizon(ops, [100n, 150n, 200n], 4000n)).toBe(200n);
  });
});
