/**
 * Counts what the node is asked to do, from the driver's request tracker (the client option
 * `requestTracker`, `createCqlClient`'s `requestTracker`): every attempt the driver sends is one
 * request (a retry or a speculative copy is another), a batch is one request whose statements are
 * its mutations, a lone write is one request and one mutation, a read none. Prepares are not
 * requests here (the driver sends them outside the tracked execution, once per statement).
 *
 * Each request is filed under a kind named from its CQL, `<VERB> <table>` (`SELECT pair_ops`,
 * `UPDATE list_counts`), and a batch as `BATCH <logged|unlogged|counter> <kinds of its
 * statements, distinct, in order>`, so a bench or a test can compare whole lists of requests
 * without knowing the store's method names.
 */
import cassandra from 'cassandra-driver';

/**
 * The driver's tracker base class: its typings declare only an interface, but the client accepts
 * nothing that is not an instance of the class.
 */
const TrackerBase = (cassandra.tracker as unknown as { RequestTracker: new () => object }).RequestTracker;

/** What a bench or a test reads: requests by kind and the mutations they carried, since `reset`. */
export interface RequestTally {
  /** Requests by kind (see the module note), failed attempts included. */
  readonly requests: ReadonlyMap<string, number>;
  /** Statements that write: one per lone write, one per statement of a batch. */
  readonly mutations: number;
  /** Requests that failed (a timeout, an unavailable node): each counts in `requests` too. */
  readonly errors: number;
}

/** The kind of one CQL statement: its verb and table (`SELECT pair_ops`), or its first word. */
export function statementKind(cql: string): string {
  const m =
    /^\s*(SELECT)\b[\s\S]*?\bFROM\s+(\w+)|^\s*(INSERT)\s+INTO\s+(\w+)|^\s*(UPDATE)\s+(\w+)|^\s*(DELETE)\b[\s\S]*?\bFROM\s+(\w+)/i.exec(
      cql,
    );
  if (!m) return (/^\s*(\w+)/.exec(cql)?.[1] ?? '?').toUpperCase();
  const [verb, table] = [m[1] ?? m[3] ?? m[5] ?? m[7], m[2] ?? m[4] ?? m[6] ?? m[8]];
  return `${(verb as string).toUpperCase()} ${table}`;
}

const isWrite = (kind: string) => !kind.startsWith('SELECT');

/**
 * A `RequestTracker` that tallies requests by kind and mutations (see the module note). Cheap
 * enough to leave on: one regex per request and a map update.
 */
export class RequestCounter extends TrackerBase implements cassandra.tracker.RequestTracker, RequestTally {
  private counts = new Map<string, number>();
  private writes = 0;
  private failed = 0;

  get requests(): ReadonlyMap<string, number> {
    return this.counts;
  }

  get mutations(): number {
    return this.writes;
  }

  get errors(): number {
    return this.failed;
  }

  /** The tally so far, copied (later requests do not change it). */
  snapshot(): RequestTally {
    return { requests: new Map(this.counts), mutations: this.writes, errors: this.failed };
  }

  /** Forgets everything counted so far. */
  reset(): void {
    this.counts = new Map();
    this.writes = 0;
    this.failed = 0;
  }

  onSuccess(
    _host: cassandra.Host,
    query: string | Array<{ query: string; params?: unknown }>,
    _parameters: unknown,
    options: cassandra.ExecutionOptions,
  ): void {
    this.count(query, options);
  }

  onError(
    _host: cassandra.Host,
    query: string | Array<{ query: string; params?: unknown }>,
    _parameters: unknown,
    options: cassandra.ExecutionOptions,
  ): void {
    this.failed++;
    this.count(query, options);
  }

  shutdown(): void {}

  private count(
    query: string | Array<{ query: string; params?: unknown }>,
    options: cassandra.ExecutionOptions,
  ) {
    let kind: string;
    if (typeof query === 'string') {
      kind = statementKind(query);
      if (isWrite(kind)) this.writes++;
    } else {
      const type = options.isBatchCounter() ? 'counter' : options.isBatchLogged() ? 'logged' : 'unlogged';
      const kinds = [...new Set(query.map((q) => statementKind(q.query)))];
      kind = `BATCH ${type} ${kinds.join(' + ')}`;
      this.writes += query.length;
    }
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
  }
}

/** The requests of `after` not in `before`, by kind (kinds with none left out). */
export function tallySince(before: RequestTally, after: RequestTally): RequestTally {
  const requests = new Map<string, number>();
  for (const [k, n] of after.requests) {
    const d = n - (before.requests.get(k) ?? 0);
    if (d > 0) requests.set(k, d);
  }
  return { requests, mutations: after.mutations - before.mutations, errors: after.errors - before.errors };
}
