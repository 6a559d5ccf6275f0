import { createRoute } from '@hono/zod-openapi';
import { actFor } from '../auth.js';
import { type ApiApp, idOf, mutationOptions, problems, type RouteDeps } from '../route-kit.js';
import { MutationHeaders, NoQuery, pairParams } from '../schemas.js';

import { FollowResult } from './following-put.js';

export const AcceptResult = FollowResult;

export const acceptRequestRoute = createRoute({
  operationId: 'acceptRequest',
  method: 'post',
  path: '/v1/users/{id}/requests/{requester}/accept',
  tags: ['requests'],
  summary: 'Accept a pending follow request',
  description: 'No pending request (and no follow): 404. A double accept answers 200 and changes nothing.',
  security: [{ bearerAuth: [] }],
  request: { params: pairParams('requester'), query: NoQuery, headers: MutationHeaders },
  responses: {
    200: {
      description: 'requester now follows id',
      content: { 'application/json': { schema: AcceptResult } },
    },
    ...problems(400, 403, 404, 409, 429),
  },
});

export function registerAcceptRequest(app: ApiApp, deps: RouteDeps) {
  app.openapi({ ...acceptRequestRoute, middleware: deps.mutation }, async (c) => {
    const params = c.req.valid('param');
    const id = idOf(params.id);
    actFor(c, id);
    const r = await deps.graph.acceptRequest(id, idOf(params.requester), mutationOptions(c));
    return c.json({ state: r.state }, 200);
  });
}
