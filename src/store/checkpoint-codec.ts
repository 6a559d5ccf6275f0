/**
 * The stored form of a pair checkpoint (`pair_ops.cp_state`): compact JSON with ids and positions
 * as decimal strings. Both stores use it, so a tie between two checkpoints of the same horizon is
 * broken the same way (the larger serialized value wins, as Cassandra's cell tie rule does).
 */
import type { EdgeRecord, Relation } from '../model/types.js';
import type { PairCheckpoint } from '../ports/records.js';

interface StoredEdge {
  s: string;
  t: string;
  r: Relation;
  a: boolean;
  p: string;
  c: string;
}

interface StoredCheckpoint {
  n: number;
  b: number;
  e: StoredEdge[];
}

/** The `cp_state` text of a checkpoint (the horizon is stored in its own cell). */
export function encodeCheckpoint(cp: PairCheckpoint): string {
  const edges = [...cp.edges].sort((x, y) =>
    `${x.sourceId}|${x.relation}` < `${y.sourceId}|${y.relation}` ? -1 : 1,
  );
  const body: StoredCheckpoint = {
    n: cp.count,
    b: cp.newestBase,
    e: edges.map((e) => ({
      s: e.sourceId.toString(),
      t: e.targetId.toString(),
      r: e.relation,
      a: e.state === 'active',
      p: e.position.toString(),
      c: e.createdAt.toString(),
    })),
  };
  return JSON.stringify(body);
}

/** Parses what `encodeCheckpoint` wrote. */
export function decodeCheckpoint(horizon: bigint, text: string): PairCheckpoint {
  const body = JSON.parse(text) as StoredCheckpoint;
  const edges: EdgeRecord[] = body.e.map((e) => ({
    sourceId: BigInt(e.s),
    targetId: BigInt(e.t),
    relation: e.r,
    state: e.a ? 'active' : 'removed',
    position: BigInt(e.p),
    createdAt: BigInt(e.c),
  }));
  return { horizon, count: body.n, newestBase: body.b, edges };
}
