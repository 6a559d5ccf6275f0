/**
 * An hourly budget of database requests for a scheduled job (`worker-jobs.ts`): the walks over
 * every user or the whole ring (the list splits, the repair sweep, the search backfill,
 * suggestions) are given a store whose every call first takes a token.
 *
 * Design note. A token bucket: `perHour` tokens an hour, refilled continuously, holding at most
 * a minute's worth — so a job idle for an hour does not then spend the hour's budget at once, and
 * any hour holds at most `perHour` plus one minute's worth of calls. A call that finds the bucket
 * empty waits for its token (the job slows; nothing fails). The unit is a store call: most are one
 * statement, a logged batch is one request, and the few calls that read a partition page by page
 * count once — the budget bounds calls, and with them the statements, to a small factor. The
 * count reconciler and the relay are not budgeted: their work follows the write rate, and holding
 * them back would only let counts drift and the relay lag.
 */
import { SYSTEM_TIMERS, type Timers } from '../model/timers.js';

export class RequestBudget {
  private tokens: number;
  private lastMs: number;
  private taken = 0;
  private waitedMs = 0;
  private readonly capacity: number;

  constructor(
    /** Requests an hour. */
    readonly perHour: number,
    private readonly timers: Timers = SYSTEM_TIMERS,
  ) {
    if (!(perHour >= 60)) throw new RangeError('a request budget is at least 60 an hour');
    this.capacity = perHour / 60;
    this.tokens = this.capacity;
    this.lastMs = timers.nowMs();
  }

  /** Takes one request's token, waiting for the refill when there is none. */
  async take(signal?: AbortSignal): Promise<void> {
    for (;;) {
      signal?.throwIfAborted();
      const now = this.timers.nowMs();
      this.tokens = Math.min(this.capacity, this.tokens + ((now - this.lastMs) * this.perHour) / 3_600_000);
      this.lastMs = now;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        this.taken++;
        return;
      }
      const waitMs = Math.ceil(((1 - this.tokens) * 3_600_000) / this.perHour);
      this.waitedMs += waitMs;
      await this.timers.sleep(waitMs);
    }
  }

  /** Requests taken so far, and the time calls spent waiting for tokens. */
  stats(): { taken: number; waitedMs: number } {
    return { taken: this.taken, waitedMs: this.waitedMs };
  }
}

/**
 * `store` with every method call taking a token of `budget` first (`signal` aborts a wait). Every
 * method of the ports returns a promise, so each becomes an async function of the same arguments.
 */
export function budgetedStore<T extends object>(store: T, budget: RequestBudget, signal?: AbortSignal): T {
  return new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key, target) as unknown;
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        await budget.take(signal);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}
