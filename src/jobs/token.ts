/**
 * Mints HS256 access tokens for local use and tests (`npm run token -- --sub 42 [--admin] [--exp
 * 3600]` prints one: `commands/token.ts`). Every token has an `exp`. Signing uses `node:crypto`
 * only, so the API's verifier (Hono's `jwt`) is exercised against an independent implementation.
 */
import { createHmac } from 'node:crypto';

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
