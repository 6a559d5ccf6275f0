/**
 * The walking jobs' hourly request budget (`src/jobs/request-budget.ts`) on a virtual clock: a
 * minute's worth at once, then the hourly rate, in any window no more than the rate allows; and a
 * repair sweep under a budget does what it does without one, slower.
 */
import { describe, expect, it } from 'vitest';
import { budgetedStore, RequestBudget } from '../../src/jobs/request-budget.js';
import type { JobRun } from '../../src/jobs/worker.js';
import { workerJob } from '../../src/jobs/worker-jobs.js';
import type { Timers } from '../../src/model/timers.js';
import { chainFollows, jobWorld } from './support/job-world.js';

/** A clock that moves only when someone sleeps: each sleep advances it and resolves at once. */
function virtualClock(): Timers & { now: number } {
  const t = {
    now: 0,
    nowMs: () => t.now,
    every: () => () => {},
    after: () => () => {},
    sleep: async (ms: number) => {
      t.now += ms;
    },
  };
  return t;
}

const run = (): JobRun => ({
  position: null,
  generation: 1n,
  signal: new AbortController().signal,
  save: async () => {},
});

describe('request budget', () => {
  it('3,600 an hour: the first 60 calls at once, then one a second; no 10-minute window holds more than 60 + 600', async () => {
    const clock = virtualClock();
    const budget = new RequestBudget(3600, clock);
    const calledAt: number[] = [];
    const store = budgetedStore({ get: async (n: number) => n * 2 }, budget);
    for (let i = 0; i < 1000; i++) {
      expect(await store.get(i)).toBe(i * 2);
      calledAt.push(clock.now);
    }
    expect(calledAt.slice(0, 61)).toEqual([...Array(60).fill(0), 1000]);
    expect(calledAt.at(-1)).toBe(940_000);
    let most = 0;
    for (let i = 0, j = 0; i < calledAt.length; i++) {
      while ((calledAt[i] as number) - (calledAt[j] as number) >= 600_000) j++;
      most = Math.max(most, i - j + 1);
    }
    expect(most).toBe(659);
    expect(budget.stats()).toEqual({ taken: 1000, waitedMs: 940_000 });
  });

  it('a wait is aborted with its run; less than 60 an hour is refused', async () => {
    const clock = virtualClock();
    const budget = new RequestBudget(60, clock);
    const controller = new AbortController();
    const store = budgetedStore({ get: async () => 1 }, budget, controller.signal);
    await store.get();
    controller.abort(new Error('lease lost'));
    await expect(store.get()).rejects.toThrow('lease lost');
    expect(() => new RequestBudget(59)).toThrow(RangeError);
  });

  it('the repair sweep under a budget reports what it reports without one, its store calls all counted', async () => {
    const { deps } = await jobWorld(30, chainFollows(30, 4));
    const plain = await workerJob('repair-sweep', deps).run(run());
    const clock = virtualClock();
    const counted: { taken: number; waitedMs: number }[] = [];
    const limited = await workerJob('repair-sweep', {
      ...deps,
      requestsPerHour: 600,
      timers: clock,
      onBudget: (_job, stats) => counted.push(stats),
    }).run(run());
    expect(limited).toEqual(plain);
    // 600 an hour: 10 at once, then one every 6 s.
    const taken = counted[0]?.taken ?? 0;
    expect(taken).toBeGreaterThan(10);
    expect(counted).toEqual([{ taken, waitedMs: (taken - 10) * 6000 }]);
    expect(clock.now).toBe((taken - 10) * 6000);
  });

  it('every walking job runs under a budget to the result it has without one', async () => {
    const { deps } = await jobWorld(25, chainFollows(25, 3));
    const jobs = ['split-search', 'split-buckets', 'repair-sweep', 'index-search', 'suggest'] as const;
    const plain: unknown[] = [];
    for (const name of jobs) plain.push(await workerJob(name, deps).run(run()));
    const taken: Record<string, number> = {};
    const limited: unknown[] = [];
    for (const name of jobs) {
      const job = workerJob(name, {
        ...deps,
        requestsPerHour: 3600,
        timers: virtualClock(),
        onBudget: (job, stats) => {
          taken[job] = stats.taken;
        },
      });
      limited.push(await job.run(run()));
    }
    expect(limited).toEqual(plain);
    expect(Object.keys(taken)).toEqual([...jobs]);
    expect(Object.values(taken).every((n) => n > 0)).toBe(true);
  });
});
