import { createRoute } from '@hono/zod-openapi';
import type { Counts } from '../../graph/contracts.js';
import { principalOf } from '../auth.js';
import { type ApiApp, idOf, problems, type RouteDeps } from '../route-kit.js';
import { CountsSchema, IdParams, NoQuery } from '../schemas.js';
import { formatTime } from '../times.js';

export const countsRoute = createRoute({
  operationId: 'getCounts',
  method: 'get',
  path: '/v1/users/{id}/counts',
  tags: ['followers'],
  summary: 'Follower and following counts',
  description:
    'Subject to the list visibility rules. May lag writes by a few seconds; `exact` tells whether the ' +
    'in-service reconciler has confirmed them since the last write, `as_of` when.',
  security: [{ bearerAuth: [] }],
  request: { params: IdParams, query: NoQuery },
  responses: {
    200: { description: 'Counts', content: { 'application/json': { schema: CountsSchema } } },
    ...problems(400, 403, 404),
  },
});

export function registerCounts(app: ApiApp, deps: RouteDeps) {
  app.openapi(countsRoute, async (c) => {
    const id = idOf(c.req.valid('param').id);
    await deps.graph.assertListsVisible(principalOf(c), id);
    const counts = await deps.graph.counts(id);
    return c.json(countsBody(counts), 200);
  });
}

/** The wire shape of `Counts` (shared with the profile route). */
export function countsBody(counts: Counts) {
  return {
    followers: counts.followers,
    following: counts.following,
    exact: counts.exact,
    as_of: counts.asOf === null ? null : formatTime(counts.asOf),
  };
}
