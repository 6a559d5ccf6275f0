/**
 * The write algorithm of a pair: choose the op's position, append it to the pair's history, read
 * the history again, write the fold of what was read, apply counter deltas. Every mutation of the
 * graph goes through `applyPairOp`; the rules of each relation live in `pair-fold.ts`, the rows
 * written in `pair-writer.ts`.
 *
 * Design note.
 *
 * Bounded history. A pair's partition holds a checkpoint (the state of every edge at a horizon
 * position, and how many ops it folded), a pending compaction, and the ops above the horizon. A
 * write reads O(1) rows whatever the pair's age: once more than `compactAbove` ops stand above the
 * horizon, a writer *announces* a compaction to a new horizon (keeping the newest `keep` ops); the
 * next writer whose read sees the announcement records when that read started (`seenAt`); a writer
 * whose read started `settleMs` or more after `seenAt` *commits* it: it folds the ops at or below
 * the announced horizon from its own read into the checkpoint, in the same single-partition write
 * as its op, and deletes them. Meanwhile an op at or below an announced or committed horizon is
 * refused (`PositionTooOldError`, 409). Past `maxOps` ops above the horizon (a flood faster than a
 * compaction settles) writes wait (`PairBusyError`, 503 with Retry-After).
 *
 * Why announce, observe, then settle: without a lightweight transaction, a compactor cannot know
 * about an op that a concurrent writer is appending. Every write here finishes its append within
 * `writeBudgetMs` of its first read, or answers 503 (outcome unknown) instead of success. The
 * announcement was visible (to a quorum read) at `seenAt`, so an op whose first read did not see
 * it read before `seenAt`, and its acknowledged append completed before `seenAt + writeBudgetMs`.
 * The committer's read starts at least `settleMs` after `seenAt`, with `settleMs` above the budget
 * plus the clock skew between service instances, so every acknowledged op at or below the horizon
 * is in the committer's read and folded. An op whose first read saw the announcement is refused if
 * it is at or below it. Hence a writer whose re-read shows its op under a new checkpoint knows it
 * was folded in. (`announcedAt` alone would not do: the announcer's own write may become visible
 * late, and a test with eight concurrent clients on a loaded machine found exactly that hole.)
 *
 * Versions that cannot tie. Derived rows carry `pairVersion(view)` = newest × 1024 + (total − base),
 * where `total` counts every distinct op of the view (the checkpoint's count plus the ops above
 * it) and `base` is the checkpoint count that the writer of the newest op saw (stored with the
 * op). Ops at or below a committed horizon never change, so `total − base` counts the same thing —
 * ops above a fixed horizon — in every view that shares a newest op, whatever checkpoint each view
 * read: a view that strictly contains another has a newer newest op or a larger `total − base`.
 * `total − base` is the number of ops above the horizon that newest op's writer saw plus those
 * that arrived later below it; `maxOps` keeps the first below 1024 and out-of-order replays
 * beyond that are refused as busy too, so the term never saturates.
 *
 * Recorded no-ops. Every accepted op is recorded, including one that changes nothing now (an
 * unfollow of nobody): the state is the fold of all accepted ops, so a replay older than it must
 * not win over it. Compaction is what keeps retry loops from growing the history.
 *
 * Rejected. (1) A lightweight transaction per compaction: a Paxos round cannot see a concurrent
 * plain append, so it does not close the race it would be for. (2) Compacting only ops older
 * than a wall-clock window: a pair toggled faster than the window still grows without bound.
 * (3) A version counting the whole history: 20,000 toggles need 15 bits that a 64-bit write time
 * holding a µs position does not have.
 *
 * Limits. A write whose append is not acknowledged within the budget answers 503; if it did land,
 * its op counts like any other (a retry of a live op is idempotent in effect; a replay retried
 * after the pair compacted past it answers 409 even if the first attempt was folded in). The
 * budget assumes a mutation is applied within it or not at all; the repair job restores agreement
 * beyond that.
 */
import { type GraphStore, StoreUnavailableError } from '../store/store.js';
import type {
  EdgeRecord,
  PairCheckpoint,
  PairHistory,
  PairOp,
  PendingCompaction,
  Position,
  StoredPairOp,
  UserId,
} from '../store/types.js';
import type { ListService } from './contracts.js';
import { PairBusyError, PositionOutOfRangeError, PositionTooOldError } from './errors.js';
import { compareOps, containsOp, edgeKey, foldPair, MAX_VERSION_COUNT, type PairFold } from './pair-fold.js';
import { applyCountDeltas, countDeltas, foldView, ownTransition, writePairView } from './pair-writer.js';

/** How long histories are kept short. Defaults in `DEFAULT_HISTORY_POLICY`. */
export interface HistoryPolicy {
  /** Ops above the horizon at which a writer announces a compaction. */
  compactAbove: number;
  /** Ops a compaction leaves above its new horizon. */
  keep: number;
  /** Ops above the horizon at which writes wait for the pending compaction (503 pair_busy). */
  maxOps: number;
  /** Longest a write may take from its first read to an acknowledged append. */
  writeBudgetMs: number;
  /** Age at which an announced compaction may be committed: the budget plus the clock skew between instances. */
  settleMs: number;
  /** How far past the server clock an explicit position may be (µs). */
  maxSkewMicros: bigint;
}

export const DEFAULT_HISTORY_POLICY: HistoryPolicy = {
  compactAbove: 48,
  keep: 16,
  maxOps: 768,
  writeBudgetMs: 1_000,
  settleMs: 1_500,
  maxSkewMicros: 5_000_000n,
};

export interface PairHistoryDeps {
  store: GraphStore;
  lists: ListService;
  policy: HistoryPolicy;
  /** µs since the epoch. */
  clock: () => Position;
  /** ms, monotonic (`performance.now()` in production): what the write budget is measured on. */
  monotonic: () => number;
}

/** A pair read before an op is chosen: the history and when the read started. */
export interface PairRead {
  history: PairHistory;
  /** `deps.monotonic()` when the read started (the write budget runs from here). */
  startedMs: number;
  /** The µs clock when the read started (what `seenAt` records and the settle is measured from). */
  readAt: Position;
}

/** Reads the pair's history; the write budget starts now. */
export async function readPair(deps: PairHistoryDeps, a: UserId, b: UserId): Promise<PairRead> {
  const startedMs = deps.monotonic();
  const readAt = deps.clock();
  return { history: await deps.store.readPairHistory(a, b), startedMs, readAt };
}

/** The fold of a read (checkpoint plus the ops above it). */
export function foldRead(read: PairRead): PairFold {
  return foldView(read.history);
}

/** The op's position: the caller's explicit one (checked against the clock), or after everything on the pair. */
export function choosePosition(deps: PairHistoryDeps, history: PairHistory, explicit?: Position): Position {
  const now = deps.clock();
  if (explicit !== undefined) {
    const latest = now + deps.policy.maxSkewMicros;
    if (explicit <= 0n || explicit > latest) throw new PositionOutOfRangeError(explicit, latest);
    return explicit;
  }
  const newest = history.ops.at(-1)?.position ?? history.checkpoint?.horizon ?? 0n;
  return now > newest ? now : newest + 1n;
}

export interface AppliedOp {
  op: PairOp;
  /** The fold of the first read. */
  before: PairFold;
  /** The fold written (the re-read view). */
  after: PairFold;
  /** The op was already in the history (a retry or a replay): nothing appended. */
  duplicate: boolean;
  /** Whether the op changed what lists and counts show. */
  changed: boolean;
}

/** The horizon below which nothing may be appended now: the committed one or the announced one. */
function refusalHorizon(h: PairHistory): Position {
  const committed = h.checkpoint?.horizon ?? 0n;
  const announced = h.pending?.horizon ?? 0n;
  return committed > announced ? committed : announced;
}

/** The checkpoint that folds `history`'s ops at or below `horizon` into its current checkpoint. */
export function checkpointAt(history: PairHistory, horizon: Position): PairCheckpoint {
  const folded = history.ops.filter((o) => o.position <= horizon);
  const fold = foldPair(folded, history.checkpoint?.edges);
  const edges: EdgeRecord[] = [...fold.edges.values()].map(({ candidates: _, ...e }) => e);
  const atHorizon = folded.filter((o) => o.position === horizon).map((o) => o.base);
  return {
    horizon,
    count: (history.checkpoint?.count ?? 0) + new Set(folded.map(opId)).size,
    newestBase: atHorizon.length > 0 ? Math.min(...atHorizon) : (history.checkpoint?.newestBase ?? 0),
    edges: edges.sort((x, y) =>
      edgeKey(x.sourceId, x.relation, x.targetId) < edgeKey(y.sourceId, y.relation, y.targetId) ? -1 : 1,
    ),
  };
}

const opId = (o: PairOp) => `${o.position}|${o.sourceId}|${o.kind}`;

/** What the op's append carries: an announcement, an observation or a commit, and the op's base. */
function compactionStep(
  deps: PairHistoryDeps,
  read: PairRead,
  op: PairOp,
): { base: number; announce?: PendingCompaction; observe?: Position; commit?: PairCheckpoint } {
  const { policy } = deps;
  const { history } = read;
  const pending = history.pending;
  const now = deps.clock();
  const settleMicros = BigInt(policy.settleMs) * 1000n;
  if (pending && (history.checkpoint?.horizon ?? 0n) < pending.horizon) {
    if (pending.seenAt !== null && read.readAt >= pending.seenAt + settleMicros) {
      const commit = checkpointAt(history, pending.horizon);
      return { base: commit.count, commit };
    }
    const base = history.checkpoint?.count ?? 0;
    // The first write to see the announcement records it whatever the load: without that record
    // the compaction could never settle.
    if (pending.seenAt === null) return { base, observe: read.readAt };
    if (history.ops.length >= policy.maxOps) {
      const waitMicros = pending.seenAt + settleMicros - now;
      throw new PairBusyError(Math.max(1, Math.ceil(Number(waitMicros) / 1e6)));
    }
    return { base };
  }
  const base = history.checkpoint?.count ?? 0;
  const ops = [...history.ops, { ...op, base }].sort(compareOps);
  if (ops.length > policy.compactAbove) {
    const last = ops[ops.length - 1 - policy.keep];
    if (last) return { base, announce: { horizon: last.position, announcedAt: now, seenAt: null } };
  }
  return { base };
}

/**
 * Appends `op` (its position already chosen) to the pair read in `read`, re-reads, writes the
 * fold and applies counter deltas. Throws `PositionTooOldError` for an op at or below the horizon,
 * `PairBusyError` when the pair must wait for a compaction, and `StoreUnavailableError` when the
 * append was not acknowledged within the write budget (the outcome is then unknown).
 */
export async function applyPairOp(deps: PairHistoryDeps, read: PairRead, op: PairOp): Promise<AppliedOp> {
  const { store, policy } = deps;
  const { history } = read;
  const before = foldView(history);
  const duplicate = containsOp(history.ops, op);
  let folded: PairOp[] = [];
  if (!duplicate) {
    const horizon = refusalHorizon(history);
    if (op.position <= horizon) throw new PositionTooOldError(op.position, horizon);
    if (versionCountAfter(history, op) > MAX_VERSION_COUNT) throw new PairBusyError(1);
    const step = compactionStep(deps, read, op);
    if (step.commit) {
      const horizon = step.commit.horizon;
      folded = history.ops.filter((o) => o.position <= horizon);
    }
    const elapsed = deps.monotonic() - read.startedMs;
    if (elapsed >= policy.writeBudgetMs) throw new PairBusyError(1);
    const stored: StoredPairOp = { ...op, base: step.base };
    await store.appendPair(
      { op: stored, announce: step.announce, observe: step.observe, commit: step.commit },
      policy.writeBudgetMs - elapsed,
    );
    if (deps.monotonic() - read.startedMs > policy.writeBudgetMs) {
      throw new StoreUnavailableError(
        'the write was not acknowledged within its budget; its outcome is unknown',
      );
    }
  }
  // Counters. A new op counts its own transition (`ownTransition`): from its first read plus the
  // racers ordered before it, to that plus itself. Two ops racing on one pair (a double click, a
  // retry sent as a new op) then count one transition between them, as long as each re-read sees
  // the other. (Counting the first read against the whole re-read, as this did first, made both
  // count it: 0.101 % drift after 1 % unfollows with a tenth of them sent twice at once.) An op a
  // commit folded away before the re-read counts against the whole re-read, as before. A
  // duplicate is usually a retry after a failure: it counts against what the edge rows show (read
  // before this write), so a first attempt that crashed before its edge write gets its count now,
  // and one that completed does not count twice. What any of these miss (an op landing late below
  // a re-read), the reconciler recounts (`reconcile-dirty.ts`).
  const [view, storedBefore] = await Promise.all([
    store.readPairHistory(op.sourceId, op.targetId),
    duplicate ? store.getPairEdges(op.sourceId, op.targetId).then(storedFold) : null,
  ]);
  const after = await writePairView(deps, view, folded);
  const own = storedBefore ? null : ownTransition(history, view, op);
  const seen = countDeltas(storedBefore ?? before, after);
  // Lists whose rows changed between the two reads but not by this op: a racer's, to be recounted.
  await applyCountDeltas(deps, own ? countDeltas(own.before, own.after) : seen, own ? seen : []);
  const changed = !duplicate && !sameActive(foldView(view, op), after);
  return { op, before, after, duplicate, changed };
}

/**
 * The count term (`total − base`) of the version of the views whose newest op is the pair's newest
 * once `op` is appended, for an op below the newest (which raises it). A new newest op starts the
 * term afresh at the number of ops above the horizon; that is never refused, so a pair whose
 * history predates checkpoints (thousands of ops above no horizon) can still be written, announce
 * and commit its first compaction — only while its tail is that long can its count term clamp.
 */
function versionCountAfter(history: PairHistory, op: PairOp): number {
  const total = (history.checkpoint?.count ?? 0) + history.ops.length + 1;
  const newest = history.ops.at(-1);
  if (!newest || op.position > newest.position) return 0;
  const bases = history.ops.filter((o) => o.position === newest.position).map((o) => o.base);
  return total - Math.min(...bases);
}

/** The pair as its stored edge rows show it, in fold shape (no candidates: only states are used). */
function storedFold(edges: readonly EdgeRecord[]): PairFold {
  return {
    edges: new Map(edges.map((e) => [edgeKey(e.sourceId, e.relation, e.targetId), { ...e, candidates: [] }])),
  };
}

/** Same active edges with the same `createdAt` (what lists and counts show). */
export function sameActive(a: PairFold, b: PairFold): boolean {
  const act = (f: PairFold) =>
    [...f.edges]
      .filter(([, e]) => e.state === 'active')
      .map(([k, e]) => `${k}@${e.createdAt}`)
      .sort()
      .join(',');
  return act(a) === act(b);
}
