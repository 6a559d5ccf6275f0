/**
 * Named domain errors. Each is translated to problem+json in exactly one place
 * (`src/http/problem.ts`), whose mapping has no default branch: adding an error here without a
 * mapping there is a type error.
 */

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

export class InvalidCursorError extends Error {
  override name = 'InvalidCursorError' as const;
  constructor(reason: string, options?: { cause?: unknown }) {
    super(`invalid cursor: ${reason}`, options);
  }
}

/** The operation's position is at or below the pair's checkpoint horizon: it can no longer be folded in. HTTP 409. */
export class PositionTooOldError extends Error {
  override name = 'PositionTooOldError' as const;
  constructor(
    readonly position: bigint,
    readonly horizon: bigint,
  ) {
    super(`position ${position} is at or below this pair's history horizon ${horizon}`);
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

export type DomainError =
  | UserNotFoundError
  | SelfFollowError
  | BlockedError
  | FollowingCapError
  | NoPendingRequestError
  | NotVisibleError
  | HiddenError
  | InvalidCursorError
  | PositionTooOldError
  | PositionOutOfRangeError
  | PairBusyError;
