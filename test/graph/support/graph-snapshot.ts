/**
 * Reads what the store shows for a set of accounts, as whole sets of `source relation target
 * @createdAt` strings: from the forward edge rows, the inverse edge rows, the `out` lists and the
 * `in` lists, plus every list counter.
 */

import { type Direction, RELATIONS, type Relation, type UserId } from '../../../src/model/types.js';
import type { GraphStore } from '../../../src/ports/graph-store.js';

export interface GraphSnapshot {
  forward: string[];
  inverse: string[];
  outLists: string[];
  inLists: string[];
  /** `user relation direction` → counter value. */
  counts: Map<string, number>;
}

export const edgeName = (s: UserId, r: Relation, t: UserId, createdAt: bigint) =>
  `${s} ${r} ${t} @${createdAt}`;
export const countName = (u: UserId, r: Relation, d: Direction) => `${u} ${r} ${d}`;

export async function snapshot(store: GraphStore, users: readonly UserId[]): Promise<GraphSnapshot> {
  const s: GraphSnapshot = { forward: [], inverse: [], outLists: [], inLists: [], counts: new Map() };
  await Promise.all(
    users.flatMap((u) =>
      RELATIONS.map(async (r) => {
        const others = users.filter((x) => x !== u);
        const [fwd, inv, outRows, inRows, outCount, inCount] = await Promise.all([
          store.getEdgesOut(u, r, others),
          store
            .getLayout({ userId: u, relation: r, direction: 'in' })
            .then((layout) => store.getEdgesIn(u, r, others, layout)),
          store.listBucket({ userId: u, relation: r, direction: 'out' }, 1, null, 10_000),
          store.listBucket({ userId: u, relation: r, direction: 'in' }, 1, null, 10_000),
          store.getCount({ userId: u, relation: r, direction: 'out' }),
          store.getCount({ userId: u, relation: r, direction: 'in' }),
        ]);
        for (const e of fwd.values())
          if (e.state === 'active') s.forward.push(edgeName(u, r, e.targetId, e.createdAt));
        for (const e of inv.values())
          if (e.state === 'active') s.inverse.push(edgeName(e.sourceId, r, u, e.createdAt));
        for (const e of outRows) s.outLists.push(edgeName(u, r, e.otherId, e.createdAt));
        for (const e of inRows) s.inLists.push(edgeName(e.otherId, r, u, e.createdAt));
        s.counts.set(countName(u, r, 'out'), outCount);
        s.counts.set(countName(u, r, 'in'), inCount);
      }),
    ),
  );
  for (const k of ['forward', 'inverse', 'outLists', 'inLists'] as const) s[k].sort();
  return s;
}
