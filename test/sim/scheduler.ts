/**
 * A deterministic scheduler: virtual time and one seeded PRNG.
 *
 * Design note. Everything that takes time in a schedule is an event on one queue ordered by
 * (virtual time, insertion order): a statement's send, its application to the simulated node, its
 * acknowledgement or timeout, a writer's pause. The loop pops one event, sets the virtual clock to
 * its time and runs it, and only then — after a macrotask turn (`setImmediate`), so every
 * microtask the event released (the continuations of the async code under test, down to its next
 * statement) has run — pops the next. The code under test therefore observes time advancing only
 * between its awaits on statements, never in the middle of a synchronous step, and every clock it
 * reads (each writer's skewed wall clock and its monotonic clock are functions of the virtual time)
 * reads the virtual time of the event that woke it. Nothing else may be a source of time or
 * randomness: every random draw comes from the one PRNG, in event order, so a seed replays the same
 * schedule exactly (the code under test must not read real clocks in ways that change what it
 * sends: the list service's layout cache and size checks and the graph service's following-cap
 * budget age on `Date.now()`, in seconds to a minute, so a schedule — milliseconds of real time —
 * never sees them expire; the repair and reconcile jobs stamp their own writes with the real clock,
 * which changes no read the check makes; the event store gathers intent deletes on a real 2 ms
 * timer, which `pair-sim.ts` puts on the schedule's time).
 *
 * A second stream. The writers' clock steps (`writer-clock.ts`) are drawn from a stream of their
 * own (`stream`), seeded from the schedule's seed and the stream's name, in writer order when the
 * writers start: a schedule draws them without moving any draw of the one PRNG, so a schedule
 * without steps replays as it did before they existed, and a shrink that turns the steps off
 * leaves every other draw of the schedule where it was. It is still a function of the seed alone.
 *
 * Rejected: driving the code with vitest's fake timers (they advance time on timers, not on the
 * promises of a simulated database, and cannot say when all microtasks have drained); running
 * events at equal times in one batch (cheaper, but a continuation could then see another event's
 * effect at the same instant in an order that depends on the microtask queue's depth).
 */
import type { Timers } from '../../src/model/timers.js';
import { mulberry32 } from '../support/random.js';

interface Event {
  at: number;
  seq: number;
  run: (() => void) | null;
  /** Whether running it may settle a promise (then microtasks are drained before the next event). */
  wakes: boolean;
}

/** A scheduled event that can be called off (a timeout once its statement was answered). */
export interface Timer {
  cancel(): void;
}

export class ScheduleDidNotEndError extends Error {
  override name = 'ScheduleDidNotEndError';
}

/** One turn of the event loop: every pending microtask has run when it resolves. */
const drained = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Draws from one uniform source in [0, 1): a schedule's, or a named stream of its seed's. */
export class Draws {
  constructor(readonly random: () => number) {}

  chance(p: number): boolean {
    return this.random() < p;
  }

  /** Uniform in [lo, hi). */
  uniform(lo: number, hi: number): number {
    return lo + (hi - lo) * this.random();
  }

  /** Integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor((hi - lo + 1) * this.random());
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.random() * items.length)] as T;
  }
}

export class Scheduler extends Draws {
  /** Virtual true time, µs since the epoch. */
  now: number;
  private readonly heap: Event[] = [];
  private seq = 0;
  events = 0;

  constructor(
    private readonly seed: number,
    start: number,
    private readonly limits = { events: 2_000_000, horizonMicros: 3_600e6 },
  ) {
    // The schedule's one source of randomness, in [0, 1) (`random`).
    super(mulberry32(seed));
    this.now = start;
  }

  /**
   * A stream of draws of this seed apart from the schedule's own (see the note): the same for the
   * same seed and `name`, whatever the schedule drew before.
   */
  stream(name: number): Draws {
    return new Draws(mulberry32(Math.imul(this.seed ^ 0x5bd1e995, 0x9e3779b1) ^ Math.imul(name, 0x85ebca6b)));
  }

  /**
   * Runs `run` at virtual time `at` (not before now). `wakes: false` promises that `run` settles no
   * promise (it only changes the simulated node), so no microtask needs draining after it.
   */
  at(at: number, run: () => void, wakes = true): Timer {
    const e: Event = { at: Math.max(at, this.now), seq: this.seq++, run, wakes };
    const h = this.heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(e, h[parent] as Event)) break;
      h[i] = h[parent] as Event;
      i = parent;
    }
    h[i] = e;
    return {
      cancel: () => {
        e.run = null;
      },
    };
  }

  after(delayMicros: number, run: () => void, wakes = true): Timer {
    return this.at(this.now + delayMicros, run, wakes);
  }

  /** Resolves after `delayMicros` of virtual time. */
  sleep(delayMicros: number): Promise<void> {
    return new Promise((resolve) => this.after(delayMicros, resolve));
  }

  /**
   * The service's `Timers` on this schedule's virtual time (true time, ms), for one instance:
   * while `alive()` says no (the instance finished or crashed), a timer stops and a sleep never
   * ends, so a finished instance leaves no event behind and the schedule ends.
   */
  timers(alive: () => boolean): Timers {
    return {
      nowMs: () => this.now / 1000,
      every: (ms, fn) => {
        let stopped = false;
        void (async () => {
          while (!stopped && alive()) {
            await this.sleep(ms * 1000);
            if (!stopped && alive()) fn();
          }
        })();
        return () => {
          stopped = true;
        };
      },
      sleep: (ms) => (alive() ? this.sleep(ms * 1000) : new Promise<void>(() => undefined)),
      after: (ms, fn) => {
        const t = this.after(ms * 1000, () => {
          if (alive()) fn();
        });
        return () => t.cancel();
      },
    };
  }

  private pop(): Event | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (!top || !last || h.length === 0) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      let me = last;
      if (l < h.length && before(h[l] as Event, me)) {
        m = l;
        me = h[l] as Event;
      }
      if (r < h.length && before(h[r] as Event, me)) m = r;
      if (m === i) break;
      h[i] = h[m] as Event;
      i = m;
    }
    h[i] = last;
    return top;
  }

  /** Runs events until none is left (microtasks drained before each and at the end). */
  async run(): Promise<void> {
    const start = this.now;
    await drained();
    for (;;) {
      const e = this.pop();
      if (!e) return;
      if (!e.run) continue;
      if (++this.events > this.limits.events || e.at - start > this.limits.horizonMicros)
        throw new ScheduleDidNotEndError(`still running after ${this.events} events`);
      this.now = e.at;
      e.run();
      if (e.wakes) await drained();
    }
  }
}

const before = (a: Event, b: Event) => a.at < b.at || (a.at === b.at && a.seq < b.seq);
