/**
 * The worker: runs each maintenance job on its own schedule, one holder at a time across every
 * worker process, resuming where the last run stopped.
 *
 * Design note. Each job has a lease (`graph/lease.ts`, named `job:<name>`) whose row also keeps the
 * job's schedule and position (`JobState`, JSON in the lease's saved state). Every tick, for each
 * job not running here, the worker reads that row and runs the job when it is due: its position is
 * set (a run stopped part way: a crash, a lost lease, a failure), or its last start is a period
 * ago, or its last failure a backoff ago. It then takes the lease, reads the state again under it
 * (another worker may have run the period meanwhile), saves the start, and runs the job, which
 * saves its position through the lease after each unit of work — fenced by the generation, so a
 * worker paused past its lease and taken over writes no position that stands and stops at its next
 * save. A row read as not due is not read again until it is due, or `LOOK_CAP_MS` at most (an idle
 * worker reads each job's row about twice a minute, not every tick): no worker can start the job
 * before then, and a run that fails elsewhere backs off under its own worker, which reads its row
 * again at its next tick. What `jobs()` tells of another worker's runs is therefore up to that cap
 * old. A run that ends clears the position and records its rows and duration; one that fails
 * keeps the position, counts the failure and backs off (doubling from `backoffMs`, at most a
 * period), so a job failing every time neither spins nor stops. Schedules count from the last
 * start, so a period is never skipped while some worker is healthy, and never run twice: the
 * start is saved under the lease before the work. Jobs that keep their own progress elsewhere
 * (the repair sweep's `sweep_progress`) are given a store whose progress reads and writes go
 * through the lease instead (`worker-jobs.ts`).
 */
import { Lease, LeaseLostError } from '../graph/lease.js';
import { SYSTEM_TIMERS, type Timers } from '../model/timers.js';
import { NO_TRACER, type Tracer } from '../model/tracing.js';
import type { LeaseStore } from '../ports/lease-store.js';

/** What a job is given for one run. */
export interface JobRun {
  /** What the last run saved (`save`), or null at the start of a period. */
  position: string | null;
  /** Saves the position, fenced by the lease; throws `LeaseLostError` once the lease is lost. */
  save(position: string): Promise<void>;
  /** Aborted when the lease is lost or the worker stops. */
  signal: AbortSignal;
  /** The lease's generation, for writes that must carry the fence themselves. */
  generation: bigint;
}

/** One maintenance job. */
export interface ScheduledJob {
  name: string;
  /**
   * One run, from `run.position`: does the period's work, saving its position after each unit, and
   * returns the rows it handled. A run may throw; the next one resumes from the saved position.
   */
  run(run: JobRun): Promise<{ rows: number }>;
}

/** What the lease row keeps for a job (its saved state, as JSON). */
export interface JobState {
  /** The unfinished run's position, or null. */
  position: string | null;
  lastStartMs: number | null;
  lastEndMs: number | null;
  lastRows: number | null;
  /** Failures since the last run that ended. */
  failures: number;
  lastFailureMs: number | null;
  lastError: string | null;
}

const EMPTY: JobState = {
  position: null,
  lastStartMs: null,
  lastEndMs: null,
  lastRows: null,
  failures: 0,
  lastFailureMs: null,
  lastError: null,
};

/** The job state saved in a lease row (a missing or foreign value reads as empty). */
export function parseJobState(saved: string | null): JobState {
  if (!saved) return { ...EMPTY };
  try {
    return { ...EMPTY, ...(JSON.parse(saved) as Partial<JobState>) };
  } catch {
    return { ...EMPTY };
  }
}

/** When `state`'s job is next due (ms), for a period of `everyMs` and a first backoff of `backoffMs`. */
export function nextDueMs(state: JobState, everyMs: number, backoffMs: number): number {
  if (state.failures > 0 && state.lastFailureMs !== null) {
    return state.lastFailureMs + Math.min(everyMs, backoffMs * 2 ** Math.min(30, state.failures - 1));
  }
  if (state.position !== null || state.lastStartMs === null) return Number.NEGATIVE_INFINITY;
  return state.lastStartMs + everyMs;
}

/** The longest a job's row read as not due goes unread (ms): what `jobs()` may lag another worker by. */
export const LOOK_CAP_MS = 30_000;

/** What the worker reports of a job (metrics, the health route). */
export interface JobStatus {
  name: string;
  everyMs: number;
  /** Whether this worker is running it now. */
  running: boolean;
  /** The saved state as this worker last read it (null before the first read). */
  state: JobState | null;
  /** The holder named in the lease row as last read, and its generation. */
  holder: string | null;
  generation: bigint | null;
}

/** What the worker tells about runs (metrics, logs). */
export interface WorkerEvents {
  onRun?(job: string, outcome: 'ok' | 'failed' | 'lost', ms: number, rows: number, error?: unknown): void;
  onTickError?(error: unknown): void;
}

export interface WorkerOptions {
  leases: LeaseStore;
  jobs: { job: ScheduledJob; everyMs: number }[];
  /** This process's name among the holders (unique: host, pid and a random part). */
  holder: string;
  /** S, the clock guard's bound (the lease's margin). */
  clockBoundMs: number;
  /** The leases' TTL (default 30 s). */
  leaseTtlMs?: number;
  /** How often due jobs are looked for (default 1 s). */
  tickMs?: number;
  /** The first backoff after a failure, doubled per failure up to the job's period (default 10 s). */
  backoffMs?: number;
  timers?: Timers;
  events?: WorkerEvents;
  /** Each run in a root span `job <name>` (its statements' spans under it); none by default. */
  tracer?: Tracer;
}

export class Worker {
  private readonly timers: Timers;
  private readonly running = new Map<string, { lease: Lease; done: Promise<void> }>();
  private readonly status = new Map<string, JobStatus>();
  /** Per job, when its row is next read (ms): not before it is due, as last read. */
  private readonly nextLookMs = new Map<string, number>();
  private stopTicking: (() => void) | null = null;
  private ticking: Promise<void> = Promise.resolve();
  private stopped = false;
  private lastTickOk = false;

  constructor(private readonly o: WorkerOptions) {
    this.timers = o.timers ?? SYSTEM_TIMERS;
    for (const { job, everyMs } of o.jobs) {
      if (this.status.has(job.name)) throw new Error(`job ${job.name} is scheduled twice`);
      this.status.set(job.name, {
        name: job.name,
        everyMs,
        running: false,
        state: null,
        holder: null,
        generation: null,
      });
    }
  }

  /** Ticks every `tickMs` until `stop()`; the first tick at once. */
  start(): void {
    if (this.stopTicking || this.stopped) return;
    const tick = () => {
      this.ticking = this.ticking.then(() => this.tick());
    };
    this.stopTicking = this.timers.every(this.o.tickMs ?? 1000, tick);
    tick();
  }

  /** Stops ticking, aborts the runs in progress (each keeps its saved position) and waits for them. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopTicking?.();
    await this.ticking;
    const runs = [...this.running.values()];
    await Promise.all(runs.map((r) => r.lease.release()));
    await Promise.all(runs.map((r) => r.done));
  }

  /** Looks once for due jobs and starts them (without waiting for their runs). */
  async tick(): Promise<void> {
    try {
      for (const { job, everyMs } of this.o.jobs) {
        if (this.stopped) return;
        if (this.running.has(job.name)) continue;
        await this.maybeStart(job, everyMs);
      }
      this.lastTickOk = true;
    } catch (e) {
      this.lastTickOk = false;
      this.o.events?.onTickError?.(e);
    }
  }

  /** Waits for the runs started so far (tests). */
  async idle(): Promise<void> {
    await this.ticking;
    await Promise.all([...this.running.values()].map((r) => r.done));
  }

  /** Each job's status, in schedule order. */
  jobs(): JobStatus[] {
    return [...this.status.values()].map((s) => ({ ...s, state: s.state && { ...s.state } }));
  }

  /** Whether the last tick could read the leases (the database reachable). */
  healthy(): boolean {
    return this.lastTickOk;
  }

  private async maybeStart(job: ScheduledJob, everyMs: number): Promise<void> {
    const backoffMs = this.o.backoffMs ?? 10_000;
    const name = `job:${job.name}`;
    const status = this.status.get(job.name) as JobStatus;
    const now = this.timers.nowMs();
    if (now < (this.nextLookMs.get(job.name) ?? 0)) return;
    const row = await this.o.leases.getLease(name);
    status.state = parseJobState(row?.state ?? null);
    status.holder = row?.holder ?? null;
    status.generation = row?.generation ?? null;
    const due = nextDueMs(status.state, everyMs, backoffMs);
    if (now < due) {
      this.nextLookMs.set(job.name, Math.min(due, now + LOOK_CAP_MS));
      return;
    }
    const lease = await Lease.acquire({
      store: this.o.leases,
      name,
      holder: this.o.holder,
      clockBoundMs: this.o.clockBoundMs,
      timers: this.timers,
      ...(this.o.leaseTtlMs ? { ttlMs: this.o.leaseTtlMs } : {}),
    });
    if (!lease) return;
    const state = parseJobState(lease.savedState);
    Object.assign(status, { state, holder: this.o.holder, generation: lease.generation });
    if (this.timers.nowMs() < nextDueMs(state, everyMs, backoffMs) || this.stopped) {
      await lease.release();
      return;
    }
    const done = this.run(job, lease, state).finally(() => {
      // Whatever the run left (an end, a failure's backoff, a lost lease), the next tick reads it.
      this.nextLookMs.delete(job.name);
      this.running.delete(job.name);
      status.running = false;
    });
    this.running.set(job.name, { lease, done });
    status.running = true;
  }

  private async run(job: ScheduledJob, lease: Lease, before: JobState): Promise<void> {
    const status = this.status.get(job.name) as JobStatus;
    const startMs = this.timers.nowMs();
    const started = performance.now();
    let state: JobState = { ...before, lastStartMs: before.position === null ? startMs : before.lastStartMs };
    const save = async (s: JobState) => {
      await lease.save(JSON.stringify(s));
      state = s;
      status.state = { ...s };
    };
    try {
      await save(state);
      const { rows } = await (this.o.tracer ?? NO_TRACER).span(
        `job ${job.name}`,
        () =>
          job.run({
            position: state.position,
            save: (position) => save({ ...state, position }),
            signal: lease.signal,
            generation: lease.generation,
          }),
        {
          'job.name': job.name,
          'job.generation': String(lease.generation),
          'job.resumed': state.position !== null,
        },
      );
      lease.assertHeld();
      await save({
        ...state,
        position: null,
        lastEndMs: this.timers.nowMs(),
        lastRows: rows,
        failures: 0,
        lastFailureMs: null,
        lastError: null,
      });
      this.o.events?.onRun?.(job.name, 'ok', performance.now() - started, rows);
    } catch (e) {
      if (e instanceof LeaseLostError || !lease.held()) {
        this.o.events?.onRun?.(job.name, 'lost', performance.now() - started, 0, e);
        return;
      }
      this.o.events?.onRun?.(job.name, 'failed', performance.now() - started, 0, e);
      await save({
        ...state,
        failures: state.failures + 1,
        lastFailureMs: this.timers.nowMs(),
        lastError: String(e instanceof Error ? e.message : e).slice(0, 500),
      }).catch(() => {});
    } finally {
      await lease.release();
    }
  }
}
