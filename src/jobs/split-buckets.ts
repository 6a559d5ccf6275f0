/**
 * `jobs split-buckets`: finds closed time buckets overfilled by old-time writes (admin replays,
 * imports) and splits them (`lists/reshape/bucket-split.ts`), a line per step. For each list of the given
 * users (or of every user) it first finishes a split left pending by a crashed run, then counts
 * the rows of every closed bucket within its range and splits each one over `2 × bucketRows`.
 * Resumable by construction: a split resumes from its stored stage and progress, and a re-run
 * measures again, so running the command again finishes whatever a crash left. A list whose split
 * another runner moved, that cannot be split now, or whose child failed verification is reported
 * and skipped (exit status 1); the next run retries it.
 */
import {
  overfilledBuckets,
  SplitBlockedError,
  type SplitOptions,
  type SplitStep,
  splitBucket,
} from '../lists/reshape/bucket-split.js';
import { ReshapeConflictError, ReshapeVerificationError } from '../lists/reshape/reshape.js';
import { nowPosition } from '../model/clock.js';
import type { ListKey, UserId } from '../model/types.js';
import type { ListStore } from '../ports/list-store.js';
import { everyUser, listJobArgs, listsOf } from './list-jobs.js';
import type { OpenJobRuntime } from './runtime.js';

export type SplitListOutcome = 'split' | 'fine' | 'skipped';

export interface SplitBucketsOptions extends Omit<SplitOptions, 'onProgress'> {
  /** Told after each step of each split. */
  onStep?: (list: ListKey, step: SplitStep) => void;
  /** Told once per bucket measured over the limit, before it is split. */
  onOverfilled?: (list: ListKey, bucket: number, rows: number) => void;
  /** Told once per list that was split or skipped (`detail`: why it was skipped). */
  onList?: (list: ListKey, outcome: SplitListOutcome, detail?: string) => void;
}

export interface SplitBucketsSummary {
  /** Lists looked at. */
  lists: number;
  /** Buckets split (a resumed split counts once). */
  splits: number;
  /** Lists skipped (re-run to retry). */
  skipped: number;
}

/** Splits the overfilled closed buckets of every list of `lists`; never throws for a skipped list. */
export async function splitOverfilledBuckets(
  store: ListStore,
  lists: AsyncIterable<ListKey> | Iterable<ListKey>,
  o: SplitBucketsOptions,
): Promise<SplitBucketsSummary> {
  const summary: SplitBucketsSummary = { lists: 0, splits: 0, skipped: 0 };
  const { onStep, onOverfilled, onList, ...options } = o;
  for await (const list of lists) {
    summary.lists++;
    const split = { ...options, ...(onStep ? { onProgress: (p: SplitStep) => onStep(list, p) } : {}) };
    let splits = 0;
    try {
      if ((await store.getDirectory(list)).split) {
        await splitBucket(store, list, null, split);
        splits++;
      }
      const now = (options.clock ?? nowPosition)();
      for (const b of await overfilledBuckets(store, list, 2 * options.bucketRows, now, options.pageSize)) {
        onOverfilled?.(list, b.bucket, b.rows);
        const r = await splitBucket(store, list, b.bucket, split);
        if (r.outcome === 'split') splits++;
      }
      summary.splits += splits;
      if (splits > 0) onList?.(list, 'split');
    } catch (e) {
      if (
        !(
          e instanceof SplitBlockedError ||
          e instanceof ReshapeConflictError ||
          e instanceof ReshapeVerificationError
        )
      )
        throw e;
      summary.splits += splits;
      summary.skipped++;
      onList?.(list, 'skipped', e.message);
    }
  }
  return summary;
}

/** Every list (relation, direction) of `users` that holds time buckets or a pending split. */
export async function* timeBucketedLists(
  store: Pick<ListStore, 'getDirectory'>,
  users: AsyncIterable<UserId> | Iterable<UserId>,
): AsyncGenerator<ListKey> {
  for await (const list of listsOf(users)) {
    const d = await store.getDirectory(list);
    if (d.buckets.length > 1 || d.split) yield list;
  }
}

export const SPLIT_BUCKETS_USAGE =
  'usage: jobs split-buckets (--users 1,2 | --all) [--bucket-rows N] [--settle-ms N]';

/**
 * `jobs split-buckets`: `--settle-ms` must cover the servers' directory cache TTL plus their
 * longest write (default: the list service's defaults); `--bucket-rows` is their `timeBucketRows`
 * (buckets over twice that are split into pieces of that size).
 */
export async function splitBucketsCommand(argv: string[], openRuntime: OpenJobRuntime): Promise<void> {
  const { users, bucketRows, settleMs } = await listJobArgs(argv, SPLIT_BUCKETS_USAGE);
  const rt = await openRuntime();
  const name = (l: ListKey) => `${l.userId} ${l.relation}/${l.direction}`;
  try {
    const summary = await splitOverfilledBuckets(
      rt.store,
      timeBucketedLists(rt.store, users ?? everyUser(rt.store)),
      {
        settleMs,
        bucketRows,
        onOverfilled: (list, bucket, rows) =>
          console.log(`[split-buckets] ${name(list)}: bucket ${bucket} holds ${rows} rows, splitting`),
        onStep: (list, p) => {
          const what =
            p.step === 'planned'
              ? `planned bucket ${p.parent} into children ${p.children.join(', ')} (${p.rows} rows); writers write both`
              : p.step === 'copied'
                ? `copied and verified child ${p.child} (${p.rows} rows)`
                : p.step === 'flipped'
                  ? 'flipped: readers read the children'
                  : p.step === 'finalized'
                    ? 'finalized: writers write the children only'
                    : `deleted bucket ${p.parent}'s moved rows`;
          console.log(`[split-buckets] ${name(list)}: ${what}`);
        },
        onList: (list, outcome, detail) => {
          if (outcome === 'skipped') console.log(`[split-buckets] ${name(list)}: skipped (${detail})`);
        },
      },
    );
    console.log(
      `[split-buckets] ${summary.lists} lists measured, ${summary.splits} buckets split, ` +
        `${summary.skipped} skipped (re-run later to retry them)`,
    );
    if (summary.skipped > 0) process.exitCode = 1;
  } finally {
    await rt.close();
  }
}
