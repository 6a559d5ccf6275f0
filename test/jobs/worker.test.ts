/**
 * The worker (`src/jobs/worker.ts`) on virtual time (`test/sim/scheduler.ts`) and the in-memory
 * lease store: two workers run a job once per period, never together, never skipping one; a worker
 * killed mid-run is taken over past its lease and the job resumes at its saved position; a holder
 * paused past its lease writes nothing that stands; a failing job backs off, doubling up to its
 * period. Seeded: each test prints its seed.
 */
import { describe, expect, it } from 'vitest';
import { LeaseLostError } from '../../src/graph/lease.js';
import {
  type JobRun,
  parseJobState,
  type ScheduledJob,
  Worker,
  type WorkerEvents,
  type WorkerOptions,
} from '../../src/jobs/worker.js';
import type { Timers } from '../../src/model/timers.js';
import type { Tracer } from '../../src/model/tracing.js';
import type { LeaseStore } from '../../src/ports/lease-store.js';
import { Scheduler } from '../sim/scheduler.js';
import { MemoryLeaseStore } from '../support/memory/lease-store.js';

const T0 = 1_800_000_000_000; // ms
const SEC = 1000;
const seedOf = (fallback: number) => {
  const seed = Number(process.env.SEED ?? fallback);
  console.log(`[worker] seed ${seed} (SEED=${seed} replays it)`);
  return seed;
};

/** Timers of one worker process on the schedule; `kill()` stops them for good, as a dead process's. */
function processTimers(sched: Scheduler, endMs: number) {
  let dead = false;
  const timers: Timers = sched.timers(() => !dead && sched.now / 1000 < endMs);
  return { timers, kill: () => (dead = true) };
}

const ms = (sched: Scheduler) => sched.now / 1000;

/** One worker (holder `a`) with one job every 60 s, ticking every second, backing off from 10 s. */
function soleWorker(
  leases: LeaseStore,
  job: ScheduledJob,
  timers: Timers,
  extra: Pick<WorkerOptions, 'events' | 'tracer'>,
): Worker {
  return new Worker({
    leases,
    holder: 'a',
    jobs: [{ job, everyMs: 60 * SEC }],
    clockBoundMs: 2 * SEC,
    tickMs: SEC,
    backoffMs: 10 * SEC,
    timers,
    ...extra,
  });
}

/** The memory lease store with each call taking 0–`maxMs` of virtual time before it applies and as long to answer. */
function laggy(sched: Scheduler, store: LeaseStore, maxMs: number): LeaseStore {
  const lag = () => sched.sleep(sched.int(0, maxMs) * 1000);
  const call =
    <A extends unknown[], R>(f: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      await lag();
      const r = await f(...a);
      await lag();
      return r;
    };
  return {
    getLease: call((n) => store.getLease(n)),
    listLeases: call((l) => store.listLeases(l)),
    takeLease: call((n, h, e, s) => store.takeLease(n, h, e, s)),
    updateLease: call((n, g, c) => store.updateLease(n, g, c)),
  };
}

describe('worker', () => {
  it('two workers, 30 periods, the store answering in 0–1.6 s: the job runs once a period, never two runs at once, no period skipped (seeded)', async () => {
    const seed = seedOf(11);
    const sched = new Scheduler(seed, T0 * 1000);
    const memory = new MemoryLeaseStore();
    const leases = laggy(sched, memory, 800);
    const every = 60 * SEC;
    const end = T0 + 30 * every;
    const starts: { at: number; by: string }[] = [];
    let active = 0;
    let most = 0;
    const job = (by: string, timers: Timers): ScheduledJob => ({
      name: 'fold',
      async run(run: JobRun) {
        starts.push({ at: ms(sched), by });
        most = Math.max(most, ++active);
        try {
          const units = sched.int(1, 5);
          for (let i = 0; i < units; i++) {
            await timers.sleep(sched.int(1, 4) * SEC);
            await run.save(String(i + 1));
          }
          return { rows: units };
        } finally {
          active--;
        }
      },
    });
    const workers = ['a', 'b'].map((holder) => {
      const { timers } = processTimers(sched, end);
      return new Worker({
        leases,
        holder,
        jobs: [{ job: job(holder, timers), everyMs: every }],
        clockBoundMs: 2 * SEC,
        leaseTtlMs: 30 * SEC,
        tickMs: SEC,
        timers,
      });
    });
    sched.after(0, () => workers[0]?.start());
    sched.after(sched.int(1, 999) * 1000, () => workers[1]?.start());
    await sched.run();
    // Between two starts: a period, plus the tick the due time fell in, plus the calls that
    // start a run (read, read and take, save: at most 4 × 1.6 s with this store).
    const gaps = starts.slice(1).map((s, i) => s.at - (starts[i]?.at ?? 0));
    const slack = SEC + 4 * 1600;
    expect({
      most,
      early: gaps.filter((g) => g < every),
      late: gaps.filter((g) => g > every + slack),
      enough: starts.length >= Math.floor((30 * every) / (every + slack)),
    }).toEqual({ most: 1, early: [], late: [], enough: true });
    console.log(
      `[worker] ${starts.length} runs, by ${starts.map((s) => s.by).join('')}, gaps ${Math.min(...gaps)}–${Math.max(...gaps)} ms`,
    );
  });

  it('a worker killed mid-run: another takes the lease once it expired + S and resumes at the saved position', async () => {
    const sched = new Scheduler(seedOf(5), T0 * 1000);
    const leases = new MemoryLeaseStore();
    const end = T0 + 10 * 60 * SEC;
    const done: { unit: number; by: string; at: number }[] = [];
    const runs: { by: string; outcome: string }[] = [];
    const procs = { a: processTimers(sched, end), b: processTimers(sched, end) };
    const job = (by: 'a' | 'b'): ScheduledJob => ({
      name: 'walk',
      async run(run) {
        for (let unit = Number(run.position ?? 0) + 1; unit <= 10; unit++) {
          await procs[by].timers.sleep(2 * SEC);
          done.push({ unit, by, at: ms(sched) });
          await run.save(String(unit));
          if (by === 'a' && unit === 4) procs.a.kill(); // dies right after saving unit 4
        }
        return { rows: 10 };
      },
    });
    const events = (by: string): WorkerEvents => ({ onRun: (_j, outcome) => runs.push({ by, outcome }) });
    const make = (by: 'a' | 'b', everyMs: number) =>
      new Worker({
        leases,
        holder: by,
        jobs: [{ job: job(by), everyMs }],
        clockBoundMs: 2 * SEC,
        leaseTtlMs: 30 * SEC,
        tickMs: SEC,
        timers: procs[by].timers,
        events: events(by),
      });
    const [a, b] = [make('a', 3_600 * SEC), make('b', 3_600 * SEC)];
    sched.after(0, () => a.start());
    sched.after(500_000, () => b.start());
    await sched.run();
    expect(done.map((d) => `${d.by}${d.unit}`)).toEqual([
      'a1',
      'a2',
      'a3',
      'a4',
      ...[5, 6, 7, 8, 9, 10].map((u) => `b${u}`),
    ]);
    // a's last renewal was at most a third of the TTL before it died; b waits for expiry + S.
    const killedAt = done[3]?.at ?? 0;
    const takenAt = (done[4]?.at ?? 0) - 2 * SEC;
    expect(takenAt - killedAt).toBeGreaterThanOrEqual(30 * SEC - 10 * SEC + 2 * SEC);
    expect(takenAt - killedAt).toBeLessThanOrEqual(30 * SEC + 2 * SEC + SEC);
    expect(runs).toEqual([{ by: 'b', outcome: 'ok' }]);
    const state = parseJobState((await leases.getLease('job:walk'))?.state ?? null);
    expect([state.position, state.lastRows, state.lastStartMs]).toEqual([null, 10, T0]);
  });

  it('a holder paused past its lease: the other runs the job; resumed, its next save is refused (lost) and its position does not stand', async () => {
    const sched = new Scheduler(seedOf(3), T0 * 1000);
    const leases = new MemoryLeaseStore();
    const end = T0 + 10 * 60 * SEC;
    const procs = { a: processTimers(sched, end), b: processTimers(sched, end) };
    const saves: string[] = [];
    const runs: { by: string; outcome: string; error?: string }[] = [];
    let paused = false;
    // a's renewals stop while it is paused (a stopped process runs no timer).
    const aTimers: Timers = {
      ...procs.a.timers,
      every: (p, fn) => procs.a.timers.every(p, () => !paused && fn()),
    };
    const job = (by: 'a' | 'b', timers: Timers): ScheduledJob => ({
      name: 'pause',
      async run(run) {
        await run.save(`${by}:start`);
        saves.push(`${by}:start`);
        if (by === 'a') {
          paused = true;
          await timers.sleep(60 * SEC);
          paused = false;
        }
        await run.save(`${by}:end`);
        saves.push(`${by}:end`);
        return { rows: 1 };
      },
    });
    const make = (by: 'a' | 'b', timers: Timers) =>
      new Worker({
        leases,
        holder: by,
        jobs: [{ job: job(by, timers), everyMs: 3_600 * SEC }],
        clockBoundMs: 2 * SEC,
        leaseTtlMs: 30 * SEC,
        tickMs: SEC,
        timers,
        events: {
          onRun: (_j, outcome, _ms, _rows, error) =>
            runs.push({ by, outcome, ...(error ? { error: (error as Error).name } : {}) }),
        },
      });
    sched.after(0, () => make('a', aTimers).start());
    sched.after(500_000, () => make('b', procs.b.timers).start());
    await sched.run();
    expect(saves).toEqual(['a:start', 'b:start', 'b:end']);
    expect(runs).toEqual([
      { by: 'b', outcome: 'ok' },
      { by: 'a', outcome: 'lost', error: LeaseLostError.name },
    ]);
    const row = await leases.getLease('job:pause');
    expect([row?.holder, row?.generation, parseJobState(row?.state ?? null).lastRows]).toEqual(['b', 2n, 1]);
  });

  it('a failing job backs off 10, 20, 40 s, then a period (60 s), and a run that ends resets it', async () => {
    const sched = new Scheduler(seedOf(1), T0 * 1000);
    const leases = new MemoryLeaseStore();
    const { timers } = processTimers(sched, T0 + 400 * SEC);
    const attempts: number[] = [];
    const job: ScheduledJob = {
      name: 'flaky',
      async run() {
        attempts.push((ms(sched) - T0) / SEC);
        if (attempts.length <= 4) throw new Error(`attempt ${attempts.length} failed`);
        return { rows: 7 };
      },
    };
    const failures: string[] = [];
    const w = soleWorker(leases, job, timers, {
      events: { onRun: (_j, outcome, _ms, _rows, e) => outcome === 'failed' && failures.push(String(e)) },
    });
    sched.after(0, () => w.start());
    await sched.run();
    // Fails at 0, 10, 30, 70; the fifth try (130) ends; then once a period from its start.
    expect(attempts).toEqual([0, 10, 30, 70, 130, 190, 250, 310, 370]);
    expect(failures).toEqual([1, 2, 3, 4].map((n) => `Error: attempt ${n} failed`));
    const state = parseJobState((await leases.getLease('job:flaky'))?.state ?? null);
    expect([state.failures, state.lastError, state.lastRows]).toEqual([0, null, 7]);
  });

  it('an idle worker reads a job row not due when it falls due or the look cap (30 s) passes: 15 reads in 200 s, not 200; no period missed', async () => {
    const sched = new Scheduler(seedOf(1), T0 * 1000);
    const memory = new MemoryLeaseStore();
    const reads: number[] = [];
    const leases: LeaseStore = {
      ...memory,
      getLease: (n) => {
        reads.push((ms(sched) - T0) / SEC);
        return memory.getLease(n);
      },
      listLeases: (l) => memory.listLeases(l),
      takeLease: (n, h, e, st) => memory.takeLease(n, h, e, st),
      updateLease: (n, g, c) => memory.updateLease(n, g, c),
    };
    const { timers } = processTimers(sched, T0 + 200 * SEC);
    const runs: number[] = [];
    const job: ScheduledJob = {
      name: 'idle',
      async run() {
        runs.push((ms(sched) - T0) / SEC);
        return { rows: 0 };
      },
    };
    const w = soleWorker(leases, job, timers, {});
    sched.after(0, () => w.start());
    await sched.run();
    expect(runs).toEqual([0, 60, 120, 180]);
    // At each run's tick twice (the look, then the lease's take), the tick after it (not due: the
    // next look at the cap), the cap, then the due time.
    expect(reads).toEqual([0, 0, 1, 31, 60, 60, 61, 91, 120, 120, 121, 151, 180, 180, 181]);
  });

  it('each run in a root span `job <name>` with its generation, the job’s work inside it; a failed run’s span is marked failed', async () => {
    const sched = new Scheduler(seedOf(1), T0 * 1000);
    const leases = new MemoryLeaseStore();
    const { timers } = processTimers(sched, T0 + 150 * SEC);
    const spans: { name: string; attributes: unknown; inside: string[]; failed: boolean }[] = [];
    let open: { inside: string[] } | null = null;
    const tracer: Tracer = {
      span: async (name, fn, attributes) => {
        const span = { name, attributes, inside: [] as string[], failed: false };
        spans.push(span);
        open = span;
        try {
          return await fn();
        } catch (e) {
          span.failed = true;
          throw e;
        } finally {
          open = null;
        }
      },
      event: () => {},
    };
    let n = 0;
    const job: ScheduledJob = {
      name: 'traced',
      async run() {
        n++;
        open?.inside.push(`run ${n}`);
        if (n === 2) throw new Error('second run fails');
        return { rows: n };
      },
    };
    const w = soleWorker(leases, job, timers, { tracer });
    sched.after(0, () => w.start());
    await sched.run();
    // Runs at 0 and 60 s (fails), 70 s (the backoff), then 130 s.
    expect(spans).toEqual(
      [1, 2, 3, 4].map((i) => ({
        name: 'job traced',
        attributes: { 'job.name': 'traced', 'job.generation': String(i), 'job.resumed': false },
        inside: [`run ${i}`],
        failed: i === 2,
      })),
    );
  });
});
