/**
 * `GET /v1/users/{id}/following/export`: every active follow of `id` as NDJSON, streamed page by
 * page (`GraphApi.walkFollowing`): a page of 500 rows is read, its usernames hydrated with one
 * `getUsers`, its lines written, and the next page is read only once the client has taken them
 * (the stream's backpressure), so memory stays constant whatever the list size. A failure after
 * the first byte cannot become a problem response any more: the stream is aborted instead, so
 * the client sees a broken transfer, never a silently short file.
 */
import { createRoute } from '@hono/zod-openapi';
import { actFor } from '../auth.js';
import { type ApiApp, idOf, problems, type RouteDeps } from '../route-kit.js';
import { ExportLineSchema, IdParams, NoQuery } from '../schemas.js';
import { formatTime } from '../times.js';

/** Follows per page of the export walk. */
export const EXPORT_PAGE_SIZE = 500;

export const followingExportRoute = createRoute({
  operationId: 'exportFollowing',
  method: 'get',
  path: '/v1/users/{id}/following/export',
  tags: ['following'],
  summary: 'Every account id follows, as NDJSON (owner only)',
  description:
    "Owner only (`sub == id`; graph:admin may export anyone's). `application/x-ndjson`: one " +
    '`{ "id", "username", "followed_at" }` object per line for every active follow, streamed in constant ' +
    'memory. Order: bucket by bucket, newest first within a bucket (for accounts under the first growth ' +
    'threshold, one bucket: newest first). The file can be posted back to `following/import` as is.',
  security: [{ bearerAuth: [] }],
  request: { params: IdParams, query: NoQuery },
  responses: {
    200: {
      description: 'One FollowingExportLine per line',
      content: { 'application/x-ndjson': { schema: ExportLineSchema } },
    },
    ...problems(400, 403, 404),
  },
});

export function registerFollowingExport(app: ApiApp, deps: RouteDeps) {
  app.openapi(followingExportRoute, async (c) => {
    const id = idOf(c.req.valid('param').id);
    actFor(c, id);
    await deps.graph.getUser(id);
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
    const writer = writable.getWriter();
    const encoder = new TextEncoder();
    void (async () => {
      try {
        await deps.graph.walkFollowing(
          id,
          async (items) => {
            let text = '';
            for (const m of items) {
              text += `${JSON.stringify({ id: m.id.toString(), username: m.username, followed_at: formatTime(m.createdAt) })}\n`;
            }
            await writer.ready;
            if (text) await writer.write(encoder.encode(text));
          },
          EXPORT_PAGE_SIZE,
        );
        await writer.close();
      } catch (e) {
        await writer.abort(e).catch(() => undefined);
      }
    })();
    // `@hono/zod-openapi` types `application/x-ndjson` as a JSON variant it cannot produce
    // (`never`); the body is a plain stream.
    return c.body(readable, 200, { 'Content-Type': 'application/x-ndjson; charset=utf-8' }) as never;
  });
}
