/**
 * Every error a client can be answered with, defined once on the ground floor and raised where it
 * arises (the domain's rules, the list engine's cursor check, a store's username claim or outage),
 * and `DOMAIN_ERRORS`: the one list of them. `DomainError` is derived from the list, and so
 * is the HTTP map (`src/http/errors.ts`), which has no default branch: a class added to the list
 * without a rule there is a type error. Bad input is an `InvalidInputError` (HTTP 400), never a
 * `RangeError` (which would be a 500).
 */

/** A cursor token that was not issued by this server for this list (altered, foreign, malformed). HTTP 400. */
export class InvalidCursorError extends Error {
  override name = 'InvalidCursorError' as const;
  constructor(reason: string, options?: { cause?: unknown }) {
    super(`invalid cursor: ${reason}`, options);
  }
}

/** A feed cursor older than the feed's retention: the events after it are gone. HTTP 410. */
export class CursorExpiredError extends Error {
  override name = 'CursorExpiredError' as const;
  constructor(readonly retentionSeconds: number) {
    super(`the cursor is older than the feed's retention (${retentionSeconds} s)`);
  }
}

/**
 * This instance holds as many waiting feed reads (long-polls, SSE streams between events) as it
 * allows; the client should retry, here or elsewhere. HTTP 503 with Retry-After.
 */
export class FeedBusyError extends Error {
  override name = 'FeedBusyError' as const;
  readonly retryable = true;
  constructor(readonly limit: number) {
    super(`this instance already holds ${limit} waiting feed reads; retry later`);
  }
}

/** The username belongs to another account (a store's claim found it taken). HTTP 409. */
export class UsernameTakenError extends Error {
  override name = 'UsernameTakenError';
  constructor(readonly username: string) {
    super(`username ${username} is taken`);
  }
}

/** The database cannot be reached or timed out; safe to retry later. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
  readonly retryable = true;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** An argument outside the domain's rules (a limit, a slice, a username). HTTP 400. */
export class InvalidInputError extends Error {
  override name = 'InvalidInputError' as const;
  constructor(
    readonly field: string,
    readonly rule: string,
  ) {
    super(`${field}: ${rule}`);
  }
}

export class UserNotFoundError extends Error {
  override name = 'UserNotFoundError' as const;
  constructor(readonly userId: bigint) {
    super(`user ${userId} not found`);
  }
}

export class SelfFollowError extends Error {
  override name = 'SelfFollowError' as const;
  constructor() {
    super('an account cannot follow, block, mute or list itself');
  }
}

/** A block stands between the pair (either direction). */
export class BlockedError extends Error {
  override name = 'BlockedError' as const;
  constructor() {
    super('a block stands between these accounts');
  }
}

export class FollowingCapError extends Error {
  override name = 'FollowingCapError' as const;
  constructor(readonly cap: number) {
    super(`following limit of ${cap} reached`);
  }
}

export class NoPendingRequestError extends Error {
  override name = 'NoPendingRequestError' as const;
  constructor() {
    super('no pending follow request from this account');
  }
}

/** The viewer may not see this list (private account, hidden lists). HTTP 403. */
export class NotVisibleError extends Error {
  override name = 'NotVisibleError' as const;
  constructor() {
    super('this list is not visible to you');
  }
}

/** The owner blocks the viewer, or the account is deactivated: behave as if absent. HTTP 404. */
export class HiddenError extends Error {
  override name = 'HiddenError' as const;
  constructor(readonly userId: bigint) {
    super(`user ${userId} not found`);
  }
}

/** The operation's position is at or below the pair's checkpoint horizon: it can no longer be folded in. HTTP 409. */
export class PositionTooOldError extends Error {
  override name = 'PositionTooOldError' as const;
  constructor(
    readonly position: bigint,
    readonly horizon: bigint,
    /** The op's slot was fenced (an earlier delivery of it found absent): its position is closed though above the horizon. */
    readonly fenced = false,
  ) {
    super(
      fenced
        ? `position ${position} is closed: an earlier delivery of this op was found absent and fenced, so it can never take effect`
        : `position ${position} is at or below this pair's history horizon ${horizon}`,
    );
  }
}

/** An explicit position outside what the service accepts (not positive, or past the clock plus skew). HTTP 400. */
export class PositionOutOfRangeError extends Error {
  override name = 'PositionOutOfRangeError' as const;
  constructor(
    readonly position: bigint,
    readonly latest: bigint,
  ) {
    super(`position must be between 1 and ${latest} (the server clock plus the allowed skew)`);
  }
}

/** The pair's live history is full until a pending compaction settles; retry shortly. HTTP 503. */
export class PairBusyError extends Error {
  override name = 'PairBusyError' as const;
  readonly retryable = true;
  constructor(readonly retryAfterSeconds: number) {
    super('this pair of accounts is changing too fast; retry shortly');
  }
}

/**
 * This instance's clock is further from the database's than the bound the pair protocol rests on
 * (or it could not be checked lately): writes and feed reads are refused until it is back. HTTP 503.
 */
export class ClockSkewError extends Error {
  override name = 'ClockSkewError' as const;
  readonly retryable = true;
  constructor(
    readonly detail: string,
    readonly retryAfterSeconds: number,
  ) {
    super(`writes and feed reads are refused: ${detail}`);
  }
}

/**
 * A list's directory holds a mode of the retired hash-bucket engine (`hash`, `dual`, `flipped`):
 * its rows may not be in time buckets, so it is neither read nor written. Not the client's fault
 * and not retryable; an operator must rebuild the list in time buckets. HTTP 409.
 */
export class LegacyListModeError extends Error {
  override name = 'LegacyListModeError' as const;
  constructor(readonly mode: string) {
    super(`this list is stored in mode '${mode}' of the retired hash-bucket engine and cannot be served`);
  }
}

/** Every error class a client can be answered with; the union and the HTTP map derive from it. */
export const DOMAIN_ERRORS = [
  UserNotFoundError,
  SelfFollowError,
  BlockedError,
  FollowingCapError,
  NoPendingRequestError,
  NotVisibleError,
  HiddenError,
  InvalidInputError,
  InvalidCursorError,
  CursorExpiredError,
  FeedBusyError,
  PositionTooOldError,
  PositionOutOfRangeError,
  PairBusyError,
  ClockSkewError,
  LegacyListModeError,
  UsernameTakenError,
  StoreUnavailableError,
] as const;

export type DomainErrorClass = (typeof DOMAIN_ERRORS)[number];

export type DomainError = InstanceType<DomainErrorClass>;

/** Whether `err` is an instance of a class in `DOMAIN_ERRORS`. */
export function isDomainError(err: unknown): err is DomainError {
  return DOMAIN_ERRORS.some((cls) => err instanceof cls);
}
