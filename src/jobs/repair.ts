/**
 * Repair: re-derive a pair's edge state and list rows from its history and rewrite them.
 *
 * Design note. A crash between an op's append and its edge write (or a dropped batch) leaves the
 * projection (edges, list rows) behind the pair history; repairing rewrites it from the complete
 * stored history through the domain's repair interface (`graph/pair-repair.ts`, which says why
 * that is safe to re-run and to run while traffic flows).
 *
 * Finding pairs: there is no per-user index of pairs, so `repairUsers` repairs every pair among
 * the given users plus every counterpart found in their lists (all relations, both directions).
 * A pair whose history holds ops but whose rows were never written on either side is only found
 * when both users are named.
 */

import { rewritePair, type StrayRow } from '../graph/pair/pair-repair.js';
import type { ListService } from '../lists/contracts.js';
import { walkList } from '../lists/list-walker.js';
import { type Direction, type EdgeRecord, RELATIONS, type UserId } from '../model/types.js';
import type { GraphStore } from '../ports/graph-store.js';

/** What the repair jobs run on: the whole store and the list engine. */
export interface RepairDeps {
  store: GraphStore;
  lists: ListService;
}

export interface RepairResult {
  a: UserId;
  b: UserId;
  /** Ops in the pair history. */
  ops: number;
  /** Edges written (active or removed). */
  edges: number;
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

/**
 * Re-folds the pair's history (checkpoint and ops above it) and rewrites every edge and list row
 * it implies, deleting at every activation position the stored history knows, and deletes the
 * given stray rows the fold does not activate. Every write carries the version of the history it
 * read (strays of a pair without history: the wall-clock version), so a newer op that lands
 * meanwhile writes above it and wins. Idempotent. Returns also the edges of the fold.
 */
export async function repairPair(
  deps: RepairDeps,
  a: UserId,
  b: UserId,
  o: RepairPairOptions = {},
): Promise<RepairResult> {
  const { folded: _, ...result } = await repairPairFolded(deps, a, b, o);
  return result;
}

/** `repairPair`, also returning the edges of the fold it wrote (the sweep marks their lists dirty). */
export async function repairPairFolded(
  deps: RepairDeps,
  a: UserId,
  b: UserId,
  o: RepairPairOptions = {},
): Promise<RepairResult & { folded: EdgeRecord[] }> {
  const { ops, edges } = await rewritePair(deps, a, b, o);
  return { a, b, ops, edges: edges.length, folded: edges };
}

/** Every id in `userId`'s lists (all relations, both directions). */
async function counterparts(deps: RepairDeps, userId: UserId, pageSize: number): Promise<Set<UserId>> {
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
  /**
   * Pairs repaired at once (default 8). Pairs are independent (each rewrite reads and writes its own
   * history, edges and list rows, versioned by that history), so only the database's load bounds it.
   */
  concurrency?: number;
  /** Called after each pair, in completion order. */
  onProgress?: (done: number, total: number, last: RepairResult) => void;
}

/**
 * Repairs every pair among `userIds` and between them and their list counterparts, `concurrency`
 * pairs at a time; the results come in the order the pairs were found.
 */
export async function repairUsers(
  deps: RepairDeps,
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
  const todo = [...pairs.values()];
  const results: RepairResult[] = new Array(todo.length);
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < todo.length) {
      const i = next++;
      const [lo, hi] = todo[i] as [UserId, UserId];
      const r = await repairPair(deps, lo, hi);
      results[i] = r;
      o.onProgress?.(++done, todo.length, r);
    }
  };
  const width = Math.max(1, Math.min(o.concurrency ?? 8, todo.length));
  await Promise.all(Array.from({ length: width }, worker));
  return results;
}
