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

export type DomainError =
  | UserNotFoundError
  | SelfFollowError
  | BlockedError
  | FollowingCapError
  | NoPendingRequestError
  | NotVisibleError
  | HiddenError
  | InvalidCursorError;
