/**
 * A writer instance's wall clock: an offset from true time (the simulated node's clock) within ±S,
 * the design's clock bound (`HistoryPolicy.clockSkewMs`; `docs/design/writes.md`, "The bounds"),
 * and in the schedules that step it (`SimKnobs.clockStepP`) stepped 1–3 times, forward or
 * backward, each time to a new offset still within ±S: an NTP step inside the bound the design
 * assumes. The monotonic clock does not step (an NTP step leaves `CLOCK_MONOTONIC` alone), and the
 * client timestamps stay monotonic (`SimClient`: the driver's generator over this clock).
 *
 * Design note. The steps are drawn when the writer starts, from the schedule's stream of clock
 * steps (`Scheduler.stream`), always the same draws per writer whatever the knob says: turning the
 * steps off (`SERVICE_WITHOUT=clockSteps`) leaves every other draw of the schedule where it was.
 * Each step is drawn for one of the writer's calls and a delay: it falls that long after the writer
 * reaches that call (before its think pause), so the steps spread over the writer's life, in its
 * pauses and inside its calls (between a call's read and its append, during a compaction's
 * settle), however long its calls take. The clock is a function of true time once a step's time is
 * known, so reading it queues no event: a step neither reorders nor lengthens a schedule. A step
 * is *taken* once the writer reads its clock at or after its time; a step due after the writer
 * stopped is not. A backward step goes down by 10–100 % of the room left above −S, a forward one up
 * by as much of the room below S (the other way when the room is under S/4); one step in four goes
 * to the bound itself. The service's readings are noted per call, so the search counts the case
 * that matters: a call that reads its writer's clock below a reading an earlier call of that
 * writer took (a later op of one writer with a smaller clock).
 *
 * Rejected: steps as scheduler events (they would add events, move the virtual time of schedules
 * whose writers had finished, and renumber every event after them); steps at true times drawn
 * over an estimate of the writer's span (a writer's calls take from 10 ms to seconds: the steps
 * bunched in the first calls of long writers, never near their compactions).
 */
import type { Draws } from './scheduler.js';

/** A step of a writer's clock at true time `at` (µs), from one offset to another (µs). */
export interface ClockStep {
  at: number;
  from: number;
  to: number;
}

/** A step as drawn: at which call of the writer, how long after it is reached, which way, how far. */
interface PlannedStep {
  call: number;
  delay: number;
  back: boolean;
  toBound: boolean;
  share: number;
  /** True time, once the writer reached its call. */
  at?: number;
}

/** How many steps one writer draws room for (it takes 1–3 of them). */
const MAX_STEPS = 3;

/** A writer's wall clock over true time, with its steps; records the steps it took and its readings. */
export class WriterClock {
  /** The steps taken so far, in order. */
  readonly taken: ClockStep[] = [];
  /** The lowest and the highest reading of each call's (`readFor`). */
  readonly readings = new Map<number, { low: number; high: number }>();
  private readonly planned: PlannedStep[];
  /** Steps whose time is known and not yet taken, by time. */
  private readonly armed: PlannedStep[] = [];
  private readonly bound: number;
  private offset: number;

  /**
   * Draws the steps from `d` (always the same 2 + 5 × 3 draws): none unless the writer steps
   * (chance `stepP`), else 1–3, each at one of its `calls` calls and up to `delayMicros` after the
   * writer reaches it, to an offset within ±`boundMicros` of true time.
   */
  constructor(
    offset: number,
    d: Draws,
    o: { stepP: number; calls: number; delayMicros: number; boundMicros: number },
  ) {
    const stepping = d.chance(o.stepP);
    const n = d.int(1, MAX_STEPS);
    const drawn = Array.from({ length: MAX_STEPS }, () => ({
      call: Math.floor(d.random() * o.calls),
      delay: d.uniform(0, o.delayMicros),
      back: d.chance(0.6),
      toBound: d.chance(0.25),
      share: d.uniform(0.1, 1),
    }));
    this.planned = stepping ? drawn.slice(0, n) : [];
    // Within the bound after `Math.floor` of a reading (the services read whole µs).
    this.bound = o.boundMicros - 1;
    this.offset = offset;
  }

  /** Whether any step is drawn for this writer. */
  get steps(): boolean {
    return this.planned.length > 0;
  }

  /** The writer reaches its call `index` at true time `now`: that call's steps get their times. */
  reach(index: number, now: number): void {
    for (const s of this.planned)
      if (s.call === index && s.at === undefined) {
        s.at = now + s.delay;
        this.armed.push(s);
      }
    this.armed.sort((a, b) => (a.at as number) - (b.at as number));
  }

  /** The wall clock (µs) at true time `now` (non-decreasing from one read to the next). */
  read(now: number): number {
    for (let s = this.armed[0]; s !== undefined && (s.at as number) <= now; s = this.armed[0]) {
      this.armed.shift();
      this.step(s);
    }
    return now + this.offset;
  }

  /**
   * The clock read by the writer's service for call `call` (the call in flight on the instance; -1
   * between calls): noted per call, its lowest and highest reading.
   */
  readFor(now: number, call: number): number {
    const v = this.read(now);
    if (call >= 0) {
      const r = this.readings.get(call);
      if (!r) this.readings.set(call, { low: v, high: v });
      else if (v < r.low) r.low = v;
      else if (v > r.high) r.high = v;
    }
    return v;
  }

  private step(s: PlannedStep): void {
    const from = this.offset;
    const below = from + this.bound;
    const above = this.bound - from;
    // Too close to the bound on the side drawn: the other way (the two rooms sum to 2 × bound).
    const back = s.back ? below >= this.bound / 4 : above < this.bound / 4;
    const to = back
      ? s.toBound
        ? -this.bound
        : from - s.share * below
      : s.toBound
        ? this.bound
        : from + s.share * above;
    this.taken.push({ at: s.at as number, from, to });
    this.offset = to;
  }
}

/** How much of the clock steps one schedule exercised. */
export interface ClockReach {
  /** Steps taken by writers that were running, and how many of them went back. */
  steps: number;
  backSteps: number;
  /** Calls a writer started after one of its backward steps. */
  afterBackStep: number;
  /**
   * Calls that read their writer's clock below a reading an earlier call of that writer took (a
   * later op of one writer with a smaller clock).
   */
  crossed: number;
}

/**
 * The reach of one schedule's clock steps, and for the trace, by call id, how far (µs) a call's
 * lowest clock reading was below the highest of its writer's earlier calls.
 */
export function clockReach(
  clocks: readonly (WriterClock | undefined)[],
  calls: readonly { id: number; writer: number; startAt: number }[],
): { reach: ClockReach; below: Map<number, number> } {
  const reach: ClockReach = { steps: 0, backSteps: 0, afterBackStep: 0, crossed: 0 };
  const below = new Map<number, number>();
  clocks.forEach((clock, w) => {
    if (!clock?.steps) return;
    reach.steps += clock.taken.length;
    const backs = clock.taken.filter((s) => s.to < s.from);
    reach.backSteps += backs.length;
    const firstBack = backs[0]?.at ?? Number.POSITIVE_INFINITY;
    let high = Number.NEGATIVE_INFINITY;
    for (const c of calls) {
      if (c.writer !== w) continue;
      if (c.startAt >= firstBack) reach.afterBackStep++;
      const r = clock.readings.get(c.id);
      if (!r) continue;
      if (r.low < high) {
        reach.crossed++;
        below.set(c.id, high - r.low);
      }
      high = Math.max(high, r.high);
    }
  });
  return { reach, below };
}
