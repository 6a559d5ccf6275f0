/** `GET /v1/users/{id}/requests/outgoing`: the follow requests id sent that are still pending. */
import { createRoute } from '@hono/zod-openapi';
import { actFor } from '../auth.js';
import { type ApiApp, idOf, listPage, problems, type RouteDeps } from '../route-kit.js';
import { IdParams, ListPageSchema, ListQuery } from '../schemas.js';

export const outgoingRequestsRoute = createRoute({
  operationId: 'listOutgoingRequests',
  method: 'get',
  path: '/v1/users/{id}/requests/outgoing',
  tags: ['requests'],
  summary: 'Outgoing pending follow requests, newest first (owner only)',
  description: '`followed_at` is when the request was made. Order: newest first, ties by id descending.',
  security: [{ bearerAuth: [] }],
  request: { params: IdParams, query: ListQuery },
  responses: {
    200: { description: 'A page', content: { 'application/json': { schema: ListPageSchema } } },
    ...problems(400, 403, 404),
  },
});

export function registerOutgoingRequests(app: ApiApp, deps: RouteDeps) {
  app.openapi(outgoingRequestsRoute, async (c) => {
    const id = idOf(c.req.valid('param').id);
    actFor(c, id);
    await deps.graph.getUser(id);
    const page = await listPage(
      deps.graph,
      { userId: id, relation: 'requests', direction: 'out' },
      c.req.valid('query'),
    );
    return c.json(page, 200);
  });
}
