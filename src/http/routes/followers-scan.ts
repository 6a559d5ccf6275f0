import { createRoute } from '@hono/zod-openapi';
import { requireAdmin } from '../auth.js';
import { ApiError } from '../errors.js';
import { type ApiApp, idOf, problems, type RouteDeps } from '../route-kit.js';
import { IdParams, ScanPageSchema, ScanQuery } from '../schemas.js';

export const followersScanRoute = createRoute({
  operationId: 'scanFollowers',
  method: 'get',
  path: '/v1/users/{id}/followers/scan',
  tags: ['fan-out'],
  summary: 'One slice of a fan-out scan over every active follower (graph:admin)',
  description:
    'Slices 0..slices-1 are disjoint and together cover every active follower exactly once; each slice ' +
    'resumes from its cursor. Order within a slice is unspecified. slices 1–1024, limit 1–1000. ' +
    '`active_since` also skips members not active since then (one activity read per member read).',
  security: [{ bearerAuth: [] }],
  request: { params: IdParams, query: ScanQuery },
  responses: {
    200: { description: 'A slice page', content: { 'application/json': { schema: ScanPageSchema } } },
    ...problems(400, 403, 404),
  },
});

export function registerFollowersScan(app: ApiApp, deps: RouteDeps) {
  app.openapi(followersScanRoute, async (c) => {
    requireAdmin(c);
    const id = idOf(c.req.valid('param').id);
    const q = c.req.valid('query');
    if (q.slice >= q.slices) {
      throw new ApiError('validation_failed', 'invalid query', {
        errors: [{ path: 'query.slice', message: 'must be less than slices' }],
      });
    }
    await deps.graph.getUser(id);
    const page = await deps.graph.scanPage(
      { userId: id, relation: 'follows', direction: 'in' },
      q.slice,
      q.slices,
      q.limit,
      q.cursor ?? null,
      q.active_since === undefined ? {} : { activeSince: q.active_since },
    );
    return c.json({ ids: page.ids.map(String), next_cursor: page.nextCursor }, 200);
  });
}
