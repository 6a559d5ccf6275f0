/**
 * The view writer: a pair's folded state as the row set one write sends (`ViewRows`: the edge
 * rows, forward and inverse, the list rows of both directions, the feed rows) and its write. Shared
 * by the write path (`write-path.ts`, which derives the fold and the feed rows once per op) and the
 * repair job (`writePairView`); the counters are the count step's (`count-step.ts`).
 *
 * Design note. The caller hands in a view of the pair history read *after* its own append; the
 * state written is the fold of that view at `pairVersion(view)` (see `pair-history.ts` for why the
 * most complete view wins). Every edge of the pair is written, active or not (at most ten).
 *
 * List rows. A row's clustering key holds `created_at`, the position of the op that activated the
 * edge, so a partial view may have put a row at a `created_at` that the complete fold does not
 * activate (a follow whose refusing block it had not seen yet), and a writer that crashed between
 * its append and its write leaves the row of the run its op ended. Every write therefore deletes
 * the row at every activation position its view knows except the active one: each activation
 * among the ops above the checkpoint's horizon, the checkpoint's own latest activation, and — for
 * the write that commits a compaction — each activation among the ops it folds. A view that put a
 * stray row is contained in some later writer's view (insert, then read; a view read before a
 * commit is contained in the committer's re-read), whose deletes carry a higher version and win.
 * A write's statements are bounded by the history policy (the ops above the horizon are at most
 * `maxOps`), not by the pair's age: the first design deleted at every candidate position of the
 * whole history and outgrew Cassandra's batch size limit after ~700 follow cycles. The edges and
 * the first rows go as one logged batch; the remaining deletes follow in bounded batches (a crash
 * between them leaves stray rows that the next write or repair deletes). The first batch also
 * carries the view's feed rows (`pair-events.ts`): the events and the change are all-or-nothing.
 *
 * Search rows (`list_search`, `cql/024`). A follows row's put carries the member's username, and
 * the store writes the member's search row and records the name in the pair's static cell (its
 * *indexed* name) in the same batch, at the same version. A search row is keyed by name, not by
 * position, so a write deletes it only when the edge is inactive, under the member's current name
 * and its indexed name (the pair read returns the static cells with the history, no extra
 * request): the indexed name is what a follow written before a rename, whose fan-out has not
 * reached the row yet, left behind; the current name is what a write or a fan-out after the
 * rename indexed. A put under a name that differs from the indexed one deletes the indexed one.
 *
 * Rewriting is idempotent: the same view and op write the same cells at the same version, which
 * is what makes retries and the repair job safe to re-run.
 */

import type { ListService, RowPlacement } from '../../lists/contracts.js';
import { writeBucketCodes } from '../../model/buckets.js';
import type { EventRow } from '../../model/events.js';
import { isCut } from '../../model/search.js';
import type { ListEntry, ListKey, PairOp, Position, UserId } from '../../model/types.js';
import { edgeKey, listId, listIn, projections } from '../../model/types.js';
import type { EdgeStore } from '../../ports/edge-store.js';
import type { EdgeWrite, ListRowWrite } from '../../ports/records.js';
import { pairEventRows } from './pair-events.js';
import {
  type FoldedEdge,
  foldView,
  OP_RELATION,
  type PairFold,
  type PairView,
  pairVersion,
} from './pair-fold.js';

/** What the view writer touches: edges, list rows (and their placements), feed rows. */
export interface ViewWriterDeps {
  store: Pick<EdgeStore, 'writeEdges'>;
  lists: Pick<ListService, 'placement'>;
  /**
   * The oldest slot whose events a view write still carries, now (µs): the clock minus the event
   * window (`eventWindowMicros` in `pair-history.ts`; see `pair-events.ts`); null: write no feed
   * rows (a service built with `events: false`, for the bench's arm without the outbox).
   */
  eventsFrom: () => Position | null;
  /** Told the feed rows of each view batch once it is acknowledged (`Feed.written`: the feed's local tail). */
  onEvents?: (rows: readonly EventRow[]) => void;
}

/** The row set of one view write, derived once (`viewRows`) and sent by `writeViewRows`. */
export interface ViewRows {
  /** Every edge of the pair, active or not, with its inverse row's bucket codes. */
  edges: EdgeWrite[];
  /** The list rows of both directions: puts first, then deletes at every stale position. */
  rows: ListRowWrite[];
  /** The view's feed rows inside the event window, newest slot first. */
  events: EventRow[];
  /** `pairVersion(view)`: every statement's write time. */
  version: bigint;
}

/** The feed rows of `view` from `from` on (none when null), newest slot first: what a view write carries. */
export function viewEvents(view: PairView, from: Position | null): EventRow[] {
  return from === null ? [] : pairEventRows(view, from).reverse();
}

/** Row statements that ride in the edge write's logged batch; the rest go in batches of this size after it. */
const ROWS_PER_BATCH = 64;

/** Feed rows that ride in the edge write's logged batch (the newest slots); the rest follow, twice as many per batch. */
const EVENTS_PER_BATCH = 24;

/**
 * The rows a view must write for one folded edge: its active row (with the member's username from
 * `usernames` when it has one), deletes at each `stale` position. A follows edge's rows also name
 * the search rows to delete (`ListRowWrite.searchNames`): an active row's put deletes under the
 * member's `indexed` name when a rename made it differ from the name put; an inactive edge's first
 * delete deletes under both the member's current and its indexed name. (Not every delete: a search
 * row has no position, and a delete at a stale position beside an active put would take the put's
 * search row with it.)
 */
export function listRowsFor(
  e: FoldedEdge,
  stale: Iterable<Position>,
  placementOf: (list: ListKey) => RowPlacement,
  usernames?: ReadonlyMap<UserId, string>,
  indexed?: ReadonlyMap<UserId, string>,
): ListRowWrite[] {
  const rows: ListRowWrite[] = [];
  const active = e.state === 'active' ? e.createdAt : null;
  const deletes = [...new Set(stale)].filter((c) => c !== active);
  for (const { list, otherId } of projections(e)) {
    const place = placementOf(list);
    const username = usernames?.get(otherId);
    // An active row put without a name (a caller that read none) indexes nothing and deletes nothing.
    const names =
      e.relation !== 'follows' || (active !== null && username === undefined)
        ? []
        : [...new Set([username, indexed?.get(otherId)])].filter(
            (n): n is string => n !== undefined && (active === null || n !== username),
          );
    const row = (entry: ListEntry, op: ListRowWrite['op'], searchNames: string[]): ListRowWrite => ({
      list,
      bucketCodes: place.codes(entry),
      entry,
      op,
      ...(searchNames.length > 0 ? { searchNames } : {}),
      ...(e.relation === 'follows' && isCut(place.search) ? { searchLayout: place.search } : {}),
    });
    if (active !== null) {
      rows.push(
        row({ createdAt: active, otherId, ...(username === undefined ? {} : { username }) }, 'put', names),
      );
    }
    deletes.forEach((c, i) => {
      rows.push(row({ createdAt: c, otherId }, 'delete', active === null && i === 0 ? names : []));
    });
  }
  return rows;
}

/**
 * Every position at which a row of an edge may stand that the fold does not activate (see the
 * note): each activation among the ops above the horizon, the latest activation the checkpoint and
 * the fold know, and each activation among `folded` (ops a compaction just took out of the tail).
 */
function stalePositions(view: PairView, fold: PairFold, folded: readonly PairOp[]): Map<string, Position[]> {
  const stale = new Map<string, Position[]>();
  const add = (k: string, c: Position) => {
    if (c > 0n) stale.set(k, [...(stale.get(k) ?? []), c]);
  };
  for (const [k, e] of fold.edges) {
    for (const c of e.candidates) add(k, c);
    add(k, e.createdAt);
  }
  for (const e of view.checkpoint?.edges ?? []) add(edgeKey(e.sourceId, e.relation, e.targetId), e.createdAt);
  for (const op of folded) {
    const { relation, transition } = OP_RELATION[op.kind];
    if (transition.move === 'set') add(edgeKey(op.sourceId, relation, op.targetId), op.position);
  }
  return stale;
}

/**
 * The row set of `view` (a view read after the caller's append, or the stored history for repair)
 * whose fold is `fold` and whose feed rows are `events` (`viewEvents`): every edge of the pair
 * and both list projections at `pairVersion(view)`, deleting rows at every stale position
 * (`folded`: the ops a compaction committed by this write took out of the tail). `usernames`: the
 * pair's two accounts' usernames as the caller read them, written into the rows it puts (a member
 * without one gets a row without a name, which readers hydrate from the user row). Null when the
 * fold has no edge (nothing to write).
 */
export async function viewRows(
  deps: Pick<ViewWriterDeps, 'lists'>,
  view: PairView,
  fold: PairFold,
  events: EventRow[],
  folded: readonly PairOp[] = [],
  usernames?: ReadonlyMap<UserId, string>,
): Promise<ViewRows | null> {
  if (fold.edges.size === 0) return null;
  const lists = new Map<string, ListKey>();
  for (const e of fold.edges.values()) for (const p of projections(e)) lists.set(listId(p.list), p.list);
  const placements = new Map<string, RowPlacement>();
  await Promise.all(
    [...lists].map(async ([id, list]) => {
      placements.set(id, await deps.lists.placement(list));
    }),
  );
  const placementOf = (l: ListKey) => placements.get(listId(l)) as RowPlacement;
  const stale = stalePositions(view, fold, folded);
  const edges: EdgeWrite[] = [];
  const rows: ListRowWrite[] = [];
  for (const [k, e] of fold.edges) {
    const { candidates: _, ...edge } = e;
    edges.push({
      edge,
      inBucketCodes: writeBucketCodes(placementOf(listIn(e.targetId, e.relation)).layout, e.sourceId),
    });
    rows.push(...listRowsFor(e, stale.get(k) ?? [], placementOf, usernames, view.indexedNames));
  }
  // Puts first, so the rows that must appear ride in the logged batch with their edges.
  rows.sort((x, y) => (x.op === y.op ? 0 : x.op === 'put' ? -1 : 1));
  return { edges, rows, events, version: pairVersion(view) };
}

/**
 * Sends a row set: the edges, the first rows and the newest feed rows as one logged batch (the
 * op being written is among the newest slots, so its events ride with its change), then the
 * further row deletes and older feed rows in bounded batches. Idempotent. Tells `onEvents` each
 * batch's feed rows once it is acknowledged.
 */
export async function writeViewRows(deps: ViewWriterDeps, r: ViewRows | null): Promise<void> {
  if (!r) return;
  const { edges, rows, events, version } = r;
  const first = events.slice(0, EVENTS_PER_BATCH);
  await deps.store.writeEdges(edges, rows.slice(0, ROWS_PER_BATCH), version, first);
  deps.onEvents?.(first);
  for (let i = ROWS_PER_BATCH; i < rows.length; i += ROWS_PER_BATCH) {
    await deps.store.writeEdges([], rows.slice(i, i + ROWS_PER_BATCH), version);
  }
  // A pair hammered within the event window has more: the older rows follow in bounded batches.
  for (let i = EVENTS_PER_BATCH; i < events.length; i += 2 * EVENTS_PER_BATCH) {
    const more = events.slice(i, i + 2 * EVENTS_PER_BATCH);
    await deps.store.writeEdges([], [], version, more);
    deps.onEvents?.(more);
  }
}

/**
 * Writes the folded state of `view` whole (the repair job's rewrite from the stored history):
 * `viewRows` of its fold and its feed rows, then `writeViewRows`. Returns the fold written.
 */
export async function writePairView(
  deps: ViewWriterDeps,
  view: PairView,
  folded: readonly PairOp[] = [],
  usernames?: ReadonlyMap<UserId, string>,
): Promise<PairFold> {
  const fold = foldView(view);
  const events = fold.edges.size === 0 ? [] : viewEvents(view, deps.eventsFrom());
  await writeViewRows(deps, await viewRows(deps, view, fold, events, folded, usernames));
  return fold;
}
