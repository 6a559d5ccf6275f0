/**
 * Shared helpers of the Part 2 route tests on the real node: problem bodies, deterministic
 * `followed_at` values from admin `Graph-Position` writes, and user creation.
 */
import { expect } from 'vitest';
import { formatTime } from '../../../src/http/times.js';
import { bearer, call, problem } from './app.js';
import type { RealApp } from './real-app.js';

export const P0 = 1_796_000_000_000_000n;
/** The position of step `k` (ms apart). */
export const at = (k: number) => P0 + BigInt(k) * 1000n;
export const time = (k: number) => formatTime(at(k));
export const item = (id: number, k: number) => ({ id: String(id), username: `u${id}`, followed_at: time(k) });
export const admin = bearer(999_999, { admin: true });
export const as = (id: number) => bearer(id);

export { problem };
/** Every relationship flag false: the answer for an unknown, deactivated or unrelated id. */
export const NO_RELATIONSHIP = {
  following: false,
  followed_by: false,
  requested: false,
  requested_by: false,
  blocking: false,
  blocked_by: false,
  muting: false,
  close_friend: false,
  restricting: false,
};
export const notFound = (id: number) => problem(404, 'user_not_found', `user ${id} not found`);
export const FORBIDDEN = problem(403, 'forbidden', "a token may act only on its own subject's relationships");
export const NOT_VISIBLE = problem(403, 'not_visible', 'this list is not visible to you');
export const UNAUTHORIZED_STATUS = 401;

type Init = Parameters<typeof call>[3];

/** Request helpers bound to one real app. */
export function scenario(get: () => RealApp) {
  const req = (method: string, path: string, o: Init = {}) => call(get().app, method, path, o);
  const expectRes = async (p: ReturnType<typeof req>, status: number, json: unknown) => {
    const res = await p;
    expect([res.status, res.json]).toEqual([status, json]);
    return res;
  };
  const users = async (...specs: [number, boolean?][]) => {
    for (const [id, priv] of specs) {
      const res = await req('PUT', `/v1/users/${id}`, {
        auth: admin,
        body: { username: `u${id}`, private: !!priv },
      });
      expect(res.status).toBe(201);
    }
  };
  /** Admin replay of `src → tgt` at position `at(k)`. */
  const adminOp = async (method: string, src: number, rel: string, tgt: number, k: number) => {
    const res = await req(method, `/v1/users/${src}/${rel}/${tgt}`, {
      auth: admin,
      headers: { 'Graph-Position': String(at(k)) },
    });
    expect(res.status).toBe(200);
  };
  return { req, expectRes, users, adminOp };
}
