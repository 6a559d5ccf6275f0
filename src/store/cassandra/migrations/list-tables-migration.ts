/**
 * The list-table migration: `following` / `followers` from `((user_id, relation, bucket), …)` to
 * the product card's `((user_id, bucket), created_at, other_id)` holding follows only, the other
 * relations' lists into `relation_lists`, and `edges_in` from one partition per target to
 * `((target_id, relation, bucket), source_id)`, bucketed like the target's `in` list.
 *
 * Design note. Cassandra can neither change a primary key nor rename a table, and the card keeps
 * the names, so the rows take a round trip through staging tables. Four files, applied in order,
 * each recorded in `schema_migrations` only when complete:
 *
 * - `006` creates `legacy_following`, `legacy_followers`, `legacy_edges_in` (the old shapes) and
 *   runs `stage_list_tables`: a write-time-preserving copy of each old table into its twin.
 * - `007` drops the three tables and recreates them (plus `relation_lists`) in the new shape. It
 *   can run only after 006 is recorded, i.e. after every staged copy finished, so nothing unstaged
 *   is ever dropped. Rerunning 007 after a crash inside it drops only new, still empty tables
 *   (the copy back is 008), which is why the drop and the copy back are separate files.
 * - `008` runs `restore_list_tables`: the staged rows into the new layout. List rows keep their
 *   bucket codes (the lists were already bucketed); `follows` rows go to `following` /
 *   `followers`, the rest to `relation_lists` with their direction. Each inverse edge goes to
 *   every bucket code its source has under the target's `in` layout (`writeBucketCodes`: both
 *   layouts if a growth was under way), exactly where the new writers put it.
 * - `009` drops the staging tables.
 *
 * Each copy resumes from its recorded page (`data-step.ts`), keeps every cell's write time (so
 * last-writer-wins between the copied rows and any later write is what it was), and counts rows
 * once. One runner at a time: the runner holds a lease (`migrate.ts`), because a second runner
 * replaying 007 while the first copies back in 008 would drop the half-restored tables.
 *
 * Limits. The migration is offline: the previous service version writes the old shapes, so stop
 * it first (the new version migrates at start-up before serving). List-row tombstones are not
 * copied (a scan returns live rows only); with no writer running nothing older can resurrect a
 * deleted row, and the edge state, which keeps `removed` edges as rows, is copied whole. `DROP
 * TABLE` takes an automatic snapshot on nodes with `auto_snapshot` on (the default), which is the
 * way back if needed; clear it with `nodetool clearsnapshot` after checking the result.
 */
import type cassandra from 'cassandra-driver';
import { writeBucketCodes } from '../../../model/buckets.js';
import type { BucketLayout, Direction, UserId } from '../../../model/types.js';
import { cellsOf, copyTable, type DataStep, type RowWrite, type TableCopy } from './data-step.js';

const LIST_KEY = ['user_id', 'relation', 'bucket', 'created_at', 'other_id'];
const EDGE_IN_KEY = ['target_id', 'relation', 'source_id'];
const EDGE_CELLS = ['state', 'position', 'created_at'];

/** A copy of `from` into `to` with the same columns. */
function twin(from: string, to: string, keyColumns: string[], cells: string[]): TableCopy {
  return {
    name: `${from} → ${to}`,
    from,
    keyColumns,
    cells,
    map: (row) => [
      {
        table: to,
        key: Object.fromEntries(keyColumns.map((k) => [k, row[k]])),
        cells: cellsOf(row, cells),
      },
    ],
  };
}

/** 006: the old tables into their staging twins. */
const stage: DataStep = async (ctx, step) => {
  for (const c of [
    twin('following', 'legacy_following', LIST_KEY, ['position']),
    twin('followers', 'legacy_followers', LIST_KEY, ['position']),
    twin('edges_in', 'legacy_edges_in', EDGE_IN_KEY, EDGE_CELLS),
  ]) {
    await copyTable(ctx, step, c);
  }
};

function listRestore(from: string, direction: Direction): TableCopy {
  const followsTable = direction === 'out' ? 'following' : 'followers';
  return {
    name: `${from} → ${followsTable} / relation_lists`,
    from,
    keyColumns: LIST_KEY,
    cells: ['position'],
    map: (row): RowWrite[] => {
      const entry = { bucket: row.bucket, created_at: row.created_at, other_id: row.other_id };
      const follows = row.relation === 'follows';
      return [
        {
          table: follows ? followsTable : 'relation_lists',
          key: follows
            ? { user_id: row.user_id, ...entry }
            : { user_id: row.user_id, relation: row.relation, direction, ...entry },
          cells: cellsOf(row, ['position']),
        },
      ];
    },
  };
}

/** Reads `in` layouts for the inverse-edge restore, remembering the current target's. */
function inLayouts(ctx: Parameters<DataStep>[0]) {
  const cache = new Map<string, Promise<BucketLayout>>();
  return (target: UserId, relation: string): Promise<BucketLayout> => {
    const key = `${target}|${relation}`;
    let hit = cache.get(key);
    if (!hit) {
      // Source rows arrive grouped by target, so a small cache suffices.
      if (cache.size > 10_000) cache.clear();
      hit = ctx.client
        .execute(
          `SELECT buckets, growing_to, copied_through FROM ${ctx.keyspace}.list_layouts WHERE user_id = ? AND relation = ? AND direction = 'in'`,
          [target, relation],
        )
        .then((rs) => {
          const r = rs.first();
          return r
            ? {
                buckets: r.buckets as number,
                growingTo: (r.growing_to as number | null) ?? null,
                copiedThrough: (r.copied_through as number | null) ?? 0,
              }
            : { buckets: 1, growingTo: null, copiedThrough: 0 };
        });
      cache.set(key, hit);
    }
    return hit;
  };
}

/** 008: the staged rows into the new layout. */
const restore: DataStep = async (ctx, step) => {
  const layoutOf = inLayouts(ctx);
  const edges: TableCopy = {
    name: 'legacy_edges_in → edges_in',
    from: 'legacy_edges_in',
    keyColumns: EDGE_IN_KEY,
    cells: EDGE_CELLS,
    map: async (row: cassandra.types.Row) => {
      const target = row.target_id as bigint;
      const source = row.source_id as bigint;
      const codes = writeBucketCodes(await layoutOf(target, row.relation as string), source);
      return codes.map((bucket) => ({
        table: 'edges_in',
        key: { target_id: target, relation: row.relation, bucket, source_id: source },
        cells: cellsOf(row, EDGE_CELLS),
      }));
    },
  };
  for (const c of [listRestore('legacy_following', 'out'), listRestore('legacy_followers', 'in'), edges]) {
    await copyTable(ctx, step, c);
  }
};

/** The data steps the `cql/` files name. */
export const LIST_TABLE_STEPS: Record<string, DataStep> = {
  stage_list_tables: stage,
  restore_list_tables: restore,
};
