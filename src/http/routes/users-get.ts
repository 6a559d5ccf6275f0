import { createRoute } from '@hono/zod-openapi';
import type { Relationship } from '../../graph/contracts.js';
import { principalOf } from '../auth.js';
import { type ApiApp, idOf, problems, type RouteDeps } from '../route-kit.js';
import { IdParams, NoQuery, ProfileSchema } from '../schemas.js';
import { formatTime } from '../times.js';
import { countsBody } from './counts.js';

export const getUserRoute = createRoute({
  operationId: 'getUser',
  method: 'get',
  path: '/v1/users/{id}',
  tags: ['users'],
  summary: "A user's profile with counts and the viewer's relationship",
  description:
    '404 when unknown, deactivated, or when the profile owner blocks the viewer. `counts` is null when the ' +
    'viewer may not see them (the rule of GET /v1/users/{id}/counts, which answers 403 there). A graph:admin ' +
    'caller also sees a deactivated account, and gets its `state`.',
  security: [{ bearerAuth: [] }],
  request: { params: IdParams, query: NoQuery },
  responses: {
    200: { description: 'Profile', content: { 'application/json': { schema: ProfileSchema } } },
    ...problems(400, 404),
  },
});

const SELF: Relationship = {
  following: 'none',
  followedBy: false,
  blocking: false,
  muting: false,
  restricting: false,
};

export function registerGetUser(app: ApiApp, deps: RouteDeps) {
  app.openapi(getUserRoute, async (c) => {
    const p = principalOf(c);
    const id = idOf(c.req.valid('param').id);
    if (!p.admin) await deps.graph.assertCanViewProfile(p.sub, id);
    const [user, counts, rel, lastActive] = await Promise.all([
      deps.graph.getUser(id),
      deps.graph.listsVisible(p, id).then((ok) => (ok ? deps.graph.counts(id) : null)),
      p.sub === id ? SELF : deps.graph.relationship(p.sub, id),
      p.admin ? deps.graph.lastActiveAt(id) : null,
    ]);
    return c.json(
      {
        id: user.id.toString(),
        username: user.username,
        private: user.private,
        counts: counts && countsBody(counts),
        relationship: {
          following: rel.following,
          followed_by: rel.followedBy,
          blocking: rel.blocking,
          muting: rel.muting,
          restricting: rel.restricting,
        },
        ...(p.admin
          ? { state: user.state, last_active_at: lastActive === null ? null : formatTime(lastActive) }
          : {}),
      },
      200,
    );
  });
}
