/**
 * Fuzz (fast-check) over every route on the real node: random path parameters, query strings,
 * headers (tokens, idempotency keys, positions, content types, request ids) and bodies (valid
 * shapes, random JSON, broken JSON). Property: never a 5xx; every 4xx is RFC 9457 problem+json
 * whose `status` matches; no stack, driver text or CQL in any body.
 * Replay a failure with `FUZZ_SEED=<seed> FUZZ_RUNS=<n>`.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/http/errors.js';
import { bearer } from './support/app.js';
import { type RealApp, realApp } from './support/real-app.js';

const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2_147_483_647);
const RUNS = Number(process.env.FUZZ_RUNS ?? 1000);

const ROUTES: [string, string][] = [
  ['PUT', '/v1/users/{id}'],
  ['GET', '/v1/users/{id}'],
  ['PUT', '/v1/users/{id}/following/{x}'],
  ['DELETE', '/v1/users/{id}/following/{x}'],
  ['GET', '/v1/users/{id}/following/{x}'],
  ['GET', '/v1/users/{id}/following'],
  ['POST', '/v1/users/{id}/following/contains'],
  ['GET', '/v1/users/{id}/followers'],
  ['POST', '/v1/users/{id}/followers/contains'],
  ['DELETE', '/v1/users/{id}/followers/{x}'],
  ['GET', '/v1/users/{id}/followers/scan'],
  ['GET', '/v1/users/{id}/followed-by'],
  ['GET', '/v1/users/{id}/counts'],
  ['GET', '/v1/users/{id}/requests'],
  ['POST', '/v1/users/{id}/requests/{x}/accept'],
  ['POST', '/v1/users/{id}/requests/{x}/decline'],
  ['PUT', '/v1/users/{id}/blocks/{x}'],
  ['DELETE', '/v1/users/{id}/blocks/{x}'],
  ['GET', '/v1/users/{id}/blocks'],
  ['PUT', '/v1/users/{id}/mutes/{x}'],
  ['DELETE', '/v1/users/{id}/mutes/{x}'],
  ['GET', '/v1/users/{id}/mutes'],
  ['PUT', '/v1/users/{id}/close-friends/{x}'],
  ['DELETE', '/v1/users/{id}/close-friends/{x}'],
  ['GET', '/v1/users/{id}/close-friends'],
  ['PUT', '/v1/users/{id}/restricts/{x}'],
  ['DELETE', '/v1/users/{id}/restricts/{x}'],
  ['GET', '/v1/users/{id}/restricts'],
  ['GET', '/v1/users/{id}/mutuals'],
  ['GET', '/v1/users/{id}/followers/not-followed-back'],
  ['GET', '/v1/users/{id}/following/export'],
  ['POST', '/v1/users/{id}/following/import'],
  ['GET', '/healthz'],
  ['GET', '/readyz'],
];

const idArb = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom('1', '2', '3', '4', '5') },
  { weight: 2, arbitrary: fc.bigInt({ min: 1n, max: 9223372036854775807n }).map(String) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '0',
      '-1',
      '01',
      '1e3',
      '9223372036854775808',
      '99999999999999999999',
      'abc',
      "1'--",
      '1;DROP',
      '１',
      '%00',
      '%0d%0a',
      'null',
      '..',
      '1.0',
      '0x10',
    ),
  },
  { weight: 2, arbitrary: fc.string({ maxLength: 25 }).map(encodeURIComponent) },
);

const headerValue = fc
  .string({ maxLength: 150 })
  .filter((s) => /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(s));

const tokenArb = fc.oneof(
  { weight: 1, arbitrary: fc.constant(undefined) },
  {
    weight: 12,
    arbitrary: fc.constantFrom(bearer(1), bearer(2), bearer(3), bearer(42), bearer(999, { admin: true })),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      'Bearer',
      'Bearer x.y.z',
      'Basic dXNlcjpwdw==',
      `Bearer ${'a'.repeat(5000)}`,
      'bearer  a b',
    ),
  },
  { weight: 1, arbitrary: headerValue },
);

const queryArb = fc
  .array(
    fc.tuple(
      fc.constantFrom('limit', 'cursor', 'slice', 'slices', 'x', 'limit'),
      fc.oneof(
        fc.integer({ min: -5, max: 2000 }).map(String),
        fc.string({ maxLength: 40 }),
        fc.constantFrom('', '1e3', '50', 'NaN', '1.5', '99999999999999999999'),
      ),
    ),
    { maxLength: 4 },
  )
  .map((pairs) => new URLSearchParams(pairs).toString());

const bodyArb = fc.oneof(
  fc.constant(undefined),
  fc
    .record({ ids: fc.array(idArb.map(decodeURIComponentSafe), { maxLength: 20 }) })
    .map((b) => JSON.stringify(b)),
  fc
    .record(
      {
        username: fc.oneof(fc.string({ maxLength: 35 }), fc.constantFrom('bob', 'u1', 'a.b_c')),
        private: fc.anything(),
      },
      { requiredKeys: [] },
    )
    .map((b) => JSON.stringify(b)),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc.string({ maxLength: 200 }),
  fc.constant(JSON.stringify({ ids: Array.from({ length: 1001 }, (_, i) => String(i + 1)) })),
);

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

let r: RealApp;
beforeAll(async () => {
  r = await realApp('http_fuzz');
  const admin = bearer(999, { admin: true });
  for (const id of [1, 2, 3, 4, 5]) {
    await r.app.request(`/v1/users/${id}`, {
      method: 'PUT',
      headers: { Authorization: admin, 'Content-Type': 'application/json' },
      body: JSON.stringify({ username: `user${id}`, private: id === 3 }),
    });
  }
  for (const [s, t] of [
    [1, 2],
    [2, 1],
    [4, 3],
    [5, 1],
  ]) {
    await r.app.request(`/v1/users/${s}/following/${t}`, {
      method: 'PUT',
      headers: { Authorization: admin },
    });
  }
});
afterAll(async () => {
  await r?.close();
});

describe('fuzz every route', () => {
  it(`never answers 5xx; every 4xx is problem+json (seed ${SEED}, runs ${RUNS})`, async () => {
    console.log(`[fuzz] seed=${SEED} runs=${RUNS} (replay: FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS})`);
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ROUTES),
        fc.oneof(
          { weight: 5, arbitrary: fc.constant(null) },
          { weight: 1, arbitrary: fc.constantFrom('GET', 'PUT', 'POST', 'DELETE', 'PATCH') },
        ),
        idArb,
        idArb,
        queryArb,
        tokenArb,
        fc.option(headerValue, { freq: 3 }),
        fc.oneof(
          { weight: 4, arbitrary: fc.constant(null) },
          {
            weight: 1,
            arbitrary: fc.oneof(headerValue, fc.bigInt({ min: -1n, max: 2n ** 64n }).map(String)),
          },
        ),
        fc.constantFrom(
          undefined,
          'application/json',
          'text/plain',
          'application/json; charset=utf-8',
          'x/y',
        ),
        fc.option(headerValue, { freq: 3 }),
        bodyArb,
        async (
          [method, template],
          otherMethod,
          id,
          x,
          query,
          auth,
          key,
          position,
          contentType,
          requestId,
          body,
        ) => {
          const path = template.replace('{id}', id).replace('{x}', x) + (query ? `?${query}` : '');
          const m = otherMethod ?? method;
          const headers: Record<string, string> = {};
          if (auth !== undefined) headers.Authorization = auth;
          if (key !== null) headers['Idempotency-Key'] = key;
          if (position !== null) headers['Graph-Position'] = position;
          if (contentType !== undefined) headers['Content-Type'] = contentType;
          if (requestId !== null) headers['X-Request-Id'] = requestId;
          const withBody = body !== undefined && m !== 'GET';
          const res = await r.app.request(path, { method: m, headers, ...(withBody ? { body } : {}) });
          const text = await res.text();
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          const context = `${m} ${path} → ${res.status} ${text.slice(0, 300)}`;
          expect(res.status, context).toBeLessThan(500);
          expect(text, context).not.toMatch(/\bat .+:\d+:\d+|SELECT |INSERT |cassandra|NoHostAvailable/i);
          if (res.status >= 400) {
            expect(res.headers.get('content-type'), context).toBe('application/problem+json; charset=utf-8');
            const p = JSON.parse(text) as Record<string, unknown>;
            expect(Object.keys(p).sort().join(','), context).toMatch(
              /^code,detail,(errors,)?request_id,status,title,type$/,
            );
            expect(p.status, context).toBe(res.status);
            expect(ERROR_CODES, context).toContain(p.code);
          }
        },
      ),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    console.log(
      `[fuzz] statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`,
    );
  });
});
