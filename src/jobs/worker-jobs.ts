/**
 * The maintenance jobs as the worker runs them (`worker.ts`): the jobs' own code, each given a
 * position that lives in its lease row.
 *
 * - `split-search`, `split-buckets`: a token-order walk of every user, 500 a page; the position
 *   is the last page's token, saved after each page. A list split part way resumes from its
 *   stored stage whoever runs it next (the splits' own protocol).
 * - `repair-sweep`, `index-search`: their runs keep their progress as a `sweep_progress` row; here
 *   they get a store whose progress reads and writes go to the lease row instead, fenced by its
 *   generation, so a worker that lost the lease saves no progress that stands. (A run of the same
 *   job from the CLI keeps its own row, apart from the worker's.)
 * - `reconcile-dirty`: one pass of the count reconciler over the buckets writers marked (no
 *   position: a pass starts from the marks). The service runs it in every instance unless
 *   `GRAPH_RECONCILE_INTERVAL_MS=0`; schedule it here instead to run it once per deployment.
 * - `suggest`: the friend-of-friend suggestions, one whole run (its snapshot is in memory).
 *
 * Writes these jobs make elsewhere are idempotent repairs (a recount, a pair rewritten from its
 * history, a split stage done again) and need no fence: a second holder doing one again changes
 * nothing.
 */
import type { WorkerJobName } from '../config.js';
import type { ListService } from '../lists/contracts.js';
import type { UserId } from '../model/types.js';
import type { GraphStore } from '../ports/graph-store.js';
import type { SweepProgress } from '../ports/records.js';
import { indexSearch } from './index-search.js';
import { userPages } from './list-jobs.js';
import { type ReconcileDirtyOptions, reconcileDirty } from './reconcile-dirty.js';
import { repairSweep } from './repair-sweep.js';
import { splitOverfilledBuckets, timeBucketedLists } from './split-buckets.js';
import { splitSearchOfUser } from './split-search.js';
import { runSuggestions } from './suggest.js';
import type { JobRun, ScheduledJob } from './worker.js';

export interface WorkerJobDeps {
  store: GraphStore;
  lists: ListService;
  /** The list jobs' settle (the servers' directory cache TTL plus their longest write). */
  settleMs: number;
  /** Rows a time bucket or a search range keeps after a split. */
  bucketRows: number;
  /** The repair sweep's rows read per second at most. */
  sweepRowsPerSecond: number;
  log: (job: WorkerJobName, line: string) => void;
  /** The process's clock guard: the count reconciler writes only while it holds. */
  clockGuard?: ReconcileDirtyOptions['clockGuard'];
}

const USERS_PAGE = 500;

/** Every user after `run.position` (a token) in token order, `perUser` each, the position saved after each page. */
export async function walkUsers(
  store: GraphStore,
  run: JobRun,
  perUser: (userId: UserId) => Promise<void>,
): Promise<{ rows: number }> {
  let rows = 0;
  for await (const page of userPages(
    store,
    run.position === null ? null : BigInt(run.position),
    USERS_PAGE,
  )) {
    for (const userId of page.users) {
      run.signal.throwIfAborted();
      await perUser(userId);
    }
    rows += page.partitions;
    if (page.more) await run.save(String(page.lastToken));
  }
  return { rows };
}

type ProgressJson = Omit<SweepProgress, 'lastToken'> & { lastToken: string | null };

/** `store` with its sweep progress kept in the lease row (`run`) rather than `sweep_progress`. */
export function progressInLease(store: GraphStore, run: JobRun): GraphStore {
  const kept = new Map<string, SweepProgress>();
  if (run.position !== null) {
    const p = JSON.parse(run.position) as ProgressJson;
    kept.set(p.job, { ...p, lastToken: p.lastToken === null ? null : BigInt(p.lastToken) });
  }
  return Object.assign(Object.create(store) as GraphStore, {
    getSweepProgress: async (job: string) => kept.get(job) ?? null,
    putSweepProgress: async (p: SweepProgress) => {
      run.signal.throwIfAborted();
      const json: ProgressJson = { ...p, lastToken: p.lastToken === null ? null : String(p.lastToken) };
      await run.save(JSON.stringify(json));
      kept.set(p.job, p);
    },
  });
}

/** The worker's job `name` on `deps`. */
export function workerJob(name: WorkerJobName, deps: WorkerJobDeps): ScheduledJob {
  const log = (line: string) => deps.log(name, line);
  const listJob = { settleMs: deps.settleMs, bucketRows: deps.bucketRows };
  const jobs: Record<WorkerJobName, ScheduledJob['run']> = {
    'split-search': (run) =>
      walkUsers(deps.store, run, async (userId) => {
        await splitSearchOfUser(deps.store, userId, { ...listJob, log });
      }),
    'split-buckets': (run) =>
      walkUsers(deps.store, run, async (userId) => {
        await splitOverfilledBuckets(deps.store, timeBucketedLists(deps.store, [userId]), {
          ...listJob,
          onList: (list, outcome, detail) =>
            log(
              `${list.userId} ${list.relation}/${list.direction}: ${outcome}${detail ? ` (${detail})` : ''}`,
            ),
        });
      }),
    'repair-sweep': async (run) => {
      const report = await repairSweep(
        { store: progressInLease(deps.store, run), lists: deps.lists },
        { resume: true, rate: deps.sweepRowsPerSecond },
      );
      log(
        `${report.rows} rows swept, ${report.repairedPairs} pairs repaired, ${report.markedDirty} buckets marked`,
      );
      return { rows: report.rows };
    },
    'index-search': async (run) => {
      const r = await indexSearch(progressInLease(deps.store, run));
      return { rows: r.rows };
    },
    'reconcile-dirty': async () => {
      const r = await reconcileDirty(deps.store, deps.clockGuard ? { clockGuard: deps.clockGuard } : {});
      return { rows: r.rows };
    },
    suggest: async () => {
      const r = await runSuggestions(deps.store, { top: 100, limitFanout: 5000, log });
      return { rows: r.written };
    },
  };
  return { name, run: jobs[name] };
}
