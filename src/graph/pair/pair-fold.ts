/**
 * The pair fold: the state of every edge between two accounts, derived purely from the pair's
 * history (`pair_ops`).
 *
 * Design note.
 *
 * Invariant. Every accepted operation on a pair is appended to one partition holding the pair's
 * whole history (all relations, both directions). The state of each of the twelve edges between the
 * pair (six relations × two directions) is `foldPair(history)`: the ops applied in position
 * order (ties: source id, then kind — the order `readPairHistory` returns), each relation's rules
 * checked at that op's position. Because the state is a function of the *set* of ops, any order of
 * arrival, any duplication and any interleaving of appliers converge on the same state, and a
 * block that arrives late with a lower position than a follow it should have prevented still
 * refuses that follow. This module is the single place where relation rules live: one
 * transition table per relation (`MACHINES`) plus the cross-relation guards and side effects it
 * names.
 *
 * Writing the fold. Appliers write the folded state of every edge of the pair at
 * `pairVersion(view)`. A writer that saw more of the history writes at a strictly higher version,
 * so Cassandra's cell-level last-writer-wins lets the most complete view win over any partial
 * concurrent one, and duplicates write identical cells at identical versions. How the version is
 * built so that this holds across checkpoints, and which list rows a writer deletes, is the
 * subject of `pair-history.ts` and `view-writer.ts`.
 *
 * Checkpoints. A long history is folded into a checkpoint (the state of every edge at a horizon
 * position); `foldPair(ops, checkpoint)` continues from that state exactly as if the folded ops
 * were still there, because the fold is a left fold in position order and every op after the
 * horizon sorts after every op before it.
 *
 * Rejected. (1) Reading the edge row, checking rules, then writing one edge at a time with
 * `USING TIMESTAMP position`: cross-relation rules (a late block refusing an earlier-arriving
 * follow at a higher position) cannot converge that way without re-reading every related edge,
 * and the outcome depends on arrival order. (2) LWT per edge: a Paxos round per write, and still
 * no answer for cross-relation order. (3) Versions equal to positions: two partial views of the
 * same newest position would write different states at the same version and the tie rule (larger
 * cell value) would pick arbitrarily.
 *
 * Restrict. `restricts` is an owner-private edge like `mutes`: no guard and no
 * side effects, so it never touches follows, requests, mutes or close friends, and no other op
 * touches it. In particular a block does NOT clear a restrict (nor refuses one), the rule mutes
 * already follow: the two are separate tools the owner sets for different reasons (Instagram keeps
 * restrict beside block, not under it), an unblock then finds the owner's restrict where it was,
 * and the fold needs no order-dependent interaction between them — a block and a restrict in
 * either position order, delivered in either order, leave both edges active. Checkpoints written
 * before this relation existed decode unchanged: the stored form names each edge's relation
 * (`checkpoint-codec.ts`), and such a checkpoint simply holds no `restricts` edge.
 *
 * Limits. Versions are ≈ position·1024, far above wall-clock µs: every other writer of the edge
 * and list tables (growth's `dropBucket`) must use `wallClockVersion()` from here.
 */

import { LENGTH_SLOTS } from '../../model/clock.js';
import type { EdgeRecord, OpKind, PairOp, Position, Relation, UserId } from '../../model/types.js';
import { edgeKey } from '../../model/types.js';

import type { PairCheckpoint, StoredPairOp } from '../../ports/records.js';

/** `fwd`: the edge `op.source → op.target`; `rev`: `op.target → op.source`. */
type Side = 'fwd' | 'rev';

/** What an op does to one edge: make it active (`set`) or removed (`unset`). */
type Move = 'set' | 'unset';

/** The pair as the fold stands at an op's position, read-only, for guards. */
export interface FoldState {
  isActive(source: UserId, relation: Relation, target: UserId): boolean;
}

interface Transition {
  move: Move;
  /** The op is refused (no effect at all) unless this holds at its position. */
  guard?: (view: FoldState, op: PairOp) => boolean;
  /** Further edges this op clears when it is not refused. */
  clears?: readonly { relation: Relation; side: Side }[];
}

type MachineTable = Partial<Record<OpKind, Transition>>;

const blockedEitherWay = (v: FoldState, op: PairOp) =>
  v.isActive(op.sourceId, 'blocks', op.targetId) || v.isActive(op.targetId, 'blocks', op.sourceId);

/**
 * One state machine per relation: the op kinds that act on that relation's `source → target`
 * edge and how. States are `removed → active` (`set`) and `active → removed` (`unset`); `set`
 * on an active edge and `unset` on a removed one are no-ops that keep the edge's `createdAt` and
 * `position`. Every op kind appears in exactly one table.
 */
export const MACHINES: { readonly [R in Relation]: MachineTable } = {
  follows: {
    follow: {
      move: 'set',
      guard: (v, op) => !blockedEitherWay(v, op),
      clears: [{ relation: 'requests', side: 'fwd' }],
    },
    accept: {
      move: 'set',
      guard: (v, op) => v.isActive(op.sourceId, 'requests', op.targetId),
      clears: [{ relation: 'requests', side: 'fwd' }],
    },
    unfollow: { move: 'unset', clears: [{ relation: 'requests', side: 'fwd' }] },
    remove_follower: { move: 'unset' },
  },
  requests: {
    request: {
      move: 'set',
      guard: (v, op) => !blockedEitherWay(v, op) && !v.isActive(op.sourceId, 'follows', op.targetId),
    },
    decline: { move: 'unset' },
  },
  blocks: {
    block: {
      move: 'set',
      clears: [
        { relation: 'follows', side: 'fwd' },
        { relation: 'follows', side: 'rev' },
        { relation: 'requests', side: 'fwd' },
        { relation: 'requests', side: 'rev' },
      ],
    },
    unblock: { move: 'unset' },
  },
  mutes: { mute: { move: 'set' }, unmute: { move: 'unset' } },
  close_friends: { close_friend_add: { move: 'set' }, close_friend_remove: { move: 'unset' } },
  // Owner-private; a block neither clears nor refuses it (see the note).
  restricts: { restrict: { move: 'set' }, unrestrict: { move: 'unset' } },
};

/** The relation an op kind acts on, and its transition (derived from `MACHINES`). */
export const OP_RELATION: Readonly<Record<OpKind, { relation: Relation; transition: Transition }>> = (() => {
  const out: Partial<Record<OpKind, { relation: Relation; transition: Transition }>> = {};
  for (const [relation, table] of Object.entries(MACHINES) as [Relation, MachineTable][]) {
    for (const [kind, transition] of Object.entries(table) as [OpKind, Transition][]) {
      if (out[kind]) throw new Error(`op kind ${kind} appears in two machines`);
      out[kind] = { relation, transition };
    }
  }
  return out as Record<OpKind, { relation: Relation; transition: Transition }>;
})();

/** A folded edge: its record plus every position that could ever have activated it. */
export interface FoldedEdge extends EdgeRecord {
  /**
   * Positions of every op in the history whose transition is `set` on this edge, ascending. Under
   * any sub-history the edge's `createdAt` is one of these, so these are the only list rows any
   * writer could have put for this edge.
   */
  candidates: Position[];
}

/** The folded state of a pair: every edge with at least one candidate, keyed by `edgeKey`. */
export interface PairFold {
  edges: Map<string, FoldedEdge>;
}

/** History order: position, then source id, then kind (the `pair_ops` clustering order). */
export function compareOps(a: PairOp, b: PairOp): number {
  if (a.position !== b.position) return a.position < b.position ? -1 : 1;
  if (a.sourceId !== b.sourceId) return a.sourceId < b.sourceId ? -1 : 1;
  return a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0;
}

/** An op's identity in a history: position, source and kind. */
export const opKey = (op: PairOp) => `${op.position}|${op.sourceId}|${op.kind}`;

/** The history as a set: sorted in history order, duplicates (same position, source, kind) dropped. */
export function normalizeHistory<T extends PairOp>(ops: readonly T[]): T[] {
  const seen = new Map<string, T>();
  for (const op of ops) seen.set(opKey(op), op);
  return [...seen.values()].sort(compareOps);
}

/** Whether `op` (same position, source and kind) is already in `ops`. */
export function containsOp(ops: readonly PairOp[], op: PairOp): boolean {
  const k = opKey(op);
  return ops.some((o) => opKey(o) === k);
}

/**
 * Test seam: told of every `foldPair` call, so a test can count the folds of one op (the write
 * path folds at most three times: the first read, the re-read, and its own transition's base).
 * Unset outside that test.
 */
export const foldProbe: { onFold?: () => void } = {};

/** A view of a pair's history: its checkpoint and the ops above the horizon. */
export interface PairView {
  checkpoint: PairCheckpoint | null;
  ops: readonly StoredPairOp[];
  /** The names the pair's accounts were last indexed under (`PairHistory.indexedNames`). */
  indexedNames?: ReadonlyMap<UserId, string>;
}

/** The fold of a view: its ops folded on its checkpoint's edges. */
export function foldView(view: PairView): PairFold {
  return foldPair(view.ops, view.checkpoint?.edges);
}

/**
 * Folds a pair history into edge states, starting from `start` (a checkpoint's edges) when given.
 * Pure; the input order and duplicates do not matter. Edges that neither `start` nor any op can
 * activate are absent (they are `none` under every sub-history).
 */
export function foldPair(history: readonly PairOp[], start: readonly EdgeRecord[] = []): PairFold {
  foldProbe.onFold?.();
  const ops = normalizeHistory(history);
  const edges = new Map<string, FoldedEdge>();
  for (const e of start) {
    edges.set(edgeKey(e.sourceId, e.relation, e.targetId), { ...e, candidates: [] });
  }
  const edge = (source: UserId, relation: Relation, target: UserId): FoldedEdge => {
    const k = edgeKey(source, relation, target);
    let e = edges.get(k);
    if (!e) {
      e = {
        sourceId: source,
        targetId: target,
        relation,
        state: 'removed',
        position: 0n,
        createdAt: 0n,
        candidates: [],
      };
      edges.set(k, e);
    }
    return e;
  };
  for (const op of ops) {
    const { relation, transition } = OP_RELATION[op.kind];
    if (transition.move === 'set') edge(op.sourceId, relation, op.targetId).candidates.push(op.position);
  }
  const view: FoldState = {
    isActive: (s, r, t) => edges.get(edgeKey(s, r, t))?.state === 'active',
  };
  const move = (e: FoldedEdge | undefined, m: Move, at: Position) => {
    if (!e) return;
    if (m === 'set' && e.state !== 'active') {
      e.state = 'active';
      e.createdAt = at;
      e.position = at;
    } else if (m === 'unset' && e.state === 'active') {
      e.state = 'removed';
      e.position = at;
    }
  };
  for (const op of ops) {
    const { relation, transition } = OP_RELATION[op.kind];
    if (transition.guard && !transition.guard(view, op)) continue;
    move(edges.get(edgeKey(op.sourceId, relation, op.targetId)), transition.move, op.position);
    for (const c of transition.clears ?? []) {
      const [s, t] = c.side === 'fwd' ? [op.sourceId, op.targetId] : [op.targetId, op.sourceId];
      move(edges.get(edgeKey(s, c.relation, t)), 'unset', op.position);
    }
  }
  for (const e of edges.values()) {
    if (e.position === 0n) e.position = e.candidates.at(-1) ?? 0n;
  }
  return { edges };
}

/**
 * One op applied to a pair's active edges (`edgeKey → active`), in place: what `foldPair` does to
 * the states, without positions or candidates. Applying a history's ops in history order to the
 * active edges of `start` gives the active edges of `foldPair(history, start)`; the feed uses it
 * to fold prefixes incrementally (`pair-events.ts`).
 */
export function stepActive(active: Map<string, boolean>, op: PairOp): void {
  const { relation, transition } = OP_RELATION[op.kind];
  const view: FoldState = { isActive: (s, r, t) => active.get(edgeKey(s, r, t)) === true };
  if (transition.guard && !transition.guard(view, op)) return;
  active.set(edgeKey(op.sourceId, relation, op.targetId), transition.move === 'set');
  for (const c of transition.clears ?? []) {
    const [s, t] = c.side === 'fwd' ? [op.sourceId, op.targetId] : [op.targetId, op.sourceId];
    active.set(edgeKey(s, c.relation, t), false);
  }
}

/** A pair's active edges, `edgeKey → edge` (what lists and counts show: state and `createdAt`). */
export type ActiveEdges = ReadonlyMap<string, EdgeRecord>;

/** The active edges of a fold. */
export function activeEdges(fold: PairFold): Map<string, EdgeRecord> {
  const out = new Map<string, EdgeRecord>();
  for (const [k, { candidates: _, ...e }] of fold.edges) if (e.state === 'active') out.set(k, e);
  return out;
}

/**
 * What `op` does to the history `ops` folded on `start`: the active edges of the history without
 * `op` and with it, from one pass in history order that steps both alike and applies `op` to the
 * second only. `foldPair`'s rules on active states and `createdAt` (an edge activated again keeps
 * its first activation), without positions of removed edges or candidates, which no caller of
 * this needs; `op` may already be in `ops`.
 */
export function opTransition(
  ops: readonly PairOp[],
  op: PairOp,
  start: readonly EdgeRecord[] = [],
): { before: ActiveEdges; after: ActiveEdges } {
  const before = new Map<string, EdgeRecord>();
  for (const e of start) if (e.state === 'active') before.set(edgeKey(e.sourceId, e.relation, e.targetId), e);
  const after = new Map(before);
  const own = opKey(op);
  for (const o of normalizeHistory([...ops, op])) {
    if (opKey(o) !== own) stepEdges(before, o);
    stepEdges(after, o);
  }
  return { before, after };
}

/** One op applied to active edges in place (`opTransition`'s step). */
function stepEdges(active: Map<string, EdgeRecord>, op: PairOp): void {
  const { relation, transition } = OP_RELATION[op.kind];
  const view: FoldState = { isActive: (s, r, t) => active.has(edgeKey(s, r, t)) };
  if (transition.guard && !transition.guard(view, op)) return;
  const k = edgeKey(op.sourceId, relation, op.targetId);
  if (transition.move === 'unset') active.delete(k);
  else if (!active.has(k)) {
    const { sourceId, targetId, position } = op;
    active.set(k, { sourceId, targetId, relation, state: 'active', position, createdAt: position });
  }
  for (const c of transition.clears ?? []) {
    const [s, t] = c.side === 'fwd' ? [op.sourceId, op.targetId] : [op.targetId, op.sourceId];
    active.delete(edgeKey(s, c.relation, t));
  }
}

/** Same active edges with the same `createdAt` (what lists and counts show). */
export function sameActive(a: ActiveEdges, b: ActiveEdges): boolean {
  if (a.size !== b.size) return false;
  for (const [k, e] of a) if (b.get(k)?.createdAt !== e.createdAt) return false;
  return true;
}

/** The active edge `source → target` of `relation` in the fold, or undefined. */
export function activeEdge(
  fold: PairFold,
  source: UserId,
  relation: Relation,
  target: UserId,
): FoldedEdge | undefined {
  const e = fold.edges.get(edgeKey(source, relation, target));
  return e?.state === 'active' ? e : undefined;
}

/** The active edges of a fold, as `edgeKey → createdAt` (what the lists should hold). */
export function activeSet(fold: PairFold): Map<string, Position> {
  const out = new Map<string, Position>();
  for (const [k, e] of fold.edges) if (e.state === 'active') out.set(k, e.createdAt);
  return out;
}

/** Largest count term of a version; `pair-history.ts` keeps every accepted view below it. */
export const MAX_VERSION_COUNT = Number(LENGTH_SLOTS) - 1;

/**
 * The write version of a view of a pair history (a checkpoint and the ops above it):
 * `newest × 1024 + (total − base)`, where `newest` is the newest position in the view, `total`
 * the number of distinct ops it holds (the checkpoint's count plus the ops above it) and `base`
 * the smallest `base` among the ops at `newest`. If one view strictly contains another, either its
 * newest position is newer, or it is the same and its total is larger while its base is no larger:
 * its version is strictly higher, whatever checkpoints the two views read (see `pair-history.ts`
 * for why `total − base` stays below 1024).
 */
export function pairVersion(view: {
  checkpoint: PairCheckpoint | null;
  ops: readonly StoredPairOp[];
}): bigint {
  const ops = normalizeHistory(view.ops);
  const cp = view.checkpoint;
  const total = (cp?.count ?? 0) + ops.length;
  const last = ops.at(-1);
  let newest: Position;
  let base: number;
  if (last) {
    newest = last.position;
    base = Math.min(...ops.filter((o) => o.position === newest).map((o) => o.base));
  } else if (cp) {
    newest = cp.horizon;
    base = cp.newestBase;
  } else {
    return 0n;
  }
  return newest * LENGTH_SLOTS + BigInt(Math.min(Math.max(total - base, 0), MAX_VERSION_COUNT));
}
