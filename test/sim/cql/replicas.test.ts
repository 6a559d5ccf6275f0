/**
 * The replicas' rules (`replicas.ts`): which replicas a write is on decides which reads see it, a
 * read merges its replicas last-writer-wins and repairs them, and the merge of two replicas equals
 * one node that took both writes.
 */
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../support/random.js';
import { CqlEngine } from './engine.js';
import { Mutation, ReplicaSet } from './replicas.js';
import { parseSchema } from './syntax.js';

const T0 = 1_700_000_000_000_000;
const schema = parseSchema([
  `CREATE TABLE kv (k bigint, c int, v text, w text, s text STATIC, PRIMARY KEY (k, c));
   CREATE TABLE leases (name text PRIMARY KEY, holder text);`,
]);

const INSERT = 'INSERT INTO kv (k, c, v) VALUES (?, ?, ?) USING TIMESTAMP ?';
const SET_W = 'UPDATE kv USING TIMESTAMP ? SET w = ? WHERE k = ? AND c = ?';
const DELETE_ROW = 'DELETE FROM kv USING TIMESTAMP ? WHERE k = ? AND c = ?';
const DELETE_V = 'DELETE v FROM kv USING TIMESTAMP ? WHERE k = ? AND c = ?';
const ROWS = 'SELECT k, c, v, w FROM kv WHERE k = ?';

describe('replicas', () => {
  it('a write on one replica is seen by a read it serves, missing from one it does not, and repaired', () => {
    const set = new ReplicaSet(schema);
    set.write([0], INSERT, [1n, 1, 'a', 10n], 10n, T0);
    expect(set.read([1, 2], ROWS, [1n], T0)).toEqual([]);
    expect(set.read([0, 1], ROWS, [1n], T0)).toEqual([{ k: 1n, c: 1, v: 'a', w: null }]);
    // The read of {0, 1} repaired replica 1: it alone now sees the row; replica 2 still does not.
    expect(set.read([1], ROWS, [1n], T0)).toEqual([{ k: 1n, c: 1, v: 'a', w: null }]);
    expect(set.read([2], ROWS, [1n], T0)).toEqual([]);
  });

  it('a read without repair leaves its replicas as they were', () => {
    const set = new ReplicaSet(schema);
    set.write([0], INSERT, [1n, 1, 'a', 10n], 10n, T0);
    expect(set.read([0, 1], ROWS, [1n], T0, { repair: false })).toEqual([{ k: 1n, c: 1, v: 'a', w: null }]);
    expect(set.read([1], ROWS, [1n], T0)).toEqual([]);
  });

  it('merges a row cell by cell from two replicas', () => {
    const set = new ReplicaSet(schema);
    set.write([0, 1, 2], INSERT, [1n, 1, 'a', 10n], 10n, T0);
    set.write([0], SET_W, [20n, 'from 0', 1n, 1], 20n, T0);
    set.write([1], INSERT, [1n, 1, 'b', 15n], 15n, T0);
    expect(set.read([0, 1], ROWS, [1n], T0)).toEqual([{ k: 1n, c: 1, v: 'b', w: 'from 0' }]);
    expect(set.read([2], ROWS, [1n], T0)).toEqual([{ k: 1n, c: 1, v: 'a', w: null }]);
  });

  it('equals one node that took both writes: tombstone against value, at equal and other times', () => {
    const cases: [string, unknown[], bigint][][] = [
      // A deletion at the value's time wins the tie.
      [
        [INSERT, [1n, 1, 'a', 10n], 10n],
        [DELETE_ROW, [10n, 1n, 1], 10n],
      ],
      // A cell tombstone at the value's time wins; the row marker keeps the row.
      [
        [INSERT, [1n, 1, 'a', 10n], 10n],
        [DELETE_V, [10n, 1n, 1], 10n],
      ],
      // A value newer than the deletion.
      [
        [INSERT, [1n, 1, 'a', 11n], 11n],
        [DELETE_ROW, [10n, 1n, 1], 10n],
      ],
      // Equal times, two values: the larger wins.
      [
        [INSERT, [1n, 1, 'a', 10n], 10n],
        [INSERT, [1n, 1, 'b', 10n], 10n],
      ],
      // A partition deletion against a static and a row.
      [
        [
          `${INSERT.replace('(k, c, v)', '(k, c, v, s)').replace('(?, ?, ?)', '(?, ?, ?, ?)')}`,
          [1n, 1, 'a', 's', 5n],
          5n,
        ],
        ['DELETE FROM kv USING TIMESTAMP ? WHERE k = ?', [7n, 1n], 7n],
      ],
    ];
    const all = 'SELECT k, c, v, w, s, writetime(v) AS wt FROM kv WHERE k = ?';
    for (const [a, b] of cases) {
      const one = new CqlEngine(schema);
      for (const [q, p, ts] of [a, b] as [string, unknown[], bigint][])
        one.applyWrites(one.bindWrite(q, p, ts, 0), T0);
      const want = one.select(all, [1n], T0, { fetchSize: 100 }).rows;
      for (const order of [
        [a, b],
        [b, a],
      ] as [string, unknown[], bigint][][]) {
        const set = new ReplicaSet(schema);
        set.write([0], ...(order[0] as [string, unknown[], bigint]), T0);
        set.write([1], ...(order[1] as [string, unknown[], bigint]), T0);
        expect(set.read([0, 1], all, [1n], T0)).toEqual(want);
        expect(set.read([1, 0], all, [1n], T0)).toEqual(want);
        // Both repaired: each alone answers the merge.
        expect(set.read([0], all, [1n], T0)).toEqual(want);
        expect(set.read([1], all, [1n], T0)).toEqual(want);
      }
    }
  });

  it("expires a TTL cell on every replica at the coordinator's time", () => {
    const set = new ReplicaSet(schema);
    const q = 'INSERT INTO kv (k, c, v) VALUES (?, ?, ?) USING TIMESTAMP ? AND TTL ?';
    // Bound once at T0 (its coordinator's time) and landed on replica 1 five seconds later.
    const m = set.view.bindWrite(q, [1n, 1, 'a', 10n, 10], 10n, 0);
    const mutation = new Mutation(m, T0);
    set.deliver(0, mutation, T0);
    set.deliver(1, mutation, T0 + 5e6);
    const ttl = 'SELECT c, v, ttl(v) AS ttl FROM kv WHERE k = ?';
    expect(set.read([1], ttl, [1n], T0 + 6e6)).toEqual([{ c: 1, v: 'a', ttl: 4 }]);
    expect(set.read([0, 1], ttl, [1n], T0 + 9.5e6)).toEqual([{ c: 1, v: 'a', ttl: 1 }]);
    expect(set.read([0, 1], ttl, [1n], T0 + 10e6)).toEqual([]);
    expect(set.read([2], ttl, [1n], T0)).toEqual([]);
  });

  it('merges a full scan over every partition either replica holds, in token order', () => {
    const set = new ReplicaSet(schema);
    set.write([0], INSERT, [1n, 1, 'a', 10n], 10n, T0);
    set.write([1], INSERT, [2n, 1, 'b', 10n], 10n, T0);
    set.write([0, 1], INSERT, [3n, 1, 'c', 10n], 10n, T0);
    set.write([1], DELETE_ROW, [11n, 3n, 1], 11n, T0);
    set.write([2], INSERT, [4n, 1, 'd', 10n], 10n, T0);
    const one = new CqlEngine(schema);
    for (const [k, v] of [
      [1n, 'a'],
      [2n, 'b'],
    ] as const)
      one.applyWrites(one.bindWrite(INSERT, [k, 1, v, 10n], 10n, 0), T0);
    const scan = 'SELECT k, c, v FROM kv';
    const want = one.select(scan, [], T0, { fetchSize: 100 }).rows;
    expect(want).toHaveLength(2);
    expect(set.read([0, 1], scan, [], T0)).toEqual(want);
    // Paged one row at a time: the same rows.
    const paged: unknown[] = [];
    let page = null;
    do {
      const r = set.select([0, 1], scan, [], T0, { fetchSize: 1, page });
      paged.push(...r.rows);
      page = r.next;
    } while (page);
    expect(paged).toEqual(want);
    expect(set.read([0], scan, [], T0)).toEqual(want);
  });

  it("decides an LWT on its quorum's merge and commits it on the quorum", () => {
    const set = new ReplicaSet(schema);
    const claim = 'INSERT INTO leases (name, holder) VALUES (?, ?) IF NOT EXISTS';
    const read = 'SELECT name, holder FROM leases WHERE name = ?';
    expect(set.write([0, 1], claim, ['x', 'a'], 1n, T0)).toEqual({ '[applied]': true });
    // A quorum that overlaps the first sees it; the merge tells the loser who holds it.
    expect(set.write([1, 2], claim, ['x', 'b'], 2n, T0 + 1)).toEqual({
      '[applied]': false,
      name: 'x',
      holder: 'a',
    });
    // The round repaired replica 2.
    expect(set.read([2], read, ['x'], T0 + 2)).toEqual([{ name: 'x', holder: 'a' }]);
    expect(set.view.select(read, ['x'], T0 + 2, { fetchSize: 10 }).rows).toEqual([
      { name: 'x', holder: 'a' },
    ]);
  });

  it('keeps the view equal to the merge of every replica (random writes and reads; seed printed)', () => {
    const seed = Number(process.env.REPLICAS_SEED ?? 7);
    console.log(`replicas view: seed ${seed}`);
    const random = mulberry32(seed);
    const int = (n: number) => Math.floor(random() * n);
    const set = new ReplicaSet(schema);
    const one = new CqlEngine(schema);
    for (let i = 0; i < 400; i++) {
      const k = BigInt(int(3));
      const ts = BigInt(int(20));
      const [q, p] =
        int(4) === 0
          ? [DELETE_ROW, [ts, k, int(3)]]
          : int(3) === 0
            ? [SET_W, [ts, `w${int(3)}`, k, int(3)]]
            : [INSERT, [k, int(3), `v${int(3)}`, ts]];
      const on = [0, 1, 2].filter(() => random() < 0.5);
      if (on.length === 0) continue;
      set.write(on, q as string, p, ts, T0);
      one.applyWrites(one.bindWrite(q as string, p, ts, 0), T0);
      if (int(5) === 0) set.read([int(3), int(3)], ROWS, [BigInt(int(3))], T0);
    }
    const scan = 'SELECT k, c, v, w, writetime(v) AS wv, writetime(w) AS ww FROM kv';
    const want = one.select(scan, [], T0, { fetchSize: 1000 }).rows;
    expect(set.view.select(scan, [], T0, { fetchSize: 1000 }).rows).toEqual(want);
    expect(set.read([0, 1, 2], scan, [], T0)).toEqual(want);
    expect(set.converged()).toBe(true);
  });
});
