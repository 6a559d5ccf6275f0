/**
 * The simulated node's Cassandra semantics, statement by statement, on the project's own schema
 * and statements (`engine-vs-cassandra.int.test.ts` holds the same engine against the real node).
 */
import { describe, expect, it } from 'vitest';
import { Q } from '../../../src/store/cassandra/statements.js';
import { simSchema } from '../pair-sim.js';
import { CqlEngine } from './engine.js';
import { OLD } from './old-statements.js';
import { CqlUnsupportedError, parseSchema } from './syntax.js';

const T0 = 1_700_000_000_000_000;

function engine() {
  const e = new CqlEngine(simSchema());
  let id = 0;
  const write = (query: string, params: unknown[], ts: bigint, at = T0) =>
    e.applyWrites(e.bindWrite(query, params, ts, ++id), at);
  const read = (query: string, params: unknown[], at = T0, fetchSize = 5000) =>
    e.select(query, params, at, { fetchSize }).rows;
  return { e, write, read };
}

/** An op row's values; the last is its write time (`USING TIMESTAMP`, the op's slot in the service). */
const append = (low: bigint, high: bigint, position: bigint, source: bigint, kind: string, at: bigint) => [
  low,
  high,
  position,
  source,
  kind,
  0n,
  position * 10n,
  at,
];

describe('the simulated node', () => {
  it('keeps the larger cp_state at equal write times (a torn re-commit wins over the right one)', () => {
    const { write, read } = engine();
    write(OLD.commitCheckpoint, [500n, 500n, '{"n":132,"b":0,"e":[]}', 1n, 2n], 1n);
    write(OLD.commitCheckpoint, [500n, 500n, '{"n":99,"b":0,"e":[]}', 1n, 2n], 1n);
    write(OLD.commitCheckpoint, [500n, 500n, '{"n":120,"b":0,"e":[]}', 1n, 2n], 1n);
    expect(read(OLD.pairStatic, [1n, 2n])).toEqual([
      {
        low_id: 1n,
        high_id: 2n,
        cp_horizon: 500n,
        cp_state: '{"n":99,"b":0,"e":[]}',
        compact_to: null,
        compact_at: null,
        compact_seen: null,
      },
    ]);
  });

  it('lets a tombstone win a tie and a later write win over it', () => {
    const { write, read } = engine();
    write(OLD.announce, [10n, 20n, 1n, 2n], 100n);
    write(OLD.observe, [30n, 1n, 2n], 100n);
    write(OLD.clearAnnouncement, [1n, 2n], 100n);
    expect(read(OLD.pairStatic, [1n, 2n])).toEqual([]);
    write(OLD.observe, [31n, 1n, 2n], 101n);
    expect(read(OLD.pairStatic, [1n, 2n])).toEqual([
      {
        low_id: 1n,
        high_id: 2n,
        cp_horizon: null,
        cp_state: null,
        compact_to: null,
        compact_at: null,
        compact_seen: 31n,
      },
    ]);
  });

  it('does not clear compact_seen written later than the clear, whatever the order of arrival', () => {
    const { write, read } = engine();
    write(OLD.observe, [30n, 1n, 2n], 200n);
    write(OLD.clearAnnouncement, [1n, 2n], 150n);
    write(OLD.announce, [40n, 41n, 1n, 2n], 160n);
    expect(read(OLD.pairStatic, [1n, 2n])[0]).toMatchObject({ compact_to: 40n, compact_seen: 30n });
  });

  it('returns the static row only without a clustering restriction', () => {
    const { write, read } = engine();
    write(OLD.commitCheckpoint, [500n, 500n, '{}', 1n, 2n], 500n);
    expect(read(OLD.pairOps, [1n, 2n, 0n])).toEqual([]);
    expect(
      read('SELECT low_id, position, cp_horizon FROM pair_ops WHERE low_id = ? AND high_id = ?', [1n, 2n]),
    ).toEqual([{ low_id: 1n, position: null, cp_horizon: 500n }]);
  });

  it('deletes a clustering range at its write time only', () => {
    const { write, read } = engine();
    for (const p of [10n, 20n, 30n]) write(Q.appendOp, append(1n, 2n, p, 1n, 'follow', 100n), 100n);
    write(Q.appendOp, append(1n, 2n, 15n, 1n, 'block', 300n), 300n);
    write(OLD.dropFolded, [1n, 2n, 20n], 200n);
    write(Q.appendOp, append(1n, 2n, 12n, 2n, 'mute', 150n), 150n);
    expect(read(OLD.pairOps, [1n, 2n, 0n]).map((r) => [r.position, r.kind])).toEqual([
      [15n, 'block'],
      [30n, 'follow'],
    ]);
  });

  it('reads tuple slices and reversed order as the list statements ask', () => {
    const { write, read } = engine();
    for (const [c, o] of [
      [5n, 1n],
      [5n, 3n],
      [7n, 2n],
      [9n, 1n],
    ] as const)
      write(
        'INSERT INTO following (user_id, bucket, created_at, other_id, position) VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ?',
        [1n, 1, c, o, c, 1n],
        0n,
      );
    const rows = (q: string, p: unknown[]) => read(q, p).map((r) => `${r.created_at}:${r.other_id}`);
    const head = 'SELECT created_at, other_id FROM following WHERE user_id = ? AND bucket = ?';
    expect(rows(`${head} LIMIT ?`, [1n, 1, 10])).toEqual(['9:1', '7:2', '5:3', '5:1']);
    expect(rows(`${head} AND (created_at, other_id) < (?, ?) LIMIT ?`, [1n, 1, 7n, 2n, 10])).toEqual([
      '5:3',
      '5:1',
    ]);
    expect(
      rows(`${head} AND (created_at, other_id) > (?, ?) ORDER BY created_at ASC, other_id ASC LIMIT ?`, [
        1n,
        1,
        5n,
        1n,
        2,
      ]),
    ).toEqual(['5:3', '7:2']);
  });

  it('pages by re-reading after the last row, so a row written between pages shows', () => {
    const { e, write } = engine();
    for (const p of [10n, 20n, 30n]) write(Q.appendOp, append(1n, 2n, p, 1n, 'follow', 100n), 100n);
    const first = e.select(OLD.pairOps, [1n, 2n, 0n], T0, { fetchSize: 2 });
    expect(first.rows.map((r) => r.position)).toEqual([10n, 20n]);
    write(Q.appendOp, append(1n, 2n, 25n, 1n, 'mute', 100n), 100n);
    const second = e.select(OLD.pairOps, [1n, 2n, 0n], T0, { fetchSize: 2, page: first.next });
    expect(second.rows.map((r) => r.position)).toEqual([25n, 30n]);
    expect(second.next).toBeNull();
  });

  it('adds counters, expires TTL cells on the node clock and applies IF NOT EXISTS once', () => {
    const { write, read } = engine();
    write(Q.incr, [3n, 1n, 'follows', 'in', 4], 0n);
    write(Q.incr, [-1n, 1n, 'follows', 'in', 4], 0n);
    write(Q.incr, [5n, 1n, 'follows', 'in', 9], 0n);
    expect(read(Q.getCount, [1n, 'follows', 'in'])).toEqual([{ n: 2n }, { n: 5n }]);
    const receipt = [1n, 'k', 'h', 200, 'body', 10];
    expect(write(Q.putReceipt, receipt, 0n)).toEqual({ '[applied]': true });
    expect(write(Q.putReceipt, [1n, 'k', 'other', 201, 'x', 10], 0n)).toMatchObject({
      '[applied]': false,
      status: 200,
    });
    expect(read(Q.getReceipt, [1n, 'k'], T0 + 9e6)).toEqual([
      { request_hash: 'h', status: 200, body: 'body' },
    ]);
    expect(read(Q.getReceipt, [1n, 'k'], T0 + 10e6)).toEqual([]);
  });

  it('refuses statement shapes it does not model, and binds as the driver does', () => {
    const { e } = engine();
    expect(() => e.prepare('SELECT * FROM pair_ops WHERE kind = ?')).toThrow(CqlUnsupportedError);
    expect(() => e.prepare('SELECT count(*) FROM pair_ops')).toThrow(CqlUnsupportedError);
    expect(() => e.prepare('SELECT release_version FROM system.local')).toThrow(CqlUnsupportedError);
    expect(() => e.bindWrite(Q.appendOp, [1n, 2n, 'x', 1n, 'follow', 0n, 0n, 1n], 1n, 1)).toThrow(
      /not a bigint/,
    );
    expect(() => e.bindWrite(Q.appendOp, [1n, 2n], 1n, 1)).toThrow(/8 bind markers, 2 values/);
    expect(() => parseSchema(['CREATE INDEX ON pair_ops (kind);'])).toThrow(CqlUnsupportedError);
  });
});
