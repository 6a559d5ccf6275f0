import { describe, expect, it } from 'vitest';
import { SCAN_TABLES } from '../../../src/ports/records.js';
import {
  LQ,
  LS,
  putInCells,
  Q,
  S,
  type Statement,
  scanPartitionsStatement,
} from '../../../src/store/cassandra/statements.js';

/** Every statement the store can run, by a dotted name. */
function everyStatement(): [string, Statement][] {
  const leaves = (prefix: string, v: object): [string, Statement][] =>
    'cql' in v
      ? [[prefix, v as Statement]]
      : Object.entries(v).flatMap(([k, x]) => leaves(prefix ? `${prefix}.${k}` : k, x as object));
  return [
    ...leaves('S', S),
    ...leaves('LS', LS),
    ...SCAN_TABLES.map((t): [string, Statement] => [`scan.${t}`, scanPartitionsStatement(t)]),
    ['putInCells', putInCells(['state', 'position'])],
  ];
}

describe('statements', () => {
  it('flags exactly the lightweight transactions and the counter updates as not idempotent', () => {
    const once = everyStatement()
      .filter(([, s]) => !s.idempotent)
      .map(([name]) => name);
    expect(once).toEqual([
      'S.decideIntent',
      'S.claimOpSlot',
      'S.claimUsername',
      'S.releaseUsername',
      'S.insertLayoutIfAbsent',
      'S.directoryFirstVersion',
      'S.directoryNextVersion',
      'S.replaceLayout',
      'S.incr',
      'S.userIncr',
      'S.putReceipt',
      'S.createLease',
      'S.takeLease',
      'S.extendLease',
      'S.putLeaseState',
    ]);
  });

  it('flags a statement idempotent exactly when it is neither conditional nor a counter update', () => {
    const wrong = everyStatement()
      .filter(([, s]) => s.idempotent === (/ IF /.test(s.cql) || /SET n = n \+/.test(s.cql)))
      .map(([name]) => name);
    expect(wrong).toEqual([]);
  });

  it('gives the tests and benchmarks the same CQL text in Q and LQ', () => {
    expect(Object.fromEntries(Object.entries(S).map(([k, s]) => [k, s.cql]))).toEqual(Q);
    expect(LQ.followers.putRow).toBe(LS.followers.putRow.cql);
    expect(LQ.relation_lists.listNewer.until).toBe(LS.relation_lists.listNewer.until.cql);
    expect(Object.keys(LQ.following)).toEqual(Object.keys(LS.following));
  });
});
