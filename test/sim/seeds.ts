/**
 * The nastiest seeds: schedules the random search found breaking the pair protocol, replayed by
 * every run of the simulation test. Each names the finding it exposes (`pair-sim.ts`, "Diagnosis")
 * and the knob that exposes it; the list grows, it never shrinks (a seed fixed stays a regression).
 */
import type { FindingTag } from './pair-sim.js';

export interface NastySeed {
  seed: number;
  finding: FindingTag;
  /** The schedule knob without which the seed passes. */
  knob: string;
}

export const NASTIEST_SEEDS: readonly NastySeed[] = [];
