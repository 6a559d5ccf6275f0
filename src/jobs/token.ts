/**
 * Mints HS256 access tokens for local use and tests:
 * `npm run token -- --sub 42 [--admin] [--exp 3600]` prints a JWT (always with `exp`) signed with
 * `GRAPH_JWT_SECRET` (from the config). Signing uses `node:crypto` only, so the API's verifier
 * (Hono's `jwt`) is exercised against an independent implementation.
 */
import { createHmac } from 'node:crypto';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';

export interface TokenClaims {
  /** Acting user id, decimal string. */
  sub: string;
  admin?: boolean;
  /** Lifetime in seconds from now; default 3,600. Every token gets an `exp` (the API refuses tokens without one). */
  expiresInSeconds?: number;
  /** Extra claims (tests: `nbf`, odd `scope`s; `{ exp: undefined }` drops `exp`). */
  extra?: Record<string, unknown>;
}

const b64url = (s: string | Buffer) => Buffer.from(s).toString('base64url');

/** A compact JWS `header.payload.signature` with `alg: HS256`. */
export function mintToken(
  claims: TokenClaims,
  secret: string,
  nowSeconds = Math.floor(Date.now() / 1000),
): string {
  const payload: Record<string, unknown> = { sub: claims.sub, iat: nowSeconds };
  if (claims.admin) payload.scope = 'graph:admin';
  payload.exp = nowSeconds + (claims.expiresInSeconds ?? 3600);
  Object.assign(payload, claims.extra);
  const head = `${b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))}.${b64url(JSON.stringify(payload))}`;
  return `${head}.${createHmac('sha256', secret).update(head).digest('base64url')}`;
}

/** CLI entry: `token --sub <id> [--admin] [--exp <seconds>]`; `--exp` is at least 1 (default 3600). */
export function tokenCommand(argv: string[]): void {
  const { values } = parseArgs({
    args: argv,
    options: {
      sub: { type: 'string' },
      admin: { type: 'boolean', default: false },
      exp: { type: 'string', default: '3600' },
    },
  });
  if (!values.sub || !/^[1-9][0-9]{0,18}$/.test(values.sub)) {
    throw new Error('usage: npm run token -- --sub <user id> [--admin] [--exp <seconds>]');
  }
  const exp = Number(values.exp);
  if (!Number.isInteger(exp) || exp < 1) throw new Error('--exp must be a positive integer of seconds');
  const config = loadConfig();
  process.stdout.write(
    `${mintToken({ sub: values.sub, admin: values.admin, expiresInSeconds: exp }, config.graph.jwtSecret)}\n`,
  );
}
