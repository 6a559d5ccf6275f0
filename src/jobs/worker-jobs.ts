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
 * - `relay`: the settled feed to Kafka (`relay.ts`), one run for as long as the lease is held. Its
 *   cursor is the position, saved in the lease row after each acknowledged page (fenced: a relay
 *   taken over saves no cursor that stands, and stops at its next page), so a takeover resumes at
 *   the last acknowledged page: at-least-once, as the relay promises. A run ends only when aborted
 *   (the lease lost, the worker stopping), which keeps the position. Its first run starts from the
 *   relay's cursor in `relay_cursors` (where `jobs relay` keeps it), and each cursor saved in the
 *   lease is written there after, for the relay-lag metric and a later `jobs relay` — a write that
 *   follows a fenced one, so only a holder paused between the two can set it back, until the next
 *   page of the new holder.
 *
 * The walks (`split-search`, `split-buckets`, `repair-sweep`, `index-search`, `suggest`) run on a
 * store under an hourly request budget (`request-budget.ts`, `requestsPerHour`), a bucket per run;
 * the count reconciler and the relay follow the write rate and are not budgeted.
 *
 * Writes these jobs make elsewhere are idempotent repairs (a recount, a pair rewritten from its
 * history, a split stage done again) and need no fence: a second holder doing one again changes
 * nothing.
 */
import type { WorkerJobName } from '../config.js';
import type { EventFeed } from '../graph/contracts.js';
import type { ListService } from '../lists/contracts.js';
import type { Timers } from '../model/timers.js';
import type { UserId } from '../model/types.js';
import type { GraphStore } from '../ports/graph-store.js';
import type { SweepProgress } from '../ports/records.js';
import { indexSearch } from './index-search.js';
import { userPages } from './list-jobs.js';
import { type ReconcileDirtyOptions, reconcileDirty } from './reconcile-dirty.js';
import type { RelaySink } from './relay.js';
import { repairSweep } from './repair-sweep.js';
import { budgetedStore, RequestBudget } from './request-budget.js';
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
  /** The walking jobs' store calls an hour at most (absent or 0: no budget). */
  requestsPerHour?: number;
  /** The budget's clock (tests). */
  timers?: Timers;
  /** Called at the end of each budgeted run with what its budget counted (tests, logs). */
  onBudget?: (job: WorkerJobName, stats: { taken: number; waitedMs: number }) => void;
  log: (job: WorkerJobName, line: string) => void;
  /** The process's clock guard: the count reconciler writes only while it holds. */
  clockGuard?: ReconcileDirtyOptions['clockGuard'];
  /** The settled feed the relay reads (built on first use). */
  feed?: () => EventFeed;
  /** The relay's topic; the relay job fails without it. */
  relay?: { brokers: readonly string[]; topic: string; name: string; batch: number };
  /** The relay's sink (tests); a Kafka producer on `relay`'s brokers and topic by default. */
  relaySink?: () => RelaySink;
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
  /** `work` on the store under a fresh budget for this run (or the plain store without one). */
  const budgeted =
    (work: (store: GraphStore, run: JobRun) => Promise<{ rows: number }>) =>
    async (run: JobRun): Promise<{ rows: number }> => {
      if (!deps.requestsPerHour) return work(deps.store, run);
      const budget = new RequestBudget(deps.requestsPerHour, deps.timers);
      try {
        return await work(budgetedStore(deps.store, budget, run.signal), run);
      } finally {
        const stats = budget.stats();
        deps.onBudget?.(name, stats);
        log(
          `${stats.taken} store calls, ${(stats.waitedMs / 1000).toFixed(1)} s waited for the request budget`,
        );
      }
    };
  const jobs: Record<WorkerJobName, ScheduledJob['run']> = {
    'split-search': budgeted((store, run) =>
      walkUsers(store, run, async (userId) => {
        await splitSearchOfUser(store, userId, { ...listJob, log });
      }),
    ),
    'split-buckets': budgeted((store, run) =>
      walkUsers(store, run, async (userId) => {
        await splitOverfilledBuckets(store, timeBucketedLists(store, [userId]), {
          ...listJob,
          onList: (list, outcome, detail) =>
            log(
              `${list.userId} ${list.relation}/${list.direction}: ${outcome}${detail ? ` (${detail})` : ''}`,
            ),
        });
      }),
    ),
    'repair-sweep': budgeted(async (store, run) => {
      const report = await repairSweep(
        { store: progressInLease(store, run), lists: deps.lists },
        { resume: true, rate: deps.sweepRowsPerSecond },
      );
      log(
        `${report.rows} rows swept, ${report.repairedPairs} pairs repaired, ${report.markedDirty} buckets marked`,
      );
      return { rows: report.rows };
    }),
    'index-search': budgeted(async (store, run) => {
      const r = await indexSearch(progressInLease(store, run));
      return { rows: r.rows };
    }),
    'reconcile-dirty': async () => {
      const r = await reconcileDirty(deps.store, deps.clockGuard ? { clockGuard: deps.clockGuard } : {});
      return { rows: r.rows };
    },
    suggest: budgeted(async (store) => {
      const r = await runSuggestions(store, { top: 100, limitFanout: 5000, log });
      return { rows: r.written };
    }),
    relay: (run) => relayRun(deps, run, log),
  };
  return { name, run: jobs[name] };
}

/** One run of the relay job (see the design note): until the lease is lost or the worker stops. */
async function relayRun(
  deps: WorkerJobDeps,
  run: JobRun,
  log: (line: string) => void,
): Promise<{ rows: number }> {
  const { relay, feed } = deps;
  if (!relay || !feed) throw new Error('the relay job needs WORKER_RELAY_BROKERS');
  const { kafkaSink, runRelay } = await import('./relay.js');
  const sink =
    deps.relaySink?.() ??
    kafkaSink({ brokers: relay.brokers, topic: relay.topic, clientId: `flocklist-worker-${relay.name}` });
  try {
    await runRelay({
      feed: feed(),
      name: relay.name,
      batch: relay.batch,
      sink,
      signal: run.signal,
      cursors: {
        getRelayCursor: async (name) => run.position ?? (await deps.store.getRelayCursor(name)),
        putRelayCursor: async (name, cursor) => {
          await run.save(cursor);
          await deps.store.putRelayCursor(name, cursor);
        },
      },
      onProgress: (p) =>
        log(
          `${p.events} events, ${Math.round(p.rate)}/s, lag ${p.lagSeconds === null ? '-' : `${p.lagSeconds.toFixed(1)} s`}`,
        ),
    });
  } finally {
    await sink.close();
  }
  // The relay returns only once aborted; a run that ended would clear the position (the cursor).
  run.signal.throwIfAborted();
  throw new Error('the relay stopped without being aborted');
}
