/**
 * `jobs split-search`: splits the search partitions of follows lists that outgrew the bound
 * (`lists/reshape/search-split.ts`), a line per step. For each follows list of the given users (or of
 * every user) over `2 × --bucket-rows` members by its count, it first finishes a split left pending
 * by a crashed run, then measures every range and splits each one over `2 × --bucket-rows` rows into
 * ranges of `--bucket-rows`. Resumable by construction: a split resumes from its stored stage and
 * progress, and a re-run measures again. A list whose split another runner moved, or whose child
 * failed verification, is reported and skipped (exit status 1); the next run retries it. Run it
 * on a schedule (as the repair sweep): a range grows by the follows it gains between runs.
 */
import { ReshapeConflictError, ReshapeVerificationError } from '../lists/reshape/reshape.js';
import {
  type SearchSplitStep,
  type SearchSplitStore,
  splitOverfilledRanges,
} from '../lists/reshape/search-split.js';
import type { Direction, ListKey, UserId } from '../model/types.js';
import type { CountStore } from '../ports/count-store.js';
import { everyUser, listJobArgs } from './list-jobs.js';
import type { OpenJobRuntime } from './runtime.js';

export const SPLIT_SEARCH_USAGE =
  'usage: jobs split-search (--users 1,2 | --all) [--bucket-rows N] [--settle-ms N]';

const describeStep = (p: SearchSplitStep): string =>
  p.step === 'planned'
    ? `planned range ${p.parent} (${p.rows} rows) into ${p.children.length + 1} ranges; writers write both`
    : p.step === 'copied'
      ? `copied and verified range ${p.child} (${p.rows} rows)`
      : p.step === 'flipped'
        ? `flipped ${p.parent}: readers read the new ranges`
        : p.step === 'finalized'
          ? `finalized ${p.parent}: writers write the new ranges only`
          : `deleted ${p.parent}'s moved rows`;

export interface SplitSearchSummary {
  /** Lists measured (over the bound by their count, or with a split pending). */
  lists: number;
  /** Ranges measured. */
  measured: number;
  /** Ranges split. */
  splits: number;
  /** Lists skipped (another runner moved their split, or a child failed verification). */
  skipped: number;
}

/**
 * Splits the overfilled search ranges of `userId`'s two follows lists (finishing a split left
 * pending first), telling `log` a line per step; never throws for a skipped list.
 */
export async function splitSearchOfUser(
  store: SearchSplitStore & Pick<CountStore, 'getCount'>,
  userId: UserId,
  o: { settleMs: number; bucketRows: number; log: (line: string) => void },
): Promise<SplitSearchSummary> {
  const summary: SplitSearchSummary = { lists: 0, measured: 0, splits: 0, skipped: 0 };
  const name = (l: ListKey) => `${l.userId} follows/${l.direction}`;
  for (const direction of ['in', 'out'] as Direction[]) {
    const list: ListKey = { userId, relation: 'follows', direction };
    const d = await store.getDirectory(list);
    if (!d.search?.split && (await store.getCount(list)) <= 2 * o.bucketRows) continue;
    summary.lists++;
    let rows = 0;
    let ranges = 0;
    let shown = Date.now();
    try {
      const r = await splitOverfilledRanges(store, list, {
        settleMs: o.settleMs,
        rangeRows: o.bucketRows,
        onMeasured: (_range, n) => {
          rows += n;
          ranges++;
          if (Date.now() - shown >= 5000) {
            shown = Date.now();
            o.log(`${name(list)}: measured ${ranges} ranges, ${rows} rows`);
          }
        },
        onOverfilled: (range, n) =>
          o.log(`${name(list)}: range ${range.partition} holds ${n} rows, splitting`),
        onProgress: (p) => o.log(`${name(list)}: ${describeStep(p)}`),
      });
      summary.measured += r.ranges;
      summary.splits += r.splits;
      o.log(`${name(list)}: ${r.ranges} ranges, ${rows} rows, ${r.splits} split`);
    } catch (e) {
      if (!(e instanceof ReshapeConflictError || e instanceof ReshapeVerificationError)) throw e;
      summary.skipped++;
      o.log(`${name(list)}: skipped (${e.message})`);
    }
  }
  return summary;
}

/**
 * `jobs split-search`: `--settle-ms` must cover the servers' directory cache TTL plus their longest
 * write (default: the list service's); `--bucket-rows` is the rows a range keeps after a split
 * (default the time buckets' 250,000, about 15 MiB of search rows).
 */
export async function splitSearchCommand(argv: string[], openRuntime: OpenJobRuntime): Promise<void> {
  const { users, bucketRows, settleMs } = await listJobArgs(argv, SPLIT_SEARCH_USAGE);
  const rt = await openRuntime();
  const summary: SplitSearchSummary = { lists: 0, measured: 0, splits: 0, skipped: 0 };
  const log = (line: string) => console.log(`[split-search] ${line}`);
  try {
    for await (const userId of users ?? everyUser(rt.store)) {
      const r = await splitSearchOfUser(rt.store, userId, { settleMs, bucketRows, log });
      summary.lists += r.lists;
      summary.measured += r.measured;
      summary.splits += r.splits;
      summary.skipped += r.skipped;
    }
    console.log(
      `[split-search] ${summary.lists} lists measured (${summary.measured} ranges), ${summary.splits} ranges split, ` +
        `${summary.skipped} skipped (re-run later to retry them)`,
    );
    if (summary.skipped > 0) process.exitCode = 1;
  } finally {
    await rt.close();
  }
}
