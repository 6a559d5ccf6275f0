/**
 * On the memory store, ops delivered one at a time in any order (with duplicates) leave edges,
 * lists and counters equal to the reference model — counters exact without reconciliation: they
 * drift only when appliers of one pair race (see `convergence.int.test.ts`).
 */
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { GraphService } from '../../../src/graph/graph-service.js';
import { RELATIONS, type Relation } from '../../../src/model/types.js';
import { MemoryGraphStore } from '../../support/memory/graph-store.js';
import { countName, snapshot } from '../support/graph-snapshot.js';
import { CALLS, type Op, reference, shuffled } from '../support/reference-model.js';
import { SingleBucketLists } from '../support/single-bucket-lists.js';

it('sequential delivery in any order converges with exact counters', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.boolean(), { minLength: 3, maxLength: 5 }),
      fc.array(
        fc.record({ call: fc.constantFrom(...CALLS), actor: fc.nat(4), other: fc.nat(4), gap: fc.nat(3) }),
        { minLength: 1, maxLength: 30 },
      ),
      fc.integer(),
      async (privacy, steps, order) => {
        const store = new MemoryGraphStore();
        const graph = new GraphService({ store, lists: new SingleBucketLists(store), maxFollowing: 1000 });
        const ids = privacy.map((_, i) => BigInt(i + 1));
        for (const id of ids)
          await graph.putUser({ id, username: `u${id}`, private: privacy[Number(id) - 1] });
        let position = 100n;
        const ops: Op[] = [];
        for (const s of steps) {
          const actor = ids[s.actor % ids.length] as bigint;
          const other = ids[s.other % ids.length] as bigint;
          if (actor === other) continue;
          position += BigInt(s.gap + 1);
          ops.push({ call: s.call, actor, other, position });
        }
        for (const op of shuffled([...ops, ...ops.slice(0, 3)], order))
          await graph[op.call](op.actor, op.other, { position: op.position });

        const expected = reference(new Set(ids.filter((_, i) => privacy[i])), ops);
        const want = [...expected].map(([k, c]) => `${k} @${c}`).sort();
        const got = await snapshot(store, ids);
        expect([got.forward, got.inverse, got.outLists, got.inLists]).toEqual([want, want, want, want]);
        const counts = new Map<string, number>();
        for (const u of ids)
          for (const r of RELATIONS)
            for (const d of ['out', 'in'] as const) counts.set(countName(u, r, d), 0);
        for (const k of expected.keys()) {
          const [s, r, t] = k.split(' ') as [string, Relation, string];
          for (const key of [countName(BigInt(s), r, 'out'), countName(BigInt(t), r, 'in')])
            counts.set(key, (counts.get(key) ?? 0) + 1);
        }
        expect(got.counts).toEqual(counts);
      },
    ),
    { numRuns: 300 },
  );
});
