/**
 * The worker's own HTTP surface (`npm run worker`): `GET /metrics` (Prometheus) and `GET /healthz`
 * — 200 with each job's state while the worker can read its leases, 503 once it cannot (the
 * database unreachable); a job failing again and again shows in its `failures`, not in the status.
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import type { Registry } from 'prom-client';
import type { JobView } from './metrics.js';

export interface WorkerHealth {
  healthy(): boolean;
  jobs(): (JobView & { everyMs: number })[];
}

export function createWorkerApp(registry: Registry, worker: WorkerHealth): Hono {
  const app = new Hono();
  app.get('/metrics', async (c) =>
    c.body(await registry.metrics(), 200, { 'content-type': registry.contentType }),
  );
  app.get('/healthz', (c) => {
    const jobs = worker.jobs().map((j) => ({
      name: j.name,
      everyMs: j.everyMs,
      running: j.running,
      holder: j.holder,
      generation: j.generation === null ? null : String(j.generation),
      lastStartMs: j.state?.lastStartMs ?? null,
      lastEndMs: j.state?.lastEndMs ?? null,
      lastRows: j.state?.lastRows ?? null,
      failures: j.state?.failures ?? 0,
    }));
    const ok = worker.healthy();
    return c.json({ status: ok ? 'ok' : 'unavailable', jobs }, ok ? 200 : 503);
  });
  return app;
}

/** Serves `app` on `host:port`; resolves with its address and a close. */
export function serveWorkerApp(
  app: Hono,
  host: string,
  port: number,
): Promise<{ url: string; close(): Promise<void> }> {
  return new Promise((resolve) => {
    const server = serve({ fetch: app.fetch, port, hostname: host }, (info) =>
      resolve({
        url: `http://${info.address}:${info.port}`,
        close: () => new Promise<void>((r) => server.close(() => r())),
      }),
    );
  });
}
