/**
 * The domain's public surface, as the HTTP layer and the jobs see it. Authorization of *who may
 * act for whom* (token `sub` vs path id, `graph:admin`) is the HTTP layer's; the relationship
 * rules (blocks, privacy, visibility, caps) are enforced here.
 *
 * Every mutation takes `MutationOptions`: `position` (admin replay/import) applies the operation
 * at that historical position; without it the domain picks `max(now, newest position on the
 * pair + 1)`. Mutations are idempotent in effect: repeating one changes nothing and reports
 * `changed: false`.
 */
import type { ListItem, ListQueryOptions, ScanPage, TimeRange } from '../lists/contracts.js';
import type { SetQueryKind } from '../lists/cursor/set-cursor.js';

import type { EventPage, GraphEvent } from '../model/events.js';
import type { Direction, ListKey, Position, Relation, UserId, UserRecord } from '../model/types.js';

export type { SetQueryKind } from '../lists/cursor/set-cursor.js';

/** The domain vocabulary, as the HTTP layer sees it (defined next to the storage boundary). */
export type { Direction, ListKey, Position, Relation, UserId, UserRecord } from '../model/types.js';
export type { Receipt } from '../ports/records.js';

export interface MutationOptions {
  /** Apply at this historical position (µs). Admin only; the end state is order-independent. */
  position?: Position;
}

export interface MutationResult<S extends string> {
  state: S;
  /** False when the operation was a no-op (already in that state, or refused as a no-op). */
  changed: boolean;
  position: Position;
  /**
   * True when this exact op (same position, source and kind) was already in the pair history: a
   * retry or replay. It changed nothing now, but its write path re-ran and healed any partial
   * write of the first attempt. Always set by `GraphService`; optional so existing fakes stay valid.
   */
  duplicate?: boolean;
}

export type FollowState = 'none' | 'following' | 'requested';

export interface FollowStatus {
  state: FollowState;
  /** When the current follow (or request) began; absent for `none`. */
  since?: Position;
}

export interface Relationship {
  following: FollowState;
  followedBy: boolean;
  blocking: boolean;
  muting: boolean;
  /** The viewer restricts the other account (never the other way round: that stays hidden). */
  restricting: boolean;
}

/** The flags one Follow button needs, from the viewer's side (`relationships`). */
export interface RelationshipFlags {
  id: UserId;
  following: boolean;
  followedBy: boolean;
  requested: boolean;
  requestedBy: boolean;
  blocking: boolean;
  blockedBy: boolean;
  muting: boolean;
  closeFriend: boolean;
  /** The viewer restricts the id (there is no `restrictedBy`: a restrict stays hidden from its target). */
  restricting: boolean;
}

export interface Counts {
  followers: number;
  following: number;
  /**
   * True when neither list has a pending dirty mark and each has been reconciled since its last
   * write (or was never written): the numbers equal the list sizes as of `asOf`.
   */
  exact: boolean;
  /**
   * µs time the older of the two lists was last reconciled (the read time for a list never
   * written); null when a list holds counts that were never reconciled.
   */
  asOf: Position | null;
}

/** The user-facing operations on the follow graph. */
/** One friend-of-friend suggestion as served (see `src/jobs/suggest.ts` for the score). */
export interface SuggestionItem {
  id: UserId;
  username: string;
  /** Adamic–Adar score at the last run, 6 decimals. */
  score: number;
  /**
   * Mutual accounts with the biggest contribution, biggest first: only accounts whose following
   * list the user may see now (followed, active, not hide_lists, not blocking the user).
   */
  via: UserId[];
}

/** A list or set member as pages serve it: the list item and the member's username. */
export interface Member extends ListItem {
  username: string;
}

/**
 * A page of members: each member's user row is read at most once per page, by the filter that
 * drops deactivated members, and its username comes from that read.
 */
export interface MemberPage {
  items: Member[];
  nextCursor: string | null;
  prevCursor?: string | null;
}

/** Who calls: the account a token acts for, and whether it carries graph:admin. */
export interface Caller {
  sub: UserId;
  admin: boolean;
}

export interface GraphApi {
  // users
  /**
   * Creates or updates a user; `username` is required only to create one. `state` deactivates or
   * reactivates the account (hidden from every read, counts converge; see `account-state.ts`);
   * `hideLists` makes its lists and counts visible only to itself.
   */
  putUser(user: {
    id: UserId;
    username?: string;
    private?: boolean;
    state?: 'active' | 'deactivated';
    hideLists?: boolean;
  }): Promise<{ user: UserRecord; created: boolean }>;
  /** Throws `UserNotFoundError`. */
  getUser(id: UserId): Promise<UserRecord>;
  getUsers(ids: readonly UserId[]): Promise<Map<UserId, UserRecord>>;

  // follows and requests (actor → target). Every mutation answers the state of the edge it acts
  // on after the op, as the pair's fold says: for a replay that the fold refuses (a follow behind
  // a standing block) that is not the state the op asked for.
  /** Follow, or request to follow a private account. Throws Self/Blocked/Cap/UserNotFound errors. */
  follow(actor: UserId, target: UserId, o?: MutationOptions): Promise<MutationResult<FollowState>>;
  /** Unfollow, or cancel a pending request. Idempotent. */
  unfollow(actor: UserId, target: UserId, o?: MutationOptions): Promise<MutationResult<FollowState>>;
  /** `owner` removes `follower` from its followers (the state of `follower → owner` after it). */
  removeFollower(owner: UserId, follower: UserId, o?: MutationOptions): Promise<MutationResult<FollowState>>;
  /**
   * Throws `NoPendingRequestError` when there is neither a request nor an existing follow, and
   * `FollowingCapError` when the requester is at the following cap.
   */
  acceptRequest(owner: UserId, requester: UserId, o?: MutationOptions): Promise<MutationResult<FollowState>>;
  declineRequest(owner: UserId, requester: UserId, o?: MutationOptions): Promise<MutationResult<FollowState>>;

  // blocks, mutes, close friends (actor → target)
  block(actor: UserId, target: UserId, o?: MutationOptions): Promise<MutationResult<'blocking' | 'none'>>;
  unblock(actor: UserId, target: UserId, o?: MutationOptions): Promise<MutationResult<'blocking' | 'none'>>;
  mute(actor: UserId, target: UserId, o?: MutationOptions): Promise<MutationResult<'muting' | 'none'>>;
  unmute(actor: UserId, target: UserId, o?: MutationOptions): Promise<MutationResult<'muting' | 'none'>>;
  addCloseFriend(
    actor: UserId,
    target: UserId,
    o?: MutationOptions,
  ): Promise<MutationResult<'close_friend' | 'none'>>;
  removeCloseFriend(
    actor: UserId,
    target: UserId,
    o?: MutationOptions,
  ): Promise<MutationResult<'close_friend' | 'none'>>;
  /** Owner-private: the target never learns it (no flag, list, count or error shows it to anyone else). */
  restrict(
    actor: UserId,
    target: UserId,
    o?: MutationOptions,
  ): Promise<MutationResult<'restricting' | 'none'>>;
  unrestrict(
    actor: UserId,
    target: UserId,
    o?: MutationOptions,
  ): Promise<MutationResult<'restricting' | 'none'>>;

  // reads. A deactivated account is absent from all of them: as a member it is skipped, as the
  // subject it is a `UserNotFoundError`/`HiddenError` (see `account-state.ts`).
  /** Throws `UserNotFoundError` when either account is unknown or deactivated. */
  getFollowStatus(source: UserId, target: UserId): Promise<FollowStatus>;
  relationship(viewer: UserId, other: UserId): Promise<Relationship>;
  /**
   * The viewer's relationship flags with each of `ids`, in request order (a repeated id repeats
   * its item; an unknown id answers all false). One round of single-partition reads: the viewer's
   * six out-edge partitions and its bucketed inverse edges of follows, requests and blocks.
   * Throws `InvalidInputError` over `MAX_RELATIONSHIP_IDS` ids.
   */
  relationships(viewer: UserId, ids: readonly UserId[]): Promise<RelationshipFlags[]>;
  /** The subset of `ids` that `owner` has an active `relation` edge to (direction out) or from (in), in request order. */
  contains(
    owner: UserId,
    relation: Relation,
    direction: Direction,
    ids: readonly UserId[],
  ): Promise<UserId[]>;
  /** O(1): the two counters, with whether they are exact (see `Counts`). */
  counts(userId: UserId): Promise<Counts>;
  /**
   * "Followed by a, b and N others": the accounts `viewer` follows that follow `id`. The sample is
   * the first `limit` of them in the viewer's following order (most recently followed first).
   * Cost is bounded by the viewer's following size, never by `id`'s follower count. Visibility is
   * the lists' (`assertCanViewLists`), checked by the caller.
   */
  followedBy(viewer: UserId, id: UserId, limit: number): Promise<{ sample: Member[]; total: number }>;
  /**
   * A page of a set query on `owner`'s follow lists (`set-queries.ts`): `mutuals` (accounts
   * `owner` follows that follow it back, newest first on the driving side — the smaller list) or
   * `not_followed_back` (followers `owner` does not follow, newest follower first). Pages are
   * full except the last, or when the per-page rows-read budget stops one early (it then still
   * has a `nextCursor`). The cursor is signed and bound to the kind, the owner and `bounds` (only
   * members whose driving-side `followed_at` is in `[since, until)`), first page's cursor included
   * (`InvalidCursorError` otherwise). Visibility is checked by the caller.
   */
  setPage(
    kind: SetQueryKind,
    owner: UserId,
    limit: number,
    cursor: string | null,
    bounds?: TimeRange,
  ): Promise<MemberPage>;
  /**
   * Every active follow of `owner`, page by page (at most `pageSize` items each, bucket by bucket,
   * newest first within a bucket), calling `onPage` and reading the next page only after it
   * settles: constant memory, for streaming exports. Members the member filter hides are left out.
   */
  walkFollowing(owner: UserId, onPage: (items: Member[]) => Promise<void>, pageSize?: number): Promise<void>;
  /**
   * Newest-first page of a list; the cursor is signed and bound to `list`. May be short (even
   * empty) with a non-null cursor when its work budget runs out; only a null cursor is the end.
   */
  listPage(
    list: ListKey,
    limit: number,
    cursor: string | null,
    options?: ListQueryOptions,
  ): Promise<MemberPage>;
  /**
   * The members of a follows list whose username starts with `q` (1–30 username characters,
   * case-insensitive), in (lowercased name, id) order; the cursor is signed and bound to `list`
   * and `q`. Visibility is the caller's (as `listPage`). Deactivated members are left out like a
   * list page's, with the same short-page rule. Throws `InvalidInputError` for a bad `q`,
   * `InvalidCursorError` for a cursor of another list or query.
   */
  search(list: ListKey, q: string, limit: number, cursor: string | null): Promise<MemberPage>;
  /**
   * Fan-out scan of one slice of a list; order within a slice unspecified. `activeSince` (µs):
   * also skip members whose last reported activity is older, or never reported (one point read
   * of each member's activity per page); the slices' coverage of the members kept is unchanged.
   */
  scanPage(
    list: ListKey,
    slice: number,
    slices: number,
    limit: number,
    cursor: string | null,
    options?: { activeSince?: Position },
  ): Promise<ScanPage>;
  /** Records that `id` was active at `at` (µs; the latest report wins). Throws `UserNotFoundError`, `InvalidInputError` (a future time). */
  reportActivity(id: UserId, at: Position): Promise<void>;
  /** The last reported activity of `id` (µs), or null. */
  lastActiveAt(id: UserId): Promise<Position | null>;

  /**
   * The user's precomputed suggestions (best first, at most `limit`), without anyone the user has
   * followed, requested or blocked, or been blocked by, since the run, and without deactivated
   * accounts; `via` names only intermediaries the user may see through now, and a suggestion with
   * none left is dropped. Empty when no run has covered the user.
   */
  suggestions(userId: UserId, limit: number): Promise<SuggestionItem[]>;

  // visibility
  /**
   * The account gate of every route on `owner` (the API contract, Part 3): a deactivated owner is
   * hidden (`HiddenError`, 404) and a caller whose own account is deactivated is not found
   * (`UserNotFoundError`, 404). graph:admin is the exception: on the account itself (`scope:
   * 'account'`: its profile and its PUT, how it is reactivated) it sees any state; elsewhere only
   * the owner is checked.
   */
  assertAccountsActive(owner: UserId, caller: Caller, scope: 'account' | 'other'): Promise<UserRecord | null>;
  /**
   * Whether `caller` may see `owner`'s lists (followers, following, counts, set queries):
   * graph:admin sees any existing account's (`UserNotFoundError` otherwise); others as
   * `assertCanViewLists`.
   */
  assertListsVisible(caller: Caller, owner: UserId, known?: UserRecord | null): Promise<void>;
  /** `assertListsVisible` as a boolean: false where it throws `NotVisibleError` (403); other errors still throw. */
  listsVisible(caller: Caller, owner: UserId): Promise<boolean>;
  /** Throws `HiddenError` (owner blocks viewer / deactivated) or `NotVisibleError` (private, not a follower). */
  assertCanViewLists(viewer: UserId, owner: UserId): Promise<void>;
  /** Throws `HiddenError` when the owner blocks the viewer. */
  assertCanViewProfile(viewer: UserId, owner: UserId): Promise<void>;
}

/**
 * The graph's change feed (`feed.ts`): the settled events in feed order, and the newest ones
 * before they settle for in-process consumers. Cursors are opaque strings.
 */
export interface EventFeed {
  /**
   * Up to `limit` settled events after `after` (null: from the oldest retained event), and the
   * cursor that resumes right after them (after `after` itself when there are none). An event is
   * settled once no write can still land before it: every event a cursor passes has been
   * returned, and will never be returned after it again. With `waitMs`, a read that finds nothing
   * holds until something settles or the time is up (or `signal` aborts). Throws
   * `CursorExpiredError` for a cursor older than the retention and `InvalidCursorError` for one
   * that does not parse, is not sealed by this service (`acceptUnsealed`: a plain cursor of the
   * old form is taken too — the relay's stored cursor only), or stands later than the feed could
   * have issued. Event ids and cursors are sealed; an event's id is the same on every read.
   */
  read(
    after: string | null,
    limit: number,
    o?: { waitMs?: number; signal?: AbortSignal; acceptUnsealed?: boolean },
  ): Promise<EventPage>;
  /**
   * Calls `listener` with events as this instance sees them written, before they settle: best
   * effort (an event may come twice, late, or not at all — a consumer that needs every event reads
   * `read`). Returns the unsubscribe function.
   */
  subscribe(listener: (event: GraphEvent) => void): () => void;
}

/**
 * The clock-skew guard's contract (`pair/clock-guard.ts`): throws `ClockSkewError` unless this
 * instance's clock is known to be within the bound of the database's now. Writes check it, and so
 * do feed reads (a watermark from a clock running ahead would pass slots still being written).
 */
export interface WriteClock {
  assertWritable(): void;
}
