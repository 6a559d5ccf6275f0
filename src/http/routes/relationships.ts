/** `POST /v1/users/{id}/relationships`: the viewer's flags for a page of Follow buttons. */
import { createRoute, type z } from '@hono/zod-openapi';
import { MAX_RELATIONSHIP_IDS } from '../../model/limits.js';
import { actFor } from '../auth.js';
import { type ApiApp, idOf, problems, type RouteDeps } from '../route-kit.js';
import { IdParams, NoQuery, RelationshipIdsBody, RelationshipsSchema } from '../schemas.js';

export const relationshipsRoute = createRoute({
  operationId: 'relationships',
  method: 'post',
  path: '/v1/users/{id}/relationships',
  tags: ['users'],
  summary: `id's relationship with each of up to ${MAX_RELATIONSHIP_IDS} accounts, in request order`,
  description:
    'Owner only (`sub == id`; graph:admin may act for anyone). One item per requested id, in request order ' +
    '(repeats repeat); an unknown id answers every flag false. `following`/`requested`: id → other; ' +
    '`followed_by`/`requested_by`/`blocked_by`: other → id. `restricting`: id restricts other; whether other ' +
    'restricts id is never shown (a restrict is hidden from its target).',
  security: [{ bearerAuth: [] }],
  request: {
    params: IdParams,
    query: NoQuery,
    body: { required: true, content: { 'application/json': { schema: RelationshipIdsBody } } },
  },
  responses: {
    200: { description: 'The flags', content: { 'application/json': { schema: RelationshipsSchema } } },
    ...problems(400, 403, 404, 413, 415),
  },
});

export type RelationshipsResponse = z.infer<typeof RelationshipsSchema>;

export function registerRelationships(app: ApiApp, deps: RouteDeps) {
  app.openapi(relationshipsRoute, async (c) => {
    const id = idOf(c.req.valid('param').id);
    actFor(c, id);
    await deps.graph.getUser(id);
    const flags = await deps.graph.relationships(id, c.req.valid('json').ids.map(idOf));
    const body: RelationshipsResponse = {
      items: flags.map((f) => ({
        id: f.id.toString(),
        following: f.following,
        followed_by: f.followedBy,
        requested: f.requested,
        requested_by: f.requestedBy,
        blocking: f.blocking,
        blocked_by: f.blockedBy,
        muting: f.muting,
        close_friend: f.closeFriend,
        restricting: f.restricting,
      })),
    };
    return c.json(body, 200);
  });
}
