/**
 * `POST /v1/users/{id}/following/import`: follows every id of an NDJSON body, one result line per
 * input line, in order.
 *
 * Design note. Each line is `{ "id": "<user id>" }` (other keys are ignored, so an export file
 * posts back as is) and goes through the normal `follow` path, so blocks, privacy (a private
 * account gets a request) and the following cap hold exactly as for `PUT following/{target}`.
 * Results: `following` / `requested` (this line changed something), `already_following` /
 * `already_requested` (nothing to do: re-posting a file reports these and changes nothing, which
 * is what makes an interrupted import resumable by re-posting it), `unknown_user`, `blocked`,
 * `over_cap`, `self`, `invalid` (not JSON, not an object, no valid `id`; with an `error`), and
 * `error` (an unexpected failure of that line, e.g. the database timed out; re-post to retry).
 * Blank lines are `invalid` too, except one final empty line after the last newline.
 *
 * Lines run `IMPORT_CONCURRENCY` at a time; results stream out in input order as each window
 * completes. Repeats of one id never run concurrently (they chain), so the second reports
 * `already_following`. Concurrent follows can overshoot the following cap by less than one window,
 * as concurrent `PUT following/{target}` calls can. The whole import counts as one mutation for
 * the per-user rate limit (it is one request; its lines are bounded by the body limit), and it
 * does not take `Idempotency-Key` (the response is a stream; re-posting is already idempotent in
 * effect). Body limit: `IMPORT_BODY_LIMIT_BYTES` (1 MiB, ~40,000 lines), set for this route in
 * `app.ts`; larger bodies are a 413 before any line runs.
 */
import { createRoute, z } from '@hono/zod-openapi';
import type { GraphApi, UserId } from '../../graph/contracts.js';
import { BlockedError, FollowingCapError, SelfFollowError, UserNotFoundError } from '../../graph/errors.js';
import { actFor } from '../auth.js';
import { parseUserId } from '../ids.js';
import { type ApiApp, idOf, problems, type RouteDeps } from '../route-kit.js';
import { ID_MESSAGE, IdParams, type IMPORT_RESULTS, ImportResultLineSchema, NoQuery } from '../schemas.js';

export const IMPORT_PATH = '/v1/users/{id}/following/import';
/** The import route's body limit (the other routes keep `bodyLimitBytes`). */
export const IMPORT_BODY_LIMIT_BYTES = 1024 * 1024;
/** Import lines followed at once. */
export const IMPORT_CONCURRENCY = 8;

type ImportResult = (typeof IMPORT_RESULTS)[number];
interface ResultLine {
  line: number;
  id?: string;
  result: ImportResult;
  error?: string;
}

export const followingImportRoute = createRoute({
  operationId: 'importFollowing',
  method: 'post',
  path: IMPORT_PATH,
  tags: ['following'],
  summary: 'Follow every id of an NDJSON file (owner only)',
  description:
    'Owner only (`sub == id`; graph:admin may import for anyone). Body: `application/x-ndjson`, one ' +
    '`{ "id": "<user id>" }` per line (other keys ignored: an export file posts back as is), at most 1 MiB ' +
    '(413 above). Every line goes through the normal follow (blocks, privacy, the following cap). Response: ' +
    'NDJSON, one FollowingImportResult per input line, in order: following | requested (changed), ' +
    'already_following | already_requested (nothing to do), unknown_user, blocked, over_cap, self, invalid ' +
    '(with `error`), error (unexpected failure of that line; re-post to retry). Re-posting the same file ' +
    'changes nothing and resumes an interrupted import. The whole import counts as one mutation for the ' +
    'rate limit; Idempotency-Key is not used.',
  security: [{ bearerAuth: [] }],
  request: {
    params: IdParams,
    query: NoQuery,
    body: {
      required: true,
      content: {
        'application/x-ndjson': {
          schema: z.string().openapi({ description: 'One `{ "id": "<user id>" }` object per line.' }),
        },
      },
    },
  },
  responses: {
    200: {
      description: 'One FollowingImportResult per input line',
      content: { 'application/x-ndjson': { schema: ImportResultLineSchema } },
    },
    ...problems(403, 404, 413, 429),
  },
});

/** The id of one input line, or why it has none. */
function parseLine(text: string): { id: UserId } | { error: string } {
  if (text.trim() === '') return { error: 'empty line' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { error: 'not JSON' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { error: 'not a JSON object' };
  const raw = (value as { id?: unknown }).id;
  const id = typeof raw === 'string' ? parseUserId(raw) : null;
  if (id === null || typeof raw !== 'string') return { error: `id: ${ID_MESSAGE}` };
  return { id };
}

async function followLine(graph: GraphApi, owner: UserId, id: UserId): Promise<ImportResult> {
  try {
    const r = await graph.follow(owner, id);
    if (r.state === 'following') return r.changed ? 'following' : 'already_following';
    if (r.state === 'requested') return r.changed ? 'requested' : 'already_requested';
    return 'error';
  } catch (e) {
    if (e instanceof UserNotFoundError) return 'unknown_user';
    if (e instanceof BlockedError) return 'blocked';
    if (e instanceof FollowingCapError) return 'over_cap';
    if (e instanceof SelfFollowError) return 'self';
    throw e;
  }
}

export function registerFollowingImport(app: ApiApp, deps: RouteDeps) {
  app.openapi({ ...followingImportRoute, middleware: [deps.rateLimit] }, async (c) => {
    const owner = idOf(c.req.valid('param').id);
    actFor(c, owner);
    await deps.graph.getUser(owner);
    const lines = (await c.req.text()).split('\n');
    if (lines.at(-1) === '') lines.pop();
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
    const writer = writable.getWriter();
    const encoder = new TextEncoder();
    void (async () => {
      try {
        for (let start = 0; start < lines.length; start += IMPORT_CONCURRENCY) {
          const running = new Map<UserId, Promise<unknown>>();
          const window = lines
            .slice(start, start + IMPORT_CONCURRENCY)
            .map((text, i): Promise<ResultLine> => {
              const line = start + i + 1;
              const parsed = parseLine(text.endsWith('\r') ? text.slice(0, -1) : text);
              if ('error' in parsed) return Promise.resolve({ line, result: 'invalid', error: parsed.error });
              const id = parsed.id;
              const result = (running.get(id) ?? Promise.resolve())
                .then(() => followLine(deps.graph, owner, id))
                .then(
                  (r): ResultLine => ({ line, id: id.toString(), result: r }),
                  (e: unknown): ResultLine => ({
                    line,
                    id: id.toString(),
                    result: 'error',
                    error: (e as Error).name ?? 'Error',
                  }),
                );
              running.set(id, result);
              return result;
            });
          const results = await Promise.all(window);
          await writer.ready;
          await writer.write(encoder.encode(results.map((r) => `${JSON.stringify(r)}\n`).join('')));
        }
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
