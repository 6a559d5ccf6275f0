/**
 * The count step of a write: the dirty marks before its append and the counter deltas after its
 * view write (`write-path.ts` runs it; the repair job changes no counter).
 *
 * Design note.
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

import type { ListService } from '../../lists/contracts.js';
import { bucketCodeOf, bucketOf } from '../../model/buckets.js';
import type { EventKey } from '../../model/events.js';
import type { EdgeRecord, ListKey, PairOp, Position, Relation, UserId } from '../../model/types.js';
import { edgeKey, listId, projections } from '../../model/types.js';
import type { CountStore } from '../../ports/count-store.js';
import { type ActiveEdges, OP_RELATION, type PairFold, type PairView } from './pair-fold.js';

/** What the count step touches: counters, dirty marks, list layouts and sizes. */
export interface CountStepDeps {
  store: Pick<CountStore, 'markDirtyBuckets' | 'incrementCounts' | 'getCount'>;
  lists: Pick<ListService, 'currentLayout' | 'sizeCheckDue' | 'noteSize'>;
}

/** Counter shards per list: enough to spread a celebrity's hot counter, cheap to sum. */
export const COUNT_SHARDS = 16;

/** A counter change on one list. */
export interface CountDelta {
  list: ListKey;
  /** The id stored in the list's row; picks the counter shard. */
  otherId: UserId;
  delta: number;
}

/** Per-list `(active after) − (active before)` between two states of the same pair. */
export function countDeltas(before: ActiveEdges, after: ActiveEdges): CountDelta[] {
  const out: CountDelta[] = [];
  for (const k of new Set([...before.keys(), ...after.keys()])) {
    const a = after.get(k);
    const b = before.get(k);
    const delta = (a ? 1 : 0) - (b ? 1 : 0);
    if (delta !== 0) for (const p of projections((a ?? b) as EdgeRecord)) out.push({ ...p, delta });
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

/**
 * Marks every bucket of `marks` dirty, dated `at`, with the op's feed intent if given: one request
 * (the marks are idempotent, each lands on its own).
 */
async function markAll(
  deps: CountStepDeps,
  marks: readonly MarkedBucket[],
  at: Position,
  intent?: { key: EventKey; timeoutMs: number },
): Promise<void> {
  if (marks.length === 0 && !intent) return;
  await deps.store.markDirtyBuckets(
    marks.map((m) => ({ list: m.list, bucketCode: m.code })),
    at,
    intent ? { intent: intent.key, timeoutMs: intent.timeoutMs } : {},
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
 * the later ops whose guards it may flip). An op at the top of the history (`!below`) clears only
 * what is active when it is applied: with `active` (the first read's fold), a cleared edge that is
 * not active there is left out — it can be active at the op only through a racer ordered before
 * it, which the op then counts, and the write marks that list before its view write
 * (`markBeforeView`). A follow thus marks its two follow lists, not the two request lists too.
 */
export function listsOpMayChange(
  op: PairOp,
  below: boolean,
  active?: (edge: string) => boolean,
): { list: ListKey; otherId: UserId }[] {
  const { relation, transition } = OP_RELATION[op.kind];
  const edge = (side: 'fwd' | 'rev', r: Relation) =>
    side === 'fwd'
      ? { sourceId: op.sourceId, relation: r, targetId: op.targetId }
      : { sourceId: op.targetId, relation: r, targetId: op.sourceId };
  const cleared = (transition.clears ?? [])
    .map((c) => edge(c.side, c.relation))
    .filter((e) => below || !active || active(edgeKey(e.sourceId, e.relation, e.targetId)));
  const edges = [edge('fwd', relation), ...cleared];
  if (below && GUARDING.includes(relation))
    for (const r of ['follows', 'requests'] as const) edges.push(edge('fwd', r), edge('rev', r));
  const distinct = new Map(edges.map((e) => [edgeKey(e.sourceId, e.relation, e.targetId), e]));
  return [...distinct.values()].flatMap(projections);
}

/** The bucket of each (list, member) under the list's write layout now. */
async function bucketsOf(
  deps: CountStepDeps,
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
  deps: CountStepDeps,
  op: PairOp,
  history: PairView,
  o: {
    clock: () => Position;
    micros?: bigint;
    intent?: { key: EventKey; timeoutMs: number } | null;
    /** The fold of `history` (the first read): edges it shows inactive are not cleared by a top op. */
    before?: PairFold;
  },
): Promise<CountLease> {
  const micros = o.micros ?? COUNT_LEASE_MICROS;
  const newest = history.ops.at(-1)?.position ?? 0n;
  const below = op.position <= newest;
  const before = o.before;
  const active = before ? (k: string) => before.edges.get(k)?.state === 'active' : undefined;
  const marks = await bucketsOf(deps, listsOpMayChange(op, below, active));
  const until = o.clock() + micros;
  await markAll(deps, marks, until, o.intent ?? undefined);
  return { until, marks, clock: o.clock, micros };
}

/**
 * Marks, before the view write, the buckets of the op's own deltas (`counted`) that the lease does
 * not cover yet, dated the lease's `until`, and adds them to the lease: an edge the op clears that
 * its first read showed inactive, made active by a racer ordered before it (`listsOpMayChange`).
 * One request then, none in the usual case. So every list a write's view changes by its own
 * transition is marked before the change is written, as `markBeforeWrite` promises.
 */
export async function markBeforeView(
  deps: CountStepDeps,
  lease: CountLease,
  counted: readonly CountDelta[],
): Promise<void> {
  lease.marks.push(...(await markUncovered(deps, lease, counted)));
}

/**
 * Marks the buckets of `targets` that the lease's marks do not cover, dated the lease's `until`
 * (one request, none when all are covered); returns the marks it wrote.
 */
async function markUncovered(
  deps: CountStepDeps,
  lease: CountLease,
  targets: readonly { list: ListKey; otherId: UserId }[],
): Promise<MarkedBucket[]> {
  const covered = new Set(lease.marks.map(markKey));
  const fresh = (await bucketsOf(deps, targets)).filter((m) => {
    if (covered.has(markKey(m))) return false;
    covered.add(markKey(m));
    return true;
  });
  await markAll(deps, fresh, lease.until);
  return fresh;
}

/**
 * Marks the lease's buckets again, dated a fresh lease from now: for a writer whose write failed
 * after `markBeforeWrite` (a timeout whose batch may still be applied, a lost increment), so a
 * late landing within the new lease is still recounted. Best effort: a crash skips it, and the
 * first lease then stands alone.
 */
export async function markAfterFailure(deps: CountStepDeps, lease: CountLease): Promise<void> {
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
  deps: CountStepDeps,
  deltas: readonly CountDelta[],
  alsoDirty: readonly CountDelta[],
  lease: CountLease,
): Promise<void> {
  const extra = await markUncovered(deps, lease, [...deltas, ...alsoDirty]);
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
