/**
 * `GET /v1/users/{id}/followers/search?q` (direction `in`) and `/following/search` (direction
 * `out`): the list's members whose username starts with `q`, in username order
 * (`GraphApi.search`), under the list routes' visibility.
 */
import { createRoute } from '@hono/zod-openapi';
import type { Direction } from '../../model/types.js';
import { principalOf } from '../auth.js';
import { type ApiApp, idOf, problems, type RouteDeps, renderPage } from '../route-kit.js';
import { IdParams, SearchPageSchema, SearchQuery } from '../schemas.js';

const DESCRIPTION =
  'Visibility as the list: public accounts to any authenticated caller; private ones to the owner and its ' +
  'accepted followers (403 otherwise); blocked by the owner: 404. Members whose username starts with `q` ' +
  '(case-insensitive), ordered by lowercased username, then id. Reads only the matches: its cost does not ' +
  'grow with the list. A rename shows within the rename fan-out’s delay (docs/design/search.md, "Delay").';

/** The search route of one follows list. */
function followSearchRoute(direction: Direction) {
  const followers = direction === 'in';
  return createRoute({
    operationId: followers ? 'searchFollowers' : 'searchFollowing',
    method: 'get',
    path: followers ? '/v1/users/{id}/followers/search' : '/v1/users/{id}/following/search',
    tags: [followers ? 'followers' : 'following'],
    summary: followers
      ? 'Accounts following id whose username starts with q'
      : 'Accounts id follows whose username starts with q',
    description: DESCRIPTION,
    security: [{ bearerAuth: [] }],
    request: { params: IdParams, query: SearchQuery },
    responses: {
      200: {
        description: 'A page of matches',
        content: { 'application/json': { schema: SearchPageSchema } },
      },
      ...problems(400, 403, 404),
    },
  });
}

export const followersSearchRoute = followSearchRoute('in');
export const followingSearchRoute = followSearchRoute('out');

function registerFollowSearch(app: ApiApp, deps: RouteDeps, direction: Direction) {
  app.openapi(direction === 'in' ? followersSearchRoute : followingSearchRoute, async (c) => {
    const id = idOf(c.req.valid('param').id);
    const known = c.get('owner');
    await deps.graph.assertListsVisible(principalOf(c), id, known?.id === id ? known : undefined);
    const { q, limit, cursor } = c.req.valid('query');
    const page = await deps.graph.search(
      { userId: id, relation: 'follows', direction },
      q,
      limit,
      cursor ?? null,
    );
    const { items, next_cursor } = renderPage(page);
    return c.json({ items, next_cursor }, 200);
  });
}

export function registerFollowersSearch(app: ApiApp, deps: RouteDeps) {
  registerFollowSearch(app, deps, 'in');
}

export function registerFollowingSearch(app: ApiApp, deps: RouteDeps) {
  registerFollowSearch(app, deps, 'out');
}
