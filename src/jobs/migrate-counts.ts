/**
 * `jobs migrate-counts`: moves counts reads onto the account tables (`cql/023`).
 *
 * Design note. The release that adds the account tables writes every increment, mark and clear to
 * both copies (`CountStore`), but the account tables' counters start at zero for the counts that
 * existed before it, so they serve reads only once every list that has counts was recounted into
 * them. This job does that recount, then sets the marker (`COUNTS_MIGRATION_JOB`'s
 * `sweep_progress` row, `done`) that switches readers (`graph/count-source.ts`):
 *
 *   1. it walks the partitions of `list_counts`, then of `bucket_counts`, in token order, a page
 *      at a time (each is one list: a list with a counter or a reconciliation);
 *   2. per list it recounts every read bucket as of `asOf` = its clock before the count, and
 *      writes both copies' corrections from that one recount (`recordRecount`), as the reconciler
 *      does: a write that completed before `asOf` is in the count and in both shard sums; one in
 *      flight is covered by its dirty mark, dated a lease ahead of its start, which this job never
 *      clears and the reconciler recounts later; a list of the second table whose account tables
 *      already show a recount since this run began is skipped;
 *   3. after every page it saves the table and the last token (a re-run resumes there: a crash
 *      recounts at most one page again, which is harmless) and the running totals;
 *   4. at the end it saves the row `done`: the marker.
 *
 * Why a recount and not a copy of the list tables' values: the two copies' shard sums are read in
 * two requests while increments land in both, so a copy could be off by a racing increment and
 * claim `exact`; the recount is the reconciler's own argument. Why the job recounts instead of
 * marking every list for the reconciler: the marker may be set only once every list's account
 * tables are right, which the job then knows without waiting on the reconciler's queue.
 *
 * Run it once every instance runs the release that writes both copies (an older instance's write
 * reaches only the list tables): the recount then covers every older write. `--users` recounts the
 * lists of the given accounts only and never sets the marker (benchmarks, spot repairs).
 */
import { registryFilter } from '../graph/accounts/account-state.js';
import { COUNTS_MIGRATION_JOB } from '../graph/reads/count-source.js';
import type { MemberFilter } from '../lists/contracts.js';
import { countBuckets } from '../lists/list-walker.js';
import { readBucketCodes } from '../model/buckets.js';
import { nowPosition } from '../model/clock.js';
import { type ListKey, type Position, RELATIONS, type UserId } from '../model/types.js';
import { MAX_TOKEN, MIN_TOKEN, type ScanTable } from '../ports/records.js';
import type { ScanStore } from '../ports/scan-store.js';
import { type ReconcileDirtyStore, recordRecount } from './reconcile-dirty.js';
import { openSweepRun } from './sweep-run.js';

/** The stores the job uses. */
export type MigrateCountsStore = ReconcileDirtyStore &
  Pick<ScanStore, 'scanPartitions' | 'getSweepProgress' | 'putSweepProgress'>;

/** The tables whose partitions name the lists with counts, in the order walked. */
const TABLES = ['list_counts', 'bucket_counts'] as const satisfies readonly ScanTable[];

export interface MigrateCountsTotals {
  /** Lists recounted. */
  lists: number;
  /** Lists of `bucket_counts` skipped: already recounted in this run. */
  skipped: number;
  /** Rows counted. */
  rows: number;
  /** When the run began (µs): a list recounted since needs no second recount. */
  startedAt: string;
}

export interface MigrateCountsOptions {
  /** Partitions per page (default 200). */
  pageSize?: number;
  /** Rows per `listBucket` read (default 5000). */
  rowsPerRead?: number;
  /** Told after every page: the table, the last token and the totals so far. */
  onPage?: (p: { table: ScanTable; lastToken: bigint; totals: MigrateCountsTotals }) => void;
  /** Told after every recounted list. */
  onList?: (list: ListKey, counted: number) => void;
  /** The clock (µs; default `nowPosition`). */
  now?: () => Position;
}

/** Recounts every read bucket of `list` into both copies of its counts; returns the rows counted. */
export async function recountList(
  store: ReconcileDirtyStore,
  list: ListKey,
  asOf: Position,
  exclude: MemberFilter,
  rowsPerRead = 5000,
): Promise<number> {
  const codes = readBucketCodes(await store.getLayout(list));
  const buckets = await countBuckets(store, list, codes, rowsPerRead, exclude);
  let counted = 0;
  for (const n of buckets.values()) counted += n;
  await recordRecount(store, list, counted, asOf, buckets);
  return counted;
}

/**
 * The whole migration (see the note above): resumes an unfinished run, and does nothing when the
 * marker is already set (`alreadyDone`).
 */
export async function migrateCounts(
  store: MigrateCountsStore,
  o: MigrateCountsOptions = {},
): Promise<MigrateCountsTotals & { alreadyDone: boolean }> {
  const now = o.now ?? nowPosition;
  const pageSize = o.pageSize ?? 200;
  const run = await openSweepRun<MigrateCountsTotals>(store, COUNTS_MIGRATION_JOB, {
    resume: true,
    fresh: () => ({ lists: 0, skipped: 0, rows: 0, startedAt: String(now()) }),
  });
  if (run.saved?.done) return { ...(JSON.parse(run.saved.totals) as MigrateCountsTotals), alreadyDone: true };
  const { resumed, totals } = run;
  const startedAt = BigInt(totals.startedAt);
  let tableIndex = resumed ? Math.max(0, TABLES.indexOf(resumed.table as (typeof TABLES)[number])) : 0;
  let lastToken: bigint | null = resumed?.lastToken ?? null;
  const save = (done: boolean) =>
    run.save({ table: TABLES[Math.min(tableIndex, TABLES.length - 1)] as ScanTable, lastToken }, done);
  const range = { start: MIN_TOKEN, end: MAX_TOKEN };
  for (; tableIndex < TABLES.length; tableIndex++, lastToken = null) {
    const table = TABLES[tableIndex] as ScanTable;
    for (;;) {
      const page = await store.scanPartitions(table, range, lastToken, pageSize);
      const exclude = registryFilter(store);
      for (const p of page) {
        if (p.key.table !== 'list_counts' && p.key.table !== 'bucket_counts') continue;
        const list = p.key.list;
        if (table === 'bucket_counts') {
          const kept = await store.getUserCountSync(list);
          if (kept.asOf !== null && kept.asOf >= startedAt) {
            totals.skipped++;
            continue;
          }
        }
        const counted = await recountList(store, list, now(), exclude, o.rowsPerRead);
        totals.lists++;
        totals.rows += counted;
        o.onList?.(list, counted);
      }
      const last = page.at(-1);
      if (last) {
        lastToken = last.token;
        await save(false);
        o.onPage?.({ table, lastToken, totals: { ...totals } });
      }
      if (page.length < pageSize) break;
    }
  }
  await save(true);
  return { ...totals, alreadyDone: false };
}

/** `--users`: recounts every list of the given accounts (every relation, both directions); no marker. */
export async function migrateCountsOfUsers(
  store: ReconcileDirtyStore,
  users: readonly UserId[],
  o: Pick<MigrateCountsOptions, 'onList' | 'now' | 'rowsPerRead'> = {},
): Promise<{ lists: number; rows: number }> {
  const out = { lists: 0, rows: 0 };
  const exclude = registryFilter(store);
  for (const userId of users)
    for (const relation of RELATIONS)
      for (const direction of ['out', 'in'] as const) {
        const list = { userId, relation, direction };
        const counted = await recountList(store, list, (o.now ?? nowPosition)(), exclude, o.rowsPerRead);
        out.lists++;
        out.rows += counted;
        o.onList?.(list, counted);
      }
  return out;
}
