/**
 * Every operation has happy-path, error and security tests: the operationIds of the
 * app's OpenAPI document are exactly the rows of `OPERATION_TESTS` (`operations.ts`), each row
 * names at least one test per category, and every named title is written, quoted, in the named
 * file. A new route fails here until its row is added.
 */
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type CoveringTest, OPERATION_TESTS, type OperationCoverage, SHARED_SECURITY } from './operations.js';
import { buildTestApp, call, stubGraph } from './support/app.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const CATEGORIES = ['happy', 'error', 'security'] as const;

async function operationIds(): Promise<string[]> {
  const { app } = buildTestApp({ graph: stubGraph() });
  const doc = (await call(app, 'GET', '/openapi.json')).json as {
    paths: Record<string, Record<string, { operationId: string }>>;
  };
  return Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((op) => op.operationId));
}

/** Whether `title` is written as a quoted string in `file`. */
const fileTexts = new Map<string, string | null>();
function titleIn({ file, title }: CoveringTest): boolean {
  if (!fileTexts.has(file)) {
    const path = `${ROOT}${file}`;
    fileTexts.set(file, existsSync(path) ? readFileSync(path, 'utf8') : null);
  }
  const text = fileTexts.get(file);
  return text != null && ["'", '"', '`'].some((q) => text.includes(`${q}${title}${q}`));
}

describe('every operation has happy-path, error and security tests', () => {
  it('OPERATION_TESTS has a row for exactly the operations of the OpenAPI document', async () => {
    const ids = await operationIds();
    const missing = ids.filter((id) => !(id in OPERATION_TESTS));
    expect(
      missing,
      `add a row to OPERATION_TESTS in test/http/operations.ts for each of: ${missing.join(', ')} — ` +
        `e.g. ${missing[0] ?? '<operationId>'}: { happy: [{ file: 'test/http/<file>', title: '<test title>' }], ` +
        'error: [...], security: [SHARED_SECURITY, ...] } (and an ACCESS row in test/http/route-security.test.ts)',
    ).toEqual([]);
    expect(
      Object.keys(OPERATION_TESTS).filter((id) => !ids.includes(id)),
      'rows of OPERATION_TESTS for operations that no longer exist',
    ).toEqual([]);
  });

  it('each row names at least one test per category, and every operation runs the shared security suite', () => {
    const empty = Object.entries(OPERATION_TESTS).flatMap(([id, row]: [string, OperationCoverage]) =>
      CATEGORIES.filter((c) => row[c].length === 0).map((c) => `${id}.${c}`),
    );
    expect(empty).toEqual([]);
    expect(
      Object.entries(OPERATION_TESTS)
        .filter(([, row]) => !row.security.includes(SHARED_SECURITY))
        .map(([id]) => id),
    ).toEqual([]);
  });

  it('every named title is written in the named file', () => {
    const absent = Object.entries(OPERATION_TESTS).flatMap(([id, row]) =>
      CATEGORIES.flatMap((c) =>
        row[c].filter((test) => !titleIn(test)).map((test) => `${id}.${c}: ${test.file}: ${test.title}`),
      ),
    );
    expect(absent).toEqual([]);
  });

  it('the check can fail: an invented title or file is reported', () => {
    expect([
      titleIn({ file: SHARED_SECURITY.file, title: 'no such test' }),
      titleIn({ file: 'test/http/no-such.test.ts', title: SHARED_SECURITY.title }),
      titleIn(SHARED_SECURITY),
    ]).toEqual([false, false, true]);
  });
});
