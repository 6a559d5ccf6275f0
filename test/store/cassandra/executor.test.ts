/**
 * The executor's policies over a recording client (no database: what is checked is which
 * statements and options go to the driver, and what a caller sees when the driver fails).
 */
import cassandra from 'cassandra-driver';
import { describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../../../src/model/errors.js';
import type { CqlClient } from '../../../src/store/cassandra/client.js';
import { type Bound, CqlExecutor, type ExecutorOptions } from '../../../src/store/cassandra/executor.js';
import type { Statement } from '../../../src/store/cassandra/statements.js';

const { errors, types } = cassandra;
/** The driver's base error (its typings call it abstract; the driver itself constructs it). */
const DriverError = errors.DriverError as unknown as new (message: string) => Error;

type Sent = { kind: 'execute' | 'batch'; query: unknown; options: Record<string, unknown> };

/** A client that records what it is sent and fails the first calls with `failures`, in order. */
function recordingClient(failures: Error[] = []) {
  const sent: Sent[] = [];
  const answer = (kind: Sent['kind'], query: unknown, options: Record<string, unknown>) => {
    sent.push({ kind, query, options });
    const failure = failures.shift();
    if (failure) return Promise.reject(failure);
    return Promise.resolve({ rows: [], pageState: null, first: () => null });
  };
  const client = {
    execute: (query: string, _params: unknown[], options: Record<string, unknown>) =>
      answer('execute', query, options),
    batch: (queries: { query: string }[], options: Record<string, unknown>) =>
      answer(
        'batch',
        queries.map((q) => q.query),
        options,
      ),
  };
  return { client: client as unknown as CqlClient, sent };
}

function executor(failures: Error[] = [], options: ExecutorOptions = {}) {
  const { client, sent } = recordingClient(failures);
  const names: [string, boolean][] = [];
  const cql = new CqlExecutor(client, { ...options, onQuery: (name, _s, ok) => names.push([name, ok]) });
  return { cql, sent, names };
}

const writeTimeout = (writeType: string) =>
  Object.assign(new errors.ResponseError(types.responseErrorCodes.writeTimeout, 'timed out'), { writeType });

const a: Statement = { cql: 'INSERT a', idempotent: true };
const b: Statement = { cql: 'INSERT b', idempotent: true };
const lwt: Statement = { cql: 'INSERT c IF NOT EXISTS', idempotent: false };
const two: Bound[] = [
  { statement: a, params: [] },
  { statement: b, params: [] },
];

describe('CqlExecutor', () => {
  it('sends each statement prepared with its own idempotence flag', async () => {
    const { cql, sent, names } = executor();
    await cql.exec('one', a, [], { fetchSize: 10 });
    await cql.exec('two', lwt, []);
    expect(sent).toEqual([
      { kind: 'execute', query: 'INSERT a', options: { prepare: true, isIdempotent: true, fetchSize: 10 } },
      { kind: 'execute', query: 'INSERT c IF NOT EXISTS', options: { prepare: true, isIdempotent: false } },
    ]);
    expect(names).toEqual([
      ['one', true],
      ['two', true],
    ]);
  });

  it('sends a lone write as itself and several as one batch, idempotent only if all are', async () => {
    const { cql, sent } = executor();
    await cql.write('w', [{ statement: a, params: [] }], { logged: false, readTimeout: 5 });
    await cql.write('w', [...two, { statement: lwt, params: [] }], { logged: true });
    await cql.write('w', [], { logged: true });
    expect(sent).toEqual([
      { kind: 'execute', query: 'INSERT a', options: { prepare: true, isIdempotent: true, readTimeout: 5 } },
      {
        kind: 'batch',
        query: ['INSERT a', 'INSERT b', 'INSERT c IF NOT EXISTS'],
        options: { prepare: true, isIdempotent: false, logged: true },
      },
    ]);
  });

  it('sends counter updates as one counter batch (unlogged), never retried', async () => {
    const { cql, sent } = executor();
    const incr = { cql: 'UPDATE n SET c = c + 1', idempotent: false };
    await cql.write(
      'incrementCounts',
      [
        { statement: incr, params: [] },
        { statement: incr, params: [] },
      ],
      { logged: false, counter: true },
    );
    expect(sent).toEqual([
      {
        kind: 'batch',
        query: ['UPDATE n SET c = c + 1', 'UPDATE n SET c = c + 1'],
        options: { prepare: true, isIdempotent: false, logged: false, counter: true },
      },
    ]);
  });

  it('sends a logged batch again unlogged when its batchlog write timed out', async () => {
    const { cql, sent, names } = executor([writeTimeout('BATCH_LOG')]);
    await cql.loggedBatch('writeEdges', two);
    expect(sent).toEqual([
      {
        kind: 'batch',
        query: ['INSERT a', 'INSERT b'],
        options: { prepare: true, isIdempotent: true, logged: true },
      },
      {
        kind: 'batch',
        query: ['INSERT a', 'INSERT b'],
        options: { prepare: true, isIdempotent: true, logged: false },
      },
    ]);
    expect(names).toEqual([
      ['writeEdgesUnloggedFallback', true],
      ['writeEdges', true],
    ]);
  });

  it('does not resend a logged batch whose mutations may have been applied (a BATCH write timeout)', async () => {
    const { cql, sent, names } = executor([writeTimeout('BATCH')]);
    const failed = await cql.loggedBatch('writeEdges', two).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(StoreUnavailableError);
    expect((failed as Error).message).toBe('database unavailable during writeEdges');
    expect(sent.map((s) => s.options.logged)).toEqual([true]);
    expect(names).toEqual([['writeEdges', false]]);
  });

  it('never falls back in unlogged mode (there is no batchlog to time out)', async () => {
    const { cql, sent } = executor([writeTimeout('BATCH_LOG')], { batchMode: 'unlogged' });
    await expect(cql.loggedBatch('writeEdges', two)).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(sent.map((s) => s.options.logged)).toEqual([false]);
  });

  it('turns an unreachable cluster into StoreUnavailableError with the driver error as cause', async () => {
    const noHost = new errors.NoHostAvailableError({});
    const { cql, names } = executor([noHost]);
    const failed = await cql.exec('getUser', a, []).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(StoreUnavailableError);
    expect((failed as Error).cause).toBe(noHost);
    expect(names).toEqual([['getUser', false]]);
  });

  it('turns a connection closed under a request (its node died) into StoreUnavailableError, never a 500', async () => {
    // What the driver hands a non-idempotent request (a counter batch) whose socket closed.
    const closed = Object.assign(new DriverError('Socket was closed'), { isSocketError: true });
    const { cql } = executor([closed]);
    const failed = await cql
      .write('incrementCounts', two, { logged: false, counter: true })
      .catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(StoreUnavailableError);
    expect((failed as Error).cause).toBe(closed);
    // Any other driver error is a programming error and propagates unchanged.
    const other = new DriverError('something else');
    const { cql: cql2 } = executor([other]);
    expect(await cql2.exec('getUser', a, []).catch((e: unknown) => e)).toBe(other);
  });

  it('reads every page, one statement per page, resuming from the page state', async () => {
    const { client } = recordingClient();
    const states: unknown[] = [];
    let call = 0;
    (client as unknown as { execute: unknown }).execute = async (
      _q: string,
      _p: unknown[],
      o: Record<string, unknown>,
    ) => {
      states.push(o.pageState);
      call++;
      return { rows: [{ n: call }], pageState: call < 3 ? `p${call}` : null };
    };
    const rows = await new CqlExecutor(client).allRows('all', a, []);
    expect(rows).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(states).toEqual([undefined, 'p1', 'p2']);
  });
});
