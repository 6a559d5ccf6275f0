import { createRoute } from '@hono/zod-openapi';
import { actFor } from '../auth.js';
import { type ApiApp, idOf, mutationOptions, problems, type RouteDeps } from '../route-kit.js';
import { MutationHeaders, NoQuery, pairParams } from '../schemas.js';

import { FollowResult } from './following-put.js';

export const NoneResult = FollowResult;

export const unfollowRoute = createRoute({
  operationId: 'unfollow',
  method: 'delete',
  path: '/v1/users/{id}/following/{target}',
  tags: ['following'],
  summary: 'Unfollow, or cancel a pending request (idempotent)',
  security: [{ bearerAuth: [] }],
  request: { params: pairParams('target'), query: NoQuery, headers: MutationHeaders },
  responses: {
    200: { description: 'Not following', content: { 'application/json': { schema: NoneResult } } },
    ...problems(400, 403, 404, 409, 429),
  },
});

export function registerUnfollow(app: ApiApp, deps: RouteDeps) {
  app.openapi({ ...unfollowRoute, middleware: deps.mutation }, async (c) => {
    const params = c.req.valid('param');
    const id = idOf(params.id);
    actFor(c, id);
    const r = await deps.graph.unfollow(id, idOf(params.target), mutationOptions(c));
    return c.json({ state: r.state }, 200);
  });
}
