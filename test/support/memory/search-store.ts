import { plainUsername } from '../../../src/model/row-username.js';
import { compareSearchKeys, type SearchKey, type SearchRow } from '../../../src/model/search.js';
import type { ListKey } from '../../../src/model/types.js';
import type { IndexedNameWrite, SearchWrite } from '../../../src/ports/records.js';
import type { SearchStore } from '../../../src/ports/search-store.js';
import { MemoryPairHistoryStore } from './pair-history-store.js';
import { max, newMemoryPair, type SearchCell, writeCell } from './state.js';

/** `SearchStore` in memory: one layer of `MemoryGraphStore` (`graph-store.ts`). */
export abstract class MemorySearchStore extends MemoryPairHistoryStore implements SearchStore {
  async listSearchRows(
    list: ListKey,
    prefix: string,
    after: SearchKey,
    end: string,
    limit: number,
  ): Promise<SearchRow[]> {
    return this.searchCells(list, prefix, after, end, limit).map((c) => ({
      ...c.key,
      username: plainUsername(c.username.value ?? ''),
      createdAt: c.createdAt.value ?? 0n,
    }));
  }

  /** The live search rows of a partition in a key range, in order, each cell as live (or null). */
  private searchCells(
    list: ListKey,
    prefix: string,
    after: SearchKey,
    end: string,
    limit: number,
  ): SearchCell[] {
    const pk = `${list.userId}|${list.direction}|${prefix}`;
    const part = this.search.get(pk);
    if (!part) return [];
    const ranges = this.searchRangeTombs.get(pk) ?? [];
    const counts = (at: bigint | null, tomb: bigint | null) => at !== null && (tomb === null || tomb < at);
    const out: SearchCell[] = [];
    for (const c of part.values()) {
      if (compareSearchKeys(c.key, after) <= 0 || c.key.lower >= end) continue;
      const tomb = ranges.reduce((t, r) => (c.key.lower >= r.from ? max(t, r.version) : t), c.tomb);
      const name = c.username.value !== null && counts(c.username.at, tomb) ? c.username : null;
      const createdAt = c.createdAt.value !== null && counts(c.createdAt.at, tomb) ? c.createdAt : null;
      if (!counts(c.live, tomb) && name === null && createdAt === null) continue;
      // Every put writes all three together, so a live row has both cells.
      out.push({
        key: c.key,
        live: counts(c.live, tomb) ? c.live : null,
        tomb,
        username: name ?? { value: null, at: -1n },
        createdAt: createdAt ?? { value: null, at: -1n },
      });
    }
    return out.sort((a, b) => compareSearchKeys(a.key, b.key)).slice(0, limit);
  }

  async copySearchRows(
    list: ListKey,
    from: string,
    to: string,
    after: SearchKey,
    end: string,
    limit: number,
  ): Promise<{ copied: number; last: SearchKey | null }> {
    const rows = this.searchCells(list, from, after, end, limit);
    for (const c of rows) {
      const cell = this.searchCell(`${list.userId}|${list.direction}|${to}`, c.key);
      // The marker and `created_at` at `created_at`'s write time, the username at its own (Cassandra's copy).
      if (c.createdAt.value !== null) {
        cell.live = max(cell.live, c.createdAt.at);
        writeCell(cell.createdAt, c.createdAt.value, c.createdAt.at);
      }
      if (c.username.value !== null) writeCell(cell.username, c.username.value, c.username.at);
    }
    const last = rows.at(-1);
    return { copied: rows.length, last: last ? { ...last.key } : null };
  }

  async deleteSearchRange(list: ListKey, partition: string, from: string, version: bigint): Promise<void> {
    const pk = `${list.userId}|${list.direction}|${partition}`;
    this.searchRangeTombs.set(pk, [...(this.searchRangeTombs.get(pk) ?? []), { from, version }]);
  }

  private searchCell(pk: string, key: SearchKey): SearchCell {
    const part = this.search.get(pk) ?? new Map<string, SearchCell>();
    this.search.set(pk, part);
    const rk = `${key.lower}|${key.otherId}`;
    const cell = part.get(rk) ?? {
      key,
      live: null,
      tomb: null,
      username: { value: null, at: -1n },
      createdAt: { value: null, at: -1n },
    };
    part.set(rk, cell);
    return cell;
  }

  async writeSearchRows(
    writes: readonly SearchWrite[],
    indexed: readonly IndexedNameWrite[] = [],
  ): Promise<void> {
    for (const w of writes) {
      const key = w.op === 'put' ? { lower: w.row.lower, otherId: w.row.otherId } : w.key;
      for (const at of w.partitions) {
        const cell = this.searchCell(`${w.list.userId}|${w.list.direction}|${at}`, key);
        if (w.op === 'delete') {
          cell.tomb = max(cell.tomb, w.version);
          continue;
        }
        cell.live = max(cell.live, w.version);
        writeCell(cell.username, w.row.username, w.version);
        writeCell(cell.createdAt, w.row.createdAt, w.version);
      }
    }
    for (const w of indexed) {
      let pair = this.pairs.get(this.pairKey(w.member, w.other));
      if (!pair) {
        pair = newMemoryPair();
        this.pairs.set(this.pairKey(w.member, w.other), pair);
      }
      writeCell(w.member < w.other ? pair.statics.indexedLow : pair.statics.indexedHigh, w.cell, w.version);
    }
  }
}
