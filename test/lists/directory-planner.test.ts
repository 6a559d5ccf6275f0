import { describe, expect, it } from 'vitest';
import { DirectoryPlanner } from '../../src/lists/directory-planner.js';
import { planDirectory } from '../../src/model/time-buckets.js';
import { mulberry32 } from '../support/random.js';

describe('DirectoryPlanner', () => {
  it('plans exactly what planDirectory plans, over random lists with ties', () => {
    const seed = Number(process.env.SEED ?? Date.now() % 2 ** 31);
    console.log(`DirectoryPlanner property seed=${seed}`);
    const random = mulberry32(seed);
    for (let trial = 0; trial < 200; trial++) {
      const n = Math.floor(random() * 300);
      let t = 1_000n;
      const createdAts = Array.from({ length: n }, () => {
        if (random() > 0.3) t += BigInt(1 + Math.floor(random() * 5));
        return t;
      });
      const bucketRows = 1 + Math.floor(random() * 40);
      const planner = new DirectoryPlanner(bucketRows);
      for (const c of createdAts) planner.add(c);
      expect({ trial, plan: planner.buckets() }).toEqual({
        trial,
        plan: planDirectory(createdAts, bucketRows),
      });
    }
  });
});
