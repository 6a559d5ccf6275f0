/**
 * The one write path of the graph: every relationship mutation is a `Mutation` handed to
 * `PairWrites.apply`, which (1) validates at request time (users exist and are active, not self;
 * for live operations also the relation's own rules against the pair as it stands — the block, the
 * following cap, a pending request for accept; a private target turns a follow into a `request`),
 * (2) chooses the op's position (`pair-history.ts`), (3) writes the dirty marks that make the
 * reconciler recount what the op's counting may miss, before its append (`pair-writer.ts`), and
 * (4) `applyPairOp`: append with the compaction step the protocol asks for, re-read, write the
 * fold of the re-read and apply counter deltas. The state it answers is the state of the edge
 * after the op, as the fold says — for a replay the fold may refuse (a follow replayed behind a
 * standing block answers `none`). The pair is read once and folded once per op; the re-read is
 * folded for the rows written, and once without the op to tell whether it changed anything.
 *
 * Replay ops (explicit `position`) skip the request-time checks: those compare against *now*,
 * which says nothing about the op's position (a follow replayed while a block stands may predate
 * the block). The fold applies the rules at the op's position, which is where convergence comes
 * from. Live ops are positioned after everything on the pair, so their request-time check and the
 * fold agree, and a refusal can be reported as an error.
 *
 * The requests of a fresh follow by a warm actor (issue 21; counted on the real node by
 * `test/graph/pair/follow-requests.int.test.ts`), in order, each one request:
 *   1. the pair read (one statement: `pair-history.ts`), beside the two user rows (through
 *      `PairWritesDeps.users`, which a user-row cache answers; two reads without one);
 *   2. the dirty marks, one unlogged batch of up to `DIRTY_SHARDS` partitions: before the append,
 *      so a write that dies anywhere after it is recounted (`pair-writer.ts`); not in the view's
 *      logged batch, which comes after the append, and the marks keep their µs write times;
 *   3. the append (one partition; with a compaction step when the protocol asks for one);
 *   4. the re-read: how racers are found and counted once (`ownTransition`); never skipped;
 *   5. the view's logged batch (edges, list rows, feed rows: all or nothing);
 *   6. the counter increments, one counter batch (counters cannot join a logged batch).
 * The cap's counts are read only when its budget is cold (`follow-cap.ts`), and a list's size only
 * when growth asks (`sizeCheckDue`). Before issue 21 the four marks and two increments went one
 * statement each: 12 requests.
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
import type { EdgeRecord, OpKind, PairOp, Relation, UserId, UserRecord } from '../../model/types.js';
import { edgeKey } from '../../model/types.js';
import type { StoredPairOp } from '../../ports/records.js';
import type { UserStore } from '../../ports/store.js';
import type { FollowState, MutationOptions, MutationResult } from '../contracts.js';
import type { FollowCap } from './follow-cap.js';
import { activeEdge, containsOp, MAX_VERSION_COUNT, type PairFold } from './pair-fold.js';
import {
  choosePosition,
  compactionStep,
  type PairHistoryDeps,
  type PairRead,
  readPair,
  refusalHorizon,
  versionCountAfter,
} from './pair-history.js';
import {
  applyCountDeltas,
  type CountLease,
  countDeltas,
  foldView,
  markAfterFailure,
  markBeforeWrite,
  ownTransition,
  writePairView,
} from './pair-writer.js';

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

/**
 * Appends `op` (its position already chosen) to the pair read in `read`, re-reads, writes the
 * fold and applies counter deltas (`lease`: the dirty marks the caller wrote before, see
 * `markBeforeWrite`). Throws `PositionTooOldError` for an op at or below the horizon,
 * `PairBusyError` when the pair must wait for a compaction, `ClockSkewError` when this instance's
 * clock is not known to be within the bound, and `StoreUnavailableError` when the append was not
 * acknowledged within the write budget (the outcome is then unknown).
 */
export async function applyPairOp(
  deps: PairHistoryDeps,
  read: PairRead,
  op: PairOp,
  lease: CountLease,
  usernames?: ReadonlyMap<UserId, string>,
): Promise<AppliedOp> {
  const { store, policy } = deps;
  const { history } = read;
  const before = read.fold;
  const duplicate = containsOp(history.ops, op);
  let folded: PairOp[] = [];
  if (!duplicate) {
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
    if (step.commit) {
      const horizon = step.commit.checkpoint.horizon;
      folded = history.ops.filter((o) => o.position <= horizon);
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
  const after = await writePairView(deps, view, folded, usernames);
  // The view batch carried the events of recent slots. Acknowledged past B + V + T from the first
  // read, it may have landed after feed readers passed its slot (`feedLagMicros`): the write
  // stands, but it is not acknowledged.
  const late =
    deps.monotonic() - read.startedMs > policy.writeBudgetMs + policy.viewBudgetMs + policy.batchTimeoutMs;
  const own = storedBefore ? null : ownTransition(history, view, op);
  const seen = countDeltas(storedBefore ?? before, after);
  // Lists whose rows changed between the two reads but not by this op: a racer's, to be recounted.
  await applyCountDeltas(deps, own ? countDeltas(own.before, own.after) : seen, own ? seen : [], lease);
  const changed = !duplicate && !sameActive(foldView(view, op), after);
  if (late) {
    throw new StoreUnavailableError(
      'the write was applied after its budget; its events may reach feed readers late, so it is not acknowledged',
    );
  }
  return { op, before, after, duplicate, changed };
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

export interface PairWritesDeps extends PairHistoryDeps {
  store: PairHistoryDeps['store'] & Pick<UserStore, 'getUsers'>;
  /**
   * Where a mutation reads its two accounts (their existence, state, privacy and usernames): the
   * one user read of the write path, for a user-row cache to answer (default: `store`). A cached
   * row may be stale within the cache's bound; the fold, not this check, decides what the op does.
   */
  users?: Pick<UserStore, 'getUsers'>;
  cap: FollowCap;
  /** How far ahead of the clock the marks before an append are dated (µs). */
  countLeaseMicros: bigint;
}

/** Every relationship mutation (see the note). */
export class PairWrites {
  constructor(private readonly d: PairWritesDeps) {}

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

  /** The one write path (see the note). */
  private async apply(m: Mutation, o: MutationOptions): Promise<AppliedOp> {
    const d = this.d;
    if (m.actor === m.other) throw new SelfFollowError();
    const [users, read] = await Promise.all([
      this.requireUsers(m.actor, m.other, m.anyState),
      readPair(d, m.sourceId, m.targetId),
    ]);
    const other = users.get(m.other) as UserRecord;
    const kind = typeof m.kind === 'function' ? m.kind(other) : m.kind;
    if (o.position === undefined) await m.check?.(read.fold);
    const position = choosePosition(d, read.history, o.position);
    const op: PairOp = { sourceId: m.sourceId, targetId: m.targetId, kind, position };
    const lease = await markBeforeWrite(d, op, read.history, { clock: d.clock, micros: d.countLeaseMicros });
    try {
      // The rows carry the usernames read with the pair (a rename's fan-out waits out this write:
      // `rename-fanout.ts`).
      const usernames = new Map([...users].map(([id, u]) => [id, u.username]));
      return await applyPairOp(d, read, op, lease, usernames);
    } catch (e) {
      // Refused before its append: nothing of it can land later.
      if (!(e instanceof PositionTooOldError || e instanceof PairBusyError))
        await markAfterFailure(d, lease).catch(() => undefined);
      throw e;
    }
  }

  /**
   * Both users exist and are active (a deactivated account is not found; with `anyState`, any
   * existing account will do); returns both.
   */
  private async requireUsers(
    actor: UserId,
    other: UserId,
    anyState = false,
  ): Promise<Map<UserId, UserRecord>> {
    const users = await (this.d.users ?? this.d.store).getUsers([actor, other]);
    const usable = (u: UserRecord | undefined): u is UserRecord =>
      u !== undefined && (anyState || u.state === 'active');
    if (!usable(users.get(actor))) throw new UserNotFoundError(actor);
    const t = users.get(other);
    if (!usable(t)) throw new UserNotFoundError(other);
    return users;
  }
}

function result<S extends string>(a: AppliedOp, state: S): GraphMutationResult<S> {
  return { state, changed: a.changed, position: a.op.position, duplicate: a.duplicate };
}
