import { createRoute } from '@hono/zod-openapi';
import { principalOf } from '../auth.js';
import { type ApiApp, idOf, problems, type RouteDeps } from '../route-kit.js';
import { FollowStatusSchema, NoQuery, pairParams } from '../schemas.js';
import { formatTime } from '../times.js';

export const followStatusRoute = createRoute({
  operationId: 'getFollowStatus',
  method: 'get',
  path: '/v1/users/{id}/following/{target}',
  tags: ['following'],
  summary: 'Whether id follows (or has requested) target',
  description: "Allowed to id itself and to anyone allowed to see id's lists.",
  security: [{ bearerAuth: [] }],
  request: { params: pairParams('target'), query: NoQuery },
  responses: {
    200: { description: 'Follow state', content: { 'application/json': { schema: FollowStatusSchema } } },
    ...problems(400, 403, 404),
  },
});

export function registerFollowStatus(app: ApiApp, deps: RouteDeps) {
  app.openapi(followStatusRoute, async (c) => {
    const p = principalOf(c);
    const params = c.req.valid('param');
    const id = idOf(params.id);
    const target = idOf(params.target);
    if (p.sub !== id) await deps.graph.assertListsVisible(p, id);
    // Unknown or deactivated id / target: `getFollowStatus` throws `UserNotFoundError` (404).
    const s = await deps.graph.getFollowStatus(id, target);
    if (s.state === 'none' || s.since === undefined) return c.json({ state: s.state }, 200);
    return c.json({ state: s.state, followed_at: formatTime(s.since) }, 200);
  });
}
