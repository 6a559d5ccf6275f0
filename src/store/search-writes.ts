/**
 * The search writes an edge batch's list rows imply (`ListRowWrite.searchNames`), shared by both
 * stores so they derive the same rows: for each follows put carrying a username, the member's
 * search row and its indexed name in the pair's static cell; for each name of `searchNames` not
 * the put's once lowercased (that is the same search row, which a delete at the put's own version
 * would shadow), a delete. Rows of other relations have none. All at the batch's version, each in
 * the partitions the row's `searchLayout` places it in.
 */
import { EMPTY_SEARCH_LAYOUT, searchWritePartitions } from '../model/search.js';
import type { IndexedNameWrite, ListRowWrite, SearchWrite } from '../ports/records.js';

export function searchWritesOf(
  rows: readonly ListRowWrite[],
  version: bigint,
): { writes: SearchWrite[]; indexed: IndexedNameWrite[] } {
  const writes = new Map<string, SearchWrite>();
  const indexed = new Map<string, IndexedNameWrite>();
  for (const r of rows) {
    if (r.list.relation !== 'follows') continue;
    const { list } = r;
    const layout = r.searchLayout ?? EMPTY_SEARCH_LAYOUT;
    const { otherId, createdAt } = r.entry;
    const name = r.op === 'put' ? r.entry.username : undefined;
    const keep = name?.toLowerCase();
    if (name !== undefined && keep !== undefined) {
      const row = { lower: keep, otherId, username: name, createdAt };
      writes.set(`${list.userId}|${list.direction}|${keep}|${otherId}`, {
        op: 'put',
        list,
        row,
        version,
        partitions: searchWritePartitions(layout, keep),
      });
      indexed.set(`${list.userId}|${otherId}`, {
        member: otherId,
        other: list.userId,
        cell: name,
        version,
      });
    }
    for (const n of r.searchNames ?? []) {
      const lower = n.toLowerCase();
      const k = `${list.userId}|${list.direction}|${lower}|${otherId}`;
      if (lower === keep || writes.has(k)) continue;
      const partitions = searchWritePartitions(layout, lower);
      writes.set(k, { op: 'delete', list, key: { lower, otherId }, version, partitions });
    }
  }
  return { writes: [...writes.values()], indexed: [...indexed.values()] };
}
