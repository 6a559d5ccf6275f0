/**
 * The pair's history protocol: how an op's position is chosen, what its append carries (a
 * compaction step: `appendOp`, `compactionStep`), and the bounds everything rests on. Every
 * mutation of the graph reaches it through the write path (`write-path.ts`: read, fold, decide,
 * mark, append, re-read, outcome, write, count); the rules of each relation live in
 * `pair-fold.ts`, the rows written in `view-writer.ts`, the counters in `count-step.ts`, the feed
 * rows in `pair-events.ts`.
 *
 * Design note.
 *
 * Bounded history. A pair's partition holds a checkpoint (the state of every edge at a horizon
 * position, and how many ops it folded), a pending compaction, and the ops above the horizon. A
 * write reads O(1) rows whatever the pair's age: once more than `compactAbove` ops stand above the
 * horizon, a writer *announces* a compaction to a new horizon `H` (keeping the newest `keep` ops);
 * the next writer whose read sees the announcement *observes* it, recording its own wall clock
 * when that read returned (`seenAt`, bound to `H`); a writer whose read starts `settle` or more
 * after `seenAt` *commits* it: it folds the ops at or below `H` from its own read into the
 * checkpoint, in the same single-partition write as its op, and deletes the ops below `H`.
 * Meanwhile an op at or below an announced or committed horizon is refused (`PositionTooOldError`,
 * 409) — by horizon only, never by age, so an import into a fresh pair is never refused.
 *
 * The bounds it rests on, and nothing else (`docs/design/writes.md` states them for operators):
 * - B, the write budget: a write's append is acknowledged within `writeBudgetMs` of the start of
 *   its first read, on this process's monotonic clock, or the write answers 503 (outcome unknown),
 *   never success.
 * - S, the clock bound: every instance's wall clock is within `clockSkewMs` of the database's
 *   (`clock-guard.ts` checks it; an instance further off refuses writes).
 * - V and T, the view bounds (for the feed only): a write sends its view batch within
 *   `viewBudgetMs` of its acknowledged append and the batch lands within `batchTimeoutMs`, or the
 *   write answers 503; so every acknowledged change's events land within the feed's lag
 *   L = B + V + T + 2S (`feedLagMicros`), and a view write re-derives the events of twice that
 *   (`eventWindowMicros`; see `pair-events.ts`).
 * - A read or a write acknowledged at a quorum is seen by every later quorum read (Cassandra's
 *   blocking read repair gives monotonic quorum reads); one statement on one partition is applied
 *   atomically and read as one snapshot.
 *
 * Why no acknowledged op is lost. Let W be an op answered 2xx at position `p ≤ H`. If W's first
 * read saw the announcement of `H` (or a checkpoint at or above it), W was refused, not answered.
 * So W's first read did not see it. An observer O's read saw it and returned at real time `e`, so
 * from `e` on every quorum read sees it: W's read therefore started before `e`, and W's append was
 * acknowledged — hence applied at a quorum — before `e + B`. O records `seenAt`, its own clock at
 * `e`, which is at most S behind the real `e`. The committer C commits only from a read that starts
 * at C's clock `≥ seenAt + B + 2S` (`settleMicros`), i.e. at a real time `≥ e + B`: after W was
 * applied, so W is in C's read and C folds it. Measuring from the *end* of O's read is what makes
 * a slow read harmless (the first design took its start, and a read held 900 ms lost a block), and
 * the 2S is what makes two instances' clocks comparable (the first design assumed them equal).
 * C's read is one statement, so its checkpoint and ops are one snapshot: the ops it folds are
 * exactly the ops above the checkpoint it folds them into (two parallel SELECTs once let a
 * committer fold a newer op set into an older checkpoint). When the history is longer than one
 * statement's page, only a horizon below the page's end may be committed (`snapshotThrough`).
 *
 * Cells that clocks cannot reorder. The announcement, the observation and the commit are written
 * at logical write times derived from `H` (`PAIR_STEP_TIME`), never from a clock: every step of a
 * higher horizon outranks every step of a lower one, a commit clears its own announcement and
 * observation, and a late statement of an old step changes nothing. The observation names the
 * horizon it saw, so an observation of an earlier announcement never counts for a later one. Two
 * commits of one horizon can differ only in ops that were never acknowledged (a late append that
 * landed between their reads); the one that folded more ops has the later write time and wins, and
 * both hold every acknowledged op.
 *
 * Always bounded. Past `maxOps` ops above the horizon a write that would only add an op waits
 * (`PairBusyError`, 503 with Retry-After; `appendOp`), announced or not; the compaction step it would have
 * carried (an announcement, an observation) is written alone, without the op, so the history
 * drains without growing. Only a commit (which removes ops) still carries its op. With
 * `maxOps` under one statement's page (`PAIR_READ_ROWS`), the pair read is one statement.
 *
 * Versions that cannot tie. Derived rows carry `pairVersion(view)` (`pair-fold.ts`) = newest × 1024 + (total − base),
 * where `total` counts every distinct op of the view (the checkpoint's count plus the ops above
 * it) and `base` is the checkpoint count that the writer of the newest op saw (stored with the
 * op). Ops at or below a committed horizon never change, so `total − base` counts the same thing —
 * ops above a fixed horizon — in every view that shares a newest op, whatever checkpoint each view
 * read: a view that strictly contains another has a newer newest op or a larger `total − base`.
 * `maxOps` keeps the term below 1024 and out-of-order replays beyond that are refused as busy
 * too (`versionCountAfter` against `MAX_VERSION_COUNT`), so the term never saturates.
 *
 * Recorded no-ops. Every accepted op is recorded, including one that changes nothing now (an
 * unfollow of nobody): the state is the fold of all accepted ops, so a replay older than it must
 * not win over it. Compaction is what keeps retry loops from growing the history.
 *
 * Rejected. (1) A lightweight transaction per compaction: a Paxos round cannot see a concurrent
 * plain append, so it does not close the race it would be for. (2) Compacting only ops older
 * than a wall-clock window: a pair toggled faster than the window still grows without bound.
 * (3) A version counting the whole history: 20,000 toggles need 15 bits that a 64-bit write time
 * holding a µs position does not have. (4) Timing the settle from the announcement's own clock:
 * the announcer's write may become visible late (a test with eight clients found that hole).
 *
 * Compaction and the feed. A horizon is announced and committed only where `mayFold` allows
 * (`pair-events.ts`): every op it folds is ordered by slot before every op left in the tail whose
 * slot is still inside the event window, so the events of the remaining ops stay derivable; and
 * only where `intentsResolved` allows: it folds no op whose feed intent may still stand.
 *
 * Limits. A write whose append is not acknowledged within the budget answers 503; if it did land,
 * its op counts like any other (a retry of a live op is idempotent in effect; a replay retried
 * after the pair compacted past it answers 409 even if the first attempt was folded in). An op
 * answered 503 may land late, at its position, above a later acknowledged op whose position a
 * clock behind it chose (positions of two instances compare within 2S). Instances of the previous
 * protocol must not write while this one does (its settle and its cells differ): upgrade by
 * stopping them first. The repair job restores agreement of the projections beyond that.
 */

import {
  PairBusyError,
  PositionOutOfRangeError,
  PositionTooOldError,
  StoreUnavailableError,
} from '../../model/errors.js';
import { eventShard } from '../../model/events.js';
import type { EdgeRecord, PairOp, Position } from '../../model/types.js';
import { edgeKey } from '../../model/types.js';
import type { PairHistoryStore } from '../../ports/pair-history-store.js';
import type { PairCheckpoint, PairHistory, PendingCompaction, StoredPairOp } from '../../ports/records.js';
import type { WriteClock } from './clock-guard.js';
import { foldableHorizon, intentsResolved, mayFold } from './pair-events.js';
import { compareOps, containsOp, foldPair, MAX_VERSION_COUNT } from './pair-fold.js';

/** How long histories are kept short, and the bounds the protocol rests on (see the note). */
export interface HistoryPolicy {
  /** Ops above the horizon at which a writer announces a compaction. */
  compactAbove: number;
  /** Ops a compaction leaves above its new horizon. */
  keep: number;
  /** Ops above the horizon past which a write that does not commit waits (503 pair_busy). Under `PAIR_READ_ROWS`. */
  maxOps: number;
  /** B: longest a write may take from its first read to an acknowledged append (monotonic clock). */
  writeBudgetMs: number;
  /** S: the largest distance allowed between an instance's clock and the database's (`clock-guard.ts`). */
  clockSkewMs: number;
  /** How far past the server clock an explicit position may be (µs). */
  maxSkewMicros: bigint;
  /** V: longest from an acknowledged append to sending the view's batch (monotonic clock). */
  viewBudgetMs: number;
  /**
   * T: how long the view's batch may take once sent. A write whose batch is acknowledged more than
   * B + V + T after its first read answers 503 (it stands, but its events may reach feed readers
   * late), so every acknowledged change's events landed within the feed's lag.
   */
  batchTimeoutMs: number;
}

export const DEFAULT_HISTORY_POLICY: HistoryPolicy = {
  compactAbove: 48,
  keep: 16,
  maxOps: 768,
  // Cassandra's write_request_timeout: a write's marks and its append must both fit (the 3-node
  // suite saw 1.15 s while a restarted node replayed its commit log on two cores).
  writeBudgetMs: 2_000,
  clockSkewMs: 2_000,
  maxSkewMicros: 5_000_000n,
  viewBudgetMs: 2_000,
  batchTimeoutMs: 2_000,
};

type FeedBounds = Pick<HistoryPolicy, 'writeBudgetMs' | 'viewBudgetMs' | 'batchTimeoutMs' | 'clockSkewMs'>;

/**
 * The feed's lag L (µs): how long after its slot an op's final events may still land. An op's
 * append is acknowledged within B of its first read (its slot is after that read), its view batch
 * is sent within V after that and lands within T, and the writer's and the reader's clocks are each
 * within S of the database's: B + V + T + 2S (10 s with the defaults). Readers read up to now − L.
 */
export function feedLagMicros(policy: FeedBounds): bigint {
  return (
    BigInt(policy.writeBudgetMs + policy.viewBudgetMs + policy.batchTimeoutMs + 2 * policy.clockSkewMs) *
    1000n
  );
}

/** How far back a view write re-derives events (µs): twice the feed lag (see `pair-events.ts`). */
export function eventWindowMicros(policy: FeedBounds): bigint {
  return 2n * feedLagMicros(policy);
}

/**
 * How long after an observation (`seenAt`, the observer's clock when its read returned) a
 * committer's read may start, by the committer's clock: B + 2S, plus a millisecond for the
 * database clock's resolution. Derived, never configured on its own.
 */
export function settleMicros(policy: Pick<HistoryPolicy, 'writeBudgetMs' | 'clockSkewMs'>): bigint {
  return BigInt(policy.writeBudgetMs + 2 * policy.clockSkewMs + 1) * 1000n;
}

/** What the protocol's append step takes: the pair's append, the bounds, the clocks, the guard. */
export interface PairHistoryDeps {
  store: Pick<PairHistoryStore, 'appendPair'>;
  policy: HistoryPolicy;
  /** µs since the epoch. */
  clock: () => Position;
  /** A monotonic clock (ms): the write budget is measured on it. */
  monotonic: () => number;
  /** Refuses writes while this instance's clock is not known to be within the bound. */
  guard: WriteClock;
  /**
   * Per feed shard, the slot at or below which no op's intent is unresolved, now or later (the
   * process's `IntentFrontier`); null before its first look. Compaction folds no op above it
   * (`intentsResolved`), so an op whose writer died before its view batch stays in the history
   * for the recovery. Absent (tools without a feed): no such limit.
   */
  intentsClear?: (shard: number) => Position | null;
}

/** A pair read before an op is chosen: the history and when the read started and returned. */
export interface PairRead {
  history: PairHistory;
  /** The monotonic clock when the read started (the write budget runs from here). */
  startedMs: number;
  /** The µs clock when the read started (a commit's settle is measured to here). */
  readAt: Position;
  /** The µs clock when the read returned (what an observation records). */
  returnedAt: Position;
}

/**
 * The append step (see the note): refuses an op at or below the horizon (`PositionTooOldError`)
 * or one whose version term would overflow (`PairBusyError`), slots it, writes it with the
 * compaction step it carries, and checks the budget: `PairBusyError` when the pair must wait for
 * a compaction (its step then written alone), `ClockSkewError` when this instance's clock is not
 * known to be within the bound, `StoreUnavailableError` when the append was not acknowledged
 * within the write budget (its outcome unknown). An op already in the history (a retry, a replay)
 * appends nothing. Returns whether it was there, and the ops a commit carried by this append took
 * out of the tail.
 */
export async function appendOp(
  deps: PairHistoryDeps,
  read: PairRead,
  op: PairOp,
  taken?: Position,
  /**
   * Called with the op's slot once nothing can refuse the append any more, right before it is
   * sent; the slot it returns is the one stored (an explicit-position op's claimed slot:
   * `write-path.ts`). After it, only the append's own failure can end the call.
   */
  claim?: (slot: Position) => Promise<Position>,
): Promise<{ duplicate: boolean; folded: PairOp[] }> {
  const { store, policy } = deps;
  const { history } = read;
  if (containsOp(history.ops, op)) return { duplicate: true, folded: [] };
  const horizon = refusalHorizon(history);
  if (op.position <= horizon) throw new PositionTooOldError(op.position, horizon);
  if (versionCountAfter(history, op) > MAX_VERSION_COUNT) throw new PairBusyError(1);
  // The op's feed slot, stored with it (`pair-events.ts`): this writer's clock at its append, or
  // the op's position when that is later, so live ops (positioned after everything on the pair)
  // are slotted in position order even by instances whose clocks differ, and compaction never
  // waits for them; a replay (an older position) takes the clock.
  const slot = taken ?? takeSlot(deps, op);
  const step = compactionStep(deps, read, { ...op, slot });
  deps.guard.assertWritable();
  const remaining = () => policy.writeBudgetMs - (deps.monotonic() - read.startedMs);
  if (step.busySeconds !== undefined) {
    // Over the bound: advance the compaction without adding the op, then wait.
    if ((step.announce || step.observe) && remaining() > 0) {
      await store.appendPair(
        { pair: [op.sourceId, op.targetId], announce: step.announce, observe: step.observe },
        remaining(),
      );
    }
    throw new PairBusyError(step.busySeconds);
  }
  let folded: PairOp[] = [];
  if (step.commit) {
    const at = step.commit.checkpoint.horizon;
    folded = history.ops.filter((o) => o.position <= at);
  }
  if (remaining() <= 0) throw new PairBusyError(1);
  const stored: StoredPairOp = { ...op, base: step.base, slot: claim ? await claim(slot) : slot };
  await store.appendPair(
    {
      pair: [op.sourceId, op.targetId],
      op: stored,
      announce: step.announce,
      observe: step.observe,
      commit: step.commit,
    },
    remaining(),
  );
  if (remaining() < 0) {
    throw new StoreUnavailableError(
      'the write was not acknowledged within its budget; its outcome is unknown',
    );
  }
  return { duplicate: false, folded };
}

/**
 * An op's feed slot: this writer's clock now, or the op's position when that is later (the write
 * path takes it before its intent, `feed-intents.ts`, and hands it to `appendOp`).
 */
export function takeSlot(deps: Pick<PairHistoryDeps, 'clock'>, op: PairOp): Position {
  const now = deps.clock();
  // biome-ignore lint/complexity/useMathMinMax: bigints (Math.max takes numbers)
  return op.position > now ? op.position : now;
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

/** The horizon below which nothing may be appended now: the committed one or the announced one. */
export function refusalHorizon(h: PairHistory): Position {
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

/** The compaction step an append carries, and the op's base. */
export interface CompactionStep {
  base: number;
  announce?: PendingCompaction;
  observe?: { horizon: Position; seenAt: Position };
  commit?: { checkpoint: PairCheckpoint; folded: number };
  /** The pair is over `maxOps` and this write does not commit: write the step alone, then wait this long (s). */
  busySeconds?: number;
}

/** What the op's append carries: an announcement, an observation or a commit (see the note). */
export function compactionStep(
  deps: PairHistoryDeps,
  read: PairRead,
  op: PairOp & { slot?: Position },
): CompactionStep {
  const { policy } = deps;
  const { history } = read;
  const base = history.checkpoint?.count ?? 0;
  const committed = history.checkpoint?.horizon ?? 0n;
  const through = history.snapshotThrough;
  const full = history.ops.length >= policy.maxOps;
  const settle = settleMicros(policy);
  const eventsFrom = deps.clock() - eventWindowMicros(policy);
  const [low, high] = op.sourceId < op.targetId ? [op.sourceId, op.targetId] : [op.targetId, op.sourceId];
  const clear = deps.intentsClear?.(eventShard(low, high)) ?? null;
  const pending = history.pending && committed < history.pending.horizon ? history.pending : null;
  if (pending) {
    const { horizon, seenAt } = pending;
    const inSnapshot = through === null || horizon < through;
    const foldable =
      mayFold(history.ops, horizon, eventsFrom) && intentsResolved(history.ops, horizon, clear);
    if (seenAt !== null && read.readAt >= seenAt + settle && inSnapshot && foldable) {
      const checkpoint = checkpointAt(history, horizon);
      return { base: checkpoint.count, commit: { checkpoint, folded: checkpoint.count - base } };
    }
    // The first write to see the announcement records it whatever the load: without that record
    // the compaction could never settle.
    const observe = seenAt === null ? { horizon, seenAt: read.returnedAt } : undefined;
    if (!full) return observe ? { base, observe } : { base };
    const wait = seenAt === null ? settle : seenAt + settle - deps.clock();
    return { base, ...(observe ? { observe } : {}), busySeconds: busySeconds(wait) };
  }
  // Nothing pending: announce once the tail is long, a horizon that keeps the newest `keep` ops
  // and that the snapshot part of this read covers.
  const ops = [...history.ops, { ...op, base }].sort(compareOps);
  const step: CompactionStep = { base };
  if (ops.length > policy.compactAbove) {
    const foldable =
      through === null ? ops.slice(0, ops.length - policy.keep) : ops.filter((o) => o.position < through);
    const horizon = foldableHorizon(
      ops,
      foldable.map((o) => o.position).filter((h) => intentsResolved(ops, h, clear)),
      eventsFrom,
    );
    if (horizon !== null) step.announce = { horizon, announcedAt: deps.clock(), seenAt: null };
  }
  if (full) step.busySeconds = busySeconds(settle);
  return step;
}

const busySeconds = (micros: bigint): number => Math.max(1, Math.ceil(Number(micros) / 1e6));

/**
 * The count term (`total − base`) of the version of the views whose newest op is the pair's newest
 * once `op` is appended, for an op below the newest (which raises it). A new newest op starts the
 * term afresh at the number of ops above the horizon; that is never refused, so a pair whose
 * history predates checkpoints (thousands of ops above no horizon) can still be written, announce
 * and commit its first compaction — only while its tail is that long can its count term clamp.
 */
export function versionCountAfter(history: PairHistory, op: PairOp): number {
  const total = (history.checkpoint?.count ?? 0) + history.ops.length + 1;
  const newest = history.ops.at(-1);
  if (!newest || op.position > newest.position) return 0;
  const bases = history.ops.filter((o) => o.position === newest.position).map((o) => o.base);
  return total - Math.min(...bases);
}
