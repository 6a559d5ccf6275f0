/**
 * `npm run worker` on the real node: two worker processes on one keyspace run each job once a
 * period between them — never two runs at once, never sooner than a period after the last start —
 * serve `/healthz` and `/metrics`, and stop on SIGTERM giving their leases up.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type TestKeyspace, testKeyspace } from '../support/cassandra.js';

let ks: TestKeyspace;
beforeAll(async () => {
  ks = await testKeyspace('worker');
});
afterAll(async () => {
  await ks?.drop();
});

interface RunLine {
  /** ISO time (pino's `isoTime`). */
  time: string;
  msg: string;
  job?: string;
  outcome?: string;
  ms?: number;
}

function startWorker(name: string) {
  const node = inject('cassandra');
  const proc: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/worker.ts'], {
    env: {
      ...process.env,
      CASSANDRA_CONTACT_POINTS: node.contactPoints.join(','),
      CASSANDRA_LOCAL_DC: node.localDataCenter,
      CASSANDRA_KEYSPACE: ks.keyspace,
      WORKER_PORT: '0',
      WORKER_JOBS: 'split-search=2s,split-buckets=off,repair-sweep=3s',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  proc.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<number | null>((r) => proc.on('exit', r));
  const url = (async () => {
    for (let i = 0; i < 600; i++) {
      const m = /"url":"(http:\/\/[^"]+)"/.exec(out);
      if (m?.[1]) return m[1];
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`${name}: not running after 60 s:\n${out}`);
  })();
  const lines = () =>
    out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as RunLine);
  return { proc, url, exited, lines, log: () => out };
}

describe('the worker process', () => {
  it('two workers: each job once a period between them, never two runs at once; /healthz, /metrics; SIGTERM stops them', async () => {
    const workers = [startWorker('w1'), startWorker('w2')];
    try {
      const urls = await Promise.all(workers.map((w) => w.url));
      await new Promise((r) => setTimeout(r, 12_000));
      const health = await fetch(`${urls[0]}/healthz`);
      const body = (await health.json()) as { status: string; jobs: { name: string; everyMs: number }[] };
      expect([health.status, body.status, body.jobs.map((j) => [j.name, j.everyMs])]).toEqual([
        200,
        'ok',
        [
          ['split-search', 2000],
          ['repair-sweep', 3000],
        ],
      ]);
      const metrics = await Promise.all(urls.map(async (u) => (await fetch(`${u}/metrics`)).text()));
      for (const m of metrics) expect(m).toMatch(/^flocklist_job_running\{job="split-search"\} [01]$/m);
      for (const w of workers) w.proc.kill('SIGTERM');
      expect(await Promise.all(workers.map((w) => w.exited))).toEqual([0, 0]);
      for (const job of ['split-search', 'repair-sweep']) {
        const every = job === 'split-search' ? 2000 : 3000;
        const runs = workers
          .flatMap((w, i) => w.lines().map((l) => ({ ...l, by: i })))
          .filter((l) => l.msg === 'job run' && l.job === job)
          .map((l) => {
            const end = Date.parse(l.time);
            return { start: end - (l.ms ?? 0), end, outcome: l.outcome, by: l.by };
          })
          .sort((a, b) => a.start - b.start);
        const overlaps = runs.slice(1).filter((r, i) => r.start < (runs[i]?.end ?? 0));
        // Starts are a period apart at least (the log's ms clock: 5 ms of rounding allowed).
        const early = runs.slice(1).filter((r, i) => r.start - (runs[i]?.start ?? 0) < every - 5);
        const ok = runs.filter((r) => r.outcome === 'ok').length;
        expect(runs.every((r) => Number.isFinite(r.start) && r.end >= r.start)).toBe(true);
        console.log(
          `[worker.int] ${job}: ${runs.length} runs (${runs.map((r) => `${r.by}:${r.outcome}`).join(' ')}), ${ok} ok`,
        );
        // A run cut by SIGTERM gives its lease up and ends `lost`; none fails.
        const failed = runs.filter((r) => r.outcome !== 'ok' && r.outcome !== 'lost');
        expect({ job, overlaps, early, failed, okAtLeast: ok >= 12_000 / every / 2 }).toEqual({
          job,
          overlaps: [],
          early: [],
          failed: [],
          okAtLeast: true,
        });
      }
      const stopped = workers.map((w) => w.lines().some((l) => l.msg === 'stopped'));
      expect(stopped).toEqual([true, true]);
    } finally {
      for (const w of workers) w.proc.kill('SIGKILL');
    }
  }, 120_000);
});
