/**
 * "Followed by a, b and N others": the accounts the viewer follows that follow `id`.
 *
 * Design note. The walk goes over the *viewer's* following list (bounded by the following cap)
 * in pages of 200 and asks `contains(id, follows, in, page)` for each page, so the cost never
 * depends on `id`'s follower count. The sample is the first `limit` matches in the viewer's
 * following order (most recently followed first).
 */
import { createRoute } from '@hono/zod-openapi';
import type { GraphApi } from '../../graph/contracts.js';
import type { UserId } from '../../store/types.js';
import { principalOf } from '../auth.js';
import { type ApiApp, idOf, problems, type RouteDeps } from '../route-kit.js';
import { FollowedByQuery, FollowedBySchema, IdParams } from '../schemas.js';

export const followedByRoute = createRoute({
  operationId: 'followedBy',
  method: 'get',
  path: '/v1/users/{id}/followed-by',
  tags: ['followers'],
  summary: 'People the viewer follows who follow id',
  description: "Cost is bounded by the viewer's following size. 404 when id blocks the viewer.",
  security: [{ bearerAuth: [] }],
  request: { params: IdParams, query: FollowedByQuery },
  responses: {
    200: { description: 'Sample and total', content: { 'application/json': { schema: FollowedBySchema } } },
    ...problems(400, 404),
  },
});

const WALK_PAGE = 200;

export async function followedBy(
  graph: GraphApi,
  viewer: UserId,
  id: UserId,
  limit: number,
): Promise<{ sample: UserId[]; total: number }> {
  const sample: UserId[] = [];
  let total = 0;
  let cursor: string | null = null;
  do {
    const page = await graph.listPage(
      { userId: viewer, relation: 'follows', direction: 'out' },
      WALK_PAGE,
      cursor,
    );
    const candidates = page.items.map((i) => i.id).filter((x) => x !== id);
    if (candidates.length > 0) {
      const hits = await graph.contains(id, 'follows', 'in', candidates);
      total += hits.length;
      for (const h of hits) if (sample.length < limit) sample.push(h);
    }
    cursor = page.nextCursor;
  } while (cursor !== null);
  return { sample, total };
}

export function registerFollowedBy(app: ApiApp, deps: RouteDeps) {
  app.openapi(followedByRoute, async (c) => {
    const p = principalOf(c);
    const id = idOf(c.req.valid('param').id);
    if (!p.admin) await deps.graph.assertCanViewProfile(p.sub, id);
    await deps.graph.getUser(id);
    const { sample, total } = await followedBy(deps.graph, p.sub, id, c.req.valid('query').limit);
    const users = await deps.graph.getUsers(sample);
    return c.json(
      {
        sample: sample.flatMap((s) => {
          const u = users.get(s);
          return u ? [{ id: s.toString(), username: u.username }] : [];
        }),
        total,
      },
      200,
    );
  });
}
