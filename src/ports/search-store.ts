import type { SearchKey, SearchRow } from '../model/search.js';
import type { ListKey } from '../model/types.js';
import type { IndexedNameWrite, SearchWrite } from './records.js';

/**
 * The search rows of follows lists (`list_search`): each member of a follows list under its
 * lowercased username, partitioned per list by the name's first two characters
 * (`model/search.ts`). The edge batch writes them with their list rows (`EdgeStore.writeEdges`,
 * `ListRowWrite.searchNames`); this port reads them and writes them outside that batch.
 */
export interface SearchStore {
  /**
   * The rows of partition `prefix` of `list`'s search rows strictly after `after` in
   * (lowercased name, id) order and with a lowercased name below `end`, in that order, at most
   * `limit`. One single-partition read.
   */
  listSearchRows(
    list: ListKey,
    prefix: string,
    after: SearchKey,
    end: string,
    limit: number,
  ): Promise<SearchRow[]>;
  /**
   * Writes each search row put or delete at its own version (a row's cells last-writer-wins; at
   * one version a delete beats a put), and each indexed name into its pair's static cell at its
   * version. Idempotent. Grouped per partition; partitions are written independently (not atomic
   * together).
   */
  writeSearchRows(writes: readonly SearchWrite[], indexed?: readonly IndexedNameWrite[]): Promise<void>;
  /**
   * Copies one page of partition `from`'s rows (strictly after `after`, with a lowercased name
   * below `end`, in order, at most `limit`) into partition `to`, each cell keeping its write time,
   * so a delete sent to both (a higher version) wins over the copy whichever lands last. Deleted
   * rows are not copied. Resume from the returned `last` (null: nothing was left). What a split of a
   * search partition does (`lists/reshape/search-split.ts`).
   */
  copySearchRows(
    list: ListKey,
    from: string,
    to: string,
    after: SearchKey,
    end: string,
    limit: number,
  ): Promise<{ copied: number; last: SearchKey | null }>;
  /**
   * Deletes the rows of partition `partition` with a lowercased name at or above `from` (one range
   * tombstone at write time `version`: a row written there at or below `version`, before or after,
   * stays deleted). Idempotent.
   */
  deleteSearchRange(list: ListKey, partition: string, from: string, version: bigint): Promise<void>;
}
