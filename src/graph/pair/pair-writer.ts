/**
 * Writing a pair's folded state: the edge rows (forward and inverse), the list rows of both
 * directions, and the counter deltas. Shared by every mutation of the graph service and by the
 * repair job, so there is one write path.
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
 *
 * Counters are not idempotent and carry no version; they get `after − before` per list from the
 * applier's own two views and can drift when appliers race or crash between writes. Each applier
 * marks the list buckets its op may change dirty *before* its append (`markBeforeWrite`), dated a
 * lease ahead of its clock, and the in-service reconciler (`src/jobs/reconcile-dirty.ts`) recounts
 * those buckets and corrects the counters. Marking after the increment, as this did first, left a
 * write whose edge batch timed out after it was applied (or whose increment was lost, or whose
 * process died in between) with its list row, no increment and no mark: its retry counted nothing
 * (the first read already showed the edge) and the count read `exact: true` while one short.
 */

import type { ListService, RowPlacement } from '../../lists/contracts.js';
import { bucketCodeOf, bucketOf, writeBucketCodes } from '../../model/buckets.js';
import type { EventRow } from '../../model/events.js';
import { isCut } from '../../model/search.js';
import type { ListEntry, ListKey, PairOp, Position, Relation, UserId } from '../../model/types.js';
import { edgeKey, listId, listIn, projections } from '../../model/types.js';
import type { EdgeWrite, ListRowWrite, PairCheckpoint, StoredPairOp } from '../../ports/records.js';
import type { CountStore, EdgeStore } from '../../ports/store.js';
import { pairEventRows } from './pair-events.js';
import {
  compareOps,
  containsOp,
  type FoldedEdge,
  foldPair,
  OP_RELATION,
  opKey,
  type PairFold,
  pairVersion,
} from './pair-fold.js';

/** What the writer of a pair's rows and counts touches: edges, list rows, counters, dirty marks, layouts. */
export interface PairWriterDeps {
  store: Pick<EdgeStore, 'writeEdges'> &
    Pick<CountStore, 'markDirtyBuckets' | 'incrementCounts' | 'getCount'>;
  lists: Pick<ListService, 'currentLayout' | 'placement' | 'sizeCheckDue' | 'noteSize'>;
  /**
   * The oldest slot whose events a view write still carries, now (µs): the clock minus the event
   * window (`eventWindowMicros` in `pair-history.ts`; see `pair-events.ts`); null: write no feed
   * rows (a service built with `events: false`, for the bench's arm without the outbox).
   */
  eventsFrom: () => Position | null;
  /** Told the feed rows of each view batch once it is acknowledged (the feed's local tail). */
  onEvents?: (rows: readonly EventRow[]) => void;
}

/** Counter shards per list: enough to spread a celebrity's hot counter, cheap to sum. */
export const COUNT_SHARDS = 16;

/** A view of a pair's history: its checkpoint and the ops above the horizon. */
export interface PairView {
  checkpoint: PairCheckpoint | null;
  ops: readonly StoredPairOp[];
  /** The names the pair's accounts were last indexed under (`PairHistory.indexedNames`). */
  indexedNames?: ReadonlyMap<UserId, string>;
}

/** The fold of a view, leaving out `skip` (an op, matched by position, source and kind) when given. */
export function foldView(view: PairView, skip?: PairOp): PairFold {
  const ops = skip ? view.ops.filter((o) => compareOps(o, skip) !== 0) : view.ops;
  return foldPair(ops, view.checkpoint?.edges);
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
 * Writes the folded state of `view` (a view read after the caller's append, or the stored history
 * for repair): every edge of the pair and both list projections at `pairVersion(view)`, deleting
 * rows at every stale position (`folded`: the ops a compaction committed by this write took out of
 * the tail). The edges and the first rows go as one logged batch; further row deletes follow in
 * bounded batches. Idempotent. Returns the fold written. `usernames`: the pair's two accounts'
 * usernames as the caller read them, written into the rows it puts (a member without one gets a row
 * without a name, which readers hydrate from the user row).
 */
export async function writePairView(
  deps: PairWriterDeps,
  view: PairView,
  folded: readonly PairOp[] = [],
  usernames?: ReadonlyMap<UserId, string>,
): Promise<PairFold> {
  const fold = foldView(view);
  if (fold.edges.size === 0) return fold;
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
  const version = pairVersion(view);
  // Newest slots first: the op being written is among them, so its events ride with its change.
  const from = deps.eventsFrom();
  const events = from === null ? [] : pairEventRows(view, from).reverse();
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
  return fold;
}

/** A counter change on one list. */
export interface CountDelta {
  list: ListKey;
  /** The id stored in the list's row; picks the counter shard. */
  otherId: UserId;
  delta: number;
}

/**
 * The transition `op` makes as this writer counts it: from `S` to `S ∪ {op}`, where `S` is the
 * first read's ops plus the racers (ops in the re-read that the first read lacked) ordered before
 * `op`. Racers that see each other thus count in one order, position order, and their
 * transitions add up to the pair's change; an op inserted below others (a replay) still counts
 * its effect on them. Null when `op` is not above the re-read's horizon (a commit folded it).
 */
export function ownTransition(
  first: PairView,
  reread: PairView,
  op: PairOp,
): { before: PairFold; after: PairFold } | null {
  if (!containsOp(reread.ops, op)) return null;
  const known = new Set(first.ops.map(opKey));
  const racersBefore = reread.ops.filter((o) => !known.has(opKey(o)) && compareOps(o, op) < 0);
  const s = [...first.ops, ...racersBefore];
  const start = first.checkpoint?.edges;
  return { before: foldPair(s, start), after: foldPair([...s, op], start) };
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

/**
 * How far ahead of its clock a writer dates the marks it writes before its write (µs), unless told
 * otherwise: 4 s, twice the default clock bound (`GraphService` derives it from the configured one).
 */
export const COUNT_LEASE_MICROS = 4_000_000n;

/** A bucket a writer marked dirty: the list, the member whose bucket it is, and the bucket code. */
interface MarkedBucket {
  list: ListKey;
  otherId: UserId;
  code: number;
}

/**
 * The marks a writer wrote before its write (`markBeforeWrite`), dated `until`: its promise that
 * every write they cover (the append, the rows, the increments) has completed by then, or that it
 * marks again later (`applyCountDeltas` after an overrun, `markAfterFailure` on an error).
 */
export interface CountLease {
  until: Position;
  marks: MarkedBucket[];
  /** µs wall clock of the writer. */
  clock: () => Position;
  /** The lease length (µs) a re-mark after a failure is dated with. */
  micros: bigint;
}

const markKey = (m: { list: ListKey; code: number }) => `${listId(m.list)}|${m.code}`;

/** Marks every bucket of `marks` dirty, dated `at`: one request (the marks are idempotent, each lands on its own). */
async function markAll(deps: PairWriterDeps, marks: readonly MarkedBucket[], at: Position): Promise<void> {
  if (marks.length === 0) return;
  await deps.store.markDirtyBuckets(
    marks.map((m) => ({ list: m.list, bucketCode: m.code })),
    at,
  );
}

/**
 * Relations whose edges a guard reads (`pair-fold.ts`): an op on one of them that lands below
 * other ops can change what those did.
 */
const GUARDING: readonly Relation[] = ['follows', 'requests', 'blocks'];

/**
 * The list projections `op` may change: its own edge and the edges it clears; when it lands
 * below other ops of the pair (`below`: a replay, or a retry of an op already recorded) and acts
 * on a relation a guard reads, also the follow and request edges of both directions (the edges of
 * the later ops whose guards it may flip).
 */
export function listsOpMayChange(op: PairOp, below: boolean): { list: ListKey; otherId: UserId }[] {
  const { relation, transition } = OP_RELATION[op.kind];
  const edge = (side: 'fwd' | 'rev', r: Relation) =>
    side === 'fwd'
      ? { sourceId: op.sourceId, relation: r, targetId: op.targetId }
      : { sourceId: op.targetId, relation: r, targetId: op.sourceId };
  const edges = [edge('fwd', relation), ...(transition.clears ?? []).map((c) => edge(c.side, c.relation))];
  if (below && GUARDING.includes(relation))
    for (const r of ['follows', 'requests'] as const) edges.push(edge('fwd', r), edge('rev', r));
  const distinct = new Map(edges.map((e) => [edgeKey(e.sourceId, e.relation, e.targetId), e]));
  return [...distinct.values()].flatMap(projections);
}

/** The bucket of each (list, member) under the list's write layout now. */
async function bucketsOf(
  deps: PairWriterDeps,
  targets: readonly { list: ListKey; otherId: UserId }[],
): Promise<MarkedBucket[]> {
  return Promise.all(
    targets.map(async ({ list, otherId }) => ({
      list,
      otherId,
      code: bucketCodeOf((await deps.lists.currentLayout(list)).buckets, otherId),
    })),
  );
}

/**
 * Marks dirty every list bucket `op` may change (`listsOpMayChange`), dated `clock() + micros`
 * (default `COUNT_LEASE_MICROS`): call it before the op's append (or, for an op already in
 * `history`, before its rewrite), so the mark is durable before any state it serves. The
 * reconciler leaves a mark dated after its pass began standing (`reconcile-dirty.ts`), so no pass
 * that began before this writer's increments can clear it; a writer that crashes anywhere after
 * this call leaves its lists marked, and a pass after `until` recounts them.
 */
export async function markBeforeWrite(
  deps: PairWriterDeps,
  op: PairOp,
  history: PairView,
  o: { clock: () => Position; micros?: bigint },
): Promise<CountLease> {
  const micros = o.micros ?? COUNT_LEASE_MICROS;
  const newest = history.ops.at(-1)?.position ?? 0n;
  const below = op.position <= newest;
  const marks = await bucketsOf(deps, listsOpMayChange(op, below));
  const until = o.clock() + micros;
  await markAll(deps, marks, until);
  return { until, marks, clock: o.clock, micros };
}

/**
 * Marks the lease's buckets again, dated a fresh lease from now: for a writer whose write failed
 * after `markBeforeWrite` (a timeout whose batch may still be applied, a lost increment), so a
 * late landing within the new lease is still recounted. Best effort: a crash skips it, and the
 * first lease then stands alone.
 */
export async function markAfterFailure(deps: PairWriterDeps, lease: CountLease): Promise<void> {
  const until = lease.clock() + lease.micros;
  await markAll(deps, lease.marks, until);
}

/**
 * Applies counter deltas and tells the list service the sizes of lists that grew. Never
 * idempotent. Every bucket it touches is marked dirty *before* its increment: the lease's marks
 * (`markBeforeWrite`) cover the op's own lists; the buckets of other deltas and of `alsoDirty`
 * (lists a race may have changed without a delta of this writer's) are marked here, dated the
 * lease's `until`. Once the increments are done, a writer that overran its lease marks every
 * bucket again at its clock then (a pass that began after `until` may have cleared the first
 * marks without seeing these increments; it read its marks before this clock, so it cannot clear
 * the new ones).
 */
export async function applyCountDeltas(
  deps: PairWriterDeps,
  deltas: readonly CountDelta[],
  alsoDirty: readonly CountDelta[],
  lease: CountLease,
): Promise<void> {
  const covered = new Set(lease.marks.map(markKey));
  const touched = await bucketsOf(deps, [...deltas, ...alsoDirty]);
  const extra: MarkedBucket[] = [];
  for (const m of touched) {
    if (covered.has(markKey(m))) continue;
    covered.add(markKey(m));
    extra.push(m);
  }
  await markAll(deps, extra, lease.until);
  // Every increment in one counter batch (one request; it may land in part, which the marks
  // cover). The size is advisory (it only triggers growth), so read it alongside the increments
  // rather than after them (it may or may not include this delta yet), and only when the list
  // service says it is due (see `sizeCheckDue`).
  const increments = deps.store.incrementCounts(
    deltas.map(({ list, otherId, delta }) => ({ list, shard: bucketOf(otherId, COUNT_SHARDS), delta })),
  );
  const sizes = deltas
    .filter(({ list, delta }) => delta > 0 && deps.lists.sizeCheckDue(list, delta))
    .map(async ({ list }) => ({ list, size: await deps.store.getCount(list) }));
  const [, noted] = await Promise.all([increments, Promise.all(sizes)]);
  for (const { list, size } of noted) deps.lists.noteSize(list, size);
  const now = lease.clock();
  if (now >= lease.until) {
    await markAll(deps, [...lease.marks, ...extra], now);
  }
}
