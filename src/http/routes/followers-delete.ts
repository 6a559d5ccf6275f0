import { createRoute } from '@hono/zod-openapi';
import { actFor } from '../auth.js';
import { type ApiApp, idOf, mutationOptions, problems, type RouteDeps } from '../route-kit.js';
import { MutationHeaders, NoQuery, pairParams } from '../schemas.js';
import { NoneResult } from './following-delete.js';

export const removeFollowerRoute = createRoute({
  operationId: 'removeFollower',
  method: 'delete',
  path: '/v1/users/{id}/followers/{follower}',
  tags: ['followers'],
  summary: 'Remove a follower (idempotent)',
  security: [{ bearerAuth: [] }],
  request: { params: pairParams('follower'), query: NoQuery, headers: MutationHeaders },
  responses: {
    200: { description: 'Not followed by follower', content: { 'application/json': { schema: NoneResult } } },
    ...problems(400, 403, 404, 409, 429),
  },
});

export function registerRemoveFollower(app: ApiApp, deps: RouteDeps) {
  app.openapi({ ...removeFollowerRoute, middleware: deps.mutation }, async (c) => {
    const params = c.req.valid('param');
    const id = idOf(params.id);
    actFor(c, id);
    const r = await deps.graph.removeFollower(id, idOf(params.follower), mutationOptions(c));
    return c.json({ state: r.state }, 200);
  });
}
