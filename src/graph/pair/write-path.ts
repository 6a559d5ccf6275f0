/**
 * The one write path of the graph: every relationship mutation is a `Mutation` handed to
 * `applyPairOp`, which runs one straight line, each step once and in this order:
 *
 *   read → fold → decide → mark → append → re-read → outcome → write → count
 *
 * - read: the pair's history (one statement), beside the two user rows (through
 *   `WritePathDeps.users`, which a user-row cache answers); the write budget starts here.
 * - fold: the history folded once (`foldView`): the request-time checks and the op's `before`.
 * - decide: validation at request time (users exist and are active, not self; for live operations
 *   also the relation's own rules against the pair as it stands — the block, the following cap, a
 *   pending request for accept; a private target turns a follow into a `request`), then the op's
 *   position (`choosePosition`).
 * - mark: the dirty marks that make the reconciler recount what the op's counting may miss, before
 *   its append (`count-step.ts`).
 * - append: with the compaction step the protocol asks for (`appendOp` in `pair-history.ts`).
 * - re-read: how racers are found and counted once; never skipped.
 * - outcome: derived once from the two reads (`deriveOutcome`): the fold written (the re-read's,
 *   the second and last full fold of the pair), the op's own transition, whether the op changed
 *   anything (the re-read without the op), the feed rows.
 * - write: the view's row set (`view-writer.ts`): edges, list rows, feed rows, all or nothing.
 * - count: the counter deltas (`applyCountDeltas`, `count-step.ts`).
 * The state it answers is the state of the edge after the op, as the fold says — for a replay the
 * fold may refuse (a follow replayed behind a standing block answers `none`). The line folds the
 * pair whole (`foldPair`) twice, the first read and the re-read (three times when its append
 * commits a compaction: the checkpoint); the op's own transition and the re-read without the op
 * are one pass each over active states (`opTransition`).
 * `test/graph/pair/fold-count.test.ts` counts the folds of every kind of op.
 *
 * Replay ops (explicit `position`) skip the request-time checks: those compare against *now*,
 * which says nothing about the op's position (a follow replayed while a block stands may predate
 * the block). The fold applies the rules at the op's position, which is where convergence comes
 * from. Live ops are positioned after everything on the pair, so their request-time check and the
 * fold agree, and a refusal can be reported as an error.
 *
 * The requests of a fresh follow by a warm actor (counted on the real node by
 * `test/graph/pair/follow-requests.int.test.ts`), in order, each one request:
 *   1. the pair read, beside the two user rows (a user-row cache answers them; two reads without);
 *   2. the dirty marks, one unlogged batch of up to `DIRTY_SHARDS` partitions: before the append,
 *      so a write that dies anywhere after it is recounted; not in the view's logged batch, which
 *      comes after the append, and the marks keep their µs write times;
 *   3. the append (one partition; with a compaction step when the protocol asks for one);
 *   4. the re-read;
 *   5. the view's logged batch (edges, list rows, feed rows: all or nothing);
 *   6. the counter increments, one counter batch (counters cannot join a logged batch).
 * The cap's counts are read only when its budget is cold (`follow-cap.ts`), and a list's size only
 * when growth asks (`sizeCheckDue`). With the four marks and two increments one statement each, a
 * follow took 12 requests.
 */

import {
  BlockedError,
  FollowingCapError,
  NoPendingRequestError,
  PairBusyError,
  PositionTooOldError,
  SelfFollowError,
  StoreUnavailableError,
  UserNotFoundError,
} from '../../model/errors.js';
import type { EventKey, EventRow } from '../../model/events.js';
import type {
  EdgeRecord,
  OpKind,
  PairOp,
  Position,
  Relation,
  UserId,
  UserRecord,
} from '../../model/types.js';
import { edgeKey } from '../../model/types.js';
import type { EdgeStore } from '../../ports/edge-store.js';
import type { FeedIntentStore } from '../../ports/event-store.js';
import type { PairHistoryStore } from '../../ports/pair-history-store.js';
import type { UserStore } from '../../ports/user-store.js';
import type { FollowState, MutationOptions, MutationResult } from '../contracts.js';
import {
  applyCountDeltas,
  type CountStepDeps,
  countDeltas,
  markAfterFailure,
  markBeforeView,
  markBeforeWrite,
} from './count-step.js';
import type { FollowCap } from './follow-cap.js';
import { opEventKey } from './pair-events.js';
import {
  type ActiveEdges,
  activeEdge,
  activeEdges,
  compareOps,
  containsOp,
  foldView,
  opKey,
  opTransition,
  type PairFold,
  type PairView,
  sameActive,
} from './pair-fold.js';
import {
  appendOp,
  choosePosition,
  type PairHistoryDeps,
  type PairRead,
  refusalHorizon,
  takeSlot,
} from './pair-history.js';
import { type ViewWriterDeps, viewEvents, viewRows, writeViewRows } from './view-writer.js';

/** What the write path touches: the pair's history and edges, the view writer's and the count step's stores. */
export interface WritePathDeps extends PairHistoryDeps, Omit<ViewWriterDeps, 'store' | 'lists'> {
  store: Pick<PairHistoryStore, 'readPairHistory' | 'appendPair'> &
    Pick<FeedIntentStore, 'deleteIntent' | 'claimOpSlot'> &
    Pick<EdgeStore, 'getPairEdges'> &
    ViewWriterDeps['store'] &
    CountStepDeps['store'] &
    Pick<UserStore, 'getUsers'>;
  lists: ViewWriterDeps['lists'] & CountStepDeps['lists'];
  /**
   * Where a mutation reads its *acting* account (its existence, state and username), for a
   * user-row cache to answer (default: `store`): a cached row may be stale within the cache's
   * bound. The *other* account is always read from `store` at its quorum, uncached, in parallel
   * with the pair: its `private` and `state` decide the op (a follow of an account whose switch
   * to private was acknowledged anywhere is a request; of one deactivated, a 404).
   */
  users?: Pick<UserStore, 'getUsers'>;
  cap: FollowCap;
  /** How far ahead of the clock the marks before an append are dated (µs). */
  countLeaseMicros: bigint;
  /** False: feed rows without intents (what they cost: `bench:events`' F5 only). Default true. */
  intents?: boolean;
}

export interface AppliedOp {
  op: PairOp;
  /** The op was already in the history (a retry or a replay): nothing appended. */
  duplicate: boolean;
  /** Whether the op changed what lists and counts show. */
  changed: boolean;
  /** The fold written (the re-read view). */
  after: PairFold;
}

/** The one write path (see the note). */
export async function applyPairOp(d: WritePathDeps, m: Mutation, o: MutationOptions): Promise<AppliedOp> {
  if (m.actor === m.other) throw new SelfFollowError();
  // read
  const [users, read] = await Promise.all([
    requireUsers(d.users ?? d.store, d.store, m.actor, m.other, m.anyState),
    readPair(d, m.sourceId, m.targetId),
  ]);
  // fold
  const before = foldView(read.history);
  // decide
  const kind = typeof m.kind === 'function' ? m.kind(users.get(m.other) as UserRecord) : m.kind;
  if (o.position === undefined) await m.check?.(before);
  const position = choosePosition(d, read.history, o.position);
  const op: PairOp = { sourceId: m.sourceId, targetId: m.targetId, kind, position };
  // mark, and the op's intent with the marks (`feed-intents.ts`): a new op takes its feed slot
  // now, and its intent is acknowledged before the append is sent, within the write budget.
  const slot = containsOp(read.history.ops, op) ? undefined : takeSlot(d, op);
  const intent =
    slot === undefined || d.eventsFrom() === null || d.intents === false ? null : opEventKey(op, slot);
  // The intent rides in the marks' batch: one request for both, bounded by what is left of the budget.
  const lease = await markBeforeWrite(d, op, read.history, {
    before,
    clock: d.clock,
    micros: d.countLeaseMicros,
    intent: intent && { key: intent, timeoutMs: d.policy.writeBudgetMs - (d.monotonic() - read.startedMs) },
  });
  try {
    // An op at an explicit position may be delivered twice at once (a client's retry on another
    // instance): the first delivery whose intent is acknowledged claims the slot, any other takes
    // that slot and drops its own intent, so the op has one feed row (see `claimOpSlot`). The
    // claim is made once nothing can refuse the append: a claimer keeps its intent from then on
    // (a refusal deletes it below), so a slot another delivery takes is held for readers until
    // the claimer's view batch or the recovery writes its rows.
    let adopted: Position | null = null;
    const claim =
      intent && o.position !== undefined
        ? async (own: Position) => {
            adopted = await adoptClaimedSlot(d, intent);
            return adopted ?? own;
          }
        : undefined;
    // append
    const { duplicate, folded } = await appendOp(d, read, op, slot, claim);
    // re-read (and, for a duplicate, the stored edges: see `deriveOutcome`)
    const [view, stored] = await Promise.all([
      d.store.readPairHistory(op.sourceId, op.targetId),
      duplicate ? d.store.getPairEdges(op.sourceId, op.targetId) : null,
    ]);
    // An adopted slot whose first delivery the recovery fenced (its op row deleted past the slot):
    // this append, at that slot, is shadowed too, and the op can never take effect here.
    if (adopted !== null && !duplicate && !containsOp(view.ops, op)) {
      const horizon = refusalHorizon(view);
      if (op.position > horizon) throw new PositionTooOldError(op.position, horizon, true);
    }
    // outcome
    const out = deriveOutcome(read.history, view, op, before, stored, d.eventsFrom());
    // write: the rows carry the usernames read with the pair (a rename's fan-out waits out this
    // write: `rename-fanout.ts`).
    const usernames = new Map([...users].map(([id, u]) => [id, u.username]));
    await markBeforeView(d, lease, out.counted);
    await writeViewRows(d, await viewRows(d, view, out.after, out.events, folded, usernames));
    // Done: the op's feed rows are acknowledged; the intent goes by its own statement, off the
    // latency path (one left behind holds readers only until the recovery finds it present).
    if (intent) void d.store.deleteIntent(intent).catch(() => undefined);
    // The view batch carried the events of recent slots. Acknowledged past B + V + T from the
    // first read, it may have landed after feed readers passed its slot (`feedLagMicros`): the
    // write stands, but it is not acknowledged.
    const { policy } = d;
    const late =
      d.monotonic() - read.startedMs > policy.writeBudgetMs + policy.viewBudgetMs + policy.batchTimeoutMs;
    // count
    await applyCountDeltas(d, out.counted, out.alsoDirty, lease);
    if (late) {
      throw new StoreUnavailableError(
        'the write was applied after its budget; its events may reach feed readers late, so it is not acknowledged',
      );
    }
    return { op, duplicate, changed: !duplicate && out.changed, after: out.after };
  } catch (e) {
    // Refused before its append (before any claim), or a second delivery refused after it (its
    // own intent already gone): nothing of it can land later, and its intent can go.
    if (e instanceof PositionTooOldError || e instanceof PairBusyError) {
      if (intent) await d.store.deleteIntent(intent).catch(() => undefined);
    } else await markAfterFailure(d, lease).catch(() => undefined);
    throw e;
  }
}

/** Reads the pair's history; the write budget starts now. */
async function readPair(d: WritePathDeps, a: UserId, b: UserId): Promise<PairRead> {
  d.guard.assertWritable();
  const startedMs = d.monotonic();
  const readAt = d.clock();
  const history = await d.store.readPairHistory(a, b);
  return { history, startedMs, readAt, returnedAt: d.clock() };
}

/** What one op's two reads imply, derived once: what the write and the count steps take. */
interface Outcome {
  /** The fold of the re-read: what the view write writes and the op answers. */
  after: PairFold;
  /** The feed rows the view write carries (newest slot first). */
  events: EventRow[];
  /** Whether the op changed what lists and counts show (the re-read with it and without it differ). */
  changed: boolean;
  /** The counter deltas this op applies. */
  counted: ReturnType<typeof countDeltas>;
  /** Lists whose rows changed between the two reads but not by this op: a racer's, to be recounted. */
  alsoDirty: ReturnType<typeof countDeltas>;
}

/**
 * The outcome of `op` from the first read (`first`, folded as `before`) and the re-read (`view`),
 * each derived once. Counters: a new op counts its own transition (`ownTransition`): from its first
 * read plus the racers ordered before it, to that plus itself. Two ops racing on one pair (a double
 * click, a retry sent as a new op) then count one transition between them, as long as each re-read
 * sees the other. (Counting the first read against the whole re-read, as this did first, made both
 * count it: 0.101 % drift after 1 % unfollows with a tenth of them sent twice at once.) An op a
 * commit folded away before the re-read counts against the whole re-read, as before. A duplicate
 * is usually a retry after a failure: it counts against what the edge rows show (`stored`, read
 * beside the re-read), so a first attempt that crashed before its edge write gets its count now,
 * and one that completed does not count twice. What any of these miss (an op landing late below a
 * re-read), the reconciler recounts (`reconcile-dirty.ts`).
 */
function deriveOutcome(
  first: PairView,
  view: PairView,
  op: PairOp,
  before: PairFold,
  stored: readonly EdgeRecord[] | null,
  eventsFrom: ReturnType<WritePathDeps['eventsFrom']>,
): Outcome {
  const after = foldView(view);
  const afterActive = activeEdges(after);
  const events = after.edges.size === 0 ? [] : viewEvents(view, eventsFrom);
  const withOp = containsOp(view.ops, op) ? opTransition(view.ops, op, view.checkpoint?.edges) : null;
  const changed = withOp !== null && !sameActive(withOp.before, afterActive);
  const seen = countDeltas(stored ? storedActive(stored) : activeEdges(before), afterActive);
  const own = stored ? null : ownTransition(first, view, op);
  return own
    ? { after, events, changed, counted: countDeltas(own.before, own.after), alsoDirty: seen }
    : { after, events, changed, counted: seen, alsoDirty: [] };
}

/**
 * The slot another delivery of the op claimed first, with this delivery's intent deleted (awaited,
 * so the recovery does not meet it: were it to, it would find the op present and rewrite from a
 * slot the op does not have, which writes nothing); null when this delivery's slot stands.
 */
async function adoptClaimedSlot(d: WritePathDeps, intent: EventKey): Promise<Position | null> {
  d.guard.assertWritable();
  const stands = await d.store.claimOpSlot(intent);
  if (stands === intent.slot) return null;
  await d.store.deleteIntent(intent).catch(() => undefined);
  return stands;
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
): { before: ActiveEdges; after: ActiveEdges } | null {
  if (!containsOp(reread.ops, op)) return null;
  const known = new Set(first.ops.map(opKey));
  const racersBefore = reread.ops.filter((o) => !known.has(opKey(o)) && compareOps(o, op) < 0);
  return opTransition([...first.ops, ...racersBefore], op, first.checkpoint?.edges);
}

/** The pair's active edges as its stored edge rows show them. */
function storedActive(edges: readonly EdgeRecord[]): ActiveEdges {
  return new Map(
    edges.filter((e) => e.state === 'active').map((e) => [edgeKey(e.sourceId, e.relation, e.targetId), e]),
  );
}

/**
 * Both users exist and are active (a deactivated account is not found; with `anyState`, any
 * existing account will do); returns both. The actor is read through `cached`, the other account
 * through `fresh` (see `WritePathDeps.users`), at once.
 */
async function requireUsers(
  cached: Pick<UserStore, 'getUsers'>,
  fresh: Pick<UserStore, 'getUsers'>,
  actor: UserId,
  other: UserId,
  anyState = false,
): Promise<Map<UserId, UserRecord>> {
  const [mine, theirs] = await Promise.all([cached.getUsers([actor]), fresh.getUsers([other])]);
  const found = new Map([...mine, ...theirs]);
  const usable = (u: UserRecord | undefined): u is UserRecord =>
    u !== undefined && (anyState || u.state === 'active');
  if (!usable(found.get(actor))) throw new UserNotFoundError(actor);
  if (!usable(found.get(other))) throw new UserNotFoundError(other);
  return found;
}

/** The result of every mutation, with whether the op was already in the pair history. */
export type GraphMutationResult<S extends string> = MutationResult<S> & { duplicate: boolean };

/** One mutation (see the note). */
interface Mutation {
  /** The acting account and the other one, checked to exist in this order. */
  actor: UserId;
  other: UserId;
  /** The edge the op acts on (`accept`, `decline`, `remove_follower`: requester/follower → actor). */
  sourceId: UserId;
  targetId: UserId;
  /** The op kind, or how to pick it from the other account (a private target turns a follow into a request). */
  kind: OpKind | ((other: UserRecord) => OpKind);
  /** Extra request-time rules for live ops, against the pair as it stands. */
  check?: (now: PairFold) => Promise<void> | void;
  /** Deactivated accounts may take part (they must still exist): the accept task of going public. */
  anyState?: boolean;
}

/** The owner-private typed edges: each op kind, its relation, and the state it answers when on. */
export const TOGGLES = {
  block: { relation: 'blocks', on: 'blocking' },
  unblock: { relation: 'blocks', on: 'blocking' },
  mute: { relation: 'mutes', on: 'muting' },
  unmute: { relation: 'mutes', on: 'muting' },
  close_friend_add: { relation: 'close_friends', on: 'close_friend' },
  close_friend_remove: { relation: 'close_friends', on: 'close_friend' },
  restrict: { relation: 'restricts', on: 'restricting' },
  unrestrict: { relation: 'restricts', on: 'restricting' },
} as const satisfies Partial<Record<OpKind, { relation: Relation; on: string }>>;
export type ToggleKind = keyof typeof TOGGLES;

/** The state of the follow edge `source → target` in a fold. */
function followState(f: PairFold, source: UserId, target: UserId): FollowState {
  if (activeEdge(f, source, 'follows', target)) return 'following';
  if (activeEdge(f, source, 'requests', target)) return 'requested';
  return 'none';
}

/** Every relationship mutation (see the note). */
export class PairMutations {
  constructor(private readonly d: WritePathDeps) {}

  async follow(
    actor: UserId,
    target: UserId,
    o: MutationOptions = {},
  ): Promise<GraphMutationResult<FollowState>> {
    // The cap's counter reads only matter for a live follow; start them alongside the pair reads.
    const committed = o.position === undefined ? this.d.cap.committedEstimate(actor) : null;
    committed?.catch(() => undefined);
    const a = await this.apply(
      {
        actor,
        other: target,
        sourceId: actor,
        targetId: target,
        kind: (t) => (t.private ? 'request' : 'follow'),
        check: async (now) => {
          if (activeEdge(now, actor, 'blocks', target) || activeEdge(now, target, 'blocks', actor))
            throw new BlockedError();
          if (activeEdge(now, actor, 'follows', target) || activeEdge(now, actor, 'requests', target)) return;
          if (((await committed) ?? 0) >= this.d.cap.max) throw new FollowingCapError(this.d.cap.max);
        },
      },
      o,
    );
    return result(a, followState(a.after, actor, target));
  }

  async unfollow(
    actor: UserId,
    target: UserId,
    o: MutationOptions = {},
  ): Promise<GraphMutationResult<FollowState>> {
    const a = await this.apply(
      { actor, other: target, sourceId: actor, targetId: target, kind: 'unfollow' },
      o,
    );
    return result(a, followState(a.after, actor, target));
  }

  /**
   * Accepts `requester`'s pending request to `owner`; `anyState`: also when either is deactivated
   * (the accept task of going public, whose requests must not stay pending toward a public account
   * once the account is reactivated; the follow stays hidden until then, like every edge of it).
   */
  async accept(
    owner: UserId,
    requester: UserId,
    o: MutationOptions = {},
    anyState = false,
  ): Promise<GraphMutationResult<FollowState>> {
    const { cap } = this.d;
    const a = await this.apply(
      {
        actor: owner,
        other: requester,
        sourceId: requester,
        targetId: owner,
        kind: 'accept',
        anyState,
        check: async (now) => {
          if (activeEdge(now, requester, 'follows', owner)) return;
          if (!activeEdge(now, requester, 'requests', owner)) throw new NoPendingRequestError();
          // The request already counts against the requester's cap (see `follow-cap.ts`), but a cap
          // lowered since, or requests made before the rule, must not let it through.
          if ((await cap.following(requester)) >= cap.max) throw new FollowingCapError(cap.max);
        },
      },
      o,
    );
    return result(a, followState(a.after, requester, owner));
  }

  /** `owner` acts on the edge `other → owner`: removing a follower, declining a request. */
  async onInbound(
    owner: UserId,
    other: UserId,
    kind: 'remove_follower' | 'decline',
    o: MutationOptions = {},
  ): Promise<GraphMutationResult<FollowState>> {
    const a = await this.apply({ actor: owner, other, sourceId: other, targetId: owner, kind }, o);
    return result(a, followState(a.after, other, owner));
  }

  /** A typed-edge op on `actor → target`; answers the relation's `on` state when the edge is active afterwards, else `none`. */
  async toggle<K extends ToggleKind>(
    kind: K,
    actor: UserId,
    target: UserId,
    o: MutationOptions = {},
  ): Promise<GraphMutationResult<(typeof TOGGLES)[K]['on'] | 'none'>> {
    const { relation, on } = TOGGLES[kind];
    const a = await this.apply({ actor, other: target, sourceId: actor, targetId: target, kind }, o);
    return result(a, activeEdge(a.after, actor, relation, target) ? on : 'none');
  }

  private apply(m: Mutation, o: MutationOptions): Promise<AppliedOp> {
    return applyPairOp(this.d, m, o);
  }
}

function result<S extends string>(a: AppliedOp, state: S): GraphMutationResult<S> {
  return { state, changed: a.changed, position: a.op.position, duplicate: a.duplicate };
}
