/**
 * `SearchStore` on Cassandra (`list_search`, the pair's `indexed_*` static cells), and the
 * statements of search writes (`searchStatements`), which the edge batch also carries for its
 * follows rows (`store/search-writes.ts`).
 */
import { plainUsername } from '../../model/row-username.js';
import type { SearchKey, SearchRow } from '../../model/search.js';
import type { ListKey, UserId } from '../../model/types.js';
import type { IndexedNameWrite, SearchWrite } from '../../ports/records.js';
import type { SearchStore } from '../../ports/search-store.js';
import type { Bound, CqlExecutor } from './executor.js';
import { S } from './statements.js';

function putStatement(list: ListKey, at: string, row: SearchRow, version: bigint): Bound {
  return {
    statement: S.searchPut,
    params: [list.userId, list.direction, at, row.lower, row.otherId, row.username, row.createdAt, version],
  };
}

function deleteStatement(list: ListKey, at: string, key: SearchKey, version: bigint): Bound {
  return {
    statement: S.searchDelete,
    params: [version, list.userId, list.direction, at, key.lower, key.otherId],
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

/** The statements of one search write: one per partition it goes to. */
function writeStatements(w: SearchWrite): Bound[] {
  return w.partitions.map((at) =>
    w.op === 'put'
      ? putStatement(w.list, at, w.row, w.version)
      : deleteStatement(w.list, at, w.key, w.version),
  );
}

/** The statements of `writes` and `indexed`, each at its own version. */
export function searchStatements(
  writes: readonly SearchWrite[],
  indexed: readonly IndexedNameWrite[] = [],
): Bound[] {
  return [...writes.flatMap(writeStatements), ...indexed.map(indexedStatement)];
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
      for (const at of w.partitions) {
        for (const b of writeStatements({ ...w, partitions: [at] })) {
          add(`${w.list.userId}|${w.list.direction}|${at}`, b);
        }
      }
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

  async copySearchRows(
    list: ListKey,
    from: string,
    to: string,
    after: SearchKey,
    end: string,
    limit: number,
  ): Promise<{ copied: number; last: SearchKey | null }> {
    const rs = await this.cql.exec('copySearchRows', S.searchCopyRead, [
      list.userId,
      list.direction,
      from,
      after.lower,
      after.otherId,
      end,
      limit,
    ]);
    // One unlogged batch per row (one partition, one mutation): the row's marker and cells.
    await Promise.all(
      rs.rows.map((row) => {
        const key = [list.userId, list.direction, to, row.lower_username, row.other_id];
        const qs: Bound[] = [];
        if (row.wc !== null && row.wc !== undefined)
          qs.push({ statement: S.searchCopyRow, params: [...key, row.created_at, row.wc] });
        if (row.wu !== null && row.wu !== undefined)
          qs.push({ statement: S.searchCopyUsername, params: [row.wu, row.username, ...key] });
        return qs.length > 0 ? this.cql.write('copySearchRows', qs, { logged: false }) : undefined;
      }),
    );
    const last = rs.rows.at(-1);
    return {
      copied: rs.rows.length,
      last: last ? { lower: last.lower_username as string, otherId: last.other_id as UserId } : null,
    };
  }

  async deleteSearchRange(list: ListKey, partition: string, from: string, version: bigint): Promise<void> {
    await this.cql.exec('deleteSearchRange', S.searchDeleteFrom, [
      version,
      list.userId,
      list.direction,
      partition,
      from,
    ]);
  }
}
