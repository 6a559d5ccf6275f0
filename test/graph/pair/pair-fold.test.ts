import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  foldPair,
  MACHINES,
  normalizeHistory,
  OP_RELATION,
  type PairFold,
  pairVersion,
} from '../../../src/graph/pair/pair-fold.js';
import { OP_KINDS, type OpKind, type PairOp } from '../../../src/model/types.js';

const A = 1n;
const B = 2n;
const name = (id: bigint) => (id === A ? 'A' : 'B');

type Step = [source: 'A' | 'B', kind: OpKind, position: number];
const ops = (steps: Step[]): PairOp[] =>
  steps.map(([s, kind, p]) => ({
    sourceId: s === 'A' ? A : B,
    targetId: s === 'A' ? B : A,
    kind,
    position: BigInt(p),
  }));

/** The whole visible state: every active edge with the start of its active run. */
const active = (f: PairFold): string[] =>
  [...f.edges.values()]
    .filter((e) => e.state === 'active')
    .map((e) => `${name(e.sourceId)} ${e.relation} ${name(e.targetId)} @${e.createdAt}`)
    .sort();

interface Case {
  name: string;
  history: Step[];
  active: string[];
}

const cases: Record<string, Case[]> = {
  follows: [
    { name: 'follow: none → active', history: [['A', 'follow', 10]], active: ['A follows B @10'] },
    {
      name: 'follow: active → no-op, created_at kept',
      history: [
        ['A', 'follow', 10],
        ['A', 'follow', 20],
      ],
      active: ['A follows B @10'],
    },
    {
      name: 'follow: refused while A blocks B',
      history: [
        ['A', 'block', 5],
        ['A', 'follow', 10],
      ],
      active: ['A blocks B @5'],
    },
    {
      name: 'follow: refused while B blocks A',
      history: [
        ['B', 'block', 5],
        ['A', 'follow', 10],
      ],
      active: ['B blocks A @5'],
    },
    {
      name: 'follow: clears a pending request',
      history: [
        ['A', 'request', 5],
        ['A', 'follow', 10],
      ],
      active: ['A follows B @10'],
    },
    {
      name: 'accept: request → follow at the accept position',
      history: [
        ['A', 'request', 5],
        ['A', 'accept', 10],
      ],
      active: ['A follows B @10'],
    },
    {
      name: 'accept: already following → no-op',
      history: [
        ['A', 'follow', 5],
        ['A', 'accept', 10],
      ],
      active: ['A follows B @5'],
    },
    { name: 'accept: nothing pending → nothing', history: [['A', 'accept', 10]], active: [] },
    {
      name: 'accept: after decline → nothing',
      history: [
        ['A', 'request', 5],
        ['A', 'decline', 7],
        ['A', 'accept', 10],
      ],
      active: [],
    },
    {
      name: 'accept: twice → follow from the first',
      history: [
        ['A', 'request', 5],
        ['A', 'accept', 10],
        ['A', 'accept', 12],
      ],
      active: ['A follows B @10'],
    },
    {
      name: 'unfollow: active → removed',
      history: [
        ['A', 'follow', 5],
        ['A', 'unfollow', 10],
      ],
      active: [],
    },
    { name: 'unfollow: none → no-op', history: [['A', 'unfollow', 10]], active: [] },
    {
      name: 'unfollow: cancels a pending request',
      history: [
        ['A', 'request', 5],
        ['A', 'unfollow', 10],
      ],
      active: [],
    },
    {
      name: 'unfollow then follow: a new active run',
      history: [
        ['A', 'follow', 5],
        ['A', 'unfollow', 10],
        ['A', 'follow', 15],
      ],
      active: ['A follows B @15'],
    },
    {
      name: 'remove_follower: removes A → B only',
      history: [
        ['A', 'follow', 5],
        ['B', 'follow', 6],
        ['A', 'remove_follower', 10],
      ],
      active: ['B follows A @6'],
    },
    {
      name: 'remove_follower: leaves a pending request',
      history: [
        ['A', 'request', 5],
        ['A', 'remove_follower', 10],
      ],
      active: ['A requests B @5'],
    },
  ],
  requests: [
    { name: 'request: none → active', history: [['A', 'request', 10]], active: ['A requests B @10'] },
    {
      name: 'request: twice → created_at kept',
      history: [
        ['A', 'request', 10],
        ['A', 'request', 20],
      ],
      active: ['A requests B @10'],
    },
    {
      name: 'request: no-op while following',
      history: [
        ['A', 'follow', 5],
        ['A', 'request', 10],
      ],
      active: ['A follows B @5'],
    },
    {
      name: 'request: refused while A blocks B',
      history: [
        ['A', 'block', 5],
        ['A', 'request', 10],
      ],
      active: ['A blocks B @5'],
    },
    {
      name: 'request: refused while B blocks A',
      history: [
        ['B', 'block', 5],
        ['A', 'request', 10],
      ],
      active: ['B blocks A @5'],
    },
    {
      name: 'decline: active → removed',
      history: [
        ['A', 'request', 5],
        ['A', 'decline', 10],
      ],
      active: [],
    },
    { name: 'decline: none → no-op', history: [['A', 'decline', 10]], active: [] },
    {
      name: 'decline: leaves a follow alone',
      history: [
        ['A', 'follow', 5],
        ['A', 'decline', 10],
      ],
      active: ['A follows B @5'],
    },
  ],
  blocks: [
    { name: 'block: none → active', history: [['A', 'block', 10]], active: ['A blocks B @10'] },
    {
      name: 'block: removes follows and requests in both directions',
      history: [
        ['A', 'follow', 1],
        ['B', 'request', 2],
        ['A', 'block', 10],
      ],
      active: ['A blocks B @10'],
    },
    {
      name: 'block by the followed side removes the follow too',
      history: [
        ['A', 'follow', 1],
        ['B', 'follow', 2],
        ['B', 'block', 10],
      ],
      active: ['B blocks A @10'],
    },
    {
      name: 'block: twice → created_at kept',
      history: [
        ['A', 'block', 10],
        ['A', 'block', 20],
      ],
      active: ['A blocks B @10'],
    },
    {
      name: 'block: leaves mutes and close friends',
      history: [
        ['A', 'mute', 1],
        ['A', 'close_friend_add', 2],
        ['A', 'block', 10],
      ],
      active: ['A blocks B @10', 'A close_friends B @2', 'A mutes B @1'],
    },
    {
      name: 'unblock: active → removed',
      history: [
        ['A', 'block', 5],
        ['A', 'unblock', 10],
      ],
      active: [],
    },
    { name: 'unblock: none → no-op', history: [['A', 'unblock', 10]], active: [] },
    {
      name: 'unblock: follows are not restored',
      history: [
        ['A', 'follow', 1],
        ['A', 'block', 5],
        ['A', 'unblock', 10],
      ],
      active: [],
    },
    {
      name: 'unblock by one side leaves the other side’s block standing',
      history: [
        ['A', 'block', 1],
        ['B', 'block', 2],
        ['A', 'unblock', 3],
        ['A', 'follow', 4],
      ],
      active: ['B blocks A @2'],
    },
    {
      name: 'follow after unblock is accepted',
      history: [
        ['A', 'block', 5],
        ['A', 'unblock', 10],
        ['A', 'follow', 15],
      ],
      active: ['A follows B @15'],
    },
  ],
  mutes: [
    { name: 'mute: none → active', history: [['A', 'mute', 10]], active: ['A mutes B @10'] },
    {
      name: 'mute: twice → created_at kept',
      history: [
        ['A', 'mute', 10],
        ['A', 'mute', 20],
      ],
      active: ['A mutes B @10'],
    },
    {
      name: 'unmute: active → removed',
      history: [
        ['A', 'mute', 10],
        ['A', 'unmute', 20],
      ],
      active: [],
    },
    { name: 'unmute: none → no-op', history: [['A', 'unmute', 20]], active: [] },
    {
      name: 'mute keeps the follow',
      history: [
        ['A', 'follow', 5],
        ['A', 'mute', 10],
      ],
      active: ['A follows B @5', 'A mutes B @10'],
    },
  ],
  close_friends: [
    {
      name: 'close_friend_add: none → active',
      history: [['A', 'close_friend_add', 10]],
      active: ['A close_friends B @10'],
    },
    {
      name: 'close_friend_add: twice → created_at kept',
      history: [
        ['A', 'close_friend_add', 10],
        ['A', 'close_friend_add', 20],
      ],
      active: ['A close_friends B @10'],
    },
    {
      name: 'close_friend_remove: active → removed',
      history: [
        ['A', 'close_friend_add', 10],
        ['A', 'close_friend_remove', 20],
      ],
      active: [],
    },
    { name: 'close_friend_remove: none → no-op', history: [['A', 'close_friend_remove', 20]], active: [] },
  ],
  restricts: [
    { name: 'restrict: none → active', history: [['A', 'restrict', 10]], active: ['A restricts B @10'] },
    {
      name: 'restrict: twice → created_at kept',
      history: [
        ['A', 'restrict', 10],
        ['A', 'restrict', 20],
      ],
      active: ['A restricts B @10'],
    },
    {
      name: 'unrestrict: active → removed',
      history: [
        ['A', 'restrict', 10],
        ['A', 'unrestrict', 20],
      ],
      active: [],
    },
    { name: 'unrestrict: none → no-op', history: [['A', 'unrestrict', 20]], active: [] },
    {
      name: 'restrict keeps follows both ways, requests, mutes and close friends',
      history: [
        ['A', 'follow', 1],
        ['B', 'request', 2],
        ['A', 'mute', 3],
        ['A', 'close_friend_add', 4],
        ['A', 'restrict', 10],
      ],
      active: [
        'A close_friends B @4',
        'A follows B @1',
        'A mutes B @3',
        'A restricts B @10',
        'B requests A @2',
      ],
    },
    {
      name: 'the restricted side can still follow and request',
      history: [
        ['A', 'restrict', 1],
        ['B', 'follow', 5],
        ['A', 'request', 6],
      ],
      active: ['A requests B @6', 'A restricts B @1', 'B follows A @5'],
    },
    {
      name: 'unrestrict leaves the follow',
      history: [
        ['A', 'follow', 1],
        ['A', 'restrict', 5],
        ['A', 'unrestrict', 10],
      ],
      active: ['A follows B @1'],
    },
    {
      name: 'a block by the restricter does not clear it',
      history: [
        ['A', 'restrict', 5],
        ['A', 'block', 10],
      ],
      active: ['A blocks B @10', 'A restricts B @5'],
    },
    {
      name: 'a block by the restricted side does not clear it',
      history: [
        ['A', 'restrict', 5],
        ['B', 'block', 10],
      ],
      active: ['A restricts B @5', 'B blocks A @10'],
    },
    {
      name: 'restrict while blocked (either side) is accepted',
      history: [
        ['A', 'block', 1],
        ['B', 'block', 2],
        ['A', 'restrict', 10],
      ],
      active: ['A blocks B @1', 'A restricts B @10', 'B blocks A @2'],
    },
    {
      name: 'block then unblock: the restrict is where it was',
      history: [
        ['A', 'follow', 1],
        ['A', 'restrict', 2],
        ['A', 'block', 5],
        ['A', 'unblock', 10],
      ],
      active: ['A restricts B @2'],
    },
  ],
};

describe('pair fold: each relation’s state machine', () => {
  for (const [relation, table] of Object.entries(cases)) {
    describe(relation, () => {
      it.each(table)('$name', (c) => {
        expect(active(foldPair(ops(c.history)))).toEqual(c.active);
      });
    });
  }

  it('every op kind belongs to exactly one machine, and every machine’s transitions are tested', () => {
    expect(Object.keys(OP_RELATION).sort()).toEqual([...OP_KINDS].sort());
    const tested = new Set(
      Object.values(cases)
        .flat()
        .flatMap((c) => c.history.map(([, k]) => k)),
    );
    for (const table of Object.values(MACHINES))
      for (const k of Object.keys(table)) expect(tested).toContain(k);
  });
});

/** Every order of `items` (for the small replays below). */
function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((x, i) =>
    permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [x, ...rest]),
  );
}

describe('pair fold: restrict beside block, replayed out of order (a block does not clear a restrict)', () => {
  // Both ways: the block's position before and after the restrict's, by either side, with an
  // unblock or an unrestrict after both; every delivery order of each history (and with
  // duplicates) folds to the same state, and so does the history continued from a checkpoint.
  const scenarios: Case[] = [
    {
      name: 'restrict before block (restricter blocks)',
      history: [
        ['A', 'follow', 1],
        ['A', 'restrict', 5],
        ['A', 'block', 10],
      ],
      active: ['A blocks B @10', 'A restricts B @5'],
    },
    {
      name: 'block before restrict (restricter blocks)',
      history: [
        ['A', 'follow', 1],
        ['A', 'block', 5],
        ['A', 'restrict', 10],
      ],
      active: ['A blocks B @5', 'A restricts B @10'],
    },
    {
      name: 'restrict before block (restricted side blocks)',
      history: [
        ['B', 'follow', 1],
        ['A', 'restrict', 5],
        ['B', 'block', 10],
      ],
      active: ['A restricts B @5', 'B blocks A @10'],
    },
    {
      name: 'block before restrict (restricted side blocks)',
      history: [
        ['B', 'follow', 1],
        ['B', 'block', 5],
        ['A', 'restrict', 10],
      ],
      active: ['A restricts B @10', 'B blocks A @5'],
    },
    {
      name: 'block, restrict, unblock: the restrict stays',
      history: [
        ['A', 'block', 5],
        ['A', 'restrict', 7],
        ['A', 'unblock', 10],
      ],
      active: ['A restricts B @7'],
    },
    {
      name: 'restrict, block, unrestrict: the block stays',
      history: [
        ['A', 'restrict', 5],
        ['A', 'block', 7],
        ['A', 'unrestrict', 10],
      ],
      active: ['A blocks B @7'],
    },
  ];
  it.each(scenarios)('$name: every delivery order, duplicated or not', (c) => {
    const history = ops(c.history);
    for (const order of permutations(history)) {
      expect(active(foldPair(order))).toEqual(c.active);
      expect(active(foldPair([...order, ...order.slice(0, 2)]))).toEqual(c.active);
    }
    // Checkpointed at any point of the history, the rest continues to the same state.
    const sorted = normalizeHistory(history);
    for (let k = 1; k < sorted.length; k++) {
      const early = [...foldPair(sorted.slice(0, k)).edges.values()];
      expect(active(foldPair(sorted.slice(k), early))).toEqual(c.active);
    }
  });
});

describe('pair fold: order, duplicates and late arrivals', () => {
  it('a block that arrives late with a lower position still refuses the follow it preceded', () => {
    const late = foldPair(
      ops([
        ['A', 'follow', 10],
        ['B', 'block', 5],
      ]),
    );
    expect(active(late)).toEqual(['B blocks A @5']);
  });

  it('an unblock that arrives late lets an earlier-delivered follow stand', () => {
    expect(
      active(
        foldPair(
          ops([
            ['A', 'block', 5],
            ['A', 'follow', 10],
            ['A', 'unblock', 8],
          ]),
        ),
      ),
    ).toEqual(['A follows B @10']);
  });

  it('records whole edges: removed edges keep their last run and the position of the transition', () => {
    const f = foldPair(
      ops([
        ['A', 'follow', 10],
        ['A', 'unfollow', 20],
        ['A', 'follow', 30],
        ['B', 'block', 40],
      ]),
    );
    expect([...f.edges.values()]).toEqual([
      {
        sourceId: A,
        targetId: B,
        relation: 'follows',
        state: 'removed',
        position: 40n,
        createdAt: 30n,
        candidates: [10n, 30n],
      },
      {
        sourceId: B,
        targetId: A,
        relation: 'blocks',
        state: 'active',
        position: 40n,
        createdAt: 40n,
        candidates: [40n],
      },
    ]);
  });

  it('an edge whose every op was refused is written as removed at its last candidate', () => {
    const f = foldPair(
      ops([
        ['A', 'block', 5],
        ['B', 'follow', 10],
      ]),
    );
    expect(f.edges.get(`${B}|follows|${A}`)).toEqual({
      sourceId: B,
      targetId: A,
      relation: 'follows',
      state: 'removed',
      position: 10n,
      createdAt: 0n,
      candidates: [10n],
    });
  });

  const step = fc.tuple(
    fc.constantFrom<'A' | 'B'>('A', 'B'),
    fc.constantFrom<OpKind>(...OP_KINDS),
    fc.integer({ min: 1, max: 40 }),
  );

  it('is a function of the set of ops: any order, any duplication', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 25 }), fc.integer(), (steps, seed) => {
        const history = ops(steps as Step[]);
        const scrambled = [...history, ...history.filter((_, i) => (i + seed) % 3 === 0)];
        scrambled.sort(
          (x, y) =>
            Number((x.position * 7919n + BigInt(seed)) % 13n) -
            Number((y.position * 7919n + BigInt(seed)) % 13n),
        );
        expect(foldPair(scrambled)).toEqual(foldPair(history));
      }),
    );
  });

  it('an active edge’s created_at is always one of its candidates', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 25 }), (steps) => {
        for (const e of foldPair(ops(steps as Step[])).edges.values()) {
          if (e.state === 'active') expect(e.candidates).toContain(e.createdAt);
        }
      }),
    );
  });

  it('restricts are independent: they change no other edge, and no other op changes them', () => {
    const others = (f: PairFold) => active(f).filter((e) => !e.includes(' restricts '));
    const restricts = (f: PairFold) => active(f).filter((e) => e.includes(' restricts '));
    const isRestrictOp = (o: PairOp) => o.kind === 'restrict' || o.kind === 'unrestrict';
    fc.assert(
      fc.property(fc.array(step, { maxLength: 30 }), (steps) => {
        const history = ops(steps as Step[]);
        const all = foldPair(history);
        expect(others(all)).toEqual(others(foldPair(history.filter((o) => !isRestrictOp(o)))));
        expect(restricts(all)).toEqual(restricts(foldPair(history.filter(isRestrictOp))));
      }),
      { numRuns: 500 },
    );
  });

  it('pairVersion: a strict superset of a history has a strictly higher version; duplicates do not count', () => {
    fc.assert(
      fc.property(
        fc.array(step, { minLength: 1, maxLength: 25 }),
        fc.array(step, { minLength: 1, maxLength: 5 }),
        (a, extra) => {
          const view = (h: PairOp[]) => ({ checkpoint: null, ops: h.map((o) => ({ ...o, base: 0 })) });
          const base = normalizeHistory(ops(a as Step[]));
          const more = normalizeHistory([...base, ...ops(extra as Step[])]);
          if (more.length === base.length) expect(pairVersion(view(more))).toBe(pairVersion(view(base)));
          else expect(pairVersion(view(more)) > pairVersion(view(base))).toBe(true);
          expect(pairVersion(view([...base, ...base]))).toBe(pairVersion(view(base)));
        },
      ),
    );
  });
});
