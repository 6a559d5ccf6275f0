/**
 * Blocks, mutes, close friends and restricts: four owner-private typed edges with the same three
 * calls (`PUT`/`DELETE …/{target}`, `GET` the list), declared from one table.
 */
import { createRoute } from '@hono/zod-openapi';
import type { GraphApi, MutationOptions, MutationResult } from '../../graph/contracts.js';
import type { Relation, UserId } from '../../model/types.js';
import { actFor } from '../auth.js';
import { type ApiApp, idOf, listPage, problems, type RouteDeps } from '../route-kit.js';
import { IdParams, ListPageSchema, ListQuery, stateSchema } from '../schemas.js';
import { pairMutation } from './pair-mutation.js';

type Op<S extends string> = (
  g: GraphApi,
  a: UserId,
  t: UserId,
  o: MutationOptions,
) => Promise<MutationResult<S>>;

interface TypedEdge<S extends string> {
  segment: 'blocks' | 'mutes' | 'close-friends' | 'restricts';
  relation: Relation;
  state: S;
  tag: string;
  add: Op<S | 'none'>;
  remove: Op<S | 'none'>;
  addSummary: string;
}

const EDGES = [
  {
    segment: 'blocks',
    relation: 'blocks',
    state: 'blocking',
    tag: 'blocks',
    add: (g, a, t, o) => g.block(a, t, o),
    remove: (g, a, t, o) => g.unblock(a, t, o),
    addSummary:
      'Block: removes follows and pending requests in both directions; target cannot follow id (403) nor see ' +
      "id's profile or lists (404); id cannot follow target (403).",
  } satisfies TypedEdge<'blocking'>,
  {
    segment: 'mutes',
    relation: 'mutes',
    state: 'muting',
    tag: 'mutes',
    add: (g, a, t, o) => g.mute(a, t, o),
    remove: (g, a, t, o) => g.unmute(a, t, o),
    addSummary: "Mute: hidden from the muter's feed inputs; follows are unchanged.",
  } satisfies TypedEdge<'muting'>,
  {
    segment: 'close-friends',
    relation: 'close_friends',
    state: 'close_friend',
    tag: 'close friends',
    add: (g, a, t, o) => g.addCloseFriend(a, t, o),
    remove: (g, a, t, o) => g.removeCloseFriend(a, t, o),
    addSummary: 'Add to the owner-private close-friends audience list.',
  } satisfies TypedEdge<'close_friend'>,
  {
    segment: 'restricts',
    relation: 'restricts',
    state: 'restricting',
    tag: 'restricts',
    add: (g, a, t, o) => g.restrict(a, t, o),
    remove: (g, a, t, o) => g.unrestrict(a, t, o),
    addSummary:
      'Restrict: owner-private (the apps hide the target’s comments and route its messages to requests); ' +
      'follows, requests, mutes and close friends are unchanged, and a block neither clears nor refuses it. ' +
      'The target never learns it: no flag, list, count or error shows it to anyone but the owner.',
  } satisfies TypedEdge<'restricting'>,
] as const;

export const typedEdgeRoutes = EDGES.map((e) => {
  const path = `/v1/users/{id}/${e.segment}/{target}`;
  const schema = stateSchema(`${e.state}Result`, [e.state as string, 'none']);
  return {
    edge: e,
    put: pairMutation({
      operationId: `put_${e.relation}`,
      method: 'put',
      path,
      tags: [e.tag],
      summary: e.addSummary,
      other: 'target',
      result: { description: e.state, schema },
      run: e.add as Op<string>,
    }),
    remove: pairMutation({
      operationId: `delete_${e.relation}`,
      method: 'delete',
      path,
      tags: [e.tag],
      summary: `Remove from ${e.segment} (idempotent)`,
      other: 'target',
      result: {
        description: 'none (or what stands after a replayed removal the fold overrides)',
        schema,
      },
      run: e.remove as Op<string>,
    }),
    list: createRoute({
      operationId: `list_${e.relation}`,
      method: 'get',
      path: `/v1/users/{id}/${e.segment}`,
      tags: [e.tag],
      summary: `The owner's ${e.segment} list, newest first (owner only)`,
      security: [{ bearerAuth: [] }],
      request: { params: IdParams, query: ListQuery },
      responses: {
        200: { description: 'A page', content: { 'application/json': { schema: ListPageSchema } } },
        ...problems(400, 403, 404),
      },
    }),
  };
});

export function registerTypedEdges(app: ApiApp, deps: RouteDeps) {
  for (const { edge, put, remove, list } of typedEdgeRoutes) {
    put.register(app, deps);
    remove.register(app, deps);
    app.openapi(list, async (c) => {
      const id = idOf(c.req.valid('param').id);
      actFor(c, id);
      await deps.graph.getUser(id);
      const page = await listPage(
        deps.graph,
        { userId: id, relation: edge.relation, direction: 'out' },
        c.req.valid('query'),
      );
      return c.json(page, 200);
    });
  }
}
