/**
 * Repair: re-derive a pair's edge state and list rows from its history and rewrite them.
 *
 * Design note. The pair history (`pair_ops`) is the source of truth; edges and list rows are a
 * projection written at `pairVersion(view)`. A crash between the append and the edge write
 * (or a dropped batch) leaves the projection behind the history; repairing folds the *complete*
 * history and writes it through the same function the service uses, so it writes at a version at
 * least as high as any view an applier had, overwrites partial states and deletes stray list
 * rows at every activation position the stored history knows (in bounded batches). It appends nothing and never changes counters (the reconcile
 * job owns those), so it is safe to re-run and to run while traffic flows: a concurrent applier
 * whose view is more complete writes at a higher version and wins.
 *
 * Finding pairs: there is no per-user index of pairs, so `repairUsers` repairs every pair among
 * the given users plus every counterpart found in their lists (all relations, both directions).
 * A pair whose history holds ops but whose rows were never written on either side is only found
 * when both users are named.
 */

import { edgeKey, pairVersion } from '../graph/pair-fold.js';
import { type PairWriterDeps, writePairView } from '../graph/pair-writer.js';
import { walkList } from '../lists/list-walker.js';
import { nowPosition, wallClockVersion } from '../model/clock.js';
import {
  type Direction,
  type EdgeRecord,
  type ListKey,
  type Position,
  RELATIONS,
  type Relation,
  type UserId,
} from '../model/types.js';
import type { ListRowWrite } from '../ports/records.js';

export interface RepairResult {
  a: UserId;
  b: UserId;
  /** Ops in the pair history. */
  ops: number;
  /** Edges written (active or removed). */
  edges: number;
}

/** A list row found standing where the stored edges do not put it (the sweep's ghost rows). */
export interface StrayRow {
  list: ListKey;
  bucketCode: number;
  createdAt: Position;
  otherId: UserId;
}

export interface RepairPairOptions {
  /**
   * Rows to delete unless the fold activates their edge at their `createdAt`: positions the stored
   * history does not know (so `writePairView` would not delete them), found by the sweep.
   */
  strays?: readonly StrayRow[];
  /** Called between the history read and the writes (tests use it to land a racing newer op). */
  afterRead?: () => Promise<void>;
}

/** The edge a row of `list` stands for. */
function rowEdge(list: ListKey, otherId: UserId): { source: UserId; relation: Relation; target: UserId } {
  return list.direction === 'out'
    ? { source: list.userId, relation: list.relation, target: otherId }
    : { source: otherId, relation: list.relation, target: list.userId };
}

/**
 * Re-folds the pair's history (checkpoint and ops above it) and rewrites every edge and list row
 * it implies, deleting at every activation position the stored history knows, and deletes the
 * given stray rows the fold does not activate. Every write carries the version of the history it
 * read (strays of a pair without history: the wall-clock version), so a newer op that lands
 * meanwhile writes above it and wins. Idempotent. Returns also the edges of the fold.
 */
export async function repairPair(
  deps: PairWriterDeps,
  a: UserId,
  b: UserId,
  o: RepairPairOptions = {},
): Promise<RepairResult> {
  const { folded: _, ...result } = await repairPairFolded(deps, a, b, o);
  return result;
}

/** `repairPair`, also returning the edges of the fold it wrote (the sweep marks their lists dirty). */
export async function repairPairFolded(
  deps: PairWriterDeps,
  a: UserId,
  b: UserId,
  o: RepairPairOptions = {},
): Promise<RepairResult & { folded: EdgeRecord[] }> {
  const history = await deps.store.readPairHistory(a, b);
  await o.afterRead?.();
  const fold = await writePairView(deps, history);
  const deletes: ListRowWrite[] = [];
  for (const r of o.strays ?? []) {
    const e = rowEdge(r.list, r.otherId);
    const f = fold.edges.get(edgeKey(e.source, e.relation, e.target));
    if (f?.state === 'active' && f.createdAt === r.createdAt) continue;
    deletes.push({
      list: r.list,
      bucketCodes: [r.bucketCode],
      entry: { createdAt: r.createdAt, otherId: r.otherId },
      op: 'delete',
    });
  }
  if (deletes.length > 0) {
    const read = pairVersion(history);
    const version = read > 0n ? read : wallClockVersion(nowPosition());
    await deps.store.writeEdges([], deletes, version);
  }
  const folded = [...fold.edges.values()].map(({ candidates: _, ...e }) => e);
  return {
    a,
    b,
    ops: (history.checkpoint?.count ?? 0) + history.ops.length,
    edges: fold.edges.size,
    folded,
  };
}

/** Every id in `userId`'s lists (all relations, both directions). */
async function counterparts(deps: PairWriterDeps, userId: UserId, pageSize: number): Promise<Set<UserId>> {
  const out = new Set<UserId>();
  for (const relation of RELATIONS) {
    for (const direction of ['out', 'in'] as Direction[]) {
      await walkList(
        deps.store,
        { userId, relation, direction },
        (page) => {
          for (const e of page) out.add(e.otherId);
        },
        { pageSize },
      );
    }
  }
  return out;
}

export interface RepairOptions {
  pageSize?: number;
  /** Called after each pair. */
  onProgress?: (done: number, total: number, last: RepairResult) => void;
}

/** Repairs every pair among `userIds` and between them and their list counterparts. */
export async function repairUsers(
  deps: PairWriterDeps,
  userIds: readonly UserId[],
  o: RepairOptions = {},
): Promise<RepairResult[]> {
  const pairs = new Map<string, [UserId, UserId]>();
  const add = (x: UserId, y: UserId) => {
    if (x === y) return;
    const [lo, hi] = x < y ? [x, y] : [y, x];
    pairs.set(`${lo}|${hi}`, [lo, hi]);
  };
  for (const [i, x] of userIds.entries()) for (const y of userIds.slice(i + 1)) add(x, y);
  for (const x of userIds) for (const y of await counterparts(deps, x, o.pageSize ?? 1000)) add(x, y);
  const results: RepairResult[] = [];
  for (const [lo, hi] of pairs.values()) {
    const r = await repairPair(deps, lo, hi);
    results.push(r);
    o.onProgress?.(results.length, pairs.size, r);
  }
  return results;
}
