/**
 * Starts the known long integration files first. Vitest's own order puts the longest files first
 * only once its results cache holds their durations; a clean clone (CI) has no cache, so it orders
 * by file size and the 20,000-toggle soak, a short file, started ~7 minutes into the run and set
 * its end. Files named here run first, in this order, within their project; the rest keep
 * vitest's order.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Longest first within each project. Integration: seconds on Node 24 in a clean-clone CI run at
 * the short sizes, two files at a time; unit: the simulation, a third of the unit run, starts first so the other files share the
 * second worker beside it.
 */
export const LONG_FILES = [
  'test/sim/pair-protocol.test.ts', // unit, 10,000 schedules
  'test/graph/feed.test.ts', // unit, 43 (most of it waits out the feed's lag)
  'test/sim/service.test.ts', // unit, 33, 1,000 schedules
  'test/lists/reshape/search-split.test.ts', // unit, 25
  'test/cli.test.ts', // unit, 19 (it starts the CLI as a process)
  'test/local-cassandra/launcher.int.test.ts', // 79 in CI (it starts and stops its own JVM three times)
  'test/graph/pair/convergence.int.test.ts', // 72, 60 short runs
  'test/graph/accounts/rename-fanout.int.test.ts', // 65
  'test/graph/feed.int.test.ts', // 59
  'test/graph/reads/set-queries.int.test.ts', // 56, 12,000 users put through the store
  'test/http/database-outage.int.test.ts', // 55
  'test/http/pair-toggle.int.test.ts', // 53 at 1,000 toggles
  'test/relay/relay-kafka.int.test.ts', // 49, a Kafka broker of its own
];

export default class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = LONG_FILES.findIndex((p) => f.moduleId.endsWith(p));
      return i < 0 ? LONG_FILES.length : i;
    };
    const at = new Map(sorted.map((f, i) => [f, i]));
    // The base order keeps projects together (group order, then name); rank only within a project.
    return [...sorted].sort((a, b) =>
      a.project.name !== b.project.name
        ? (at.get(a) ?? 0) - (at.get(b) ?? 0)
        : rank(a) - rank(b) || (at.get(a) ?? 0) - (at.get(b) ?? 0),
    );
  }
}
