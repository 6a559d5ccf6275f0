/**
 * Count reconciliation: counts a list's rows and corrects its counter by the difference.
 *
 * Design note. Counters are fed deltas by appliers (`src/graph/pair/count-step.ts`) and can drift: two
 * appliers racing on one pair may both count one transition, and a crash between the edge write
 * and the increment loses a delta. The list rows are the truth (they converge by version), so
 * this job counts every bucket (`countBucket`) and sets the correction cell to `counted − shards`,
 * recording the drift it corrected (the in-service `reconcile-dirty.ts` does the same per dirty
 * bucket). A write racing the job can
 * leave a drift of its own; re-running is safe and converges once writes pause. Not a hot-path
 * operation: it reads the whole list.
 */
import { registryFilter } from '../graph/accounts/account-state.js';
import { countBuckets, walkList } from '../lists/list-walker.js';
import { readBucketCodes } from '../model/buckets.js';
import { nowPosition } from '../model/clock.js';
import { type Direction, type ListKey, RELATIONS, type Relation, type UserId } from '../model/types.js';
import type { GraphStore } from '../ports/graph-store.js';
import { recordRecount } from './reconcile-dirty.js';

export interface ReconcileResult {
  list: ListKey;
  /** Rows counted in the list. */
  counted: number;
  /** The counter before the correction. */
  before: number;
  /** `counted − before`: what the counter was missing. */
  drift: number;
}

export interface ReconcileOptions {
  /** Rows per `listBucket` read. */
  pageSize?: number;
  /** Called after each list. */
  onProgress?: (done: number, total: number, last: ReconcileResult) => void;
  now?: () => Date;
}

/** Counts the rows of `list`, whatever its layout. */
export async function countListRows(store: GraphStore, list: ListKey, pageSize = 1000): Promise<number> {
  return walkList(store, list, () => {}, { pageSize });
}

/**
 * Reconciles one list's counter against its rows: sets the correction to `counted − shards` (a
 * plain cell, so it cannot double-apply with the in-service reconciler) and records the drift.
 * Safe to re-run.
 */
export async function reconcileList(
  store: GraphStore,
  list: ListKey,
  o: Omit<ReconcileOptions, 'onProgress'> = {},
): Promise<ReconcileResult> {
  const asOf = nowPosition();
  const before = await store.getCount(list);
  const hidden = registryFilter(store);
  // Bucket by bucket through the one counting walk the in-service reconciler uses (deactivated
  // members not counted, confirmed only where the registry names them), so both record the same
  // per-bucket counts.
  const codes = readBucketCodes(await store.getLayout(list));
  const buckets = await countBuckets(store, list, codes, o.pageSize ?? 1000, hidden);
  const counted = [...buckets.values()].reduce((a, b) => a + b, 0);
  const drift = counted - before;
  await recordRecount(store, list, counted, asOf, buckets);
  await store.putReconciliation(list, { reconciledAt: o.now?.() ?? new Date(), counted, drift });
  return { list, counted, before, drift };
}

/**
 * Reconciles every list of `userIds` for `relations` (default: all) in both directions, one list
 * at a time, reporting progress after each.
 */
export async function reconcileUsers(
  store: GraphStore,
  userIds: readonly UserId[],
  o: ReconcileOptions & { relations?: readonly Relation[] } = {},
): Promise<ReconcileResult[]> {
  const lists: ListKey[] = [];
  for (const userId of userIds)
    for (const relation of o.relations ?? RELATIONS)
      for (const direction of ['out', 'in'] as Direction[]) lists.push({ userId, relation, direction });
  const results: ReconcileResult[] = [];
  for (const list of lists) {
    const r = await reconcileList(store, list, o);
    results.push(r);
    o.onProgress?.(results.length, lists.length, r);
  }
  return results;
}
