/**
 * Starts the known long integration files first. Vitest's own order puts the longest files first
 * only once its results cache holds their durations; a clean clone (CI) has no cache, so it orders
 * by file size and the 20,000-toggle soak, a short file, started ~7 minutes into the run and set
 * its end. Files named here run first, in this order, within their project; the rest keep
 * vitest's order.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Longest first, as measured in CI (seconds on Node 20 in parentheses). */
export const LONG_FILES = [
  'test/http/pair-toggle.int.test.ts', // (574)
  'test/lists/list-service.int.test.ts', // (235)
  'test/http/set-routes.int.test.ts', // (169)
  'test/graph/pair/convergence.int.test.ts', // (166)
  'test/local-cassandra/launcher.int.test.ts', // (72)
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
