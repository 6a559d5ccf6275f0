import { createRoute } from '@hono/zod-openapi';
import { actFor } from '../auth.js';
import { type ApiApp, idOf, mutationOptions, problems, type RouteDeps } from '../route-kit.js';
import { MutationHeaders, NoQuery, pairParams } from '../schemas.js';
import { NoneResult } from './following-delete.js';

export const declineRequestRoute = createRoute({
  operationId: 'declineRequest',
  method: 'post',
  path: '/v1/users/{id}/requests/{requester}/decline',
  tags: ['requests'],
  summary: 'Decline a pending follow request (idempotent)',
  security: [{ bearerAuth: [] }],
  request: { params: pairParams('requester'), query: NoQuery, headers: MutationHeaders },
  responses: {
    200: { description: 'No request', content: { 'application/json': { schema: NoneResult } } },
    ...problems(400, 403, 404, 409, 429),
  },
});

export function registerDeclineRequest(app: ApiApp, deps: RouteDeps) {
  app.openapi({ ...declineRequestRoute, middleware: deps.mutation }, async (c) => {
    const params = c.req.valid('param');
    const id = idOf(params.id);
    actFor(c, id);
    const r = await deps.graph.declineRequest(id, idOf(params.requester), mutationOptions(c));
    return c.json({ state: r.state }, 200);
  });
}
