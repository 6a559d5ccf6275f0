/**
 * The graph service: users, every relationship mutation, and the one-hop reads.
 *
 * Design note. Every mutation goes through `mutate`: (1) validate at request time (users exist,
 * not self; for live operations also the block, the following cap and a pending request for
 * accept); a private target turns a follow into a `request` op; (2) hand the op to the pair's
 * write algorithm (`pair-history.ts`: position, append, re-read, fold, derived rows, counts).
 * The state it answers is the state of the edge after the op, as the fold says — for a replay the
 * fold may refuse (a follow replayed behind a standing block answers `none`).
 *
 * Replay ops (explicit `position`) skip the request-time checks: those compare against *now*,
 * which says nothing about the op's position (a follow replayed while a block stands may predate
 * the block). The fold applies the rules at the op's position, which is where convergence comes
 * from. Live ops are positioned after everything on the pair, so their request-time check and the
 * fold agree, and a refusal can be reported as an error.
 */
import { randomBytes } from 'node:crypto';
import type {
  ListItem,
  ListPage,
  ListQueryOptions,
  ListService,
  MemberFilter,
  ScanPage,
  TimeRange,
} from '../lists/contracts.js';
import type { SetQueryKind } from '../lists/cursor/set-cursor.js';
import { SetCursorCodec } from '../lists/cursor/set-cursor.js';
import { walkList } from '../lists/list-walker.js';
import { nowPosition } from '../model/clock.js';
import {
  BlockedError,
  FollowingCapError,
  HiddenError,
  InvalidInputError,
  NoPendingRequestError,
  NotVisibleError,
  PairBusyError,
  PositionTooOldError,
  SelfFollowError,
  UserNotFoundError,
} from '../model/errors.js';
import { setRecent } from '../model/recent-map.js';
import type {
  Direction,
  ListKey,
  OpKind,
  PairOp,
  Position,
  Relation,
  UserId,
  UserRecord,
} from '../model/types.js';
import type { GraphStore } from '../ports/store.js';
import { deactivatedFilter, newMarkTask, runMarkCounterparts } from './account-state.js';
import { UNGUARDED, type WriteClock } from './clock-guard.js';
import type {
  Counts,
  FollowState,
  FollowStatus,
  GraphApi,
  MutationOptions,
  MutationResult,
  Relationship,
  RelationshipFlags,
  SuggestionItem,
} from './contracts.js';
import { activeEdge, type PairFold } from './pair-fold.js';
import {
  type AppliedOp,
  applyPairOp,
  choosePosition,
  DEFAULT_HISTORY_POLICY,
  foldRead,
  type HistoryPolicy,
  type PairHistoryDeps,
  readPair,
} from './pair-history.js';
import { listIn, listOut, markAfterFailure, markBeforeWrite } from './pair-writer.js';
import { type SetPage, type SetPageStats, SetQueries } from './set-queries.js';
import { readSuggestions } from './suggestions.js';

export interface GraphServiceOptions {
  store: GraphStore;
  lists: ListService;
  /** Following cap (`GRAPH_MAX_FOLLOWING`). */
  maxFollowing: number;
  /** µs since the epoch; injectable for tests. */
  clock?: () => Position;
  /** A monotonic clock (ms) for the write budget; default `performance.now`. */
  monotonic?: () => number;
  /**
   * Refuses writes while this instance's clock is not known to be within the bound
   * (`clock-guard.ts`); `main` passes a `ClockGuard`. Default: unguarded (one-clock tests and tools).
   */
  clockGuard?: WriteClock;
  /**
   * How far ahead of the clock a write dates the dirty marks it writes before its append (ms):
   * a list stays inexact that long after a write. Default twice the clock bound (`clockSkewMs`),
   * so a mark dated by a clock S behind still lies past the start of any pass a clock S ahead
   * began earlier. 0 suits one-clock tests that reconcile right after writing (the writer then
   * also marks after its increments).
   */
  countLeaseMs?: number;
  /** How pair histories are kept short (`pair-history.ts`); defaults for production. */
  historyPolicy?: Partial<HistoryPolicy>;
  /** Told when a background account task fails (it stays recorded and resumes on the next PUT or start). */
  onTaskError?: (userId: UserId, error: unknown) => void;
  /**
   * HMAC key of set-query cursors (`config.graph.cursorSecret`; at least 16 characters). Default:
   * a random key per instance, so set cursors are then valid only on the instance that made them.
   */
  setCursorSecret?: string;
  /** Members set queries, followed-by and the export skip (deactivated accounts); default none. */
  memberFilter?: MemberFilter;
  /** Rows-read budget of one set-query page (`set-queries.ts`); default `max(20 × limit, 1000)`. */
  setBudget?: (limit: number) => number;
  /** Told every set-query page's cost. */
  onSetPage?: (s: SetPageStats) => void;
}

/** The result of every mutation, with whether the op was already in the pair history. */
export type GraphMutationResult<S extends string> = MutationResult<S> & { duplicate: boolean };

/** Usernames: 1–30 of `[A-Za-z0-9._]` (api.md "Users"). */
export const USERNAME_PATTERN = /^[A-Za-z0-9._]{1,30}$/;

/** Following-list page size of the followed-by walk (well under the contains limit). */
const FOLLOWED_BY_WALK_PAGE = 200;

/** Most ids `contains` accepts in one call (one single-partition read). */
export const MAX_CONTAINS_IDS = 1000;

/** Most ids `relationships` accepts in one call (a page of Follow buttons). */
export const MAX_RELATIONSHIP_IDS = 100;

/** Pending requests accepted inline when an account goes public; more run in the background. */
const INLINE_ACCEPT_LIMIT = 100;

/** Requests accepted per committed page of the accept task. */
const ACCEPT_PAGE = 200;

/**
 * Age (µs) after which an `accept_requests` task of a private account is deleted: by then the
 * go-public user write that followed it has landed or failed (a PUT's writes time out in seconds).
 */
export const ACCEPT_TASK_SETTLE_MICROS = 60_000_000n;

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

/** The state of the follow edge `source → target` in a fold. */
function followState(f: PairFold, source: UserId, target: UserId): FollowState {
  if (activeEdge(f, source, 'follows', target)) return 'following';
  if (activeEdge(f, source, 'requests', target)) return 'requested';
  return 'none';
}

/** A follow reads the cap's counters once this process's follows since the last read reach 1/this of the headroom. */
export const CAP_CHECK_SHARE = 8;
/** A cap read is reused for at most this long. */
export const CAP_CHECK_MAX_AGE_MS = 30_000;
/** Actors whose cap budget one process keeps. */
export const CAP_BUDGET_ENTRIES = 10_000;

export class GraphService implements GraphApi {
  private readonly store: GraphStore;
  private readonly lists: ListService;
  private readonly maxFollowing: number;
  private readonly deps: PairHistoryDeps;
  private readonly countLeaseMicros: bigint;
  private readonly onTaskError: (userId: UserId, error: unknown) => void;
  private readonly runningTasks = new Map<UserId, { rerun: boolean }>();
  private readonly markRuns = new Map<UserId, { rerun: boolean }>();
  /** Per actor: the committed following last read, when, and the follows reserved since (LRU). */
  private readonly capBudgets = new Map<UserId, { committed: number; at: number; reserved: number }>();
  private readonly sets: SetQueries;
  /** Members a read must skip: deactivated accounts (see `account-state.ts`), or the injected filter. */
  readonly hiddenMembers: MemberFilter;

  constructor(o: GraphServiceOptions) {
    this.deps = {
      store: o.store,
      lists: o.lists,
      clock: o.clock ?? nowPosition,
      monotonic: o.monotonic ?? (() => performance.now()),
      guard: o.clockGuard ?? UNGUARDED,
      policy: { ...DEFAULT_HISTORY_POLICY, ...o.historyPolicy },
    };
    this.countLeaseMicros = BigInt(Math.round((o.countLeaseMs ?? 2 * this.deps.policy.clockSkewMs) * 1000));
    this.store = o.store;
    this.lists = o.lists;
    this.maxFollowing = o.maxFollowing;
    this.onTaskError = o.onTaskError ?? (() => undefined);
    this.hiddenMembers = o.memberFilter ?? deactivatedFilter(o.store);
    this.sets = new SetQueries({
      lists: o.lists,
      codec: new SetCursorCodec(o.setCursorSecret ?? randomBytes(32).toString('base64url')),
      probe: (owner, direction, ids) => this.activeEdges(owner, 'follows', direction, ids),
      count: (list) => this.store.getCount(list),
      memberFilter: this.hiddenMembers,
      ...(o.setBudget ? { budget: o.setBudget } : {}),
      ...(o.onSetPage ? { onPage: o.onSetPage } : {}),
    });
  }

  // ---- users ----

  /**
   * Creates or updates a user (keeps `state` and `hideLists` of an existing one). Throws
   * `InvalidInputError` for a username outside the rules (the HTTP layer validates first) and the
   * store's `UsernameTakenError`. Going private → public records an `accept_requests` task before
   * the user row (so a failure between the two leaves the account private and its retry flips it
   * again) and runs it after: inline up to 100 pending requests, in the background beyond (a later
   * PUT of the still-public account, or `resumeAccountTasks` at start-up, resumes an unfinished one).
   * A change of `state` (deactivation / reactivation, see `account-state.ts`) records a
   * `mark_counterparts` task before it answers and runs it in the background. `username` may be
   * left out when the user exists.
   */
  async putUser(input: {
    id: UserId;
    username?: string;
    private?: boolean;
    state?: UserRecord['state'];
    hideLists?: boolean;
  }): Promise<{ user: UserRecord; created: boolean }> {
    if (input.username !== undefined && !USERNAME_PATTERN.test(input.username))
      throw new InvalidInputError('username', 'must be 1–30 of [A-Za-z0-9._]');
    if (input.id <= 0n) throw new InvalidInputError('id', 'must be a positive integer');
    this.deps.guard.assertWritable();
    const existing = await this.store.getUser(input.id);
    const username = input.username ?? existing?.username;
    if (username === undefined) throw new InvalidInputError('username', 'is required to create a user');
    const user: UserRecord = {
      id: input.id,
      username,
      private: input.private ?? existing?.private ?? false,
      state: input.state ?? existing?.state ?? 'active',
      hideLists: input.hideLists ?? existing?.hideLists ?? false,
    };
    const flipped = existing !== null && existing.state !== user.state;
    const goesPublic = existing?.private === true && !user.private;
    // Durable tasks before the state they serve: if this process dies or a write fails after
    // them, a restart, the next PUT or the client's retry (which still sees the old state and
    // flips it again) runs them.
    if (flipped) await this.store.putAccountTask(newMarkTask(user.id, this.deps.clock));
    if (goesPublic) {
      const version = this.deps.clock();
      await this.store.putAccountTask({ userId: user.id, task: 'accept_requests', cursor: null, version });
    }
    const { created } = await this.store.putUser(user);
    if (flipped) this.startMarkTask(user.id);
    if (goesPublic) {
      const pending = await this.store.getCount(listIn(user.id, 'requests'));
      const run = this.runAcceptTask(user.id);
      if (pending <= INLINE_ACCEPT_LIMIT) await run;
      else run.catch((e: unknown) => this.onTaskError(user.id, e));
    } else if (!user.private && (await this.store.getAccountTask(user.id, 'accept_requests'))) {
      this.runAcceptTask(user.id).catch((e: unknown) => this.onTaskError(user.id, e));
    }
    return { user, created };
  }

  /** Throws `UserNotFoundError`. */
  async getUser(id: UserId): Promise<UserRecord> {
    const u = await this.store.getUser(id);
    if (!u) throw new UserNotFoundError(id);
    return u;
  }

  async getUsers(ids: readonly UserId[]): Promise<Map<UserId, UserRecord>> {
    return this.store.getUsers(ids);
  }

  /**
   * Resumes every unfinished account task (call once at start-up); each runs in the background
   * and reports failures to `onTaskError`. Returns how many were started.
   */
  async resumeAccountTasks(): Promise<number> {
    const tasks = await this.store.listAccountTasks();
    for (const t of tasks) {
      if (t.task === 'mark_counterparts') this.startMarkTask(t.userId);
      else this.runAcceptTask(t.userId).catch((e: unknown) => this.onTaskError(t.userId, e));
    }
    return tasks.length;
  }

  /**
   * Runs the owner's `mark_counterparts` task in the background, once per owner per process. A
   * flip while it runs asks for a rerun, which runs the flip's task if the run ended before it saw
   * it (the run's final delete leaves a newer generation's row standing).
   */
  private startMarkTask(owner: UserId): void {
    const running = this.markRuns.get(owner);
    if (running) {
      running.rerun = true;
      return;
    }
    const state = { rerun: false };
    this.markRuns.set(owner, state);
    (async () => {
      try {
        const run = () =>
          runMarkCounterparts(this.store, owner, {
            leaseMicros: this.countLeaseMicros,
            clock: this.deps.clock,
          });
        await run();
        while (state.rerun) {
          state.rerun = false;
          await run();
        }
      } finally {
        this.markRuns.delete(owner);
      }
    })().catch((e: unknown) => this.onTaskError(owner, e));
  }

  /** Resolves when no `mark_counterparts` run is active in this process (tests). */
  async settleAccountTasks(): Promise<void> {
    while (this.markRuns.size > 0 || this.runningTasks.size > 0) await new Promise((r) => setTimeout(r, 20));
  }

  /**
   * Accepts every pending request to `owner` that its `accept_requests` task still covers, walking
   * the incoming requests list with a cursor that is committed after every page (at the task's
   * version plus one, so a restart resumes there, and rows that stay behind — a request the
   * requester's cap keeps pending — are never read twice). Deletes the task at the end, at the
   * version it read (a newer generation's row survives, and is run next). Finding the account
   * private, it stops; it deletes the task only once it is `ACCEPT_TASK_SETTLE_MICROS` old: the
   * task is written before the user row, so a younger one may belong to a go-public write that has
   * not landed yet. One run per owner per process (a call meanwhile asks it to look again at the
   * end). Returns how many requests this run accepted.
   */
  async runAcceptTask(owner: UserId): Promise<number> {
    const running = this.runningTasks.get(owner);
    if (running) {
      running.rerun = true;
      return 0;
    }
    const state = { rerun: false };
    this.runningTasks.set(owner, state);
    try {
      let accepted = 0;
      for (;;) {
        const [task, user] = await Promise.all([
          this.store.getAccountTask(owner, 'accept_requests'),
          this.store.getUser(owner),
        ]);
        if (!task) {
          if (!state.rerun) return accepted;
          state.rerun = false;
          continue;
        }
        if (!user || user.private) {
          if (this.deps.clock() - task.version < ACCEPT_TASK_SETTLE_MICROS) return accepted;
          await this.store.deleteAccountTask(owner, 'accept_requests', task.version);
          continue;
        }
        const page = await this.lists.page(listIn(owner, 'requests'), ACCEPT_PAGE, task.cursor);
        for (const { id } of page.items) {
          // Deactivated requesters (or a deactivated owner) too: skipped, their requests would
          // stay pending toward the public account after reactivation, the task long deleted.
          const r = await this.accept(owner, id, {}, true).catch((e: unknown) => {
            if (
              e instanceof NoPendingRequestError ||
              e instanceof FollowingCapError ||
              e instanceof UserNotFoundError
            )
              return null;
            throw e;
          });
          if (r?.changed) accepted++;
        }
        if (page.nextCursor === null) {
          await this.store.deleteAccountTask(owner, 'accept_requests', task.version);
          continue;
        }
        await this.store.putAccountTask({
          userId: owner,
          task: 'accept_requests',
          cursor: page.nextCursor,
          version: task.version + 1n,
        });
      }
    } finally {
      this.runningTasks.delete(owner);
    }
  }

  // ---- mutations ----

  async follow(
    actor: UserId,
    target: UserId,
    o: MutationOptions = {},
  ): Promise<GraphMutationResult<FollowState>> {
    // The cap's counter reads only matter for a live follow; start them alongside the pair reads.
    const committed = o.position === undefined ? this.committedEstimate(actor) : null;
    committed?.catch(() => undefined);
    const a = await this.mutate(
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
          if (((await committed) ?? 0) >= this.maxFollowing) throw new FollowingCapError(this.maxFollowing);
        },
      },
      o,
    );
    return this.result(a, followState(a.after, actor, target));
  }

  async unfollow(actor: UserId, target: UserId, o: MutationOptions = {}) {
    const a = await this.mutate(
      { actor, other: target, sourceId: actor, targetId: target, kind: 'unfollow' },
      o,
    );
    return this.result(a, followState(a.after, actor, target));
  }

  async removeFollower(owner: UserId, follower: UserId, o: MutationOptions = {}) {
    return this.onInbound(owner, follower, 'remove_follower', o);
  }

  async acceptRequest(owner: UserId, requester: UserId, o: MutationOptions = {}) {
    return this.accept(owner, requester, o, false);
  }

  /**
   * `acceptRequest`; `anyState`: also when the owner or the requester is deactivated (the accept
   * task of going public, whose requests must not stay pending toward a public account once the
   * account is reactivated; the follow stays hidden until then, like every edge of it).
   */
  private async accept(owner: UserId, requester: UserId, o: MutationOptions, anyState: boolean) {
    const committed = o.position === undefined ? this.committedFollowing(requester) : null;
    committed?.catch(() => undefined);
    const a = await this.mutate(
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
          // The request already counts against the requester's cap (see `committedFollowing`), but
          // a cap lowered since, or requests made before the rule, must not let it through.
          const following = await this.store.getCount(listOut(requester, 'follows'));
          if (following >= this.maxFollowing) throw new FollowingCapError(this.maxFollowing);
        },
      },
      o,
    );
    return this.result(a, followState(a.after, requester, owner));
  }

  async declineRequest(owner: UserId, requester: UserId, o: MutationOptions = {}) {
    return this.onInbound(owner, requester, 'decline', o);
  }

  async block(actor: UserId, target: UserId, o: MutationOptions = {}) {
    return this.simple(actor, target, 'block', 'blocks', 'blocking', o);
  }

  async unblock(actor: UserId, target: UserId, o: MutationOptions = {}) {
    return this.simple(actor, target, 'unblock', 'blocks', 'blocking', o);
  }

  async mute(actor: UserId, target: UserId, o: MutationOptions = {}) {
    return this.simple(actor, target, 'mute', 'mutes', 'muting', o);
  }

  async unmute(actor: UserId, target: UserId, o: MutationOptions = {}) {
    return this.simple(actor, target, 'unmute', 'mutes', 'muting', o);
  }

  async addCloseFriend(actor: UserId, target: UserId, o: MutationOptions = {}) {
    return this.simple(actor, target, 'close_friend_add', 'close_friends', 'close_friend', o);
  }

  async removeCloseFriend(actor: UserId, target: UserId, o: MutationOptions = {}) {
    return this.simple(actor, target, 'close_friend_remove', 'close_friends', 'close_friend', o);
  }

  /**
   * What the following cap compares for a new follow of `actor`: the committed count read (see
   * `committedFollowing`), or — while this process's follows since that read stay under
   * 1/`CAP_CHECK_SHARE` of the headroom to the cap and the read is under `CAP_CHECK_MAX_AGE_MS`
   * old — that count plus those follows, without reading. Each call reserves one follow (whether or
   * not it lands: the estimate only errs high). A user far below the cap is read about once per
   * eighth of the remaining headroom instead of on every follow; near the cap every follow reads.
   * The cap was never exact across processes (two follows race their reads); P processes can pass
   * it only when P > `CAP_CHECK_SHARE`. Budgets are an LRU of `CAP_BUDGET_ENTRIES` actors.
   */
  private committedEstimate(actor: UserId): Promise<number> {
    const b = this.capBudgets.get(actor);
    if (
      b &&
      Date.now() - b.at <= CAP_CHECK_MAX_AGE_MS &&
      (b.reserved + 1) * CAP_CHECK_SHARE <= this.maxFollowing - b.committed
    ) {
      b.reserved += 1;
      return Promise.resolve(b.committed + b.reserved - 1);
    }
    return this.committedFollowing(actor).then((committed) => {
      setRecent(this.capBudgets, actor, { committed, at: Date.now(), reserved: 1 }, CAP_BUDGET_ENTRIES);
      return committed;
    });
  }

  /**
   * Follows plus pending outgoing requests: what the following cap counts, so requests to private
   * accounts cannot be accepted past it.
   */
  private async committedFollowing(actor: UserId): Promise<number> {
    const [following, requested] = await Promise.all([
      this.store.getCount(listOut(actor, 'follows')),
      this.store.getCount(listOut(actor, 'requests')),
    ]);
    return Math.max(0, following) + Math.max(0, requested);
  }

  /** An op on `actor → target` of `relation`; answers `on` when that edge is active afterwards, else `none`. */
  private async simple<S extends string>(
    actor: UserId,
    target: UserId,
    kind: OpKind,
    relation: Relation,
    on: S,
    o: MutationOptions,
  ): Promise<GraphMutationResult<S | 'none'>> {
    const a = await this.mutate({ actor, other: target, sourceId: actor, targetId: target, kind }, o);
    return this.result(a, activeEdge(a.after, actor, relation, target) ? on : 'none');
  }

  /** `owner` acts on the edge `other → owner` (removing a follower, declining a request). */
  private async onInbound(
    owner: UserId,
    other: UserId,
    kind: OpKind,
    o: MutationOptions,
  ): Promise<GraphMutationResult<FollowState>> {
    const a = await this.mutate({ actor: owner, other, sourceId: other, targetId: owner, kind }, o);
    return this.result(a, followState(a.after, other, owner));
  }

  private result<S extends string>(a: AppliedOp, state: S): GraphMutationResult<S> {
    return { state, changed: a.changed, position: a.op.position, duplicate: a.duplicate };
  }

  /**
   * Both users exist and are active (a deactivated account is not found; with `anyState`, any
   * existing account will do); returns the target.
   */
  private async requireUsers(actor: UserId, target: UserId, anyState = false): Promise<UserRecord> {
    const users = await this.store.getUsers([actor, target]);
    const usable = (u: UserRecord | undefined): u is UserRecord =>
      u !== undefined && (anyState || u.state === 'active');
    if (!usable(users.get(actor))) throw new UserNotFoundError(actor);
    const t = users.get(target);
    if (!usable(t)) throw new UserNotFoundError(target);
    return t;
  }

  /** The one write path (see the design note). */
  private async mutate(m: Mutation, o: MutationOptions): Promise<AppliedOp> {
    if (m.actor === m.other) throw new SelfFollowError();
    const [other, read] = await Promise.all([
      this.requireUsers(m.actor, m.other, m.anyState),
      readPair(this.deps, m.sourceId, m.targetId),
    ]);
    const kind = typeof m.kind === 'function' ? m.kind(other) : m.kind;
    if (o.position === undefined) await m.check?.(foldRead(read));
    const position = choosePosition(this.deps, read.history, o.position);
    const op: PairOp = { sourceId: m.sourceId, targetId: m.targetId, kind, position };
    // Durable before the state it serves: the marks that make the reconciler recount what this
    // op's counting may miss are written before its append (`pair-writer.ts`).
    const lease = await markBeforeWrite(this.deps, op, read.history, {
      clock: this.deps.clock,
      micros: this.countLeaseMicros,
    });
    try {
      return await applyPairOp(this.deps, read, op, lease);
    } catch (e) {
      // Refused before its append: nothing of it can land later.
      if (!(e instanceof PositionTooOldError || e instanceof PairBusyError))
        await markAfterFailure(this.deps, lease).catch(() => undefined);
      throw e;
    }
  }

  // ---- reads ----

  async getFollowStatus(source: UserId, target: UserId): Promise<FollowStatus> {
    const [users, follows, requests] = await Promise.all([
      this.store.getUsers([source, target]),
      this.store.getEdgesOut(source, 'follows', [target]),
      this.store.getEdgesOut(source, 'requests', [target]),
    ]);
    for (const id of [source, target]) if (users.get(id)?.state !== 'active') throw new UserNotFoundError(id);
    const f = follows.get(target);
    if (f?.state === 'active') return { state: 'following', since: f.createdAt };
    const r = requests.get(target);
    if (r?.state === 'active') return { state: 'requested', since: r.createdAt };
    return { state: 'none' };
  }

  async relationship(viewer: UserId, other: UserId): Promise<Relationship> {
    const edges = await this.store.getPairEdges(viewer, other);
    const on = (s: UserId, r: Relation) =>
      edges.some((e) => e.sourceId === s && e.relation === r && e.state === 'active');
    return {
      following: on(viewer, 'follows') ? 'following' : on(viewer, 'requests') ? 'requested' : 'none',
      followedBy: on(other, 'follows'),
      blocking: on(viewer, 'blocks'),
      muting: on(viewer, 'mutes'),
    };
  }

  async suggestions(userId: UserId, limit: number): Promise<SuggestionItem[]> {
    return readSuggestions(this.store, userId, limit);
  }

  async relationships(viewer: UserId, ids: readonly UserId[]): Promise<RelationshipFlags[]> {
    if (ids.length > MAX_RELATIONSHIP_IDS)
      throw new InvalidInputError('ids', `at most ${MAX_RELATIONSHIP_IDS} ids`);
    if (ids.length === 0) return [];
    const distinct = [...new Set(ids)];
    const out = (relation: Relation) => this.store.getEdgesOut(viewer, relation, distinct);
    const inv = (relation: Relation) => this.inverseEdges(viewer, relation, distinct);
    const [follows, requests, blocks, mutes, closeFriends, followedBy, requestedBy, blockedBy, hidden] =
      await Promise.all([
        out('follows'),
        out('requests'),
        out('blocks'),
        out('mutes'),
        out('close_friends'),
        inv('follows'),
        inv('requests'),
        inv('blocks'),
        this.hiddenMembers(distinct),
      ]);
    const on = (m: Map<UserId, { state: string }>, id: UserId) =>
      m.get(id)?.state === 'active' && !hidden.has(id);
    return ids.map((id) => ({
      id,
      following: on(follows, id),
      followedBy: on(followedBy, id),
      requested: on(requests, id),
      requestedBy: on(requestedBy, id),
      blocking: on(blocks, id),
      blockedBy: on(blockedBy, id),
      muting: on(mutes, id),
      closeFriend: on(closeFriends, id),
    }));
  }

  /**
   * The subset of `ids` with an active `relation` edge from `owner` (`out`) or to it (`in`), in
   * request order, each id once. `out`: one single-partition read; `in`: one per bucket code of
   * `owner`'s `in` list among the ids (at most min(N, |ids|)). Throws `InvalidInputError` over 1000 ids.
   */
  async contains(
    owner: UserId,
    relation: Relation,
    direction: Direction,
    ids: readonly UserId[],
  ): Promise<UserId[]> {
    if (ids.length > MAX_CONTAINS_IDS) throw new InvalidInputError('ids', `at most ${MAX_CONTAINS_IDS} ids`);
    const [active, hidden] = await Promise.all([
      this.activeEdges(owner, relation, direction, ids),
      this.hiddenMembers(ids),
    ]);
    const seen = new Set<UserId>();
    return ids.filter((id) => {
      if (seen.has(id) || hidden.has(id) || !active.has(id)) return false;
      seen.add(id);
      return true;
    });
  }

  /**
   * The ids with an active `relation` edge from `owner` (`out`) or to it (`in`), the members'
   * account state not consulted: the set walk probes with it and filters only its hits.
   */
  private async activeEdges(
    owner: UserId,
    relation: Relation,
    direction: Direction,
    ids: readonly UserId[],
  ): Promise<Set<UserId>> {
    const edges =
      direction === 'out'
        ? await this.store.getEdgesOut(owner, relation, ids)
        : await this.inverseEdges(owner, relation, ids);
    return new Set(ids.filter((id) => edges.get(id)?.state === 'active'));
  }

  /**
   * O(1): the two counters (shards plus the reconciler's correction) and their freshness, four
   * single-partition reads. Negative drift (before reconciliation) reads as 0.
   */
  async counts(userId: UserId): Promise<Counts> {
    const now = nowPosition();
    const [followers, following] = await Promise.all(
      [listIn(userId, 'follows'), listOut(userId, 'follows')].map(async (list) => {
        const [sync, dirty] = await Promise.all([this.store.getCountSync(list), this.store.hasDirty(list)]);
        const asOf = sync.asOf ?? (sync.written ? null : now);
        return { n: Math.max(0, sync.shardSum + sync.correction), exact: !dirty && asOf !== null, asOf };
      }),
    );
    const fr = followers as { n: number; exact: boolean; asOf: Position | null };
    const fg = following as typeof fr;
    return {
      followers: fr.n,
      following: fg.n,
      exact: fr.exact && fg.exact,
      // biome-ignore lint/complexity/useMathMinMax: positions are bigints, which Math.min does not take
      asOf: fr.asOf === null || fg.asOf === null ? null : fr.asOf < fg.asOf ? fr.asOf : fg.asOf,
    };
  }

  /**
   * A page of the list without deactivated members; the list service skips them and reads on, so
   * the page stays full within its work budget (short, with a cursor, past it: `list-service.ts`).
   * Visibility is checked by the caller.
   */
  async listPage(
    list: ListKey,
    limit: number,
    cursor: string | null,
    options: ListQueryOptions = {},
  ): Promise<ListPage> {
    return this.lists.page(list, limit, cursor, { ...options, exclude: this.hiddenMembers });
  }

  /**
   * The set walk (`set-queries.ts`) over the viewer's following list (bounded by the following
   * cap), one probe of `id`'s inverse edges per page of 200: the sample is
   * the first `limit` hits in the viewer's following order, the total counts them all. It names
   * members of `id`'s followers, so visibility is the lists' (`assertCanViewLists`), checked by
   * the caller.
   */
  async followedBy(viewer: UserId, id: UserId, limit: number): Promise<{ sample: UserId[]; total: number }> {
    const sample: UserId[] = [];
    let total = 0;
    const walk = this.sets.walk(
      {
        drive: listOut(viewer, 'follows'),
        probe: (ids) => this.activeEdges(id, 'follows', 'in', ids),
        keep: 'intersect',
        exclude: id,
      },
      { inner: null, boundary: null },
      () => FOLLOWED_BY_WALK_PAGE,
    );
    for await (const b of walk) {
      total += b.matched.length;
      for (const m of b.matched) if (sample.length < limit) sample.push(m.id);
    }
    return { sample, total };
  }

  /** A set-query page with its cost (`set-queries.ts`); visibility is checked by the caller. */
  async setPage(
    kind: SetQueryKind,
    owner: UserId,
    limit: number,
    cursor: string | null,
    bounds: TimeRange = {},
  ): Promise<SetPage> {
    return this.sets.page(kind, owner, limit, cursor, bounds);
  }

  /**
   * `walkList` over `owner`'s following list (bucket by bucket, newest first within one), the
   * member filter applied per page; the next page is read after `onPage` settles.
   */
  async walkFollowing(
    owner: UserId,
    onPage: (items: ListItem[]) => Promise<void>,
    pageSize = 500,
  ): Promise<void> {
    await walkList(
      this.store,
      listOut(owner, 'follows'),
      async (rows) => {
        let items = rows.map((r) => ({ id: r.otherId, createdAt: r.createdAt }));
        const hidden = await this.hiddenMembers(items.map((i) => i.id));
        items = items.filter((i) => !hidden.has(i.id));
        if (items.length > 0) await onPage(items);
      },
      { pageSize },
    );
  }

  /** A scan page without deactivated members (it may be short); visibility is checked by the caller. */
  async scanPage(
    list: ListKey,
    slice: number,
    slices: number,
    limit: number,
    cursor: string | null,
  ): Promise<ScanPage> {
    return this.lists.scan(list, slice, slices, limit, cursor, { exclude: this.hiddenMembers });
  }

  // ---- visibility ----

  async assertAccountsActive(owner: UserId, caller: UserId | null): Promise<void> {
    const users = await this.store.getUsers(caller === null || caller === owner ? [owner] : [owner, caller]);
    if (caller !== null && users.get(caller)?.state === 'deactivated') throw new UserNotFoundError(caller);
    if (users.get(owner)?.state !== 'active') throw new HiddenError(owner);
  }

  async assertCanViewProfile(viewer: UserId, owner: UserId): Promise<void> {
    await this.visibleOwner(viewer, owner);
  }

  async assertCanViewLists(viewer: UserId, owner: UserId): Promise<void> {
    const user = await this.visibleOwner(viewer, owner);
    if (viewer === owner) return;
    if (user.hideLists) throw new NotVisibleError();
    if (!user.private) return;
    const f = await this.inverseEdges(owner, 'follows', [viewer]);
    if (f.get(viewer)?.state !== 'active') throw new NotVisibleError();
  }

  /**
   * Edge states `s → target` for the ids, read in the buckets of the target's `in` list as readers
   * see it now (its `buckets` flips only after a growth copied the inverse rows).
   */
  private async inverseEdges(target: UserId, relation: Relation, sourceIds: readonly UserId[]) {
    const layout = await this.lists.layoutForWrite(listIn(target, relation));
    return this.store.getEdgesIn(target, relation, sourceIds, layout);
  }

  /** The owner, unless unknown (`UserNotFoundError`), deactivated or blocking the viewer (`HiddenError`). */
  private async visibleOwner(viewer: UserId, owner: UserId): Promise<UserRecord> {
    const user = await this.getUser(owner);
    if (user.state === 'deactivated') throw new HiddenError(owner);
    if (viewer === owner) return user;
    const blocks = await this.store.getEdgesOut(owner, 'blocks', [viewer]);
    if (blocks.get(viewer)?.state === 'active') throw new HiddenError(owner);
    return user;
  }
}
