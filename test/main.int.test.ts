/**
 * The service process as a user runs it: it migrates, serves /readyz, drains and exits on
 * SIGTERM, and stops by itself when the process that started it (npm, a shell) goes away.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { dropKeyspace } from './support/cassandra.js';

const { contactPoints, localDataCenter } = inject('cassandra');
const keyspace = `t_main_${randomBytes(4).toString('hex')}`;

interface Started {
  shell: ChildProcess;
  servicePid: number;
  url: Promise<string>;
  exited: Promise<void>;
  log: () => string;
}

/** Runs the service under `sh`, which reports the service's pid first and then waits for it. */
function startUnderShell(): Started {
  const shell = spawn('sh', ['-c', 'node --import tsx src/main.ts & echo "pid $!"; wait'], {
    env: {
      ...process.env,
      PORT: '0',
      CASSANDRA_CONTACT_POINTS: contactPoints.join(','),
      CASSANDRA_LOCAL_DC: localDataCenter,
      CASSANDRA_KEYSPACE: keyspace,
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let servicePid = 0;
  let resolveUrl: (u: string) => void = () => {};
  const url = new Promise<string>((resolve) => {
    resolveUrl = resolve;
  });
  shell.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
    const pid = /^pid (\d+)$/m.exec(out);
    if (pid && !servicePid) servicePid = Number(pid[1]);
    const listening = /"url":"(http:\/\/[^"]+)"/.exec(out);
    if (listening?.[1]) resolveUrl(listening[1]);
  });
  shell.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  return {
    shell,
    get servicePid() {
      return servicePid;
    },
    url,
    exited: new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        if (servicePid && !alive(servicePid)) {
          clearInterval(poll);
          resolve();
        }
      }, 100);
    }),
    log: () => out,
  };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const within = <T>(p: Promise<T>, ms: number, what: string) =>
  Promise.race([
    p,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} timed out`)), ms)),
  ]);

describe('the service process', () => {
  afterAll(async () => {
    await dropKeyspace(keyspace);
  });

  it('migrates, answers /readyz, runs the embedded worker (its first runs in /metrics), and drains and exits on SIGTERM', async () => {
    const s = startUnderShell();
    const url = await within(s.url, 60_000, 'listening');
    const ready = await fetch(`${url}/readyz`);
    expect([ready.status, await ready.json()]).toEqual([200, { status: 'pass' }]);
    // Each default job is due at the first start on a keyspace: its run ends within seconds here.
    const ran = async () => {
      for (;;) {
        const text = await (await fetch(`${url}/metrics`)).text();
        const ok = ['split-search', 'split-buckets', 'repair-sweep'].map((job) =>
          new RegExp(`^flocklist_job_runs_total\\{job="${job}",outcome="ok"\\} 1$`, 'm').test(text),
        );
        if (ok.every(Boolean)) return ok;
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    expect(await within(ran(), 30_000, 'the first job runs')).toEqual([true, true, true]);
    process.kill(s.servicePid, 'SIGTERM');
    await within(s.exited, 20_000, 'exit after SIGTERM');
    // Order by the records' own clocks: pino may write a later record to stdout first.
    const at = (msg: string) =>
      s
        .log()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { time: string; msg: string; signal?: string })
        .find((r) => r.msg === msg);
    const draining = at('shutting down: draining');
    const stopped = at('stopped');
    expect([draining?.signal, stopped?.msg]).toEqual(['SIGTERM', 'stopped']);
    expect(draining!.time <= stopped!.time).toBe(true);
  }, 90_000);

  it('stops by itself when its parent dies (SIGKILL to the shell that started it)', async () => {
    const s = startUnderShell();
    await within(s.url, 60_000, 'listening');
    s.shell.kill('SIGKILL');
    await within(s.exited, 20_000, 'exit after the parent died');
    expect(alive(s.servicePid)).toBe(false);
  }, 90_000);
});
