/**
 * Shrinking a failing whole-service schedule: each named step turns one knob down (a fault off, one
 * writer, reader or call fewer, PUTs of one account one at a time, no PUT of `state` or `username`,
 * no cached read but pages, no step of a writer's clock); a step is kept when the schedule still
 * breaks the invariant with it. What is left is a smaller schedule to read — another schedule of the
 * same seed (the knobs change the draws; turning the clock steps off changes no other draw),
 * replayed with `SERVICE_SEED=n SERVICE_WITHOUT=step,step`.
 */
import { TAIL_PAGE } from '../../src/graph/feed-tail.js';
import type { FeedKnobs } from './feed-sim.js';
import { runSchedule, type ScheduleOptions, type ScheduleResult, type SimKnobs } from './pair-sim.js';

type Step = { knobs?: (k: SimKnobs) => SimKnobs; feed?: (k: FeedKnobs) => FeedKnobs };

const fault = (name: keyof SimKnobs['faults']): Step => ({
  knobs: (k) => ({ ...k, faults: { ...k.faults, [name]: 0 } }),
});

/** The steps, in the order they are tried (the biggest cuts first). */
export const SHRINK_STEPS: Record<string, Step> = {
  writers: { knobs: (k) => ({ ...k, writers: Math.max(1, k.writers - 1) }) },
  calls: { knobs: (k) => ({ ...k, opsPerWriter: Math.max(1, k.opsPerWriter - 1) }) },
  readers: { feed: (k) => ({ ...k, readers: 1 }) },
  puts: { feed: (k) => ({ ...k, putP: 0 }) },
  overlap: { feed: (k) => ({ ...k, concurrentPuts: false }) },
  deactivations: { feed: (k) => ({ ...k, stateP: 0 }) },
  renames: { feed: (k) => ({ ...k, renameP: 0 }) },
  reads: { feed: (k) => ({ ...k, reads: false }) },
  registries: { feed: (k) => ({ ...k, registries: false }) },
  tailPage: { feed: (k) => ({ ...k, tailPage: TAIL_PAGE }) },
  late: { feed: (k) => ({ ...k, lateP: 0 }) },
  down: { feed: (k) => ({ ...k, recoveryDown: null }) },
  replays: { knobs: (k) => ({ ...k, replayP: 0 }) },
  private: { knobs: (k) => ({ ...k, privateP: 0 }) },
  skew: { knobs: (k) => ({ ...k, skewMs: 0 }) },
  clockSteps: { knobs: (k) => ({ ...k, clockStepP: 0 }) },
  crash: fault('crashP'),
  drop: fault('dropP'),
  lostAck: fault('lostAckP'),
  twice: fault('twiceP'),
  slow: fault('slowP'),
  slowAck: fault('slowAckP'),
  stall: fault('stallP'),
  sluggish: { knobs: (k) => ({ ...k, sluggishP: 0 }) },
  laggy: { knobs: (k) => ({ ...k, laggyP: 0 }) },
  replicas: { knobs: (k) => ({ ...k, replicas: null }) },
};

const knobsOf = (r: ScheduleResult) =>
  JSON.stringify({ k: r.knobs, f: r.feed?.knobs }, (_, v) => (typeof v === 'bigint' ? String(v) : v));

/** The schedule options of `steps` (names of `SHRINK_STEPS`) on top of `base`. */
export function withSteps(steps: readonly string[], base: ScheduleOptions = {}): ScheduleOptions {
  const chosen = steps.map((s) => {
    const step = SHRINK_STEPS[s];
    if (!step) throw new Error(`no shrink step ${s}: one of ${Object.keys(SHRINK_STEPS).join(', ')}`);
    return step;
  });
  return {
    ...base,
    knobs: (k) => chosen.reduce((acc, s) => s.knobs?.(acc) ?? acc, k),
    feedKnobs: (k) => chosen.reduce((acc, s) => s.feed?.(acc) ?? acc, k),
  };
}

/**
 * The smallest failing variant of `seed` found by trying each step (repeatedly, while one helps),
 * at most `budget` runs; returns the steps kept and that run.
 */
export async function shrink(
  seed: number,
  base: ScheduleOptions,
  budget = 60,
): Promise<{ steps: string[]; result: ScheduleResult }> {
  let steps: string[] = [];
  let result = await runSchedule(seed, withSteps(steps, base));
  let runs = 1;
  for (let progress = true; progress && runs < budget; ) {
    progress = false;
    for (const name of Object.keys(SHRINK_STEPS)) {
      if (runs >= budget) break;
      // A size step may be taken again (one writer fewer each time); a knob turned off stays off.
      if (steps.includes(name) && name !== 'writers' && name !== 'calls') continue;
      const tried = [...steps, name];
      const r = await runSchedule(seed, withSteps(tried, base));
      runs++;
      // Kept when it still fails, is no larger, and turned something down (a knob already off, or
      // one writer fewer than one, changes nothing).
      if (r.violations.length === 0 || r.stats.calls > result.stats.calls) continue;
      if (knobsOf(r) === knobsOf(result)) continue;
      steps = tried;
      result = r;
      progress = true;
    }
  }
  return { steps, result };
}
