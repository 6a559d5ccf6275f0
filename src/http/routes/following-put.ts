import { createRoute } from '@hono/zod-openapi';
import { actFor } from '../auth.js';
import { type ApiApp, idOf, mutationOptions, problems, type RouteDeps } from '../route-kit.js';
import { MutationHeaders, NoQuery, pairParams, stateSchema } from '../schemas.js';

/**
 * The follow edge's state after a mutation, as the pair's fold says. Live calls answer what they
 * asked for; an admin replay (`Graph-Position`) the fold refuses answers what stands instead.
 */
export const FollowResult = stateSchema('FollowResult', ['following', 'requested', 'none']);

export const followRoute = createRoute({
  operationId: 'follow',
  method: 'put',
  path: '/v1/users/{id}/following/{target}',
  tags: ['following'],
  summary: 'Follow (or request to follow a private account)',
  description:
    'Idempotent: already following/requested answers the same 200 and keeps the original followed_at. ' +
    'Self-follow 400; a block either way 403; over the following cap 409.',
  security: [{ bearerAuth: [] }],
  request: { params: pairParams('target'), query: NoQuery, headers: MutationHeaders },
  responses: {
    200: { description: 'Following or requested', content: { 'application/json': { schema: FollowResult } } },
    ...problems(400, 403, 404, 409, 429),
  },
});

export function registerFollow(app: ApiApp, deps: RouteDeps) {
  app.openapi({ ...followRoute, middleware: deps.mutation }, async (c) => {
    const params = c.req.valid('param');
    const id = idOf(params.id);
    actFor(c, id);
    const r = await deps.graph.follow(id, idOf(params.target), mutationOptions(c));
    return c.json({ state: r.state }, 200);
  });
}
