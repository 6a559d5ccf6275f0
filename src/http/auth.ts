/**
 * Authentication and object-level authorization.
 *
 * Hono's own `jwt` middleware verifies the token with `alg` pinned to HS256 and accepts only the
 * `Bearer` scheme; its `HTTPException(401)` (with the `Jwt*` error as `cause`) is translated to
 * problem+json in `errors.ts`. `exp`/`nbf`/`iat` are honoured when present. A verified payload
 * must then carry `sub` as a user id; `scope` (space-separated) may grant `graph:admin`.
 *
 * Authorization is per object: `actFor` lets the token act only for its own `sub` (403
 * otherwise), except `graph:admin` service callers, who may act for any user and skip the
 * relationship visibility rules (never the existence checks).
 */
import type { Context, MiddlewareHandler } from 'hono';
import { jwt } from 'hono/jwt';
import { ApiError } from './errors.js';
import { parseUserId } from './ids.js';

export const ADMIN_SCOPE = 'graph:admin';
/** Longer Authorization headers are refused before any parsing. */
export const MAX_AUTHORIZATION_LENGTH = 4096;

/** Who is calling: the token's subject and whether it holds `graph:admin`. */
export interface Principal {
  sub: bigint;
  admin: boolean;
}

export interface AuthVariables {
  principal: Principal;
  jwtPayload: unknown;
}

/** Verifies the bearer token and sets `principal`. Throws 401 problems. */
export function authenticate(secret: string): MiddlewareHandler {
  const verify = jwt({ secret, alg: 'HS256' });
  return async (c, next) => {
    const header = c.req.header('Authorization');
    if (header !== undefined && header.length > MAX_AUTHORIZATION_LENGTH) {
      throw new ApiError('unauthorized', 'authorization header too long', {
        headers: { 'WWW-Authenticate': 'Bearer' },
      });
    }
    await verify(c, async () => {
      const payload = c.get('jwtPayload') as Record<string, unknown>;
      const sub = typeof payload.sub === 'string' ? parseUserId(payload.sub) : null;
      if (sub === null) {
        throw new ApiError('unauthorized', 'token subject must be a user id', {
          headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' },
        });
      }
      const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ') : [];
      c.set('principal', { sub, admin: scopes.includes(ADMIN_SCOPE) } satisfies Principal);
      await next();
    });
  };
}

export function principalOf(c: Context): Principal {
  const p = c.get('principal') as Principal | undefined;
  if (!p) throw new ApiError('unauthorized', 'authentication required');
  return p;
}

/** The principal may act for `id` (its own sub, or admin). 403 otherwise. */
export function actFor(c: Context, id: bigint): Principal {
  const p = principalOf(c);
  if (p.sub !== id && !p.admin) {
    throw new ApiError('forbidden', "a token may act only on its own subject's relationships");
  }
  return p;
}

export function requireAdmin(c: Context): Principal {
  const p = principalOf(c);
  if (!p.admin) throw new ApiError('forbidden', `this call needs the ${ADMIN_SCOPE} scope`);
  return p;
}
