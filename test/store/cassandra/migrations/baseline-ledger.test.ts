/**
 * The quick half of the baseline guard (the whole comparison is baseline-schema.int.test.ts, on
 * the real node): the ledger rows of `cql/baseline/schema.cql` name every numbered file of `cql/`
 * with its current checksum, so a new migration without a baseline update fails the unit run too.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CQL_DIR } from '../../../../src/store/cassandra/keyspace.js';
import { baselineFile } from '../../../../src/store/cassandra/migrations/migrate.js';

const ledgerLine = (version: string, checksum: string) =>
  `INSERT INTO schema_migrations (version, checksum, applied_at) VALUES ('${version}', '${checksum}', toTimestamp(now()));`;

describe('the baseline ledger', () => {
  it('records every numbered cql file with its checksum, in order', async () => {
    const files = (await readdir(CQL_DIR)).filter((f) => /^\d{3}_[\w-]+\.cql$/.test(f)).sort();
    const expected = await Promise.all(
      files.map(async (f) =>
        ledgerLine(
          f,
          createHash('sha256')
            .update(await readFile(join(CQL_DIR, f), 'utf8'))
            .digest('hex'),
        ),
      ),
    );
    const recorded = (await readFile(baselineFile(CQL_DIR), 'utf8'))
      .split('\n')
      .filter((l) => /^INSERT INTO schema_migrations\b/.test(l));
    expect(
      recorded,
      'cql/baseline/schema.cql must end with one ledger row per cql/NNN_*.cql (expected below), and hold ' +
        "each new file's tables, columns and options in their final shape: see the rule atop it",
    ).toEqual(expected);
  });
});
