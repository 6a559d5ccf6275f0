/**
 * The checkpoint fixture (`fixtures/checkpoint-before-restrict.json`): a pair checkpoint's
 * `cp_state` as the encoder on main wrote it before the `restricts` relation existed, with the ops
 * it folded and its edges. Shared by the codec test (memory store) and the Cassandra test.
 */
import { readFileSync } from 'node:fs';
import type { EdgeRecord, OpKind, PairOp, Relation } from '../../src/model/types.js';

interface Fixture {
  low: string;
  high: string;
  horizon: string;
  count: number;
  newestBase: number;
  ops: { sourceId: string; targetId: string; kind: OpKind; position: string }[];
  cp_state: string;
  edges: {
    sourceId: string;
    targetId: string;
    relation: Relation;
    state: EdgeRecord['state'];
    position: string;
    createdAt: string;
  }[];
}

const raw = JSON.parse(
  readFileSync(new URL('./fixtures/checkpoint-before-restrict.json', import.meta.url), 'utf8'),
) as Fixture;

export const OLD_CHECKPOINT = {
  low: BigInt(raw.low),
  high: BigInt(raw.high),
  horizon: BigInt(raw.horizon),
  count: raw.count,
  newestBase: raw.newestBase,
  /** The stored text, byte for byte as the old encoder wrote it. */
  text: raw.cp_state,
  ops: raw.ops.map(
    (o): PairOp => ({
      sourceId: BigInt(o.sourceId),
      targetId: BigInt(o.targetId),
      kind: o.kind,
      position: BigInt(o.position),
    }),
  ),
  edges: raw.edges.map(
    (e): EdgeRecord => ({
      sourceId: BigInt(e.sourceId),
      targetId: BigInt(e.targetId),
      relation: e.relation,
      state: e.state,
      position: BigInt(e.position),
      createdAt: BigInt(e.createdAt),
    }),
  ),
};

/** `source relation target @createdAt` of every active edge, sorted (ids as in the fixture). */
export const activeEdges = (edges: readonly EdgeRecord[]): string[] =>
  edges
    .filter((e) => e.state === 'active')
    .map((e) => `${e.sourceId} ${e.relation} ${e.targetId} @${e.createdAt}`)
    .sort();
