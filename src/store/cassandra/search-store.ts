/**
 * `SearchStore` on Cassandra (`list_search`, the pair's `indexed_*` static cells), and the
 * statements of search writes (`searchStatements`), which the edge batch also carries for its
 * follows rows (`store/search-writes.ts`).
 */
import { plainUsername } from '../../model/row-username.js';
import { type SearchKey, type SearchRow, searchPrefix } from '../../model/search.js';
import type { ListKey, UserId } from '../../model/types.js';
import type { IndexedNameWrite, SearchWrite } from '../../ports/records.js';
import type { SearchStore } from '../../ports/store.js';
import type { Bound, CqlExecutor } from './executor.js';
import { S } from './statements.js';

const partition = (list: ListKey, lower: string) => [list.userId, list.direction, searchPrefix(lower)];

function putStatement(list: ListKey, row: SearchRow, version: bigint): Bound {
  return {
    statement: S.searchPut,
    params: [...partition(list, row.lower), row.lower, row.otherId, row.username, row.createdAt, version],
  };
}

function deleteStatement(list: ListKey, key: SearchKey, version: bigint): Bound {
  return {
    statement: S.searchDelete,
    params: [version, ...partition(list, key.lower), key.lower, key.otherId],
  };
}

/** The static cell of `member`'s indexed name in its pair with `other`. */
export function indexedStatement(w: IndexedNameWrite): Bound {
  const low = w.member < w.other;
  const [a, b] = low ? [w.member, w.other] : [w.other, w.member];
  return {
    statement: low ? S.indexedLow : S.indexedHigh,
    params: [w.version, w.cell, a, b],
  };
}

/** The statements of `writes` and `indexed`, each at its own version. */
export function searchStatements(
  writes: readonly SearchWrite[],
  indexed: readonly IndexedNameWrite[] = [],
): Bound[] {
  return [
    ...writes.map((w) =>
      w.op === 'put' ? putStatement(w.list, w.row, w.version) : deleteStatement(w.list, w.key, w.version),
    ),
    ...indexed.map(indexedStatement),
  ];
}

export class CassandraSearchStore implements SearchStore {
  constructor(private readonly cql: CqlExecutor) {}

  async listSearchRows(
    list: ListKey,
    prefix: string,
    after: SearchKey,
    end: string,
    limit: number,
  ): Promise<SearchRow[]> {
    const rs = await this.cql.exec('listSearchRows', S.searchRead, [
      list.userId,
      list.direction,
      prefix,
      after.lower,
      after.otherId,
      end,
      limit,
    ]);
    return rs.rows.map((row) => ({
      lower: row.lower_username as string,
      otherId: row.other_id as UserId,
      username: plainUsername(row.username as string),
      createdAt: row.created_at as bigint,
    }));
  }

  async writeSearchRows(
    writes: readonly SearchWrite[],
    indexed: readonly IndexedNameWrite[] = [],
  ): Promise<void> {
    const parts = new Map<string, Bound[]>();
    const add = (key: string, b: Bound) => {
      const part = parts.get(key) ?? [];
      part.push(b);
      parts.set(key, part);
    };
    for (const w of writes) {
      const lower = w.op === 'put' ? w.row.lower : w.key.lower;
      const key = `${w.list.userId}|${w.list.direction}|${searchPrefix(lower)}`;
      for (const b of searchStatements([w])) add(key, b);
    }
    for (const w of indexed) {
      const pair = w.member < w.other ? `${w.member}|${w.other}` : `${w.other}|${w.member}`;
      add(`pair|${pair}`, indexedStatement(w));
    }
    // One unlogged batch per partition: atomic and isolated on each replica; partitions in parallel.
    await Promise.all(
      [...parts.values()].map((qs) => this.cql.write('writeSearchRows', qs, { logged: false })),
    );
  }
}
