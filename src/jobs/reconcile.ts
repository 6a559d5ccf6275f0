/**
 * Count reconciliation: counts a list's rows and corrects its counter by the difference.
 *
 * Design note. Counters are fed deltas by appliers (`pair-writer.ts`) and can drift: two
 * appliers racing on one pair may both count one transition, and a crash between the edge write
 * and the increment loses a delta. The list rows are the truth (they converge by version), so
 * this job counts them through `listBucket` over the layout's read buckets and adds
 * `counted − counter` to shard 0, recording the drift it corrected. A write racing the job can
 * leave a drift of its own; re-running is safe and converges once writes pause. Not a hot-path
 * operation: it reads the whole list.
 */
import { readBucketCodes } from '../graph/buckets.js';
import type { GraphStore } from '../store/store.js';
import { type Direction, type ListKey, RELATIONS, type Relation, type UserId } from '../store/types.js';

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
  const layout = await store.getLayout(list);
  let counted = 0;
  for (const code of readBucketCodes(layout)) {
    let after = null;
    for (;;) {
      const page = await store.listBucket(list, code, after, pageSize);
      counted += page.length;
      if (page.length < pageSize) break;
      after = page.at(-1) ?? null;
    }
  }
  return counted;
}

/** Reconciles one list's counter against its rows. Safe to re-run. */
export async function reconcileList(
  store: GraphStore,
  list: ListKey,
  o: Omit<ReconcileOptions, 'onProgress'> = {},
): Promise<ReconcileResult> {
  const before = await store.getCount(list);
  const counted = await countListRows(store, list, o.pageSize);
  const drift = counted - before;
  if (drift !== 0) await store.incrementCount(list, 0, drift);
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
