/**
 * Errors at the HTTP edge, and their one translation into `application/problem+json` (RFC 9457).
 *
 * Design note. Every failure a client can see has a stable `code` from `ERROR_CODES`; `STATUS`
 * and `TITLE` are `Record<ErrorCode, …>`, so adding a code without a status is a type error.
 * Domain errors are translated by `DOMAIN_RULES`, one rule per class of the domain's one list
 * (`DOMAIN_ERRORS` in `model/errors.ts`) and no default: `Unmapped` names any class of the list
 * without a rule, and the build fails unless it is `never`. (Rules are keyed by class, not by
 * `name`, because the store's error classes do not declare literal names.) Bodies never carry
 * a stack, a driver message or CQL: `detail` is either our own sentence or a domain error's
 * message (which names ids, never storage). `HiddenError` (the owner blocks the viewer) maps to
 * exactly the same code, title and detail as an unknown user so a block cannot be detected.
 */
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import {
  BlockedError,
  ClockSkewError,
  CursorExpiredError,
  type DomainError,
  type DomainErrorClass,
  FeedBusyError,
  FollowingCapError,
  HiddenError,
  InvalidCursorError,
  InvalidInputError,
  isDomainError,
  LegacyListModeError,
  NoPendingRequestError,
  NotVisibleError,
  PairBusyError,
  PositionOutOfRangeError,
  PositionTooOldError,
  SelfFollowError,
  StoreUnavailableError,
  UserNotFoundError,
  UsernameTakenError,
} from '../model/errors.js';

export const ERROR_CODES = [
  'validation_failed',
  'malformed_request',
  'invalid_cursor',
  'cursor_expired',
  'self_relation',
  'unauthorized',
  'forbidden',
  'blocked',
  'not_visible',
  'not_found',
  'user_not_found',
  'no_pending_request',
  'username_taken',
  'following_cap',
  'idempotency_key_reused',
  'position_too_old',
  'position_out_of_range',
  'pair_busy',
  'legacy_list_mode',
  'payload_too_large',
  'unsupported_media_type',
  'rate_limited',
  'internal',
  'unavailable',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export const STATUS: Record<ErrorCode, 400 | 401 | 403 | 404 | 409 | 410 | 413 | 415 | 429 | 500 | 503> = {
  validation_failed: 400,
  malformed_request: 400,
  invalid_cursor: 400,
  cursor_expired: 410,
  self_relation: 400,
  unauthorized: 401,
  forbidden: 403,
  blocked: 403,
  not_visible: 403,
  not_found: 404,
  user_not_found: 404,
  no_pending_request: 404,
  username_taken: 409,
  following_cap: 409,
  idempotency_key_reused: 409,
  position_too_old: 409,
  position_out_of_range: 400,
  pair_busy: 503,
  legacy_list_mode: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
};

export const TITLE: Record<ErrorCode, string> = {
  validation_failed: 'Request validation failed',
  malformed_request: 'Malformed request',
  invalid_cursor: 'Invalid cursor',
  cursor_expired: 'Cursor expired',
  self_relation: 'An account cannot relate to itself',
  unauthorized: 'Unauthorized',
  forbidden: 'Forbidden',
  blocked: 'Blocked',
  not_visible: 'Not visible',
  not_found: 'Not found',
  user_not_found: 'User not found',
  no_pending_request: 'No pending request',
  username_taken: 'Username taken',
  following_cap: 'Following limit reached',
  idempotency_key_reused: 'Idempotency key reused',
  position_too_old: 'Position older than the pair history horizon',
  position_out_of_range: 'Position out of range',
  pair_busy: 'Pair busy',
  legacy_list_mode: 'List stored by a retired engine',
  payload_too_large: 'Payload too large',
  unsupported_media_type: 'Unsupported media type',
  rate_limited: 'Too many requests',
  internal: 'Internal server error',
  unavailable: 'Service unavailable',
};

/** One field-level validation failure: `path` is `location.field[.index…]`, e.g. `body.ids.3`. */
export interface FieldError {
  path: string;
  message: string;
}

/** An error the edge answers with: a code, a safe sentence, optional field errors and headers. */
export class ApiError extends Error {
  override name = 'ApiError' as const;
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly extra: {
      errors?: FieldError[];
      headers?: Record<string, string>;
      cause?: unknown;
    } = {},
  ) {
    super(detail, extra.cause === undefined ? undefined : { cause: extra.cause });
  }
  get status() {
    return STATUS[this.code];
  }
}

/** The RFC 9457 body every error response carries. */
export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  request_id: string;
  errors?: FieldError[];
}

export function problemType(code: ErrorCode): string {
  return `/problems/${code}`;
}

/** How one domain error class becomes a problem; `retryAfterSeconds` is the 503 hint. */
interface DomainRule<C extends DomainErrorClass> {
  cls: C;
  toApi: (err: InstanceType<C>, retryAfterSeconds: number) => ApiError;
}

const rule = <C extends DomainErrorClass>(
  cls: C,
  toApi: (err: InstanceType<C>, retryAfterSeconds: number) => ApiError,
): DomainRule<C> => ({ cls, toApi });

/** The one table from domain errors to HTTP problems. No default rule, on purpose. */
const DOMAIN_RULES = [
  rule(
    UserNotFoundError,
    (err) => new ApiError('user_not_found', `user ${err.userId} not found`, { cause: err }),
  ),
  rule(HiddenError, (err) => new ApiError('user_not_found', `user ${err.userId} not found`, { cause: err })),
  rule(SelfFollowError, (err) => new ApiError('self_relation', err.message, { cause: err })),
  rule(BlockedError, (err) => new ApiError('blocked', err.message, { cause: err })),
  rule(FollowingCapError, (err) => new ApiError('following_cap', err.message, { cause: err })),
  rule(NoPendingRequestError, (err) => new ApiError('no_pending_request', err.message, { cause: err })),
  rule(NotVisibleError, (err) => new ApiError('not_visible', err.message, { cause: err })),
  rule(
    InvalidInputError,
    (err) =>
      new ApiError('validation_failed', err.message, {
        cause: err,
        errors: [{ path: err.field, message: err.rule }],
      }),
  ),
  rule(
    InvalidCursorError,
    (err) =>
      new ApiError('invalid_cursor', 'the cursor is malformed, altered or belongs to another list', {
        cause: err,
      }),
  ),
  rule(CursorExpiredError, (err) => new ApiError('cursor_expired', err.message, { cause: err })),
  rule(
    FeedBusyError,
    (err, retryAfterSeconds) =>
      new ApiError('unavailable', err.message, {
        cause: err,
        headers: { 'Retry-After': String(retryAfterSeconds) },
      }),
  ),
  rule(PositionTooOldError, (err) => new ApiError('position_too_old', err.message, { cause: err })),
  rule(PositionOutOfRangeError, (err) => new ApiError('position_out_of_range', err.message, { cause: err })),
  rule(
    PairBusyError,
    (err) =>
      new ApiError('pair_busy', err.message, {
        cause: err,
        headers: { 'Retry-After': String(err.retryAfterSeconds) },
      }),
  ),
  rule(
    ClockSkewError,
    (err) =>
      new ApiError('unavailable', err.message, {
        cause: err,
        headers: { 'Retry-After': String(err.retryAfterSeconds) },
      }),
  ),
  // 409, not 5xx: the service is healthy and a retry cannot help; the list's stored state
  // conflicts with what this version serves until an operator rebuilds it. The stable code is what
  // to alert on; a 5xx would page as an outage and invite client retries.
  rule(
    LegacyListModeError,
    (err) =>
      new ApiError('legacy_list_mode', 'this list is stored in a retired layout and cannot be served', {
        cause: err,
      }),
  ),
  rule(
    UsernameTakenError,
    (err) => new ApiError('username_taken', 'the username is held by another account', { cause: err }),
  ),
  rule(
    StoreUnavailableError,
    (err, retryAfterSeconds) =>
      new ApiError('unavailable', 'the database is unavailable; retry later', {
        cause: err,
        headers: { 'Retry-After': String(retryAfterSeconds) },
      }),
  ),
];

/** Classes of `DOMAIN_ERRORS` without a rule; must be `never`. */
type Unmapped = Exclude<DomainErrorClass, (typeof DOMAIN_RULES)[number]['cls']>;
const everyDomainErrorIsMapped: [Unmapped] extends [never] ? true : Unmapped = true;
void everyDomainErrorIsMapped;

/**
 * A domain error → its problem, by the one table. The closing `internal` is unreachable while
 * `Unmapped` is `never`; it is there only because a loop cannot prove that to the compiler.
 */
export function fromDomainError(err: DomainError, retryAfterSeconds = 1): ApiError {
  for (const r of DOMAIN_RULES) {
    if (err instanceof r.cls)
      return (r.toApi as (e: DomainError, s: number) => ApiError)(err, retryAfterSeconds);
  }
  return new ApiError('internal', 'an unexpected error occurred', { cause: err });
}

/** Hono's signature and header checks; the time claims are checked with leeway in `auth.ts`. */
const JWT_DETAIL: Record<string, string> = {
  JwtAlgorithmMismatch: 'token algorithm not accepted',
  JwtHeaderInvalid: 'token header invalid',
  JwtTokenSignatureMismatched: 'token signature invalid',
  JwtTokenInvalid: 'token malformed',
};

/** Hono's named HTTP errors (jwt, body limit, validator, media-type gate) at the edge. */
function fromHttpException(err: HTTPException): ApiError {
  switch (err.status) {
    case 401: {
      const causeName = err.cause instanceof Error ? err.cause.name : '';
      const detail = JWT_DETAIL[causeName] ?? (err.cause ? 'token verification failed' : err.message);
      const challenge = err.res?.headers.get('WWW-Authenticate');
      return new ApiError('unauthorized', detail, {
        cause: err,
        headers: { 'WWW-Authenticate': challenge ?? 'Bearer' },
      });
    }
    case 413:
      return new ApiError('payload_too_large', 'the request body is too large', { cause: err });
    case 415:
      return new ApiError('unsupported_media_type', 'send the body as application/json', { cause: err });
    case 400:
      return new ApiError('malformed_request', 'the request body is not valid JSON', { cause: err });
    default:
      return new ApiError('internal', 'an unexpected error occurred', { cause: err });
  }
}

/**
 * Any thrown value → an `ApiError`. Unknown errors become `internal` (500, logged by the caller
 * with the stack; never in the body). `StoreUnavailableError` becomes 503 with `Retry-After`.
 */
export function toApiError(err: unknown, retryAfterSeconds = 1): ApiError {
  if (err instanceof ApiError) return err;
  if (isDomainError(err)) return fromDomainError(err, retryAfterSeconds);
  if (err instanceof HTTPException) return fromHttpException(err);
  return new ApiError('internal', 'an unexpected error occurred', { cause: err });
}

export function problemBody(err: ApiError, requestId: string): ProblemBody {
  const body: ProblemBody = {
    type: problemType(err.code),
    title: TITLE[err.code],
    status: err.status,
    detail: err.detail,
    code: err.code,
    request_id: requestId,
  };
  if (err.extra.errors) body.errors = err.extra.errors;
  return body;
}

/** Writes the problem response, copying the error's headers (Retry-After, WWW-Authenticate). */
export function problemResponse(c: Context, err: ApiError): Response {
  const requestId = (c.get('requestId') as string | undefined) ?? '';
  const headers: Record<string, string> = {
    'Content-Type': 'application/problem+json; charset=utf-8',
    ...err.extra.headers,
  };
  return c.body(JSON.stringify(problemBody(err, requestId)), err.status, headers);
}
