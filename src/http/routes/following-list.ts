import { createRoute } from '@hono/zod-openapi';
import { principalOf } from '../auth.js';
import { type ApiApp, assertListsVisible, idOf, listPage, problems, type RouteDeps } from '../route-kit.js';
import { IdParams, ListPageSchema, ListQuery } from '../schemas.js';

export const followingListRoute = createRoute({
  operationId: 'listFollowing',
  method: 'get',
  path: '/v1/users/{id}/following',
  tags: ['following'],
  summary: 'Accounts id follows, newest first',
  description:
    'Public accounts: any authenticated caller. Private: the owner and its accepted followers (403 otherwise). ' +
    'Blocked by the owner: 404. Order: newest followed_at first, ties by id descending.',
  security: [{ bearerAuth: [] }],
  request: { params: IdParams, query: ListQuery },
  responses: {
    200: { description: 'A page', content: { 'application/json': { schema: ListPageSchema } } },
    ...problems(400, 403, 404),
  },
});

export function registerFollowingList(app: ApiApp, deps: RouteDeps) {
  app.openapi(followingListRoute, async (c) => {
    const id = idOf(c.req.valid('param').id);
    await assertListsVisible(deps.graph, principalOf(c), id);
    const page = await listPage(
      deps.graph,
      { userId: id, relation: 'follows', direction: 'out' },
      c.req.valid('query'),
    );
    return c.json(page, 200);
  });
}
