/**
 * A small schema migration runner: `cql/NNN_name.cql` files applied in order, each once.
 *
 * Design note. The keyspace (name and replication from config) is created first; applied
 * versions are recorded in `schema_migrations` with a checksum, and a changed checksum of an
 * applied file stops start-up rather than silently diverging. Every statement is written
 * `IF NOT EXISTS`, so two runners racing (two service instances starting together) are safe: the
 * loser's DDL is a no-op and its record insert rewrites the same values. After each DDL the runner
 * waits for schema agreement, which matters on a multi-node cluster.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CqlClient } from './client.js';

export interface MigrationResult {
  applied: string[];
  skipped: string[];
}

export class MigrationChecksumError extends Error {
  override name = 'MigrationChecksumError';
}

function replicationCql(replication: Record<string, string | number>): string {
  const body = Object.entries(replication)
    .map(([k, v]) => `'${k}': ${typeof v === 'number' ? v : `'${v}'`}`)
    .join(', ');
  return `{${body}}`;
}

/** Splits a CQL file into statements: `;` at a line end ends one; `--` lines are comments. */
export function splitStatements(text: string): string[] {
  const withoutComments = text
    .split('\n')
    .map((l) => l.replace(/--.*$/, ''))
    .join('\n');
  return withoutComments
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.trim())
    .filter(Boolean);
}

/** `checkSchemaAgreement` exists in the driver but is missing from its type declarations. */
type AgreementCheck = { checkSchemaAgreement(): Promise<boolean> };

async function waitForAgreement(client: CqlClient): Promise<void> {
  const metadata = client.metadata as unknown as AgreementCheck;
  for (let i = 0; i < 40; i++) {
    if (await metadata.checkSchemaAgreement()) return;
    await new Promise((r) => setTimeout(r, 250));
  }
}

export async function migrate(
  client: CqlClient,
  keyspace: string,
  replication: Record<string, string | number>,
  cqlDir: string,
  log: (line: string) => void = () => {},
): Promise<MigrationResult> {
  await client.execute(
    `CREATE KEYSPACE IF NOT EXISTS ${keyspace} WITH replication = ${replicationCql(replication)}`,
    [],
    { prepare: false },
  );
  await waitForAgreement(client);
  await client.execute(
    `CREATE TABLE IF NOT EXISTS ${keyspace}.schema_migrations (version text PRIMARY KEY, checksum text, applied_at timestamp)`,
    [],
    { prepare: false },
  );
  await waitForAgreement(client);

  const applied = new Map<string, string>();
  const rs = await client.execute(`SELECT version, checksum FROM ${keyspace}.schema_migrations`, [], {
    prepare: false,
  });
  for (const row of rs.rows) applied.set(row.version as string, row.checksum as string);

  const files = (await readdir(cqlDir)).filter((f) => /^\d{3}_[\w-]+\.cql$/.test(f)).sort();
  const result: MigrationResult = { applied: [], skipped: [] };
  for (const file of files) {
    const text = await readFile(join(cqlDir, file), 'utf8');
    const checksum = createHash('sha256').update(text).digest('hex');
    const known = applied.get(file);
    if (known !== undefined) {
      if (known !== checksum) {
        throw new MigrationChecksumError(
          `migration ${file} was changed after it was applied (checksum mismatch)`,
        );
      }
      result.skipped.push(file);
      continue;
    }
    for (const statement of splitStatements(text)) {
      const qualified = statement
        .replace(
          /^(CREATE\s+(?:TABLE|TYPE|INDEX|CUSTOM INDEX)\s+IF\s+NOT\s+EXISTS\s+)(\w+)/i,
          (_m, head: string, name: string) => `${head}${keyspace}.${name}`,
        )
        .replace(
          /^(ALTER\s+TABLE\s+)(\w+)(\s)/i,
          (_m, head: string, name: string, sp: string) => `${head}${keyspace}.${name}${sp}`,
        );
      await client.execute(qualified, [], { prepare: false }).catch((e: unknown) => {
        // `ALTER TABLE … ADD` has no IF NOT EXISTS on every server we support: a column another
        // runner (or a crashed earlier run) already added is the outcome this statement wants.
        if (!(/^ALTER\s+TABLE\b.*\bADD\b/is.test(statement) && /already exists/i.test(String(e)))) throw e;
      });
      await waitForAgreement(client);
    }
    await client.execute(
      `INSERT INTO ${keyspace}.schema_migrations (version, checksum, applied_at) VALUES (?, ?, toTimestamp(now()))`,
      [file, checksum],
    );
    log(`applied ${file}`);
    result.applied.push(file);
  }
  return result;
}

/** True when the keyspace has every migration in `cqlDir` recorded (readiness). */
export async function schemaPresent(client: CqlClient, keyspace: string, cqlDir: string): Promise<boolean> {
  const files = (await readdir(cqlDir)).filter((f) => /^\d{3}_[\w-]+\.cql$/.test(f));
  const rs = await client.execute(`SELECT version FROM ${keyspace}.schema_migrations`, [], {
    prepare: false,
  });
  const have = new Set(rs.rows.map((r) => r.version as string));
  return files.every((f) => have.has(f));
}
