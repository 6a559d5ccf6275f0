/** "Followed by a, b and N others" (`GraphApi.followedBy`), with usernames. */
import { createRoute } from '@hono/zod-openapi';
import { principalOf } from '../auth.js';
import { type ApiApp, idOf, problems, type RouteDeps } from '../route-kit.js';
import { FollowedByQuery, FollowedBySchema, IdParams } from '../schemas.js';

export const followedByRoute = createRoute({
  operationId: 'followedBy',
  method: 'get',
  path: '/v1/users/{id}/followed-by',
  tags: ['followers'],
  summary: 'People the viewer follows who follow id',
  description:
    "The sample is ordered closest first: the viewer's close friends, then accounts that follow the viewer " +
    'back, then the rest, each group most recently followed first; `total` counts them all. ' +
    "Cost is bounded by the viewer's following size. It names members of id's followers, so it is visible " +
    'like the lists: 403 when the viewer may not see them (a private account the viewer does not follow, ' +
    'or hide_lists), 404 when id blocks the viewer.',
  security: [{ bearerAuth: [] }],
  request: { params: IdParams, query: FollowedByQuery },
  responses: {
    200: { description: 'Sample and total', content: { 'application/json': { schema: FollowedBySchema } } },
    ...problems(400, 403, 404),
  },
});

export function registerFollowedBy(app: ApiApp, deps: RouteDeps) {
  app.openapi(followedByRoute, async (c) => {
    const p = principalOf(c);
    const id = idOf(c.req.valid('param').id);
    await deps.graph.assertListsVisible(p, id);
    const { sample, total } = await deps.graph.followedBy(p.sub, id, c.req.valid('query').limit);
    return c.json({ sample: sample.map((m) => ({ id: m.id.toString(), username: m.username })), total }, 200);
  });
}
