import { createRoute } from '@hono/zod-openapi';
import { requireAdmin } from '../auth.js';
import { type ApiApp, idOf, problems, type RouteDeps } from '../route-kit.js';
import { IdParams, MutationHeaders, NoQuery, PutUserBody, UserSchema } from '../schemas.js';
import { formatTime } from '../times.js';

export const putUserRoute = createRoute({
  operationId: 'putUser',
  method: 'put',
  path: '/v1/users/{id}',
  tags: ['users'],
  summary: 'Create or update a user (graph:admin)',
  description:
    'Projection of the account service. Writes the fields the body names and only those: two PUTs of different ' +
    'fields, concurrent or not, on any instances, both hold, and a PUT sent after another was acknowledged ' +
    'supersedes it. A PUT that changes nothing answers the row and emits no event; `user.updated` names the ' +
    'fields a change made (`fields`). 503 when it cannot land within its time budget (outcome unknown: retry; ' +
    'a retry is idempotent). Usernames are unique (case-insensitive): 409 when another id holds it. ' +
    'Switching private → public accepts pending follow requests in the background. `state` deactivates or ' +
    'reactivates the account; `hide_lists` hides its lists and counts from everyone but itself; ' +
    '`last_active_at` records activity for fan-out scans (`active_since`). A caller ' +
    'without graph:admin gets 404 for a deactivated or unknown account (as on every route), 403 otherwise.',
  security: [{ bearerAuth: [] }],
  request: {
    params: IdParams,
    query: NoQuery,
    headers: MutationHeaders,
    body: { required: true, content: { 'application/json': { schema: PutUserBody } } },
  },
  responses: {
    200: { description: 'Updated', content: { 'application/json': { schema: UserSchema } } },
    201: { description: 'Created', content: { 'application/json': { schema: UserSchema } } },
    ...problems(400, 403, 404, 409, 413, 415, 429),
  },
});

export type PutUserResponse = {
  id: string;
  username: string;
  private: boolean;
  state: 'active' | 'deactivated';
  hide_lists: boolean;
  last_active_at: string | null;
};

export function registerPutUser(app: ApiApp, deps: RouteDeps) {
  app.openapi({ ...putUserRoute, middleware: deps.mutation }, async (c) => {
    requireAdmin(c);
    const id = idOf(c.req.valid('param').id);
    const { last_active_at: activeAt, ...body } = c.req.valid('json');
    const onlyActivity = activeAt !== undefined && Object.values(body).every((v) => v === undefined);
    // Activity alone updates an existing account; with other fields it follows the account write.
    const { user, created } = onlyActivity
      ? await deps.graph.reportActivity(id, activeAt).then(async () => ({
          user: await deps.graph.getUser(id),
          created: false,
        }))
      : await deps.graph.putUser({
          id,
          ...(body.username === undefined ? {} : { username: body.username }),
          ...(body.private === undefined ? {} : { private: body.private }),
          ...(body.state === undefined ? {} : { state: body.state }),
          ...(body.hide_lists === undefined ? {} : { hideLists: body.hide_lists }),
        });
    if (activeAt !== undefined && !onlyActivity) await deps.graph.reportActivity(id, activeAt);
    const lastActive = await deps.graph.lastActiveAt(id);
    const out: PutUserResponse = {
      id: user.id.toString(),
      username: user.username,
      private: user.private,
      state: user.state,
      hide_lists: user.hideLists,
      last_active_at: lastActive === null ? null : formatTime(lastActive),
    };
    return created ? c.json(out, 201) : c.json(out, 200);
  });
}
