import { createRoute } from '@hono/zod-openapi';
import type { Direction } from '../../model/types.js';
import { principalOf } from '../auth.js';
import { type ApiApp, idOf, listPage, problems, type RouteDeps } from '../route-kit.js';
import { IdParams, ListPageSchema, ListQuery } from '../schemas.js';

const VISIBILITY =
  'Public accounts: any authenticated caller. Private: the owner and its accepted followers (403 otherwise). ' +
  'Blocked by the owner: 404. Order: newest followed_at first, ties by id descending.';

/** `GET /v1/users/{id}/followers` (direction `in`) and `/following` (direction `out`): one shape. */
function followListRoute(direction: Direction) {
  const followers = direction === 'in';
  return createRoute({
    operationId: followers ? 'listFollowers' : 'listFollowing',
    method: 'get',
    path: followers ? '/v1/users/{id}/followers' : '/v1/users/{id}/following',
    tags: [followers ? 'followers' : 'following'],
    summary: followers ? 'Accounts following id, newest first' : 'Accounts id follows, newest first',
    description: VISIBILITY,
    security: [{ bearerAuth: [] }],
    request: { params: IdParams, query: ListQuery },
    responses: {
      200: { description: 'A page', content: { 'application/json': { schema: ListPageSchema } } },
      ...problems(400, 403, 404),
    },
  });
}

export const followersListRoute = followListRoute('in');
export const followingListRoute = followListRoute('out');

function registerFollowList(app: ApiApp, deps: RouteDeps, direction: Direction) {
  app.openapi(direction === 'in' ? followersListRoute : followingListRoute, async (c) => {
    const id = idOf(c.req.valid('param').id);
    const known = c.get('owner');
    await deps.graph.assertListsVisible(principalOf(c), id, known?.id === id ? known : undefined);
    const page = await listPage(
      deps.graph,
      { userId: id, relation: 'follows', direction },
      c.req.valid('query'),
    );
    return c.json(page, 200);
  });
}

export function registerFollowingList(app: ApiApp, deps: RouteDeps) {
  registerFollowList(app, deps, 'out');
}

export function registerFollowersList(app: ApiApp, deps: RouteDeps) {
  registerFollowList(app, deps, 'in');
}
