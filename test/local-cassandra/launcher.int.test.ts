/**
 * The launcher's promises, on a second real node bound to 127.0.0.2 with its own directory:
 * SIGINT and SIGTERM stop the JVM; a parent killed with SIGKILL takes the JVM with it; a second
 * start reuses the data.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCqlClient } from '../../src/store/cassandra/client.js';

const ADDRESS = '127.0.0.2';
/**
 * The node's JVM on C1 alone (`JAVA_TOOL_OPTIONS`, read by every JVM): what is tested is the
 * launcher's start, stop and signals, and C1 halves a start's CPU, three starts here.
 */
const QUICK_JVM = '-XX:TieredStopAtLevel=1';
let dir: string;

function jvmsFor(nodeDir: string): number[] {
  try {
    return execFileSync('pgrep', ['-f', `cassandra.storagedir=${nodeDir}`], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .filter(Boolean)
      .map(Number)
      .filter((pid) => {
        try {
          return (
            execFileSync('ps', ['-o', 'comm=', '-p', String(pid)], { encoding: 'utf8' }).trim() === 'java'
          );
        } catch {
          return false;
        }
      });
  } catch {
    return [];
  }
}

function startCli(): { child: ChildProcess; ready: Promise<string> } {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/local-cassandra/cli.ts',
      '--address',
      ADDRESS,
      '--dir',
      dir,
      '--heap',
      '512M',
      '--seeds',
      `${ADDRESS}:7000`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, JAVA_TOOL_OPTIONS: QUICK_JVM } },
  );
  let out = '';
  const ready = new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('ready on')) resolve(out);
    });
    child.stderr?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.on('exit', (code) => reject(new Error(`launcher exited (${code}) before ready:\n${out}`)));
  });
  return { child, ready };
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.on('exit', (code) => resolve(code));
  });

async function waitUntil(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return check();
}

describe('local Cassandra launcher', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'flocklist-node-'));
  });
  afterAll(async () => {
    for (const pid of jvmsFor(dir)) process.kill(pid, 'SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  it('SIGINT stops the JVM; a second start (SIGTERM) reuses the data; SIGKILL of the parent takes the JVM along', async () => {
    const first = startCli();
    const log = await first.ready;
    expect(log).toMatch(/ready on 127\.0\.0\.2:9042 in [\d.]+ s/);
    expect(jvmsFor(dir)).toHaveLength(1);

    const client = createCqlClient({
      contactPoints: [`${ADDRESS}:9042`],
      localDataCenter: 'datacenter1',
      consistency: 'one',
      requestTimeoutMs: 20_000,
    });
    await client.execute(
      "CREATE KEYSPACE IF NOT EXISTS launcher_probe WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    );
    await client.execute('CREATE TABLE IF NOT EXISTS launcher_probe.t (k int PRIMARY KEY, v text)');
    await client.execute('INSERT INTO launcher_probe.t (k, v) VALUES (1, ?)', ['kept'], { prepare: true });
    await client.shutdown();

    first.child.kill('SIGINT');
    expect(await exited(first.child)).toBe(0);
    expect(jvmsFor(dir)).toEqual([]);

    const second = startCli();
    await second.ready;
    const again = createCqlClient({
      contactPoints: [`${ADDRESS}:9042`],
      localDataCenter: 'datacenter1',
      consistency: 'one',
      requestTimeoutMs: 20_000,
    });
    const rs = await again.execute('SELECT v FROM launcher_probe.t WHERE k = 1');
    expect(rs.rows.map((r) => r.v)).toEqual(['kept']);
    await again.shutdown();
    second.child.kill('SIGTERM');
    expect(await exited(second.child)).toBe(0);
    expect(jvmsFor(dir)).toEqual([]);

    const third = startCli();
    await third.ready;
    expect(jvmsFor(dir)).toHaveLength(1);
    third.child.kill('SIGKILL');
    await exited(third.child);
    expect(await waitUntil(() => jvmsFor(dir).length === 0, 60_000)).toBe(true);
  }, 300_000);
});
