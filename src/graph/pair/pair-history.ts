import {
  PairBusyError,
  PositionOutOfRangeError,
  PositionTooOldError,
  StoreUnavailableError,
} from '../../model/errors.js';
import type { EdgeRecord, PairOp, Position } from '../../model/types.js';
import { edgeKey } from '../../model/types.js';
import type { PairCheckpoint, PairHistory, PendingCompaction, StoredPairOp } from '../../ports/records.js';
import type { PairHistoryStore } from '../../ports/store.js';
import type { WriteClock } from './clock-guard.js';
import { foldableHorizon, mayFold } from './pair-events.js';
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
  const now = deps.clock();
  // biome-ignore lint/complexity/useMathMinMax: bigints (Math.max takes numbers)
  const slot = op.position > now ? op.position : now;
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
  const stored: StoredPairOp = { ...op, base: step.base, slot };
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
  const pending = history.pending && committed < history.pending.horizon ? history.pending : null;
  if (pending) {
    const { horizon, seenAt } = pending;
    const inSnapshot = through === null || horizon < through;
    const foldable = mayFold(history.ops, horizon, eventsFrom);
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
      foldable.map((o) => o.position),
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
