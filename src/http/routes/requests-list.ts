import { createRoute } from '@hono/zod-openapi';
import { actFor } from '../auth.js';
import { type ApiApp, idOf, listPage, problems, type RouteDeps } from '../route-kit.js';
import { IdParams, ListPageSchema, ListQuery } from '../schemas.js';

export const requestsListRoute = createRoute({
  operationId: 'listRequests',
  method: 'get',
  path: '/v1/users/{id}/requests',
  tags: ['requests'],
  summary: 'Incoming pending follow requests, newest first (owner only)',
  security: [{ bearerAuth: [] }],
  request: { params: IdParams, query: ListQuery },
  responses: {
    200: { description: 'A page', content: { 'application/json': { schema: ListPageSchema } } },
    ...problems(400, 403, 404),
  },
});

export function registerRequestsList(app: ApiApp, deps: RouteDeps) {
  app.openapi(requestsListRoute, async (c) => {
    const id = idOf(c.req.valid('param').id);
    actFor(c, id);
    await deps.graph.getUser(id);
    const page = await listPage(
      deps.graph,
      { userId: id, relation: 'requests', direction: 'in' },
      c.req.valid('query'),
    );
    return c.json(page, 200);
  });
}
