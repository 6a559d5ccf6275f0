/**
 * `createApp(deps)`: the Hono application — middleware, routes and the one error handler. It
 * holds no globals; everything it talks to arrives in `deps`, so tests build it in-process on top
 * of the real store and call `app.request()`.
 */
import { Hono } from 'hono';

export interface AppDeps {
  /** True when the database answers and the schema is present. */
  ready: () => Promise<boolean>;
}

export function createApp(deps: AppDeps): Hono {
  const app = new Hono();
  app.get('/healthz', (c) => c.json({ status: 'pass' }));
  app.get('/readyz', async (c) => {
    const ok = await deps.ready().catch(() => false);
    return c.json({ status: ok ? 'pass' : 'fail' }, ok ? 200 : 503);
  });
  return app;
}
