import { renamedUsername } from '../../../src/model/row-username.js';
import { isCut, type SearchLayout } from '../../../src/model/search.js';
import {
  type Directory,
  EMPTY_DIRECTORY,
  type PendingSplit,
  type StoredListMode,
  type TimeBucket,
} from '../../../src/model/time-buckets.js';
import {
  type BucketLayout,
  compareEntries,
  type ListEntry,
  type ListKey,
  type Position,
  type Relation,
  type UserId,
} from '../../../src/model/types.js';
import type { ListStore } from '../../../src/ports/list-store.js';
import type { IndexedNameWrite, SearchWrite, VersionedEntry } from '../../../src/ports/records.js';
import { MemoryEdgeStore } from './edge-store.js';
import { inversePartKey, listKey, max, partKey, rowKey } from './state.js';

function inverseOf(list: ListKey): [UserId, Relation] {
  if (list.direction !== 'in') throw new RangeError('inverse edges are bucketed like an `in` list');
  return [list.userId, list.relation];
}

/** A copy of a search layout that shares no arrays with it (the store hands out and keeps copies). */
function copySearchLayout(l: SearchLayout): SearchLayout {
  return { starts: [...l.starts], split: l.split ? { ...l.split, starts: [...l.split.starts] } : null };
}

/** `ListStore` in memory: one layer of `MemoryGraphStore` (`graph-store.ts`). */
export abstract class MemoryListStore extends MemoryEdgeStore implements ListStore {
  async listBucket(
    list: ListKey,
    bucketCode: number,
    after: ListEntry | null,
    limit: number,
    since?: Position,
  ): Promise<ListEntry[]> {
    return this.liveRows(list, bucketCode)
      .map((r) => r.entry)
      .filter(
        (e) => (!after || compareEntries(e, after) > 0) && (since === undefined || e.createdAt >= since),
      )
      .slice(0, limit)
      .map((e) => ({ ...e }));
  }

  async listBucketNewer(
    list: ListKey,
    bucketCode: number,
    after: ListEntry,
    limit: number,
    until?: Position,
  ): Promise<ListEntry[]> {
    return this.liveRows(list, bucketCode)
      .map((r) => r.entry)
      .filter((e) => compareEntries(e, after) < 0 && (until === undefined || e.createdAt < until))
      .reverse()
      .slice(0, limit)
      .map((e) => ({ ...e }));
  }

  async getLayout(list: ListKey): Promise<BucketLayout> {
    return {
      ...(this.layouts.get(listKey(list)) ?? {
        buckets: 1,
        growingTo: null,
        copiedThrough: 0,
      }),
    };
  }

  async putLayout(list: ListKey, layout: BucketLayout): Promise<void> {
    this.layouts.set(listKey(list), { ...layout });
  }

  async replaceLayout(list: ListKey, expected: BucketLayout, next: BucketLayout): Promise<boolean> {
    // No await between the read and the write: the compare-and-set must be atomic.
    const current = this.layouts.get(listKey(list)) ?? {
      buckets: 1,
      growingTo: null,
      copiedThrough: 0,
    };
    const same =
      current.buckets === expected.buckets &&
      current.growingTo === expected.growingTo &&
      current.copiedThrough === expected.copiedThrough;
    if (same) this.layouts.set(listKey(list), { ...next });
    return same;
  }

  async getDirectory(list: ListKey): Promise<Directory> {
    const d = this.directories.get(listKey(list)) ?? EMPTY_DIRECTORY;
    const split = this.splits.get(listKey(list));
    return {
      ...d,
      buckets: d.buckets.map((b) => ({ ...b })),
      ...(d.search ? { search: copySearchLayout(d.search) } : {}),
      ...(split
        ? {
            split: { ...split, starts: [...split.starts], ids: [...split.ids] },
          }
        : {}),
    };
  }

  async getPlacements(lists: readonly ListKey[]): Promise<{ layout: BucketLayout; directory: Directory }[]> {
    return Promise.all(
      lists.map(async (l) => ({ layout: await this.getLayout(l), directory: await this.getDirectory(l) })),
    );
  }

  async updateDirectory(
    list: ListKey,
    expectedVersion: number,
    change: {
      add?: readonly TimeBucket[];
      mode?: StoredListMode;
      split?: PendingSplit | null;
      search?: SearchLayout;
    },
  ): Promise<boolean> {
    // No await between the read and the write: the compare-and-set must be atomic.
    const d = this.directories.get(listKey(list)) ?? EMPTY_DIRECTORY;
    if (d.version !== expectedVersion) return false;
    if (change.split === null) this.splits.delete(listKey(list));
    else if (change.split)
      this.splits.set(listKey(list), {
        ...change.split,
        starts: [...change.split.starts],
        ids: [...change.split.ids],
      });
    const buckets = [...d.buckets, ...(change.add ?? []).map((b) => ({ ...b }))];
    // Newest first; the implicit first bucket (start null) last.
    buckets.sort((a, b) =>
      a.start === b.start ? 0 : a.start === null ? 1 : b.start === null ? -1 : a.start > b.start ? -1 : 1,
    );
    const search = change.search ?? d.search;
    this.directories.set(listKey(list), {
      mode: change.mode ?? d.mode,
      version: expectedVersion + 1,
      buckets,
      ...(search && isCut(search) ? { search: copySearchLayout(search) } : {}),
    });
    return true;
  }

  async copyBucketPage(
    list: ListKey,
    fromBucketCode: number,
    after: ListEntry | null,
    limit: number,
    targetCode: (row: ListEntry) => number,
  ): Promise<{ copied: number; last: ListEntry | null }> {
    const page = this.liveRows(list, fromBucketCode)
      .filter((r) => !after || compareEntries(r.entry, after) > 0)
      .slice(0, limit);
    for (const r of page) {
      const { username: _, ...key } = r.entry;
      const code = targetCode(key);
      this.writeRow(list, code, key, 'put', r.live);
      // The cell as stored (a rename's keeps its generation tag), at its own write time.
      if (r.nameCell !== null && r.nameAt !== null)
        await this.setListUsernames(list, code, [{ entry: key, version: r.nameAt }], r.nameCell);
    }
    const last = page.at(-1);
    return {
      copied: page.length,
      last: page.length < limit || !last ? null : { ...last.entry },
    };
  }

  async listBucketVersions(
    list: ListKey,
    bucketCode: number,
    after: ListEntry | null,
    limit: number,
  ): Promise<VersionedEntry[]> {
    return this.liveRows(list, bucketCode)
      .filter((r) => !after || compareEntries(r.entry, after) > 0)
      .slice(0, limit)
      .map((r) => ({ entry: { ...r.entry }, version: r.live }));
  }

  async setListUsernames(
    list: ListKey,
    bucketCode: number,
    rows: readonly VersionedEntry[],
    username: string,
    generation?: Position,
    search?: { writes: readonly SearchWrite[]; indexed: readonly IndexedNameWrite[] },
  ): Promise<void> {
    if (search) await this.writeSearchRows(search.writes, search.indexed);
    const name = generation === undefined ? username : renamedUsername(username, generation);
    const pk = partKey(list, bucketCode);
    const part = this.partitions.get(pk) ?? { drop: null, rows: new Map() };
    this.partitions.set(pk, part);
    for (const { entry, version } of rows) {
      const rk = rowKey(entry);
      const { createdAt, otherId } = entry;
      const cell = part.rows.get(rk) ?? {
        live: null,
        tomb: null,
        entry: { createdAt, otherId },
      };
      this.writeName(cell, name, version);
      part.rows.set(rk, cell);
    }
  }

  async dropBucket(list: ListKey, bucketCode: number, version: bigint): Promise<void> {
    const pk = partKey(list, bucketCode);
    const part = this.partitions.get(pk) ?? { drop: null, rows: new Map() };
    part.drop = max(part.drop, version);
    this.partitions.set(pk, part);
  }

  async deleteBucketRange(list: ListKey, bucketCode: number, from: Position, version: bigint): Promise<void> {
    const pk = partKey(list, bucketCode);
    const part = this.partitions.get(pk);
    if (part) part.ranges = [...(part.ranges ?? []), { from, version }];
    else
      this.partitions.set(pk, {
        drop: null,
        rows: new Map(),
        ranges: [{ from, version }],
      });
  }

  async copyInverseEdgePage(
    list: ListKey,
    fromBucketCode: number,
    after: UserId | null,
    limit: number,
    targetCode: (sourceId: UserId) => number,
  ): Promise<{ copied: number; last: UserId | null }> {
    const [target, relation] = inverseOf(list);
    const part = this.inverse.get(inversePartKey(target, relation, fromBucketCode));
    const page = [...(part?.rows.keys() ?? [])]
      .filter((s) => after === null || s > after)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .flatMap((s) => {
        const row = this.liveInverse(target, relation, fromBucketCode, s);
        return row ? [row] : [];
      })
      .slice(0, limit);
    for (const r of page) this.writeInverse(targetCode(r.edge.sourceId), r.edge, r.version);
    const last = page.at(-1)?.edge.sourceId;
    return {
      copied: page.length,
      last: page.length < limit || last === undefined ? null : last,
    };
  }

  async dropInverseEdgeBucket(list: ListKey, bucketCode: number, version: bigint): Promise<void> {
    const [target, relation] = inverseOf(list);
    const part = this.inversePart(target, relation, bucketCode);
    part.drop = max(part.drop, version);
  }
}
