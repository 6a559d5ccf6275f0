/** `POST …/following/contains` and `POST …/followers/contains`: one shape, two directions. */
import { createRoute } from '@hono/zod-openapi';
import { MAX_CONTAINS_IDS } from '../../model/limits.js';
import type { Direction } from '../../model/types.js';
import { actFor } from '../auth.js';
import { type ApiApp, idOf, problems, type RouteDeps } from '../route-kit.js';
import { IdParams, IdsBody, IdsResult, NoQuery } from '../schemas.js';

const containsRoute = (direction: Direction) =>
  createRoute({
    operationId: direction === 'out' ? 'followingContains' : 'followersContains',
    method: 'post',
    path: direction === 'out' ? '/v1/users/{id}/following/contains' : '/v1/users/{id}/followers/contains',
    tags: [direction === 'out' ? 'following' : 'followers'],
    summary:
      direction === 'out'
        ? 'The subset of ids that id actively follows, in request order'
        : 'The subset of ids that actively follow id, in request order',
    description: `Allowed to id itself and to graph:admin callers. At most ${MAX_CONTAINS_IDS} ids.`,
    security: [{ bearerAuth: [] }],
    request: {
      params: IdParams,
      query: NoQuery,
      body: { required: true, content: { 'application/json': { schema: IdsBody } } },
    },
    responses: {
      200: { description: 'The subset', content: { 'application/json': { schema: IdsResult } } },
      ...problems(400, 403, 404, 413, 415),
    },
  });

export const followingContainsRoute = containsRoute('out');
export const followersContainsRoute = containsRoute('in');

export function registerContains(app: ApiApp, deps: RouteDeps) {
  for (const [route, direction] of [
    [followingContainsRoute, 'out'],
    [followersContainsRoute, 'in'],
  ] as const) {
    app.openapi(route, async (c) => {
      const id = idOf(c.req.valid('param').id);
      actFor(c, id);
      await deps.graph.getUser(id);
      const ids = c.req.valid('json').ids.map(idOf);
      const found = await deps.graph.contains(id, 'follows', direction, ids);
      return c.json({ ids: found.map(String) }, 200);
    });
  }
}
