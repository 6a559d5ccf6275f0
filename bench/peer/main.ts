/**
 * The Postgres peer as a process (`bench:mixed --peer` starts one per instance): serves
 * `peerApp` on `HOST:PORT` (PORT 0: a free port) over the database `PEER_DATABASE` of the server
 * on 127.0.0.1:`PEER_PG_PORT` with a pool of `PEER_POOL` connections, tokens checked with
 * `GRAPH_JWT_SECRET`. Prints one JSON `listening` line with its `url`; exits on SIGTERM (after
 * the requests in flight), and on its own when the process that started it is gone.
 */
import { serve } from '@hono/node-server';
import pg from 'pg';
import { peerApp } from './app.js';

const env = (name: string, fallback?: string): string => {
  const v = process.env[name] ?? fallback;
  if (v === undefined) {
    console.error(`peer: ${name} is required`);
    process.exit(2);
  }
  return v;
};
const pool = new pg.Pool({
  host: '127.0.0.1',
  port: Number(env('PEER_PG_PORT')),
  user: 'postgres',
  database: env('PEER_DATABASE', 'peer'),
  max: Number(env('PEER_POOL', '16')),
});
pool.on('error', () => undefined);
const { app } = peerApp({ pool, jwtSecret: env('GRAPH_JWT_SECRET') });
const server = serve(
  { fetch: app.fetch, port: Number(env('PORT', '0')), hostname: env('HOST', '127.0.0.1') },
  (info) =>
    console.log(JSON.stringify({ level: 30, msg: 'listening', url: `http://127.0.0.1:${info.port}` })),
);
const stop = () => {
  server.close(() => void pool.end().finally(() => process.exit(0)));
  setTimeout(() => process.exit(0), 5000).unref();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) stop();
}, 1000).unref();
