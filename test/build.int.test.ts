/**
 * Production runs the compiled JavaScript: `tsc -p tsconfig.build.json` emits `dist/`, and plain
 * `node` (no tsx, no loader) runs the service and the jobs CLI from it. Pins what only the built
 * tree can get wrong: files the source resolves relative to itself (`cql/`, the Swagger UI
 * assets), and the dev launcher (`src/local-cassandra/`) reached only from the entry points.
 */

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdir, readFile, rm } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { dropKeyspace } from './support/cassandra.js';

const run = promisify(execFile);
const ROOT = new URL('..', import.meta.url).pathname;
const DIST = join(ROOT, 'dist');
const { contactPoints, localDataCenter } = inject('cassandra');
const keyspace = `t_build_${randomBytes(4).toString('hex')}`;

/** The environment of a production process: this node binary alone, no loader in NODE_OPTIONS. */
const { NODE_OPTIONS: _loader, ...inherited } = process.env;
const env = {
  ...inherited,
  PORT: '0',
  CASSANDRA_CONTACT_POINTS: contactPoints.join(','),
  CASSANDRA_LOCAL_DC: localDataCenter,
  CASSANDRA_KEYSPACE: keyspace,
  // The shared test node can take more than the default 5 s over a CREATE TABLE under load.
  CASSANDRA_REQUEST_TIMEOUT_MS: '30000',
  // The embedded worker is `main.int.test.ts`'s to check; here its first runs would only add load.
  GRAPH_WORKER: 'off',
  LOG_LEVEL: 'info',
};
const node = (args: string[]) => run(process.execPath, args, { cwd: ROOT, env });

async function jsFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.js')).map((e) => join(e.parentPath, e.name));
}

let service: ChildProcess | undefined;

beforeAll(async () => {
  // A clean build, as `npm run build` makes: no file compiled from a source since moved or removed.
  await rm(join(ROOT, 'dist'), { recursive: true, force: true });
  await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
    cwd: ROOT,
  });
}, 180_000);

afterAll(async () => {
  service?.kill('SIGKILL');
  await dropKeyspace(keyspace);
});

describe('the built service (dist/)', () => {
  it('imports the dev launchers only from their entry points: Cassandra’s from main.js, worker.js and cli.js, Kafka’s from nothing', async () => {
    const importers: Record<string, string[]> = { 'local-cassandra': [], 'local-kafka': [] };
    for (const file of await jsFiles(DIST)) {
      const path = relative(DIST, file);
      // The launchers themselves (the Kafka launcher shares Cassandra's Maven resolver and supervisor).
      if (path.startsWith('local-cassandra/') || path.startsWith('local-kafka/')) continue;
      const text = await readFile(file, 'utf8');
      for (const room of Object.keys(importers))
        if (new RegExp(`['"](?:\\.\\.?\\/)+${room}\\/`).test(text)) importers[room]?.push(path);
    }
    expect({
      'local-cassandra': importers['local-cassandra']?.sort(),
      'local-kafka': importers['local-kafka'],
    }).toEqual({
      'local-cassandra': ['cli.js', 'main.js', 'worker.js'],
      'local-kafka': [],
    });
  });

  it('runs under plain node: finds cql/, answers /readyz, serves a follow; the jobs CLI runs from dist', async () => {
    const proc = spawn(process.execPath, ['dist/main.js'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    service = proc;
    let out = '';
    const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not listening after 90 s:\n${out}`)), 90_000);
      const onData = (d: Buffer) => {
        out += d.toString();
        const listening = /"url":"(http:\/\/[^"]+)"/.exec(out);
        if (listening?.[1]) {
          clearTimeout(timer);
          resolve(listening[1]);
        }
      };
      proc.stdout.on('data', onData);
      proc.stderr.on('data', onData);
      void exited.then((code) => reject(new Error(`exited (${code}) before listening:\n${out}`)));
    });

    // /readyz compares the keyspace with the cql/ files read through CQL_DIR.
    const ready = await fetch(`${url}/readyz`);
    expect([ready.status, await ready.json()]).toEqual([200, { status: 'pass' }]);
    const { version } = JSON.parse(
      await readFile(join(ROOT, 'node_modules/swagger-ui-dist/package.json'), 'utf8'),
    );
    const docs = await fetch(`${url}/docs/assets/${version}/swagger-ui-dist/swagger-ui.css`);
    expect([docs.status, docs.headers.get('content-type')]).toEqual([200, 'text/css; charset=utf-8']);

    const migrate = await node(['dist/cli.js', 'migrate']);
    expect(migrate.stdout).toBe('[schema] up to date\n');
    const token = async (...args: string[]) => (await node(['dist/cli.js', 'token', ...args])).stdout.trim();
    const admin = await token('--sub', '1', '--admin');
    const ada = await token('--sub', '11');

    const send = async (method: string, path: string, auth: string, init: RequestInit = {}) => {
      const res = await fetch(`${url}${path}`, {
        ...init,
        method,
        headers: { authorization: `Bearer ${auth}`, 'content-type': 'application/json', ...init.headers },
      });
      return [res.status, await res.json()];
    };
    expect(await send('PUT', '/v1/users/11', admin, { body: '{"username":"ada"}' })).toEqual([
      201,
      { id: '11', username: 'ada', private: false, state: 'active', hide_lists: false, last_active_at: null },
    ]);
    expect(await send('PUT', '/v1/users/12', admin, { body: '{"username":"bo"}' })).toEqual([
      201,
      { id: '12', username: 'bo', private: false, state: 'active', hide_lists: false, last_active_at: null },
    ]);
    expect(await send('PUT', '/v1/users/11/following/12', ada)).toEqual([200, { state: 'following' }]);
    expect(await send('GET', '/v1/users/12/followers', ada)).toEqual([
      200,
      {
        items: [
          {
            id: '11',
            username: 'ada',
            followed_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT[\d:]{8}\.\d{6}Z$/),
          },
        ],
        next_cursor: null,
        prev_cursor: null,
      },
    ]);

    proc.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 240_000);
});
