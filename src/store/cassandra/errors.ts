/**
 * The only place that inspects driver errors. Unreachable hosts, timeouts, overload and
 * unavailable replicas become `StoreUnavailableError` (HTTP 503 with Retry-After); anything else
 * is a programming error and propagates unchanged (but never reaches a response body).
 */
import cassandra from 'cassandra-driver';
import { StoreUnavailableError } from '../../model/errors.js';

const { errors, types } = cassandra;

const RETRYABLE_CODES = new Set<number>([
  types.responseErrorCodes.unavailableException,
  types.responseErrorCodes.overloaded,
  types.responseErrorCodes.isBootstrapping,
  types.responseErrorCodes.writeTimeout,
  types.responseErrorCodes.readTimeout,
  types.responseErrorCodes.writeFailure,
  types.responseErrorCodes.readFailure,
  types.responseErrorCodes.truncateError,
]);

export function isUnavailable(err: unknown): boolean {
  if (err instanceof errors.NoHostAvailableError) return true;
  // A connection closed under a request ("Socket was closed": its node died or restarted). The
  // driver retries it elsewhere only when it is idempotent; a counter batch or an LWT gets this
  // error (the write may or may not have applied, as after a timeout). A CI run of the node-kill
  // test answered two follows 500 with it.
  if (err instanceof errors.DriverError && (err as { isSocketError?: boolean }).isSocketError === true)
    return true;
  if (err instanceof errors.OperationTimedOutError) return true;
  if (err instanceof errors.BusyConnectionError) return true;
  if (err instanceof errors.ResponseError) return RETRYABLE_CODES.has(err.code);
  return false;
}

/**
 * A write timeout while the coordinator was writing a LOGGED batch's batchlog: none of the
 * batch's mutations were sent yet (the batchlog is written first).
 */
export function isBatchlogTimeout(err: unknown): boolean {
  return (
    err instanceof errors.ResponseError &&
    err.code === types.responseErrorCodes.writeTimeout &&
    (err as { writeType?: string }).writeType === 'BATCH_LOG'
  );
}

/** Runs `fn`, translating unavailability into `StoreUnavailableError`. */
export async function translated<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (isUnavailable(err))
      throw new StoreUnavailableError(`database unavailable during ${what}`, { cause: err });
    throw err;
  }
}
