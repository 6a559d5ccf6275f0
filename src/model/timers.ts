/**
 * Time and timers for the service's background work (the feed's tail poll, the deactivated
 * registry's clock and retries): the process's by default; a simulation passes virtual ones, so a
 * schedule with that work running replays exactly.
 */
export interface Timers {
  /** ms since the epoch. */
  nowMs(): number;
  /** Calls `fn` every `ms` (the first time after `ms`) until the returned stop is called; never keeps the process alive. */
  every(ms: number, fn: () => void): () => void;
  /** Resolves after `ms`; never keeps the process alive. */
  sleep(ms: number): Promise<void>;
  /**
   * Calls `fn` once after `ms` unless the returned cancel is called first (a waiting read's
   * deadline). Unlike the others it keeps the process alive, as the request waiting on it does.
   */
  after(ms: number, fn: () => void): () => void;
}

/** The process's clock and timers. */
export const SYSTEM_TIMERS: Timers = {
  nowMs: () => Date.now(),
  every: (ms, fn) => {
    const timer = setInterval(fn, ms);
    timer.unref();
    return () => clearInterval(timer);
  },
  sleep: (ms) => new Promise((r) => setTimeout(r, ms).unref()),
  after: (ms, fn) => {
    const timer = setTimeout(fn, ms);
    return () => clearTimeout(timer);
  },
};
