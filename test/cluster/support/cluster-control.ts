/**
 * What the fault tests do to the cluster beyond the launcher: watch a node's log for the moment
 * it convicts a peer, run the project's repair job as an operator would, and wait for a
 * condition.
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CqlClient, SCHEMA_CHANGE } from '../../../src/store/cassandra/client.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resolves with Date.now() when `nodeDir`'s system.log says `peer` is DOWN (after `since` bytes). */
export async function whenConvicted(nodeDir: string, peer: string, timeoutMs = 60_000): Promise<number> {
  const file = join(nodeDir, 'logs', 'system.log');
  const since = (await readFile(file, 'utf8').catch(() => '')).length;
  const needle = `/${peer}:7000 is now DOWN`;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const text = await readFile(file, 'utf8').catch(() => '');
    if (text.slice(since).includes(needle)) return Date.now();
    await sleep(100);
  }
  throw new Error(`${peer} not convicted by ${nodeDir} within ${timeoutMs} ms`);
}

/** Resolves when `nodeDir`'s log (after this call) says `peer` is UP. */
export async function whenUp(
  nodeDir: string,
  peer: string,
  since: number,
  timeoutMs = 60_000,
): Promise<number> {
  const file = join(nodeDir, 'logs', 'system.log');
  const needle = `/${peer}:7000 is now UP`;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const text = await readFile(file, 'utf8').catch(() => '');
    if (text.slice(since).includes(needle)) return Date.now();
    await sleep(100);
  }
  throw new Error(`${peer} not seen UP by ${nodeDir} within ${timeoutMs} ms`);
}

export async function logLength(nodeDir: string): Promise<number> {
  return (await readFile(join(nodeDir, 'logs', 'system.log'), 'utf8').catch(() => '')).length;
}

/** `npm run jobs -- repair --users …` with the service's environment; resolves with its output. */
export function runRepairJob(env: Record<string, string>, users: bigint[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/cli.ts', 'repair', '--users', users.join(',')],
      { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      out += d;
    });
    child.on('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`repair job exited ${code}:\n${out}`)),
    );
  });
}

/** Polls `probe` until `ok`, or throws after `ms`. */
export async function until<T>(
  what: string,
  ms: number,
  probe: () => Promise<T>,
  ok: (v: T) => boolean,
): Promise<T> {
  const deadline = Date.now() + ms;
  let last = await probe();
  while (!ok(last)) {
    if (Date.now() > deadline) throw new Error(`${what}: not reached within ${ms} ms`);
    await sleep(200);
    last = await probe();
  }
  return last;
}

/**
 * Makes the schema made so far durable on nodes that do not flush schema changes
 * (`flushSchemaChanges: false`: ~1 s a table on three busy nodes saved), before any test kills a
 * node. Such a change is in the commitlog only, and a node killed with `kill -9` replays it into
 * `system_schema` after it has loaded its schema: the keyspace is gone for it (checked on a
 * single node: the table's row in `system_schema.tables`, yet "keyspace does not exist"). A
 * dropped table makes each node recycle its commitlog, which flushes every table with unflushed
 * writes, `system_schema`'s among them: so a scratch keyspace with one table is made and dropped.
 * Each node's log must then show `system_schema.tables` flushed for that reason, or this throws.
 */
export async function flushSchemaByDrop(client: CqlClient, nodeDirs: readonly string[]): Promise<void> {
  const logs = nodeDirs.map((d) => join(d, 'logs', 'system.log'));
  const since = await Promise.all(logs.map(async (f) => (await readFile(f, 'utf8').catch(() => '')).length));
  const scratch = 'schema_flush_scratch';
  await client.execute(
    `CREATE KEYSPACE IF NOT EXISTS ${scratch} WITH replication = {'class': 'SimpleStrategy', 'replication_factor': ${nodeDirs.length}}`,
    [],
    SCHEMA_CHANGE,
  );
  await client.execute(`CREATE TABLE IF NOT EXISTS ${scratch}.t (id int PRIMARY KEY)`, [], SCHEMA_CHANGE);
  await client.execute(`DROP KEYSPACE ${scratch}`, [], SCHEMA_CHANGE);
  const needle = 'Enqueuing flush of system_schema.tables, Reason: COMMITLOG_DIRTY';
  await until(
    `every node flushes system_schema after the scratch keyspace's drop ("${needle}")`,
    30_000,
    () => Promise.all(logs.map(async (f, i) => (await readFile(f, 'utf8')).slice(since[i]).includes(needle))),
    (flushed) => flushed.every(Boolean),
  );
}
