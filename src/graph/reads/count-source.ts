/**
 * Which copy of the counts a counts read uses. Every write goes to both copies, the list
 * tables (`list_counts`, `bucket_counts`) and the account tables (`user_counts`,
 * `user_count_state`, two single-partition reads per account); the account tables serve reads only
 * once `jobs migrate-counts` has recounted every list into them and set its cluster-wide marker
 * (its `sweep_progress` row, `done`).
 *
 * Design note. The marker only ever goes from unset to set, and both copies stay correct while
 * both are written, so a process may switch late: the first counts read of a process waits for
 * one read of the marker, later ones re-read it in the background at most every `refreshMs` until
 * it is set, and from then on never read it again. A failed marker read leaves the list tables in
 * use (correct, only dearer) and is retried on a later read.
 */
import type { ScanStore } from '../../ports/scan-store.js';

/** The `sweep_progress` job whose finished row is the marker. */
export const COUNTS_MIGRATION_JOB = 'migrate-counts';

/** How often a process re-reads an unset marker (ms). */
export const COUNTS_MARKER_REFRESH_MS = 30_000;

/** `auto`: the marker decides; `accounts` / `lists`: forced (benchmarks and tests). */
export type CountsFrom = 'auto' | 'accounts' | 'lists';

export class CountSource {
  private migrated = false;
  private checkedAt: number | null = null;
  private inFlight: Promise<void> | null = null;

  constructor(
    private readonly store: Pick<ScanStore, 'getSweepProgress'>,
    private readonly from: CountsFrom = 'auto',
    private readonly refreshMs = COUNTS_MARKER_REFRESH_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Whether counts are read from the account tables. */
  async accountTables(): Promise<boolean> {
    if (this.from !== 'auto') return this.from === 'accounts';
    if (this.migrated) return true;
    if (this.checkedAt === null) await this.refresh();
    else if (this.now() - this.checkedAt >= this.refreshMs) void this.refresh();
    return this.migrated;
  }

  /** Reads the marker now (one read; concurrent callers share it). Never throws. */
  refresh(): Promise<void> {
    this.inFlight ??= (async () => {
      try {
        const p = await this.store.getSweepProgress(COUNTS_MIGRATION_JOB);
        if (p?.done) this.migrated = true;
        this.checkedAt = this.now();
      } catch {
        // Stays on the list tables; the next read tries again.
      } finally {
        this.inFlight = null;
      }
    })();
    return this.inFlight;
  }
}
