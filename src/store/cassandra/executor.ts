/**
 * Runs the store's statements: every call is prepared, carries its statement's idempotence flag,
 * is timed under a name (`onQuery`, the query-latency metric) and has driver unavailability
 * translated into `StoreUnavailableError` (`errors.ts`). Paging, single-partition writes and the
 * LOGGED multi-partition batch with its fallback live here, so the per-port stores only say what
 * to run.
 *
 * Design note — the batchlog fallback (`loggedBatch`). The dual write goes out as one LOGGED
 * batch: the batchlog makes a multi-partition write all-or-nothing eventually. A dying replica
 * that is not convicted yet still gets the batchlog (in a 3-node DC both other nodes must take
 * it), so until the failure detector gives up on it every logged batch times out there with
 * write type BATCH_LOG. Nothing of such a batch was applied (the batchlog is written first), and
 * its rows are a projection that the next write on the pair or repair rewrites, so it is sent
 * again without the batchlog, counted as `<name>UnloggedFallback` — unless the caller forbids it
 * (`fallback: false`: a batch that carries feed rows, whose events must not land without their
 * change), which then fails as unavailable. Rejected: retrying the logged
 * batch (it times out again for as long as the node is not convicted; `client.ts`).
 */
import type cassandra from 'cassandra-driver';
import type { Tracer } from '../../model/tracing.js';
import type { CqlClient } from './client.js';
import { isBatchlogTimeout, translated } from './errors.js';
import type { Row } from './rows.js';
import type { Statement } from './statements.js';

/** A statement with its bind values. */
export interface Bound {
  statement: Statement;
  params: unknown[];
}

export interface ExecutorOptions {
  /** `logged` (default) for the dual write; `unlogged` only for measuring the batchlog's cost. */
  batchMode?: 'logged' | 'unlogged';
  /** Called with each statement's duration in seconds and whether it succeeded (latency metric). */
  onQuery?: (name: string, seconds: number, ok: boolean) => void;
  /** Each statement or batch in a span `cql <name>` (its name, never its values). */
  tracer?: Tracer;
}

/** What a caller may add to a statement's options (never its idempotence: that is the statement's). */
export type RunOptions = Pick<cassandra.QueryOptions, 'fetchSize' | 'pageState' | 'readTimeout'>;

const driverBatch = (queries: readonly Bound[]) =>
  queries.map((q) => ({ query: q.statement.cql, params: q.params }));

const allIdempotent = (queries: readonly Bound[]) => queries.every((q) => q.statement.idempotent);

export class CqlExecutor {
  private readonly logged: boolean;

  constructor(
    private readonly client: CqlClient,
    private readonly options: ExecutorOptions = {},
  ) {
    this.logged = (options.batchMode ?? 'logged') === 'logged';
  }

  /** Runs one statement, timed under `name`. */
  exec(name: string, statement: Statement, params: unknown[], opts: RunOptions = {}) {
    return this.timed(name, () =>
      this.client.execute(statement.cql, params, {
        prepare: true,
        isIdempotent: statement.idempotent,
        ...opts,
      }),
    );
  }

  /**
   * Runs `queries` as one write: a lone statement as itself, several as one batch (`logged`:
   * through the batchlog; an unlogged batch is atomic and isolated only within one partition;
   * `counter`: a batch of counter updates, which must be unlogged).
   */
  async write(
    name: string,
    queries: readonly Bound[],
    opts: { logged: boolean; counter?: boolean; readTimeout?: number },
  ): Promise<void> {
    const [only] = queries;
    if (!only) return;
    const { logged, counter = false, ...rest } = opts;
    const options = { prepare: true, isIdempotent: allIdempotent(queries), ...rest };
    await this.timed(name, () =>
      queries.length === 1
        ? this.client.execute(only.statement.cql, only.params, options)
        : this.client.batch(driverBatch(queries), { ...options, logged, ...(counter ? { counter } : {}) }),
    );
  }

  /**
   * A conditional (lightweight-transaction) batch on one partition: returns whether it applied.
   * Sent once: a timed-out LWT may or may not have applied, and the caller re-reads to find out.
   */
  async conditionalBatch(name: string, queries: readonly Bound[]): Promise<boolean> {
    const rs = await this.timed(name, () =>
      this.client.batch(driverBatch(queries), { prepare: true, isIdempotent: false, logged: false }),
    );
    return Boolean(rs.first()?.['[applied]']);
  }

  /**
   * A multi-partition write as one batch, LOGGED unless the store measures without the batchlog,
   * sent again unlogged when the batchlog itself timed out (the design note above).
   */
  async loggedBatch(name: string, queries: readonly Bound[], o: { fallback?: boolean } = {}): Promise<void> {
    const batch = driverBatch(queries);
    const options = { prepare: true, isIdempotent: allIdempotent(queries) };
    await this.timed(name, async () => {
      try {
        return await this.client.batch(batch, { ...options, logged: this.logged });
      } catch (err) {
        if (this.logged && o.fallback !== false && isBatchlogTimeout(err)) {
          this.options.onQuery?.(`${name}UnloggedFallback`, 0, true);
          return await this.client.batch(batch, { ...options, logged: false });
        }
        throw err;
      }
    });
  }

  /** Each page of a statement's rows, in order; each page is one statement. */
  async *pages(
    name: string,
    statement: Statement,
    params: unknown[],
    fetchSize = 1000,
  ): AsyncGenerator<Row[]> {
    let pageState: string | undefined;
    do {
      const rs = await this.exec(name, statement, params, { fetchSize, pageState });
      yield rs.rows;
      pageState = rs.pageState ?? undefined;
    } while (pageState);
  }

  /** Every row of a statement, page by page (never just the first page). */
  async allRows(name: string, statement: Statement, params: unknown[]): Promise<Row[]> {
    const rows: Row[] = [];
    for await (const page of this.pages(name, statement, params)) rows.push(...page);
    return rows;
  }

  async shutdown(): Promise<void> {
    await this.client.shutdown();
  }

  private timed<T>(name: string, run: () => Promise<T>): Promise<T> {
    const tracer = this.options.tracer;
    if (!tracer) return this.measured(name, run);
    return tracer.span(`cql ${name}`, () => this.measured(name, run), {
      'db.system': 'cassandra',
      'db.operation.name': name,
    });
  }

  private async measured<T>(name: string, run: () => Promise<T>): Promise<T> {
    const started = performance.now();
    let ok = false;
    try {
      const result = await translated(name, run);
      ok = true;
      return result;
    } finally {
      this.options.onQuery?.(name, (performance.now() - started) / 1000, ok);
    }
  }
}
