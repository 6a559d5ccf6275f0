/**
 * The one place a `cassandra-driver` Client is built. Conventions: prepared statements, explicit
 * consistency (LOCAL_QUORUM by default), bigint ids, token-aware routing (the driver's default
 * load-balancing policy), constant reconnection so a node that comes back is picked up without a
 * restart.
 *
 * Design note — failing over without hanging. A request (one statement or one batch) is bounded
 * by `requestTimeoutMs` per attempt, and the policies below keep the number of attempts small:
 *
 * - A connection that breaks (a node killed, a socket reset) is retried once more on the next
 *   host, at most twice in all: every statement we send is idempotent (`USING TIMESTAMP`).
 * - A client-side timeout is *not* retried on another host: the node may be stalled rather than
 *   gone, and a retry would turn one timeout into two or three (15 s for RF 3 at 5 s). Reads get
 *   a speculative execution instead (`speculativeDelayMs`): after that delay a second copy goes
 *   to the next replica and the first answer wins. Writes are not speculated; a stalled write
 *   fails at the timeout and the API answers 503 with Retry-After.
 * - A server-side write timeout of type BATCH_LOG is rethrown at once (`batchlogRetry: false`).
 *   Until the failure detector convicts a dead node, a coordinator still sends the batchlog to
 *   it: in a 3-node data centre the batchlog always goes to both other nodes at CL TWO
 *   (`batchlog_endpoint_strategy` only chooses among more than two candidates), so the driver's
 *   default same-host retry almost always times out again and doubles the wait. Failing at the
 *   first timeout halves the longest request during that window without adding failures.
 * - Read timeouts and unavailable errors keep the driver's default rules (one retry when it can
 *   help).
 */
import cassandra from 'cassandra-driver';

export interface CassandraConnectOptions {
  contactPoints: string[];
  localDataCenter: string;
  /** Omit to connect without a keyspace (migrations create it). */
  keyspace?: string;
  consistency: 'localOne' | 'localQuorum' | 'quorum' | 'one' | 'all';
  credentials?: { username: string; password: string } | undefined;
  /** Client-side timeout of one attempt (the driver's `readTimeout`). */
  requestTimeoutMs: number;
  /** Delay before a read is also sent to the next replica; 0 turns speculation off (default). */
  speculativeDelayMs?: number;
  /** Retry a BATCH_LOG write timeout once on the same host, as the driver does by default. */
  batchlogRetry?: boolean;
  /** Told of every request the driver sends (`request-counter.ts`: the benches' and tests' request counts). */
  requestTracker?: cassandra.tracker.RequestTracker;
  /**
   * How long the driver waits for schema agreement after each DDL it runs (its default 10 s,
   * polled every 500 ms). The migration runner's own clients set 0: it waits itself, when the
   * order of its statements needs it (`migrations/migrate.ts`).
   */
  schemaAgreementWaitSeconds?: number;
}

export type CqlClient = cassandra.Client;

const { policies, errors } = cassandra;
type OperationInfo = Parameters<cassandra.policies.retry.RetryPolicy['onRequestError']>[0];
type Decision = ReturnType<cassandra.policies.retry.RetryPolicy['onRequestError']>;
type Consistency = cassandra.types.consistencies;

/** The bounded-attempts policy described in the note above. */
export class BoundedRetryPolicy extends policies.retry.RetryPolicy {
  constructor(private readonly batchlogRetry: boolean) {
    super();
  }

  override onRequestError(info: OperationInfo, consistency: Consistency, err: Error): Decision {
    if (err instanceof errors.OperationTimedOutError || info.nbRetry >= 2) return this.rethrowResult();
    return this.retryResult(consistency, false);
  }

  override onWriteTimeout(
    info: OperationInfo,
    consistency: Consistency,
    _received: number,
    _blockFor: number,
    writeType: string,
  ): Decision {
    if (writeType === 'BATCH_LOG' && this.batchlogRetry && info.nbRetry === 0)
      return this.retryResult(consistency);
    return this.rethrowResult();
  }
}

/** Speculates only single SELECT statements (never writes, never batches). */
export class ReadSpeculationPolicy
  implements cassandra.policies.speculativeExecution.SpeculativeExecutionPolicy
{
  private readonly none = { nextExecution: () => -1 };

  constructor(
    private readonly delayMs: number,
    private readonly maxExecutions = 1,
  ) {}

  init(): void {}

  shutdown(): void {}

  newPlan(_keyspace: string, queryInfo: string | Array<object>) {
    if (typeof queryInfo !== 'string' || !/^\s*select\b/i.test(queryInfo)) return this.none;
    let executions = 0;
    return {
      nextExecution: () => (executions++ < this.maxExecutions ? this.delayMs : -1),
    };
  }

  getOptions() {
    return new Map<string, object>([
      ['delay', Object(this.delayMs)],
      ['maxSpeculativeExecutions', Object(this.maxExecutions)],
    ]);
  }
}

export function createCqlClient(o: CassandraConnectOptions): cassandra.Client {
  const speculate = (o.speculativeDelayMs ?? 0) > 0;
  return new cassandra.Client({
    contactPoints: o.contactPoints,
    localDataCenter: o.localDataCenter,
    ...(o.keyspace ? { keyspace: o.keyspace } : {}),
    ...(o.credentials ? { credentials: o.credentials } : {}),
    encoding: { useBigIntAsLong: true, useBigIntAsVarint: true },
    queryOptions: {
      consistency: cassandra.types.consistencies[o.consistency],
      prepare: true,
      isIdempotent: true,
    },
    socketOptions: { readTimeout: o.requestTimeoutMs, connectTimeout: 5000 },
    policies: {
      reconnection: new cassandra.policies.reconnection.ConstantReconnectionPolicy(1000),
      retry: new BoundedRetryPolicy(o.batchlogRetry ?? false),
      ...(speculate ? { speculativeExecution: new ReadSpeculationPolicy(o.speculativeDelayMs ?? 0) } : {}),
    },
    pooling: { heartBeatInterval: 5000 },
    ...(o.schemaAgreementWaitSeconds === undefined
      ? {}
      : { protocolOptions: { maxSchemaAgreementWaitSeconds: o.schemaAgreementWaitSeconds } }),
    ...(o.requestTracker ? { requestTracker: o.requestTracker } : {}),
  });
}

/**
 * The options of a schema change (DDL): unprepared, and given two minutes rather than a request's
 * timeout. A node under load (flushing the memtables a table drop recycles, compacting) can take
 * longer than 30 s to apply a `CREATE TABLE`; a client that gives up first leaves a migration or
 * a test's keyspace failed with the change still landing behind it.
 */
export const SCHEMA_CHANGE: cassandra.QueryOptions = { prepare: false, readTimeout: 120_000 };
