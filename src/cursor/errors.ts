/**
 * The cursor's own error, raised where a token is checked. The domain re-exports it
 * (`graph/errors.ts`) so the one error list, and through it the HTTP map, includes it.
 */

/** A cursor token that was not issued by this server for this list (altered, foreign, malformed). HTTP 400. */
export class InvalidCursorError extends Error {
  override name = 'InvalidCursorError' as const;
  constructor(reason: string, options?: { cause?: unknown }) {
    super(`invalid cursor: ${reason}`, options);
  }
}
