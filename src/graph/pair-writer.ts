/**
 * Writing a pair's folded state: the edge rows (forward and inverse), the list rows of both
 * directions, and the counter deltas. Shared by every mutation of the graph service and by the
 * repair job, so there is one write path.
 *
 * Design note. The caller hands in a view of the pair history read *after* its own append; the
 * state written is `foldPair(view)` at `pairVersion(view)` (see `pair-fold.ts` for why the most
 * complete view wins). Every edge the view can activate is written, active or not, and for each
 * one every candidate `created_at` except the active one gets a list-row delete, so whatever a
 * partial view wrote is overwritten or deleted by a more complete one. Rewriting is idempotent:
 * the same view writes the same cells at the same version, which is what makes retries and the
 * repair job safe to re-run.
 *
 * Counters are not idempotent and carry no version; they get `after − before` per list from the
 * applier's own two views and can drift when appliers race or crash between writes. The
 * reconcile job (`src/jobs/reconcile.ts`) counts the list rows and corrects them.
 */
import type { GraphStore } from '../store/store.js';
import type {
  BucketLayout,
  EdgeWrite,
  ListKey,
  ListRowWrite,
  PairOp,
  Relation,
  UserId,
} from '../store/types.js';
import { bucketOf, writeBucketCodes } from './buckets.js';
import type { ListService } from './contracts.js';
import { type FoldedEdge, foldPair, type PairFold, pairVersion } from './pair-fold.js';

export interface PairWriterDeps {
  store: GraphStore;
  lists: ListService;
}

/** Counter shards per list: enough to spread a celebrity's hot counter, cheap to sum. */
export const COUNT_SHARDS = 16;

export const listOut = (userId: UserId, relation: Relation): ListKey => ({
  userId,
  relation,
  direction: 'out',
});
export const listIn = (userId: UserId, relation: Relation): ListKey => ({
  userId,
  relation,
  direction: 'in',
});

const listId = (l: ListKey) => `${l.userId}|${l.relation}|${l.direction}`;

/** The two lists an edge projects into, each with the id stored in its rows. */
export function projections(e: {
  sourceId: UserId;
  relation: Relation;
  targetId: UserId;
}): { list: ListKey; otherId: UserId }[] {
  return [
    { list: listOut(e.sourceId, e.relation), otherId: e.targetId },
    { list: listIn(e.targetId, e.relation), otherId: e.sourceId },
  ];
}

/** The rows a view must write for one folded edge: its active row, deletes at every other candidate. */
export function listRowsFor(e: FoldedEdge, layoutOf: (list: ListKey) => BucketLayout): ListRowWrite[] {
  const rows: ListRowWrite[] = [];
  for (const { list, otherId } of projections(e)) {
    const bucketCodes = writeBucketCodes(layoutOf(list), otherId);
    const active = e.state === 'active' ? e.createdAt : null;
    if (active !== null) rows.push({ list, bucketCodes, entry: { createdAt: active, otherId }, op: 'put' });
    for (const c of new Set(e.candidates)) {
      if (c !== active) rows.push({ list, bucketCodes, entry: { createdAt: c, otherId }, op: 'delete' });
    }
  }
  return rows;
}

/**
 * Writes the folded state of `history` (a view read after the caller's append): every edge the
 * view can activate, both list projections, at `pairVersion(history)`. Idempotent. Returns the
 * fold written.
 */
export async function writePairView(deps: PairWriterDeps, history: readonly PairOp[]): Promise<PairFold> {
  const fold = foldPair(history);
  if (fold.edges.size === 0) return fold;
  const lists = new Map<string, ListKey>();
  for (const e of fold.edges.values()) for (const p of projections(e)) lists.set(listId(p.list), p.list);
  const layouts = new Map<string, BucketLayout>();
  await Promise.all(
    [...lists].map(async ([id, list]) => {
      layouts.set(id, await deps.lists.layoutForWrite(list));
    }),
  );
  const layoutOf = (l: ListKey) => layouts.get(listId(l)) as BucketLayout;
  const edges: EdgeWrite[] = [];
  const rows: ListRowWrite[] = [];
  for (const e of fold.edges.values()) {
    const { candidates: _, ...edge } = e;
    edges.push({
      edge,
      inBucketCodes: writeBucketCodes(layoutOf(listIn(e.targetId, e.relation)), e.sourceId),
    });
    rows.push(...listRowsFor(e, layoutOf));
  }
  await deps.store.writeEdges(edges, rows, pairVersion(history));
  return fold;
}

/** A counter change on one list. */
export interface CountDelta {
  list: ListKey;
  /** The id stored in the list's row; picks the counter shard. */
  otherId: UserId;
  delta: number;
}

/** Per-list `(active after) − (active before)` between two folds of the same pair. */
export function countDeltas(before: PairFold, after: PairFold): CountDelta[] {
  const out: CountDelta[] = [];
  const keys = new Set([...before.edges.keys(), ...after.edges.keys()]);
  for (const k of keys) {
    const b = before.edges.get(k);
    const a = after.edges.get(k);
    const delta = (a?.state === 'active' ? 1 : 0) - (b?.state === 'active' ? 1 : 0);
    if (delta === 0) continue;
    for (const p of projections((a ?? b) as FoldedEdge)) out.push({ ...p, delta });
  }
  return out;
}

/** Applies counter deltas and tells the list service the sizes of lists that grew. Never idempotent. */
export async function applyCountDeltas(deps: PairWriterDeps, deltas: readonly CountDelta[]): Promise<void> {
  await Promise.all(
    deltas.map(async ({ list, otherId, delta }) => {
      // The size is advisory (it only triggers growth), so read it alongside the increment
      // rather than after it; it may or may not include this delta yet.
      const [, size] = await Promise.all([
        deps.store.incrementCount(list, bucketOf(otherId, COUNT_SHARDS), delta),
        delta > 0 ? deps.store.getCount(list) : null,
      ]);
      if (size !== null) deps.lists.noteSize(list, size);
    }),
  );
}
