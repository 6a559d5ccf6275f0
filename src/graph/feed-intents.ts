/**
 * The feed's intents: how the watermark waits for a change that lands late instead of passing it.
 *
 * Design note (the invariants; `docs/design/feed.md` has the whole argument).
 *
 * 1. Every new op is an *intent* `(slot, pair, op)` from before its append until it is resolved.
 *    The writer takes the slot, and its intent is acknowledged (beside its dirty marks) before the
 *    append is sent and within the write budget B of its first read, so within B < L − 2S of its
 *    slot; a writer over its budget sends no append (`appendOp`).
 * 2. *Done*: the writer deletes the intent with its own statement once its view batch, which
 *    carries the op's feed rows, is acknowledged — never inside that batch (a logged batch is
 *    atomic, not isolated: a reader could see the delete before the rows).
 * 3. A reader samples its clock `now`, then reads the intents, and reads rows only up to
 *    `min(now − L, oldest intent's slot − 1)`. Why that is enough: an op at slot σ ≤ now − L whose
 *    intent the reader did not see either has been resolved (its rows are there) or never had its
 *    intent acknowledged by now, i.e. past σ + L − 2S on the writer's clock — so it was never
 *    appended. The same argument makes the bound monotone: no intent at or below it can appear
 *    later, so a process keeps it (`IntentFrontier.through`) and reads only the intents above it
 *    (the tombstones of resolved intents below it are never read again).
 * 4. *Recovery* (`recoverIntents`) resolves the intents older than L + `graceMicros`: the op in the
 *    pair's history → the view and the feed rows rewritten from the intent's slot (the rewrite is
 *    the repair job's, idempotent); absent → *fenced*: its op row deleted at a write time after
 *    the append's (an op row is written at its slot), so the append, if it lands later, changes
 *    nothing — then the intent is deleted. Which of the two is *decided* before any write
 *    (`decideIntent`, a lightweight transaction: the first decision stands), and every recovery
 *    acts on the decision that stands: one that read the op absent, stalled past its lease while a
 *    late append landed and another recovery found it present and delivered it, must not then
 *    fence it (the simulation's paused holder found that). The feed waits, never skips: while an
 *    intent stands the watermark stays below it (`flocklist_feed_oldest_intent_seconds` says for
 *    how long).
 *
 * 6. *Orphans.* An intent's insert that times out can still land, late (a hint replay, a batchlog
 *    replay): its writer sent no append, so it stands for nothing — but a process whose frontier
 *    had not passed its slot yet would wait on it, and a recovery whose frontier had passed it never
 *    resolves it. A saved bound (`saveIntentBound`: a look's result, which no intent acknowledged
 *    in time can be at or below) settles it: a look that finds an intent at or below the saved
 *    bound skips its shard to that bound. (The orphan row is never read again: every look starts
 *    above it.)
 *
 * What is left open: between recovery's read (op absent) and its fence, the append can land and a
 * racing writer on the pair can write a view (and feed rows) that include it; the fence then
 * removes the op from the history, and the pair's next write or the repair job's rewrite puts the
 * lists back, but the racer's feed row stands. (Compaction folds no op above the frontier of its
 * pair's shard, `intentsResolved`, so recovery always finds a dead writer's op.) An account
 * update's intent (`accounts.ts`) is resolved like an op's (`recoverUserUpdate`): its cells and
 * feed row are written at the slot, so present is "its row or a cell at the slot is stored" (the
 * row written if missing), and the fence writes every field again one above the slot, with an
 * empty row at the key.
 */

import { compareEventKeys, EVENT_SHARDS, type EventKey } from '../model/events.js';
import type { Timers } from '../model/timers.js';
import { type Position, USER_FIELDS } from '../model/types.js';
import type { EventStore, FeedIntentStore, IntentDecision } from '../ports/event-store.js';
import type { LeaseStore } from '../ports/lease-store.js';
import type { PairHistoryStore } from '../ports/pair-history-store.js';
import type { UserStore } from '../ports/user-store.js';
import { userUpdatedRow } from './feed-rows.js';
import { Lease } from './lease.js';
import { type PairRepairDeps, rewritePair } from './pair/pair-repair.js';
import type { ViewWriterDeps } from './pair/view-writer.js';

/**
 * A process's view of the intents, shard by shard: in each, the slot after which its intents are
 * read (below it none stands now or can appear later), advanced by each look — one read of at most
 * one intent per shard. A shard whose oldest intent stands is read from that intent on, so it comes
 * back first and the tombstones above it are not read while it waits; every other shard reads only
 * above what it already looked at. The first look starts from the bound some process saved
 * (`readIntentBound`), or from the retention.
 */
export class IntentFrontier {
  /** Per shard: no unresolved intent at or below, now or later (null: not looked yet). */
  private from: Position[] | null = null;
  /** The bound of the last look: the newest slot a read may return. */
  private settled: Position | null = null;
  /** The oldest unresolved intent's slot at the last look (null: none below its top). */
  private oldest: Position | null = null;
  /** The top of the last look (`now − L`): every shard was read up to it. */
  private top: Position | null = null;

  constructor(
    private readonly o: {
      store: Pick<FeedIntentStore, 'readIntents' | 'readIntentBound'>;
      /** L (µs). */
      lagMicros: bigint;
      /** How far back the first look starts without a saved bound (µs): the feed's retention. */
      retentionMicros: bigint;
    },
  ) {}

  /**
   * The newest slot a read whose clock said `now` (sampled before this call) may return rows
   * through: `min(now − L, oldest intent − 1)`.
   */
  async settledThrough(now: Position): Promise<Position> {
    const top = now - this.o.lagMicros;
    if (this.from === null) {
      const saved = await this.o.store.readIntentBound();
      this.from ??= Array.from({ length: EVENT_SHARDS }, () => saved ?? now - this.o.retentionMicros);
    }
    const from = this.from;
    const look = (shards: readonly number[]) =>
      Promise.all(
        shards.map((shard) => {
          const f = from[shard] as Position;
          return top <= f ? [] : this.o.store.readIntents(shard, f, top, 1);
        }),
      );
    const all = Array.from({ length: EVENT_SHARDS }, (_, shard) => shard);
    const found = await look(all);
    // An intent at or below the bound some process saved is an orphan (see the note, rule 6): skip
    // past it to that bound and look again above it. Read only when a look finds an intent, which
    // a live writer's intent, resolved within L, rarely is.
    if (found.some(([first]) => first !== undefined)) {
      const saved = await this.o.store.readIntentBound();
      const behind = all.filter((shard) => {
        const first = found[shard]?.[0];
        return saved !== null && first !== undefined && first.slot <= saved;
      });
      if (saved !== null && behind.length > 0) {
        // Up to the saved bound, never past this look's top (bigints: no Math.min).
        let to = top;
        if (saved < top) to = saved;
        for (const shard of behind) from[shard] = to;
        const again = await look(behind);
        behind.forEach((shard, i) => {
          found[shard] = again[i] ?? [];
        });
      }
    }
    let oldest: Position | null = null;
    found.forEach(([first], shard) => {
      const f = from[shard] as Position;
      const next = first ? first.slot - 1n : top;
      if (next > f) from[shard] = next;
      if (first && (oldest === null || first.slot < oldest)) oldest = first.slot;
    });
    this.oldest = oldest;
    this.top = top;
    let safe = top;
    for (const f of from) if (f < safe) safe = f;
    if (this.settled === null || safe > this.settled) this.settled = safe;
    return safe;
  }

  /** The slot of the oldest unresolved intent the last look found (what the metric reports). */
  oldestSlot(): Position | null {
    return this.oldest;
  }

  /** The top the last look read every shard up to (null before the first look). */
  lookedThrough(): Position | null {
    return this.top;
  }

  /** Per shard, where the intents still to resolve start (null before the first look). */
  shardBounds(): readonly Position[] | null {
    return this.from;
  }

  /** The bound of the last look (what the recovery saves for processes that start later). */
  settledBound(): Position | null {
    return this.settled;
  }
}

export interface IntentRecoveryDeps extends PairRepairDeps {
  store: PairRepairDeps['store'] &
    Pick<FeedIntentStore, 'readIntents' | 'deleteIntent' | 'saveIntentBound' | 'decideIntent'> &
    Pick<PairHistoryStore, 'fenceOp'> &
    Pick<EventStore, 'readEventRows'> &
    Pick<UserStore, 'getUserVersioned' | 'putUserFields'>;
  /** µs since the epoch. */
  clock: () => Position;
  /** L (µs). */
  lagMicros: bigint;
  /** Told the feed rows each rewrite wrote (`Feed.written`). */
  onEvents?: ViewWriterDeps['onEvents'];
}

export interface RecoveryResult {
  /** Intents whose op was in its pair's history: view and feed rows rewritten. */
  present: number;
  /** Intents whose op was not: fenced. */
  fenced: number;
  /** Present (false) when the recovery is leased and another process holds the lease: nothing resolved. */
  held?: false;
}

/** The lease the recovery runs under when several processes share the feed (`IntentRecovery`). */
export interface RecoveryLease {
  store: LeaseStore;
  /** This process's name among the holders. */
  holder: string;
  /** S, the clock guard's bound (the lease's margin). */
  clockBoundMs: number;
  /** The lease's TTL (default 30 s). */
  ttlMs?: number;
  timers?: Timers;
}

/** The lease's name. */
export const RECOVERY_LEASE = 'feed:intent-recovery';

/** A pair op of an intent's key (its source, target, position and kind). */
function intentOp(k: EventKey) {
  const targetId = k.opSource === k.low ? k.high : k.low;
  return { sourceId: k.opSource, targetId, position: k.opPosition, kind: k.opKind as never };
}

/**
 * Resolves the intents with a slot in `(after[shard], min(now − L − grace, through)]` (at most
 * `limit` per shard; see the note). `through`: the top of the look that gave `after`, so a shard
 * that look found empty is not read again (an idle pass reads no intents; one landing above the
 * look's top is the next pass's). Each is resolved on its own: a failure leaves it for the next
 * pass. Safe to run on several instances at once: both outcomes are idempotent, and a pass that
 * finds the op present after another fenced it cannot happen (the fence is at a write time its row
 * cannot exceed).
 */
export async function recoverIntents(
  d: IntentRecoveryDeps,
  o: {
    after: readonly Position[];
    graceMicros?: bigint;
    limit?: number;
    through?: Position | null;
  },
): Promise<RecoveryResult> {
  let until = d.clock() - d.lagMicros - (o.graceMicros ?? 0n);
  if (o.through != null && o.through < until) until = o.through;
  const result: RecoveryResult = { present: 0, fenced: 0 };
  const pages = await Promise.all(
    o.after.map((after, shard) =>
      after >= until ? [] : d.store.readIntents(shard, after, until, o.limit ?? 100),
    ),
  );
  const intents = pages.flat();
  for (const k of intents) {
    const decision = k.opKind === 'user' ? await recoverUserUpdate(d, k) : await recoverOp(d, k);
    await d.store.deleteIntent(k);
    result[decision]++;
  }
  return result;
}

/**
 * Resolves a pair op's intent: reads the pair, decides (`decideIntent`: the first decision
 * stands), and acts on the decision that stands — `fenced`: the op row fenced, then the pair
 * rewritten from the intent's slot; `present`: the pair rewritten (its rewrite reads the history
 * afresh, which holds the op: a decision `present` was read so, and nothing fences it after).
 */
async function recoverOp(d: IntentRecoveryDeps, k: EventKey): Promise<IntentDecision> {
  const op = intentOp(k);
  const history = await d.store.readPairHistory(op.sourceId, op.targetId);
  const found = history.ops.some(
    (x) => x.position === op.position && x.sourceId === op.sourceId && x.kind === op.kind,
  );
  const decision = await d.store.decideIntent(k, found ? 'present' : 'fenced');
  if (decision === 'fenced') await d.store.fenceOp(op, k.slot);
  await rewritePair({ ...d, eventsFrom: () => k.slot }, op.sourceId, op.targetId);
  return decision;
}

/** What the recovery reads of an account update: its feed row, and its cells that landed. */
async function readUserUpdate(d: IntentRecoveryDeps, k: EventKey) {
  const [rows, read] = await Promise.all([
    d.store.readEventRows({ ...k, opKind: '' }, k.slot, 8),
    d.store.getUserVersioned(k.low),
  ]);
  return {
    row: rows.some((r) => compareEventKeys(r.key, k) === 0),
    user: read.user,
    landed: USER_FIELDS.filter((f) => read.versions[f] === k.slot),
  };
}

/**
 * Resolves an account update's intent (see the note): its feed row found, or any of its cells
 * stored (a cell written at the intent's slot: the update's version) → present, its row written
 * if missing; else → fenced: every field written again, as read, one above the slot, with an empty
 * feed row at the intent's key, so the update's batch, landing later at the slot, changes nothing
 * and its row stays hidden. Decided first like an op's (`recoverOp`); a decision other than this
 * read's is acted on from a fresh read.
 */
async function recoverUserUpdate(d: IntentRecoveryDeps, k: EventKey): Promise<IntentDecision> {
  const seen = await readUserUpdate(d, k);
  const mine: IntentDecision = seen.row || (seen.user && seen.landed.length > 0) ? 'present' : 'fenced';
  const decision = await d.store.decideIntent(k, mine);
  const now = decision === mine ? seen : await readUserUpdate(d, k);
  if (!now.user) return decision;
  if (decision === 'present') {
    if (!now.row && now.landed.length > 0) {
      const row = userUpdatedRow(k.low, k.slot, now.landed, k.opSource);
      await d.store.putUserFields(k.low, {}, k.slot, { event: row });
      d.onEvents?.([row]);
    }
    return decision;
  }
  const { id: _, ...fields } = now.user;
  await d.store.putUserFields(k.low, fields, k.slot + 1n, { event: { key: k, transitions: [] } });
  return decision;
}

/**
 * Runs `recoverIntents` from a frontier's kept bound: once on demand (`runOnce`), or every
 * `everyMs`, less often while no intent stands (`start`; the timer does not keep the process
 * alive). A pass that fails is retried at
 * the next tick; `onPass` hears each pass's result or error.
 *
 * With `lease`, the resolving part of a pass runs in one process at a time: the holder of
 * `RECOVERY_LEASE` (`lease.ts`); every process still looks (its own frontier moves), and the others
 * answer `held: false`. The lease saves work and races, not correctness: a recovery's writes are the
 * same whoever sends them (a fence at a write time fixed by the intent's slot, a rewrite of the pair
 * from its history), so an ex-holder resuming after a pause repeats what the holder did.
 */
export class IntentRecovery {
  private timer: NodeJS.Timeout | null = null;
  /** The chain of passes `start` began, until `stop` (a pass still running from before ends its own). */
  private chain: object | null = null;
  private running: Promise<RecoveryResult> | null = null;
  private lease: Lease | null = null;

  constructor(
    private readonly d: IntentRecoveryDeps,
    private readonly frontier: IntentFrontier,
    private readonly o: {
      graceMicros?: bigint;
      onPass?: (r: RecoveryResult | Error) => void;
      lease?: RecoveryLease;
    } = {},
  ) {}

  /** Whether this process may resolve now: unleased, or holding (or taking) the lease. */
  private async holds(): Promise<boolean> {
    const l = this.o.lease;
    if (!l) return true;
    if (this.lease?.held()) return true;
    this.lease = await Lease.acquire({ ...l, name: RECOVERY_LEASE });
    return this.lease !== null;
  }

  /** How long (s) the oldest unresolved intent the last look found has stood, by `clock`; 0: none. */
  oldestIntentAgeSeconds(): number {
    const slot = this.frontier.oldestSlot();
    return slot === null ? 0 : Math.max(0, Number(this.d.clock() - slot) / 1e6);
  }

  /** One pass (a pass already running is joined). */
  runOnce(): Promise<RecoveryResult> {
    this.running ??= (async () => {
      try {
        // Looking first moves the kept bound up to the oldest intent, so the pass reads from there.
        await this.frontier.settledThrough(this.d.clock());
        if (!(await this.holds())) return { present: 0, fenced: 0, held: false };
        const after = this.frontier.shardBounds() ?? [];
        const result = await recoverIntents(this.d, {
          after,
          through: this.frontier.lookedThrough(),
          ...(this.o.graceMicros === undefined ? {} : { graceMicros: this.o.graceMicros }),
        });
        // What this look established holds for every process: a process that starts later looks
        // from here rather than from the retention.
        const settled = this.frontier.settledBound();
        if (settled !== null) await this.d.store.saveIntentBound(settled);
        return result;
      } finally {
        this.running = null;
      }
    })();
    return this.running;
  }

  /**
   * A pass now, then one every `everyMs` — or, while the looks find no intent (none older than L
   * stands: the usual case, busy or idle, as a live writer deletes its own within L), after waits
   * doubling up to `idleMaxMs` (default 4 × `everyMs`): a process looks at the 8 shards every 8 s
   * rather than every 2 s. A look that finds an intent (one to resolve, or another process's to
   * wait for) or a pass that fails sets the wait back to `everyMs`. The cost is in the bound of a
   * dead writer's change only: its intent is found up to `idleMaxMs − everyMs` later (D ≈ 21 s
   * instead of 15 s with the defaults; the stated bound is 60 s). The first look is not put off:
   * until this process's frontier has looked, its compaction is not held back by the intents
   * (`intentsClear` is null).
   */
  start(everyMs: number, idleMaxMs = 4 * everyMs): void {
    if (this.chain || everyMs <= 0) return;
    const chain = {};
    this.chain = chain;
    let waitMs = everyMs;
    const pass = () => {
      this.timer = null;
      void this.runOnce()
        .then(
          (r) => {
            const idle = this.frontier.oldestSlot() === null && r.present + r.fenced === 0;
            waitMs = idle ? Math.min(Math.max(everyMs, idleMaxMs), waitMs * 2) : everyMs;
            this.o.onPass?.(r);
          },
          (e: unknown) => {
            waitMs = everyMs;
            this.o.onPass?.(e instanceof Error ? e : new Error(String(e)));
          },
        )
        .finally(() => {
          if (this.chain !== chain) return;
          this.timer = setTimeout(pass, waitMs);
          this.timer.unref();
        });
    };
    pass();
  }

  /** Stops the passes and gives the lease up (if held), so another process takes over at once. */
  stop(): void {
    this.chain = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    void this.lease?.release();
    this.lease = null;
  }
}
