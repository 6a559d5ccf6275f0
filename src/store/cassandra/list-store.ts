/**
 * `ListStore` on Cassandra: the bucketed list tables (follows in the card's `following` /
 * `followers`, other relations in `relation_lists`), their layouts (`list_layouts`, replaced by a
 * lightweight transaction, off the edge path) and the copies online growth makes, every copied
 * cell at its original write time so a concurrent newer write still wins over the copy.
 */
import { SINGLE_BUCKET } from '../../model/buckets.js';
import { renamedUsername } from '../../model/row-username.js';
import type { SearchLayout, SearchSplit } from '../../model/search.js';
import {
  type Directory,
  FIRST_TIME_BUCKET,
  type PendingSplit,
  type StoredListMode,
  type TimeBucket,
} from '../../model/time-buckets.js';
import type { BucketLayout, ListEntry, ListKey, Position, UserId } from '../../model/types.js';
import type { ListStore } from '../../ports/list-store.js';
import type { IndexedNameWrite, SearchWrite, VersionedEntry } from '../../ports/records.js';
import type { CqlExecutor } from './executor.js';
import { inverseKey, listTable, partitionValues } from './keys.js';
import { type Row, toEntry, toLayout } from './rows.js';
import { searchStatements } from './search-store.js';
import { LS, putInCells, S, type Statement } from './statements.js';

/** The smallest id: `(t, MIN_ID)` is below every key at time `t` (tuple bounds on `created_at` alone). */
const MIN_ID = -(1n << 63n);

const DEFAULT_LAYOUT = SINGLE_BUCKET;

const sameLayout = (a: BucketLayout, b: BucketLayout) =>
  a.buckets === b.buckets && a.growingTo === b.growingTo && a.copiedThrough === b.copiedThrough;

export class CassandraListStore implements ListStore {
  constructor(private readonly cql: CqlExecutor) {}

  async listBucket(
    list: ListKey,
    bucketCode: number,
    after: ListEntry | null,
    limit: number,
    since?: Position,
  ): Promise<ListEntry[]> {
    if (since !== undefined) {
      // A tuple bound on both sides: Cassandra refuses a single-column and a tuple slice together.
      const q = LS[listTable(list)].listSince;
      const key = partitionValues(list, bucketCode);
      const rs = after
        ? await this.cql.exec('listBucket', q.after, [
            ...key,
            after.createdAt,
            after.otherId,
            since,
            MIN_ID,
            limit,
          ])
        : await this.cql.exec('listBucket', q.head, [...key, since, limit]);
      return rs.rows.map(toEntry);
    }
    const rows = await this.bucketRows(
      'listBucket',
      LS[listTable(list)].list,
      list,
      bucketCode,
      after,
      limit,
    );
    return rows.map(toEntry);
  }

  async listBucketNewer(
    list: ListKey,
    bucketCode: number,
    after: ListEntry,
    limit: number,
    until?: Position,
  ): Promise<ListEntry[]> {
    const q = LS[listTable(list)].listNewer;
    const key = partitionValues(list, bucketCode);
    const from = [...key, after.createdAt, after.otherId];
    // `(created_at, other_id) < (until, MIN_ID)` is exactly `created_at < until`.
    const rs =
      until === undefined
        ? await this.cql.exec('listBucketNewer', q.open, [...from, limit])
        : await this.cql.exec('listBucketNewer', q.until, [...from, until, MIN_ID, limit]);
    return rs.rows.map(toEntry);
  }

  /** One bucket's rows in list order, strictly after `after` when given, at most `limit`. */
  private async bucketRows(
    name: string,
    page: { head: Statement; after: Statement },
    list: ListKey,
    bucketCode: number,
    after: ListEntry | null,
    limit: number,
  ): Promise<Row[]> {
    const key = partitionValues(list, bucketCode);
    const rs = after
      ? await this.cql.exec(name, page.after, [...key, after.createdAt, after.otherId, limit])
      : await this.cql.exec(name, page.head, [...key, limit]);
    return rs.rows;
  }

  async getLayout(list: ListKey): Promise<BucketLayout> {
    const rs = await this.cql.exec('getLayout', S.getLayout, [list.userId, list.relation, list.direction]);
    const row = rs.first();
    return row ? toLayout(row) : { ...DEFAULT_LAYOUT };
  }

  async putLayout(list: ListKey, layout: BucketLayout): Promise<void> {
    await this.cql.exec('putLayout', S.putLayout, [
      list.userId,
      list.relation,
      list.direction,
      layout.buckets,
      layout.growingTo,
      layout.copiedThrough,
    ]);
  }

  async replaceLayout(list: ListKey, expected: BucketLayout, next: BucketLayout): Promise<boolean> {
    const key = [list.userId, list.relation, list.direction];
    const values = [next.buckets, next.growingTo, next.copiedThrough];
    if (sameLayout(expected, DEFAULT_LAYOUT)) {
      const rs = await this.cql.exec('replaceLayout', S.insertLayoutIfAbsent, [...key, ...values]);
      if (rs.first()?.['[applied]']) return true;
    }
    const rs = await this.cql.exec('replaceLayout', S.replaceLayout, [
      ...values,
      ...key,
      expected.buckets,
      expected.growingTo,
      expected.copiedThrough,
    ]);
    return Boolean(rs.first()?.['[applied]']);
  }

  async getDirectory(list: ListKey): Promise<Directory> {
    const rs = await this.cql.exec('getDirectory', S.getDirectory, [
      list.userId,
      list.relation,
      list.direction,
    ]);
    return toDirectory(rs.rows);
  }

  async getPlacements(lists: readonly ListKey[]): Promise<{ layout: BucketLayout; directory: Directory }[]> {
    const groups = new Map<string, { relation: string; direction: string; ids: Set<UserId> }>();
    for (const l of lists) {
      const k = `${l.relation}|${l.direction}`;
      const g = groups.get(k) ?? { relation: l.relation, direction: l.direction, ids: new Set() };
      g.ids.add(l.userId);
      groups.set(k, g);
    }
    const layouts = new Map<string, Row>();
    const directories = new Map<string, Row[]>();
    const reads: Promise<void>[] = [];
    for (const g of groups.values()) {
      const ids = [...g.ids];
      const key = (r: Row) => `${r.user_id}|${g.relation}|${g.direction}`;
      for (let i = 0; i < ids.length; i += PLACEMENT_CHUNK) {
        const params = [ids.slice(i, i + PLACEMENT_CHUNK), g.relation, g.direction];
        reads.push(
          this.cql.exec('getLayouts', S.getLayouts, params).then((rs) => {
            for (const r of rs.rows) layouts.set(key(r), r);
          }),
          this.cql.exec('getDirectories', S.getDirectories, params).then((rs) => {
            for (const r of rs.rows) {
              const rows = directories.get(key(r)) ?? [];
              rows.push(r);
              directories.set(key(r), rows);
            }
          }),
        );
      }
    }
    await Promise.all(reads);
    return lists.map((l) => {
      const k = `${l.userId}|${l.relation}|${l.direction}`;
      const layout = layouts.get(k);
      return {
        layout: layout ? toLayout(layout) : { ...DEFAULT_LAYOUT },
        directory: toDirectory(directories.get(k) ?? []),
      };
    });
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
    const key = [list.userId, list.relation, list.direction];
    // The mode cell is rewritten with the stored one when unchanged: read it inside the compare.
    const mode = change.mode ?? (await this.getDirectory(list)).mode;
    const cas =
      expectedVersion === 0
        ? { statement: S.directoryFirstVersion, params: [1, mode, ...key] }
        : { statement: S.directoryNextVersion, params: [expectedVersion + 1, mode, ...key, expectedVersion] };
    const adds = (change.add ?? []).map((b) => {
      if (b.start === null) throw new RangeError('the first bucket is implicit');
      return { statement: S.directoryAdd, params: [...key, b.start, b.id, BigInt(b.base), b.owner ?? null] };
    });
    const sp = change.split;
    const split =
      sp === undefined
        ? []
        : [
            {
              statement: S.setListSplit,
              params: sp
                ? [sp.bucket, sp.starts, sp.ids, sp.stage, sp.copied, ...key]
                : [null, null, null, null, null, ...key],
            },
          ];
    const sl = change.search;
    const search = sl
      ? [
          {
            statement: S.setSearchLayout,
            params: [
              sl.starts.length > 0 ? sl.starts : null,
              sl.split?.parent ?? null,
              sl.split?.starts ?? null,
              sl.split?.stage ?? null,
              sl.split?.copied ?? null,
              ...key,
            ],
          },
        ]
      : [];
    return this.cql.conditionalBatch('updateDirectory', [cas, ...adds, ...split, ...search]);
  }

  async copyBucketPage(
    list: ListKey,
    fromBucketCode: number,
    after: ListEntry | null,
    limit: number,
    targetCode: (row: ListEntry) => number,
  ): Promise<{ copied: number; last: ListEntry | null }> {
    const q = LS[listTable(list)];
    const rows = await this.bucketRows('copyBucketPage', q.copy, list, fromBucketCode, after, limit);
    await Promise.all(
      rows.map(async (row) => {
        const key = [...partitionValues(list, targetCode(toEntry(row))), row.created_at, row.other_id];
        await this.cql.exec('copyListRow', q.putRow, [...key, row.position, row.wt]);
        // The username cell keeps its own write time (a put's is one below the row's).
        if (row.username !== null && row.username !== undefined)
          await this.cql.exec('copyListRow', q.setUsername, [row.wu, row.username, ...key]);
      }),
    );
    const lastRow = rows.at(-1);
    return { copied: rows.length, last: rows.length < limit || !lastRow ? null : toEntry(lastRow) };
  }

  async listBucketVersions(
    list: ListKey,
    bucketCode: number,
    after: ListEntry | null,
    limit: number,
  ): Promise<VersionedEntry[]> {
    const q = LS[listTable(list)].copy;
    const rows = await this.bucketRows('listBucketVersions', q, list, bucketCode, after, limit);
    return rows.map((row) => ({ entry: toEntry(row), version: row.wt as bigint }));
  }

  async setListUsernames(
    list: ListKey,
    bucketCode: number,
    rows: readonly VersionedEntry[],
    username: string,
    generation?: Position,
    search?: { writes: readonly SearchWrite[]; indexed: readonly IndexedNameWrite[] },
  ): Promise<void> {
    const statement = LS[listTable(list)].setUsername;
    const key = partitionValues(list, bucketCode);
    const cell = generation === undefined ? username : renamedUsername(username, generation);
    const queries = rows.map(({ entry, version }) => ({
      statement,
      params: [version, cell, ...key, entry.createdAt, entry.otherId],
    }));
    // One partition: an unlogged batch is one mutation, applied atomically on each replica (the
    // search writes riding along are other partitions: one request, each mutation on its own).
    if (search) queries.push(...searchStatements(search.writes, search.indexed));
    await this.cql.write('setListUsernames', queries, { logged: false });
  }

  async dropBucket(list: ListKey, bucketCode: number, version: bigint): Promise<void> {
    await this.cql.exec('dropBucket', LS[listTable(list)].dropBucket, [
      version,
      ...partitionValues(list, bucketCode),
    ]);
  }

  async deleteBucketRange(list: ListKey, bucketCode: number, from: Position, version: bigint): Promise<void> {
    await this.cql.exec('deleteBucketRange', LS[listTable(list)].deleteFrom, [
      version,
      ...partitionValues(list, bucketCode),
      from,
    ]);
  }

  async copyInverseEdgePage(
    list: ListKey,
    fromBucketCode: number,
    after: UserId | null,
    limit: number,
    targetCode: (sourceId: UserId) => number,
  ): Promise<{ copied: number; last: UserId | null }> {
    const key = inverseKey(list);
    const rs =
      after === null
        ? await this.cql.exec('copyInverseEdgePage', S.copyInHead, [...key, fromBucketCode, limit])
        : await this.cql.exec('copyInverseEdgePage', S.copyInAfter, [...key, fromBucketCode, after, limit]);
    await Promise.all(
      rs.rows.flatMap((row) => {
        const source = row.source_id as bigint;
        const partition = [...key, targetCode(source), source];
        return cellsByWriteTime(row).map(([wt, cells]) =>
          this.cql.exec('copyInverseEdge', putInCells(cells.map(([c]) => c)), [
            ...partition,
            ...cells.map(([, v]) => v),
            wt,
          ]),
        );
      }),
    );
    const last = rs.rows.at(-1)?.source_id as bigint | undefined;
    return { copied: rs.rows.length, last: rs.rows.length < limit || last === undefined ? null : last };
  }

  async dropInverseEdgeBucket(list: ListKey, bucketCode: number, version: bigint): Promise<void> {
    await this.cql.exec('dropInverseEdgeBucket', S.dropIn, [version, ...inverseKey(list), bucketCode]);
  }
}

/**
 * The cells of an `edges_in` copy row grouped by write time: one insert per distinct write time,
 * so every cell keeps its own. A cell without a write time (never written) is not copied.
 */
function cellsByWriteTime(row: Row): [bigint, [string, unknown][]][] {
  const byTime = new Map<bigint, [string, unknown][]>();
  for (const [cell, wt] of [
    ['state', row.ws],
    ['position', row.wp],
    ['created_at', row.wc],
  ] as const) {
    if (wt === null || wt === undefined) continue;
    byTime.set(wt as bigint, [...(byTime.get(wt as bigint) ?? []), [cell, row[cell]]]);
  }
  return [...byTime];
}

/** The pending split in a directory read's static cells, or null. */
/** A list's directory from its `list_directory` rows in clustering order; the first bucket last. */
function toDirectory(rows: readonly Row[]): Directory {
  const first = rows[0];
  const buckets: TimeBucket[] = rows
    .filter((r) => r.start !== null && r.start !== undefined)
    .map((r) => {
      const owner = r.owner as number | null | undefined;
      const b: TimeBucket = {
        id: r.bucket as number,
        start: r.start as bigint,
        base: Number(r.base ?? 0n),
      };
      return owner === null || owner === undefined ? b : { ...b, owner };
    });
  buckets.push({ id: FIRST_TIME_BUCKET, start: null, base: 0 });
  const split = toSplit(first);
  const search = toSearchLayout(first);
  return {
    mode: (first?.mode as StoredListMode | null | undefined) ?? null,
    version: (first?.version as number | null | undefined) ?? 0,
    buckets,
    ...(split ? { split } : {}),
    ...(search ? { search } : {}),
  };
}

/** The search layout's static cells; null when the list's search partitions were never cut. */
function toSearchLayout(row: Row | undefined | null): SearchLayout | null {
  const starts = (row?.search_starts as string[] | null | undefined) ?? [];
  const parent = row?.search_split_parent as string | null | undefined;
  if (starts.length === 0 && (parent === null || parent === undefined)) return null;
  return {
    starts: [...starts],
    split:
      parent === null || parent === undefined
        ? null
        : {
            parent,
            starts: [...((row?.search_split_starts as string[] | null) ?? [])],
            stage: row?.search_split_stage as SearchSplit['stage'],
            copied: (row?.search_split_copied as number | null) ?? 0,
          },
  };
}

/** Lists per multi-partition placement read: a bounded `IN`, one coordinator's work per request. */
const PLACEMENT_CHUNK = 100;

function toSplit(row: Row | undefined | null): PendingSplit | null {
  const bucket = row?.split_bucket as number | null | undefined;
  if (bucket === null || bucket === undefined || !row) return null;
  return {
    bucket,
    starts: ((row.split_starts as bigint[] | null) ?? []).map((s) => BigInt(s)),
    ids: [...((row.split_ids as number[] | null) ?? [])],
    stage: row.split_stage as PendingSplit['stage'],
    copied: (row.split_copied as number | null) ?? 0,
  };
}
