/**
 * A pair's events: the feed rows a view of its history implies, and the rule that keeps
 * compaction from folding ops whose events a later writer still has to derive.
 *
 * Design note.
 *
 * Definition. Every op carries a feed slot (`StoredPairOp.slot`: its writer's clock when it
 * appended; a retry of the op keeps the stored one). Order the pair's ops by slot (ties: the op
 * key). The events at an op's slot are the edges whose *active* state differs between the fold of
 * the ops ordered before it and the fold of those plus the op — each fold in position order, the
 * relation rules applied as always. The events of all slots therefore telescope: applied in feed
 * order they give the active states of the fold of the whole history, whatever order the ops were
 * positioned in. A late op (a replay with an old position, an append that was slow) changes the
 * fold of every later prefix too, but its effect appears *at its own slot* — the corrective
 * events the spec asks for — because the earlier slots' prefixes do not contain it.
 *
 * Who writes them. Every view write (`view-writer.ts`) carries, in its first logged batch and at
 * its version, one row per op of its view whose slot is inside the event window: the op's
 * transitions under that view, or an empty row. A writer that saw only part of the history may
 * derive transitions the full history does not have; the writer of the last op to land with a
 * slot at or below a given one sees every op ordered up to it, and its view (a superset of the
 * partial one) writes at a higher version, so its rows win cell by cell (same keys). Ops appended
 * by one writer keep their slot on a retry, so a retried batch writes the same rows.
 *
 * Compaction. Once ops are folded into a checkpoint, writers no longer see them one by one, and a
 * prefix fold starts from the checkpoint. That is exact as long as every folded op is ordered (by
 * slot) before every op left in the tail whose slot is still inside the window: `mayFold` is that
 * condition, checked when a horizon is announced and again when it is committed. Live ops are
 * positioned and slotted by one clock, so the two orders agree and nothing waits; a replay (old
 * position, new slot) holds back the horizon below it until its slot leaves the window.
 */

import type { EdgeTransition, EventKey, EventRow } from '../../model/events.js';
import { eventShard } from '../../model/events.js';
import { type EdgeRecord, edgeKey, type PairOp, type Position, type Relation } from '../../model/types.js';
import type { StoredPairOp } from '../../ports/records.js';
import { compareOps, type PairView, stepActive } from './pair-fold.js';

/** Slot order: slot (an op without one first), then the op key. */
function compareSlots(a: StoredPairOp, b: StoredPairOp): number {
  const sa = a.slot ?? -1n;
  const sb = b.slot ?? -1n;
  if (sa !== sb) return sa < sb ? -1 : 1;
  return compareOps(a, b);
}

/** The edges whose active state differs between two active maps, as transitions (key order). */
function transitions(before: Map<string, boolean>, after: Map<string, boolean>): EdgeTransition[] {
  const out: EdgeTransition[] = [];
  const keys = [...new Set([...before.keys(), ...after.keys()])].sort();
  for (const k of keys) {
    const on = after.get(k) === true;
    if (on === (before.get(k) === true)) continue;
    const [source, relation, target] = k.split('|') as [string, Relation, string];
    out.push({ sourceId: BigInt(source), relation, targetId: BigInt(target), on });
  }
  return out;
}

/** The active edges of `ops` (history order) folded on `start`. */
function activeOf(ops: readonly StoredPairOp[], start: readonly EdgeRecord[]): Map<string, boolean> {
  const active = new Map(
    start.map((e) => [edgeKey(e.sourceId, e.relation, e.targetId), e.state === 'active']),
  );
  for (const op of ops) stepActive(active, op);
  return active;
}

/**
 * The feed rows of every op in `view` whose slot is at or after `from`: its transitions at its
 * slot under this view (none: an empty row, which replaces what a partial view may have written).
 * Prefixes are folded incrementally while slot order and position order agree (live ops); an op
 * that lands below the prefix's newest position (a replay) refolds its prefix.
 */
export function pairEventRows(view: PairView, from: Position): EventRow[] {
  const ops = [...view.ops].sort(compareSlots);
  const start = view.checkpoint?.edges ?? [];
  const rows: EventRow[] = [];
  const prefix: StoredPairOp[] = []; // history order
  let active = activeOf([], start);
  for (const op of ops) {
    const newest = prefix.at(-1);
    const inOrder = newest === undefined || compareOps(newest, op) < 0;
    let after: Map<string, boolean>;
    if (inOrder) {
      after = new Map(active);
      stepActive(after, op);
      prefix.push(op);
    } else {
      const at = prefix.findIndex((o) => compareOps(o, op) > 0);
      prefix.splice(at, 0, op);
      after = activeOf(prefix, start);
    }
    if (op.slot !== undefined && op.slot >= from) {
      rows.push({ key: opEventKey(op, op.slot), transitions: transitions(active, after) });
    }
    active = after;
  }
  return rows;
}

/**
 * Whether the ops at or below `horizon` (position order) may be folded now: every one of them is
 * ordered by slot before every op above the horizon whose slot is at or after `from` (see the note).
 */
export function mayFold(ops: readonly StoredPairOp[], horizon: Position, from: Position): boolean {
  let newestFolded: StoredPairOp | null = null;
  for (const o of ops) {
    if (o.position <= horizon && (newestFolded === null || compareSlots(o, newestFolded) > 0))
      newestFolded = o;
  }
  if (newestFolded === null) return true;
  const last = newestFolded;
  return ops.every(
    (o) => o.position <= horizon || o.slot === undefined || o.slot < from || compareSlots(last, o) < 0,
  );
}

/**
 * Whether folding through `horizon` leaves out every op whose intent may be unresolved: each op it
 * folds has a slot at or below `clear` (`PairHistoryDeps.intentsClear`; null: not known, no limit).
 * An op appended by a writer that died before its view batch keeps its intent until the recovery
 * rewrites its pair from the op's slot; folded into a checkpoint first, the recovery would find it
 * absent and fence it, and its events would be lost (`feed-intents.ts`, rule 5).
 */
export function intentsResolved(
  ops: readonly StoredPairOp[],
  horizon: Position,
  clear: Position | null,
): boolean {
  if (clear === null) return true;
  return ops.every((o) => o.position > horizon || o.slot === undefined || o.slot <= clear);
}

/**
 * The highest horizon among `candidates` (ascending positions) that `mayFold` allows, or null.
 * Each candidate is checked in one pass from the top; histories are bounded by the policy.
 */
export function foldableHorizon(
  ops: readonly StoredPairOp[],
  candidates: readonly Position[],
  from: Position,
): Position | null {
  for (let i = candidates.length - 1; i >= 0; i--) {
    const h = candidates[i] as Position;
    if (mayFold(ops, h, from)) return h;
  }
  return null;
}

/** The key of `op`'s feed row (and of its intent, `feed-intents.ts`) at `slot`. */
export function opEventKey(op: PairOp, slot: Position): EventKey {
  const [low, high] = op.sourceId < op.targetId ? [op.sourceId, op.targetId] : [op.targetId, op.sourceId];
  return {
    slot,
    shard: eventShard(low, high),
    low,
    high,
    opPosition: op.position,
    opSource: op.sourceId,
    opKind: op.kind,
  };
}
