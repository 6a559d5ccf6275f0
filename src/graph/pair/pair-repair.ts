/**
 * What the repair jobs ask of the domain, so they never reach into the fold or the row writer:
 * the edges a stored history implies (`foldedEdges`), and rewriting a pair's projection from its
 * stored history (`rewritePair`). The history (`pair_ops`) is the source of truth; edges and list
 * rows are a projection written at the history's version, so a rewrite from the complete history
 * writes at a version at least as high as any view an applier had: it overwrites partial states,
 * deletes stray rows at every activation position the history knows, and loses to a concurrent
 * applier whose view is more complete (a higher version). It appends nothing and changes no
 * counter (the reconciler owns those): safe to re-run while traffic flows.
 */
import { nowPosition, wallClockVersion } from '../../model/clock.js';
import {
  type EdgeRecord,
  edgeKey,
  type ListKey,
  type Position,
  type Relation,
  type UserId,
} from '../../model/types.js';
import type { PairHistoryStore } from '../../ports/pair-history-store.js';
import type { ListRowWrite } from '../../ports/records.js';
import type { UserStore } from '../../ports/user-store.js';
import { foldView, type PairView, pairVersion } from './pair-fold.js';
import { DEFAULT_HISTORY_POLICY, eventWindowMicros } from './pair-history.js';
import { type ViewWriterDeps, writePairView } from './view-writer.js';

/** A list row found standing where the stored edges do not put it (the sweep's ghost rows). */
export interface StrayRow {
  list: ListKey;
  bucketCode: number;
  createdAt: Position;
  otherId: UserId;
}

export interface PairRepairDeps {
  /** `getUsers`: the pair's usernames, which the rows it puts carry (one read per pair). */
  store: ViewWriterDeps['store'] & Pick<PairHistoryStore, 'readPairHistory'> & Pick<UserStore, 'getUsers'>;
  lists: ViewWriterDeps['lists'];
  /** µs since the epoch (the version of strays' deletes on a pair without history); default the system clock. */
  clock?: () => Position;
  /** The oldest slot whose events the rewrite carries; default the clock minus the default event window. */
  eventsFrom?: () => Position;
}

/** The edges `history` implies (checkpoint plus the ops above it), keyed by `edgeKey`. */
export function foldedEdges(history: PairView): Map<string, EdgeRecord> {
  const fold = foldView(history);
  return new Map([...fold.edges].map(([k, { candidates: _, ...e }]) => [k, e]));
}

/** The edge a row of `list` stands for. */
function rowEdge(list: ListKey, otherId: UserId): { source: UserId; relation: Relation; target: UserId } {
  return list.direction === 'out'
    ? { source: list.userId, relation: list.relation, target: otherId }
    : { source: otherId, relation: list.relation, target: list.userId };
}

/**
 * Re-folds the pair's stored history and rewrites every edge and list row it implies, deleting at
 * every activation position the history knows, and deletes the given stray rows the fold does
 * not activate (positions the history does not know). Every write carries the version of the
 * history read (strays of a pair without history: the wall-clock version), so a newer op landing
 * meanwhile writes above it and wins. Idempotent. Returns the number of ops in the history and the
 * edges of the fold written.
 */
export async function rewritePair(
  deps: PairRepairDeps,
  a: UserId,
  b: UserId,
  o: { strays?: readonly StrayRow[]; afterRead?: () => Promise<void> } = {},
): Promise<{ ops: number; edges: EdgeRecord[] }> {
  const [history, users] = await Promise.all([deps.store.readPairHistory(a, b), deps.store.getUsers([a, b])]);
  await o.afterRead?.();
  const clock = deps.clock ?? nowPosition;
  const eventsFrom = deps.eventsFrom ?? (() => clock() - eventWindowMicros(DEFAULT_HISTORY_POLICY));
  const usernames = new Map([...users].map(([id, u]) => [id, u.username]));
  const fold = await writePairView({ ...deps, eventsFrom }, history, [], usernames);
  const deletes: ListRowWrite[] = [];
  for (const r of o.strays ?? []) {
    const e = rowEdge(r.list, r.otherId);
    const f = fold.edges.get(edgeKey(e.source, e.relation, e.target));
    if (f?.state === 'active' && f.createdAt === r.createdAt) continue;
    // A follow the fold does not activate at all: its search row goes too (an active one keeps its own).
    const names =
      r.list.relation === 'follows' && f?.state !== 'active'
        ? [usernames.get(r.otherId), history.indexedNames?.get(r.otherId)].filter((n) => n !== undefined)
        : [];
    deletes.push({
      list: r.list,
      bucketCodes: [r.bucketCode],
      entry: { createdAt: r.createdAt, otherId: r.otherId },
      op: 'delete',
      ...(names.length > 0 ? { searchNames: names } : {}),
    });
  }
  if (deletes.length > 0) {
    const read = pairVersion(history);
    const version = read > 0n ? read : wallClockVersion(clock());
    await deps.store.writeEdges([], deletes, version);
  }
  return {
    ops: (history.checkpoint?.count ?? 0) + history.ops.length,
    edges: [...fold.edges.values()].map(({ candidates: _, ...e }) => e),
  };
}
