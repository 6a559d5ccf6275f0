/**
 * The shared security suite: authentication, object-level authorization (BOLA) and
 * input validation, run against EVERY operation of the app's own OpenAPI document — the document
 * the route table produces — so a new route gets these checks without touching this file.
 *
 * Design note. The operations come from `/openapi.json`, and the first test proves that list is
 * exactly the set of `/v1` routes registered on the app (Hono's `app.routes`), so a route added
 * with a bare `app.get` cannot slip past. Routes outside `/v1` need no token; they are listed in
 * `OPEN_ROUTES`, the only exceptions. Each operation must be classified in `ACCESS` (public read,
 * owner only, admin only) and, when it takes a body, have a valid body in `VALID_BODY`; a missing
 * row fails with a message saying what to add. The graph is a recording stub: every refusal here
 * must happen before the domain is reached, so each case also asserts which graph methods ran
 * (none, or for a public read only the visibility check that refuses a blocked viewer). The one
 * exception is the account gate (`assertAccountsActive`, deactivated accounts), which every route on
 * an account runs before its own middleware; it answers "active" here and is not recorded
 * (`deactivated-account.test.ts` sweeps every operation with it refusing).
 */
import { describe, expect, it } from 'vitest';
import type { GraphApi } from '../../src/graph/contracts.js';
import { CLOCK_SKEW_SECONDS } from '../../src/http/auth.js';
import { IMPORT_BODY_LIMIT_BYTES, IMPORT_PATH } from '../../src/http/routes/following-import.js';
import { ID_MESSAGE } from '../../src/http/schemas.js';
import { mintToken } from '../../src/jobs/token.js';
import { HiddenError } from '../../src/model/errors.js';
import { bearer, buildTestApp, call, problem, TEST_SECRET } from './support/app.js';

/** Who may call an operation for `{id}`. */
type Access =
  /** Any authenticated caller, subject to the visibility rules (a blocked viewer gets 404). */
  | 'public'
  /** Only `sub == id` (or graph:admin): another subject gets 403 `forbidden`. */
  | 'owner'
  /** Only graph:admin: every other token gets 403 `forbidden`. */
  | 'admin';

/** Every `/v1` operation, classified. A new operation must get a row here. */
const ACCESS: Record<string, Access> = {
  getUser: 'public',
  getFollowStatus: 'public',
  listFollowing: 'public',
  listFollowers: 'public',
  searchFollowing: 'public',
  searchFollowers: 'public',
  followedBy: 'public',
  getCounts: 'public',
  listMutuals: 'public',
  putUser: 'admin',
  scanFollowers: 'admin',
  follow: 'owner',
  unfollow: 'owner',
  exportFollowing: 'owner',
  importFollowing: 'owner',
  followingContains: 'owner',
  followersContains: 'owner',
  removeFollower: 'owner',
  listRequests: 'owner',
  acceptRequest: 'owner',
  declineRequest: 'owner',
  listOutgoingRequests: 'owner',
  listFollowersNotFollowedBack: 'owner',
  relationships: 'owner',
  getSuggestions: 'owner',
  put_blocks: 'owner',
  delete_blocks: 'owner',
  list_blocks: 'owner',
  put_mutes: 'owner',
  delete_mutes: 'owner',
  list_mutes: 'owner',
  put_close_friends: 'owner',
  delete_close_friends: 'owner',
  list_close_friends: 'owner',
  put_restricts: 'owner',
  delete_restricts: 'owner',
  list_restricts: 'owner',
  listEvents: 'admin',
  streamEvents: 'admin',
};

/**
 * A valid body for every operation that takes one (content type, text). The 415 / malformed JSON /
 * unknown key checks apply to `application/json` bodies; the NDJSON import reads any content type
 * as lines (an export file posts back as is, whatever the client labels it) and reports bad lines
 * per line, so it only gets the body-limit check (its own 1 MiB).
 */
const VALID_BODY: Record<string, { type: string; text: string }> = {
  putUser: { type: 'application/json', text: '{"username":"u7"}' },
  followingContains: { type: 'application/json', text: '{"ids":["8"]}' },
  followersContains: { type: 'application/json', text: '{"ids":["8"]}' },
  relationships: { type: 'application/json', text: '{"ids":["8"]}' },
  importFollowing: { type: 'application/x-ndjson', text: '{"id":"8"}\n' },
};

/** A valid query for every operation with a required query parameter (appended to its path). */
const VALID_QUERY: Record<string, string> = {
  searchFollowing: 'q=ad',
  searchFollowers: 'q=ad',
};

/** The only routes that answer without a token (the API contract, "Operations"). */
const OPEN_ROUTES = [
  'GET /docs',
  'GET /docs/assets/{version}/swagger-ui-dist/:file',
  'GET /healthz',
  'GET /metrics',
  'GET /openapi.json',
  'GET /readyz',
];

const BODY_LIMIT = 64 * 1024;
const OWNER = '7';
const OTHER = '8';
const now = Math.floor(Date.now() / 1000);

/** Graph methods called during the current request, in order (the account gate left out). */
const graphCalls: string[] = [];
const ACCOUNT_GATE = 'assertAccountsActive';
const hidden = async (_viewer: bigint, owner: bigint) => {
  throw new HiddenError(owner);
};
/** Every method records its call; only the visibility checks answer (the viewer is blocked). */
const overrides: Partial<Record<string, (...args: never[]) => Promise<unknown>>> = {
  assertCanViewLists: hidden,
  assertCanViewProfile: hidden,
  assertListsVisible: async (caller: { sub: bigint }, owner: bigint) => hidden(caller.sub, owner),
  listsVisible: async (caller: { sub: bigint }, owner: bigint) => hidden(caller.sub, owner),
  [ACCOUNT_GATE]: async () => undefined,
};
const graph = new Proxy({} as GraphApi, {
  get(_target, prop) {
    if (typeof prop !== 'string' || prop === 'then') return undefined;
    return (...args: never[]) => {
      if (prop !== ACCOUNT_GATE) graphCalls.push(prop);
      const f = overrides[prop];
      return f ? f(...args) : Promise.reject(new Error(`stub: ${prop} not implemented`));
    };
  },
});
const { app } = buildTestApp({ graph, bodyLimitBytes: BODY_LIMIT });

interface Operation {
  operationId: string;
  method: string;
  path: string;
  pathParams: string[];
  headers: string[];
  bodyType: string | undefined;
}

interface DocOperation {
  operationId: string;
  security?: Record<string, string[]>[];
  parameters?: { name: string; in: string }[];
  requestBody?: { content: Record<string, unknown> };
  responses: Record<string, unknown>;
}

const doc = (await call(app, 'GET', '/openapi.json')).json as {
  paths: Record<string, Record<string, DocOperation>>;
};
const DOC_OPERATIONS = Object.entries(doc.paths).flatMap(([path, ops]) =>
  Object.entries(ops).map(([method, op]) => ({ path, method: method.toUpperCase(), op })),
);
const OPERATIONS: Operation[] = DOC_OPERATIONS.map(({ path, method, op }) => ({
  operationId: op.operationId,
  method,
  path,
  pathParams: (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name),
  headers: (op.parameters ?? []).filter((p) => p.in === 'header').map((p) => p.name),
  bodyType: op.requestBody ? Object.keys(op.requestBody.content)[0] : undefined,
}));

/**
 * The concrete path: `{id}` is the owner, every other parameter another user; with the operation's
 * valid query (`VALID_QUERY`), if it needs one.
 */
const concrete = (op: Operation, bad?: { name: string; value: string }) => {
  const path = op.path.replace(/\{(\w+)\}/g, (_m, name: string) =>
    bad?.name === name ? encodeURIComponent(bad.value) : name === 'id' ? OWNER : OTHER,
  );
  const query = VALID_QUERY[op.operationId];
  return query === undefined ? path : `${path}?${query}`;
};

/** `concrete(op)` with one more query parameter. */
const withQuery = (op: Operation, param: string) =>
  `${concrete(op)}${VALID_QUERY[op.operationId] === undefined ? '?' : '&'}${param}`;

interface Sent {
  status: number;
  body: unknown;
  calls: string[];
}

async function send(
  op: Operation,
  o: { auth?: string; path?: string; body?: string; type?: string; headers?: Record<string, string> } = {},
): Promise<Sent> {
  graphCalls.length = 0;
  const valid = VALID_BODY[op.operationId];
  const body = o.body ?? valid?.text;
  const headers: Record<string, string> = { ...o.headers };
  if (body !== undefined) headers['Content-Type'] = o.type ?? valid?.type ?? 'application/json';
  const r = await call(app, op.method, o.path ?? concrete(op), {
    ...(o.auth ? { auth: o.auth } : {}),
    ...(body === undefined ? {} : { body }),
    headers,
  });
  return { status: r.status, body: r.json, calls: [...graphCalls] };
}

const refused = (status: number, code: Parameters<typeof problem>[1], detail: string, extra = {}): Sent => ({
  status,
  body: problem(status, code, detail, extra),
  calls: [],
});

const admin = bearer(1, { admin: true });
/** What a token for `OTHER` gets on `{id}` = `OWNER`, by the operation's access rule. */
function refusalOfOther(op: Operation): Sent {
  switch (ACCESS[op.operationId]) {
    case 'owner':
      return refused(403, 'forbidden', "a token may act only on its own subject's relationships");
    case 'admin':
      return refused(403, 'forbidden', 'this call needs the graph:admin scope');
    default:
      // Public reads reach the visibility check, which refuses a blocked viewer.
      return {
        status: 404,
        body: problem(404, 'user_not_found', `user ${OWNER} not found`),
        calls: [expect.stringMatching(/^(assertCanViewProfile|assertListsVisible|listsVisible)$/)],
      };
  }
}

/** `[operationId, operation]` rows for `describe.each`, titled by operationId. */
const ROWS = OPERATIONS.map((op) => [op.operationId, op] as const);

describe('the suite covers every route', () => {
  const registered = (inV1: boolean) => [
    ...new Set(
      app.routes
        .filter((r) => r.method !== 'ALL' && r.path.startsWith('/v1/') === inV1)
        .map((r) => `${r.method} ${r.path.replace(/:(\w+)(?=\/|$)/g, inV1 ? '{$1}' : ':$1')}`),
    ),
  ];

  it('the operations of the OpenAPI document are exactly the registered /v1 routes', () => {
    const fromDoc = OPERATIONS.map((op) => `${op.method} ${op.path}`).sort();
    expect(fromDoc).toEqual(registered(true).sort());
    expect(OPERATIONS.length).toBe(registered(true).length);
    expect(new Set(OPERATIONS.map((op) => op.operationId)).size).toBe(OPERATIONS.length);
  });

  it('every operation is classified in ACCESS and every body-taking one has a VALID_BODY row', () => {
    const ids = OPERATIONS.map((op) => op.operationId);
    const unclassified = ids.filter((id) => !(id in ACCESS));
    expect(
      unclassified,
      `add "<operationId>: 'public' | 'owner' | 'admin'" rows to ACCESS in test/http/route-security.test.ts for: ${unclassified.join(', ')}`,
    ).toEqual([]);
    expect(Object.keys(ACCESS).filter((id) => !ids.includes(id))).toEqual([]);
    const noBody = OPERATIONS.filter((op) => op.bodyType && !(op.operationId in VALID_BODY)).map(
      (op) => op.operationId,
    );
    expect(
      noBody,
      `add a valid request body to VALID_BODY in test/http/route-security.test.ts for: ${noBody.join(', ')}`,
    ).toEqual([]);
    expect(
      Object.keys(VALID_BODY).filter((id) => !OPERATIONS.some((op) => op.operationId === id && op.bodyType)),
    ).toEqual([]);
  });

  it('every operation declares bearer auth and its 401 in the document', () => {
    expect(
      DOC_OPERATIONS.filter(
        ({ op }) => JSON.stringify(op.security) !== '[{"bearerAuth":[]}]' || !op.responses['401'],
      ).map(({ op }) => op.operationId),
    ).toEqual([]);
  });

  it('outside /v1 only the documented operational routes exist, and they answer without a token', async () => {
    const open = registered(false).map((r) => r.replace(/\/assets\/[^/]+\//, '/assets/{version}/'));
    expect(open.sort()).toEqual(OPEN_ROUTES);
    const css = registered(false)
      .find((r) => r.includes('/assets/'))
      ?.slice(4)
      .replace(':file', 'swagger-ui.css');
    const statuses: [string, number][] = [];
    for (const path of ['/docs', css as string, '/healthz', '/metrics', '/openapi.json', '/readyz']) {
      statuses.push([path, (await app.request(path)).status]);
    }
    expect(statuses).toEqual(statuses.map(([path]) => [path, 200]));
  });
});

const BAD_TOKENS: [string, string | undefined, string][] = [
  ['no token', undefined, 'no authorization included in request'],
  ['malformed token', 'Bearer abc', 'token malformed'],
  [
    'wrong signature',
    `Bearer ${mintToken({ sub: OWNER, admin: true }, 'another-secret-0123456789abcdef')}`,
    'token signature invalid',
  ],
  [
    'expired beyond the leeway',
    `Bearer ${mintToken({ sub: OWNER, admin: true, expiresInSeconds: 10 }, TEST_SECRET, now - 10 - CLOCK_SKEW_SECONDS - 2)}`,
    'token expired',
  ],
  [
    'no exp',
    `Bearer ${mintToken({ sub: OWNER, admin: true, extra: { exp: undefined } }, TEST_SECRET)}`,
    'token has no expiry (exp)',
  ],
];

const BAD_IDS = ['0', '01', 'abc', '-1', '99999999999999999999', '9223372036854775808', '1e3'];

describe.each(ROWS)('every operation: authentication — %s', (_id, op) => {
  it('no, malformed, wrongly signed, expired or exp-less tokens are a 401 before the domain', async () => {
    const got: [string, Sent][] = [];
    for (const [name, auth] of BAD_TOKENS) got.push([name, await send(op, auth ? { auth } : {})]);
    expect(got).toEqual(BAD_TOKENS.map(([name, , detail]) => [name, refused(401, 'unauthorized', detail)]));
  });

  it('the challenge header names the Bearer scheme', async () => {
    const r = await call(app, op.method, concrete(op));
    expect([r.status, r.headers.get('www-authenticate')?.split(' ')[0]]).toEqual([401, 'Bearer']);
  });
});

describe.each(ROWS)('every operation: object-level authorization — %s', (_id, op) => {
  const access = ACCESS[op.operationId];

  if (access === 'owner')
    it('a token for another user is a 403 forbidden before the domain', async () => {
      expect(await send(op, { auth: bearer(OTHER) })).toEqual(refusalOfOther(op));
    });

  if (access === 'admin')
    it('a token without graph:admin is a 403 forbidden, even for its own id', async () => {
      expect([await send(op, { auth: bearer(OWNER) }), await send(op, { auth: bearer(OTHER) })]).toEqual([
        refusalOfOther(op),
        refusalOfOther(op),
      ]);
    });

  if (access === 'public')
    it('a viewer the owner blocks gets the unknown-user 404 from the visibility check', async () => {
      expect(await send(op, { auth: bearer(OTHER) })).toEqual(refusalOfOther(op));
    });

  if (op.headers.includes('graph-position') && access === 'owner')
    it('Graph-Position from the owner without graph:admin is a 403 before the domain', async () => {
      expect(await send(op, { auth: bearer(OWNER), headers: { 'Graph-Position': '123' } })).toEqual(
        refused(403, 'forbidden', 'Graph-Position needs the graph:admin scope'),
      );
    });
});

describe.each(ROWS)('every operation: validation — %s', (_id, op) => {
  const invalid = (where: string, errors: object[]) =>
    refused(400, 'validation_failed', `invalid ${where}`, { errors });

  it('a malformed id in any path parameter is a 400 naming it', async () => {
    const got: [string, string, Sent][] = [];
    for (const name of op.pathParams) {
      for (const value of BAD_IDS) {
        got.push([name, value, await send(op, { auth: admin, path: concrete(op, { name, value }) })]);
      }
    }
    expect(got).toEqual(
      op.pathParams.flatMap((name) =>
        BAD_IDS.map((value) => [
          name,
          value,
          invalid('path', [{ path: `path.${name}`, message: ID_MESSAGE }]),
        ]),
      ),
    );
    // Every route on an account names it `{id}` (the account gate and `concrete` rely on it).
    if (op.path.startsWith('/v1/users/')) expect(op.pathParams).toContain('id');
  });

  it('an unknown query parameter is a 400 naming it', async () => {
    expect(await send(op, { auth: admin, path: withQuery(op, 'bogus=1') })).toEqual(
      invalid('query', [{ path: 'query', message: 'Unrecognized key: "bogus"' }]),
    );
  });

  if (op.bodyType === 'application/json')
    it('a JSON body: wrong content type 415, malformed JSON 400, unknown key 400', async () => {
      const valid = VALID_BODY[op.operationId]?.text as string;
      const withUnknown = `${valid.slice(0, -1)},"bogus":1}`;
      expect([
        await send(op, { auth: admin, body: valid, type: 'text/plain' }),
        await send(op, { auth: admin, body: valid.slice(0, -2) }),
        await send(op, { auth: admin, body: withUnknown }),
      ]).toEqual([
        refused(415, 'unsupported_media_type', 'send the body as application/json'),
        refused(400, 'malformed_request', 'the request body is not valid JSON'),
        invalid('body', [{ path: 'body', message: 'Unrecognized key: "bogus"' }]),
      ]);
    });

  if (op.bodyType !== undefined)
    it('a body at the limit is read; one byte over is a 413', async () => {
      const limit = op.path === IMPORT_PATH ? IMPORT_BODY_LIMIT_BYTES : BODY_LIMIT;
      const valid = VALID_BODY[op.operationId]?.text as string;
      const padded = (size: number) => valid + ' '.repeat(size - Buffer.byteLength(valid));
      // A token the route refuses (after reading and validating the body, before the domain).
      const auth = bearer(OTHER);
      const small = await send(op, { auth });
      expect(small).toEqual(refusalOfOther(op));
      expect([
        await send(op, { auth, body: padded(limit) }),
        await send(op, { auth, body: padded(limit + 1) }),
      ]).toEqual([small, refused(413, 'payload_too_large', `the request body exceeds ${limit} bytes`)]);
      if (limit > BODY_LIMIT) {
        expect(await send(op, { auth, body: padded(BODY_LIMIT + 1) })).toEqual(small);
      }
    });
});
