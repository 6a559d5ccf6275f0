/** `GET /v1/users/{id}/suggestions`: the owner's precomputed "who to follow" (sub == id). */
import { createRoute } from '@hono/zod-openapi';
import { actFor } from '../auth.js';
import { type ApiApp, idOf, problems, type RouteDeps } from '../route-kit.js';
import { IdParams, SuggestionsQuery, SuggestionsSchema } from '../schemas.js';

export const suggestionsRoute = createRoute({
  operationId: 'getSuggestions',
  method: 'get',
  path: '/v1/users/{id}/suggestions',
  tags: ['users'],
  summary: 'Accounts to follow, friends of friends (sub == id)',
  description:
    'Computed offline (`jobs suggest`): score(u, x) = Σ over z with u → z → x of 1 / ln(1 + following(z)) ' +
    '(Adamic–Adar), over intermediaries z whose following list the user may see (active, not hide_lists). ' +
    'Best first, ties by smaller id. Accounts followed, requested or blocked (either way) since the run and ' +
    'deactivated accounts are left out at read time; `via` keeps only intermediaries the user still follows ' +
    'and may see through (active, not hide_lists, not blocking the user), and a suggestion with none left is ' +
    'dropped. The owner (or a graph:admin caller) only.',
  security: [{ bearerAuth: [] }],
  request: { params: IdParams, query: SuggestionsQuery },
  responses: {
    200: { description: 'Suggestions', content: { 'application/json': { schema: SuggestionsSchema } } },
    ...problems(400, 403, 404),
  },
});

export function registerSuggestions(app: ApiApp, deps: RouteDeps) {
  app.openapi(suggestionsRoute, async (c) => {
    const id = idOf(c.req.valid('param').id);
    actFor(c, id);
    await deps.graph.getUser(id);
    const items = await deps.graph.suggestions(id, c.req.valid('query').limit);
    return c.json(
      {
        items: items.map((s) => ({
          id: s.id.toString(),
          username: s.username,
          score: s.score,
          via: s.via.map(String),
        })),
      },
      200,
    );
  });
}
