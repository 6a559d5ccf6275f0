/**
 * Authentication and object-level authorization.
 *
 * Hono's own `jwt` middleware verifies the signature with `alg` pinned to HS256 and accepts only
 * the `Bearer` scheme; its `HTTPException(401)` (with the `Jwt*` error as `cause`) is translated
 * to problem+json in `errors.ts`. The time claims are checked here instead (Hono's checks have no
 * leeway, so a token minted by a host whose clock runs 2 s ahead was refused): `exp` is required
 * (a token without one would never expire) and `exp`, `nbf`, `iat` are compared with
 * `CLOCK_SKEW_SECONDS` of leeway. A verified payload must then carry `sub` as a user id; `scope`
 * (space-separated) may grant `graph:admin`.
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
/** Leeway on `exp`, `nbf` and `iat` for clocks that disagree by a few seconds. */
export const CLOCK_SKEW_SECONDS = 5;

/** Who is calling: the token's subject and whether it holds `graph:admin`. */
export interface Principal {
  sub: bigint;
  admin: boolean;
}

export interface AuthVariables {
  principal: Principal;
  jwtPayload: unknown;
}

export interface AuthOptions {
  /** Seconds of leeway on the time claims. Default `CLOCK_SKEW_SECONDS`. */
  leewaySeconds?: number;
  /** Clock in ms since the epoch (tests). Default `Date.now`. */
  now?: () => number;
}

const invalidToken = (detail: string) =>
  new ApiError('unauthorized', detail, {
    headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' },
  });

const isTime = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/**
 * Checks `exp` (required), `nbf` and `iat` (optional) of a verified payload against `nowSeconds`
 * with `leeway` seconds either way. Throws a 401 `ApiError` naming the failed claim.
 *
 * @example checkTimeClaims({ exp: 1_000, iat: 1_003 }, 1_000, 5) // passes: both within 5 s
 */
export function checkTimeClaims(payload: Record<string, unknown>, nowSeconds: number, leeway: number): void {
  if (payload.exp === undefined) throw invalidToken('token has no expiry (exp)');
  if (!isTime(payload.exp) || payload.exp <= nowSeconds - leeway) throw invalidToken('token expired');
  if (payload.nbf !== undefined && (!isTime(payload.nbf) || payload.nbf > nowSeconds + leeway)) {
    throw invalidToken('token not yet valid');
  }
  if (payload.iat !== undefined && (!isTime(payload.iat) || payload.iat > nowSeconds + leeway)) {
    throw invalidToken('token issued in the future');
  }
}

/** Verifies the bearer token and sets `principal`. Throws 401 problems. */
export function authenticate(secret: string, o: AuthOptions = {}): MiddlewareHandler {
  const verify = jwt({ secret, alg: 'HS256', verification: { exp: false, nbf: false, iat: false } });
  const leeway = o.leewaySeconds ?? CLOCK_SKEW_SECONDS;
  const now = o.now ?? Date.now;
  return async (c, next) => {
    const header = c.req.header('Authorization');
    if (header !== undefined && header.length > MAX_AUTHORIZATION_LENGTH) {
      throw new ApiError('unauthorized', 'authorization header too long', {
        headers: { 'WWW-Authenticate': 'Bearer' },
      });
    }
    await verify(c, async () => {
      const payload = c.get('jwtPayload') as Record<string, unknown>;
      checkTimeClaims(payload, Math.floor(now() / 1000), leeway);
      const sub = typeof payload.sub === 'string' ? parseUserId(payload.sub) : null;
      if (sub === null) throw invalidToken('token subject must be a user id');
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
