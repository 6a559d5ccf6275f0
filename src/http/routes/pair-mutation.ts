/**
 * The pair mutations — follow, unfollow, remove a follower, accept or decline a request, and the
 * put/delete of each typed edge — share one shape: `id` (the acting owner, owner-only) acts on
 * the account named by one more path parameter, under the mutation middleware (rate limit, then
 * idempotency), and answers 200 with the pair's state after the fold. `pairMutation` declares
 * such an operation from its differences (path, words, the domain call, the result's states) and
 * registers it; the route files keep only those differences.
 */
import { createRoute, type z } from '@hono/zod-openapi';
import type { GraphApi, MutationOptions, MutationResult } from '../../graph/contracts.js';
import type { UserId } from '../../model/types.js';
import { actFor } from '../auth.js';
import { type ApiApp, idOf, mutationOptions, problems, type RouteDeps } from '../route-kit.js';
import { MutationHeaders, NoQuery, pairParams, type stateSchema } from '../schemas.js';

export interface PairMutationSpec<S extends string> {
  operationId: string;
  method: 'put' | 'delete' | 'post';
  /** Ends in `{<other>}` or `{<other>}/<verb>`; `{id}` is the acting account. */
  path: string;
  tags: string[];
  summary: string;
  description?: string;
  /** The path parameter naming the other account of the pair. */
  other: string;
  /** The 200 response: its description and its `{ state }` schema. */
  result: { description: string; schema: ReturnType<typeof stateSchema<S>> };
  /** The domain call: `id` acts on `other`. */
  run: (graph: GraphApi, id: UserId, other: UserId, o: MutationOptions) => Promise<MutationResult<S>>;
}

/**
 * The route declaration (for the OpenAPI document) and the `register` function of one pair
 * mutation.
 *
 * @example
 * const unfollow = pairMutation({ operationId: 'unfollow', method: 'delete', other: 'target', … });
 * unfollow.register(app, deps);
 */
export function pairMutation<S extends string>(spec: PairMutationSpec<S>) {
  const route = createRoute({
    operationId: spec.operationId,
    method: spec.method,
    path: spec.path,
    tags: spec.tags,
    summary: spec.summary,
    ...(spec.description === undefined ? {} : { description: spec.description }),
    security: [{ bearerAuth: [] }],
    request: { params: pairParams(spec.other), query: NoQuery, headers: MutationHeaders },
    responses: {
      200: {
        description: spec.result.description,
        content: { 'application/json': { schema: spec.result.schema } },
      },
      ...problems(400, 403, 404, 409, 429),
    },
  });
  const register = (app: ApiApp, deps: RouteDeps): void => {
    app.openapi({ ...route, middleware: deps.mutation }, async (c) => {
      const params = c.req.valid('param') as Record<string, string>;
      const id = idOf(params.id as string);
      actFor(c, id);
      const r = await spec.run(deps.graph, id, idOf(params[spec.other] as string), mutationOptions(c));
      const body: z.infer<typeof spec.result.schema> = { state: r.state };
      return c.json(body, 200);
    });
  };
  return { route, register };
}
