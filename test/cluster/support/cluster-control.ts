/**
 * What the fault tests do to the cluster beyond the launcher: watch a node's log for the moment
 * it convicts a peer, run the project's repair job as an operator would, and wait for a
 * condition.
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

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
