import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import LongFirstSequencer from './support/long-first-sequencer.js';

/**
 * Two projects: `unit` (pure logic and the in-memory store, no database) and `integration`
 * (the real Cassandra node started or found by the global setup). Each integration file makes
 * its own keyspace, so files run in parallel.
 */
export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    // The integration project's global teardown stops the Cassandra node it started (SIGTERM,
    // 5–10 s here); vitest exits after teardownTimeout even when that is not done, and the next
    // run would find the dying node and "reuse" it.
    teardownTimeout: 60_000,
    reporters: ['default'],
    // Known long files first, also on a clean clone (see the sequencer).
    sequence: { sequencer: LongFirstSequencer },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: ['test/**/*.int.test.ts'],
          // Vitest's default is one worker fewer than the cores: one worker on a 2-core CI machine,
          // where the simulation alone then held the other files back for its whole run. The unit
          // files share nothing, and most are CPU-bound; a few mostly wait (the feed's file waits
          // out its lag), so one worker more than the cores keeps both busy (2-core machine: 164 s
          // with two workers, 142 s with three, 141 s with four; 129 s with three and the long unit
          // files first).
          maxWorkers: availableParallelism() + 1,
          // The unit files share no module state that matters (no mocks of modules, no globals), so
          // a worker keeps its imports from one file to the next: `src/` is imported once per
          // worker, not once per file (2-core machine, Node 20: 160 s isolated, 112 s not).
          isolate: false,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          globalSetup: ['test/support/global-setup.ts'],
          include: ['test/**/*.int.test.ts'],
          // Two: with three the shared node fell behind (a driver timeout of 30 s in the feed's
          // file) and the run was no shorter.
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
          testTimeout: 180_000,
        },
      },
    ],
  },
});
