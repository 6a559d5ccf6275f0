import { defineConfig } from 'vitest/config';

/**
 * `npm run test:cluster`: the fault suite on its own 3-node cluster (started and stopped by the
 * suite itself). Kept out of `test/vitest.config.ts`, whose globs do not match `*.cluster.ts`.
 * One file, one worker, tests in order: each fault leaves the cluster whole for the next.
 */
export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/cluster/**/*.cluster.ts'],
    fileParallelism: false,
    maxWorkers: 1,
    testTimeout: 300_000,
    hookTimeout: 240_000,
    reporters: ['default'],
  },
});
