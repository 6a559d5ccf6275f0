/**
 * Starts the known long integration files first. Vitest's own order puts the longest files first
 * only once its results cache holds their durations; a clean clone (CI) has no cache, so it orders
 * by file size and the 20,000-toggle soak, a short file, started ~7 minutes into the run and set
 * its end. Files named here run first, in this order, within their project; the rest keep
 * vitest's order.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Longest first within each project. Integration: seconds on Node 20 in the last CI that ran them
 * there, or (~) measured at the short sizes on the shared development machine, two files at a
 * time; unit: the simulation, a third of the unit run, starts first so the other files share the
 * second worker beside it.
 */
export const LONG_FILES = [
  'test/sim/pair-protocol.test.ts', // unit, 10,000 schedules
  'test/http/set-routes.int.test.ts', // (169), the 7,500-follow export and import
  'test/graph/pair/convergence.int.test.ts', // (166 with three long histories; one now)
  'test/lists/list-service.int.test.ts', // (235 at 50,000 rows; ~80–94 at 20,000)
  'test/local-cassandra/launcher.int.test.ts', // (72)
  'test/graph/reads/set-queries.int.test.ts', // ~75–91, 12,000 users put through the store
  'test/http/pair-toggle.int.test.ts', // ~88 at 1,000 toggles
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
