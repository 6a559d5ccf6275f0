/**
 * `GET /v1/users/{id}/mutuals` and `GET /v1/users/{id}/followers/not-followed-back`: pages of a
 * set query (`GraphApi.setPage`), the list item shape and paging of every list.
 */
import { createRoute } from '@hono/zod-openapi';
import { actFor, principalOf } from '../auth.js';
import { type ApiApp, idOf, problems, type RouteDeps, renderPage, timeRange } from '../route-kit.js';
import { IdParams, ListPageSchema, SetQuery } from '../schemas.js';

const PAGING =
  'Pages are full (`limit` items) except the last, with one exception: a page stops after reading ' +
  '20 × limit rows of the driving list (at least 1,000) and then answers what it found, possibly fewer ' +
  'items or none, with a `next_cursor`; keep paging until `next_cursor` is null. The cursor is bound to ' +
  'this query, this id and its `since` / `until` (400 `invalid_cursor` otherwise). `since` / `until` bound ' +
  "the driving list's `followed_at` (the one each item shows). No `direction=newer`: set queries page one way.";

export const mutualsRoute = createRoute({
  operationId: 'listMutuals',
  method: 'get',
  path: '/v1/users/{id}/mutuals',
  tags: ['following'],
  summary: 'Accounts id follows that follow id back',
  description:
    'Visibility as the followers/following lists (private: owner and accepted followers, 403 otherwise; ' +
    'blocked by the owner: 404). Order: newest first on the smaller of the two lists, chosen on the first ' +
    'page and kept by the cursor: when id follows fewer accounts than follow it, newest follow first ' +
    '(`followed_at` = when id followed the member); otherwise newest follower first (`followed_at` = when ' +
    `the member followed id). Ties by id descending. ${PAGING}`,
  security: [{ bearerAuth: [] }],
  request: { params: IdParams, query: SetQuery },
  responses: {
    200: { description: 'A page', content: { 'application/json': { schema: ListPageSchema } } },
    ...problems(400, 403, 404),
  },
});

export const notFollowedBackRoute = createRoute({
  operationId: 'listFollowersNotFollowedBack',
  method: 'get',
  path: '/v1/users/{id}/followers/not-followed-back',
  tags: ['followers'],
  summary: 'Followers of id whom id does not follow, newest follower first (owner only)',
  description: `Owner only (\`sub == id\`; graph:admin may read anyone's). \`followed_at\` = when the follower followed id. ${PAGING}`,
  security: [{ bearerAuth: [] }],
  request: { params: IdParams, query: SetQuery },
  responses: {
    200: { description: 'A page', content: { 'application/json': { schema: ListPageSchema } } },
    ...problems(400, 403, 404),
  },
});

export function registerMutuals(app: ApiApp, deps: RouteDeps) {
  app.openapi(mutualsRoute, async (c) => {
    const id = idOf(c.req.valid('param').id);
    await deps.graph.assertListsVisible(principalOf(c), id);
    const q = c.req.valid('query');
    const page = await deps.graph.setPage('mutuals', id, q.limit, q.cursor ?? null, timeRange(q));
    return c.json(renderPage(page), 200);
  });
}

export function registerNotFollowedBack(app: ApiApp, deps: RouteDeps) {
  app.openapi(notFollowedBackRoute, async (c) => {
    const id = idOf(c.req.valid('param').id);
    actFor(c, id);
    await deps.graph.getUser(id);
    const q = c.req.valid('query');
    const page = await deps.graph.setPage('not_followed_back', id, q.limit, q.cursor ?? null, timeRange(q));
    return c.json(renderPage(page), 200);
  });
}
