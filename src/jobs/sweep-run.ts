/**
 * One resumable job run kept in its `sweep_progress` row: what the repair sweep, `migrate-counts`
 * and `index-search` share. A run resumes the saved row when it is unfinished and resuming is
 * asked for (each job decides when: the sweep on `--resume`, the others unless `--restart`),
 * keeping its run id and its totals (saved as JSON, read over the fresh totals so a field added
 * since starts at its fresh value); otherwise it starts fresh. `save` writes the row with where the
 * run stands and the totals as they are then.
 */
import { randomUUID } from 'node:crypto';
import type { ScanTable, SweepProgress } from '../ports/records.js';
import type { ScanStore } from '../ports/scan-store.js';

export interface SweepRun<T> {
  /** The job's row as it was read (finished or not), or null: what a job checks before running. */
  saved: SweepProgress | null;
  /** The unfinished row this run continues, or null when it starts fresh. */
  resumed: SweepProgress | null;
  runId: string;
  /** The totals: the resumed run's, else fresh; change them in place, `save` writes them. */
  totals: T;
  /** Writes the row: where the run stands (one range of the ring unless said) and the totals. */
  save(
    at: { table: ScanTable; lastToken: bigint | null; ranges?: number; rangeIndex?: number },
    done: boolean,
  ): Promise<void>;
}

/**
 * Opens `job`'s run: reads its row and resumes it when `resume` and it is unfinished.
 *
 * @example
 * const run = await openSweepRun(store, 'index_search', { resume: !restart, fresh: () => ({ rows: 0 }) });
 * run.totals.rows += page.length;
 * await run.save({ table: 'users', lastToken }, false);
 */
export async function openSweepRun<T extends object>(
  store: Pick<ScanStore, 'getSweepProgress' | 'putSweepProgress'>,
  job: string,
  o: { resume: boolean; fresh: () => T; newRunId?: () => string },
): Promise<SweepRun<T>> {
  const saved = await store.getSweepProgress(job);
  const resumed = o.resume && saved && !saved.done ? saved : null;
  const runId = resumed?.runId ?? (o.newRunId ?? randomUUID)();
  const totals: T = resumed ? { ...o.fresh(), ...(JSON.parse(resumed.totals) as Partial<T>) } : o.fresh();
  return {
    saved,
    resumed,
    runId,
    totals,
    save: (at, done) =>
      store.putSweepProgress({
        job,
        runId,
        ranges: at.ranges ?? 1,
        rangeIndex: at.rangeIndex ?? 0,
        table: at.table,
        lastToken: at.lastToken,
        totals: JSON.stringify(totals),
        done,
      }),
  };
}
