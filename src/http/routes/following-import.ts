/**
 * `POST /v1/users/{id}/following/import`: follows every id of an NDJSON body, one result line per
 * input line, in order.
 *
 * Design note. Each line is `{ "id": "<user id>" }` (other keys are ignored, so an export file
 * posts back as is). Results: `following` / `requested` (this line wrote), `already_following` /
 * `already_requested` (nothing to do), `unknown_user`, `blocked`, `over_cap`, `self`, `invalid`
 * (not JSON, not an object, no valid `id`; with an `error`), `rate_limited` (past the caller's
 * mutation rate limit; re-post later) and `error` (an unexpected failure of that line, e.g. the
 * database timed out; re-post to retry). Blank lines are `invalid` too, except one final empty
 * line after the last newline.
 *
 * Check first, write only what changes (the API contract, Part 3). The ids are read in batches of
 * `MAX_RELATIONSHIP_IDS` new distinct ids with one `relationships` call each; a line whose edge is
 * already active (or blocked either way) is reported from that read and writes nothing, and a
 * repeat of an id earlier in the file reports what its first line did (`following` →
 * `already_following`) without any read or write. Only the rest go through `follow`, so blocks,
 * privacy (a private account gets a request) and the following cap hold exactly as for
 * `PUT following/{target}`. Before, every line ran `follow`, which appends a pair op even when the
 * edge is active: 2,000 copies of one id grew that pair's history by 2,000 ops and outran its
 * compaction.
 *
 * Rate limit: one token per line that writes, from the same per-actor bucket as every mutation
 * (`MutationLimiter`; `graph:admin` callers are exempt), not one per request (a 1 MiB body of
 * 11-byte lines was ~95,000 follows for one token). A token is taken before a line's `follow` and
 * refunded when the follow was refused before writing (unknown account, block, cap). When the
 * bucket is empty the window of follows in flight is finished first (its refunds may free a
 * token); if it is still empty, that line and every later line that would write are
 * `rate_limited` (the check still runs, so a line that changes nothing is reported as such; an
 * unknown id is learned only by its follow, so past the limit it is `rate_limited` too), and the
 * response carries `Retry-After`: the seconds until the bucket holds a token for each of them (at
 * most a full bucket). Re-posting the file then writes exactly the lines that are left, so
 * re-posts finish the import.
 *
 * The header must be known before the first byte, and a line can be refused only once the file
 * is read that far, so a rate-limited caller's response is assembled whole before it is sent (its
 * writes are bounded by the bucket, its reads by the body limit); an admin import, which is never
 * refused, streams as each window of `IMPORT_CONCURRENCY` follows completes. The import takes no
 * `Idempotency-Key` (the result is per line; re-posting is idempotent in effect). Body limit:
 * `IMPORT_BODY_LIMIT_BYTES` (1 MiB), set for this route in `app.ts`; larger bodies are a 413
 * before any line runs.
 */

import { createRoute, z } from '@hono/zod-openapi';
import type { GraphApi } from '../../graph/contracts.js';
import { BlockedError, FollowingCapError, SelfFollowError, UserNotFoundError } from '../../model/errors.js';
import { MAX_RELATIONSHIP_IDS } from '../../model/limits.js';
import type { UserId } from '../../model/types.js';
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
    'NDJSON, one FollowingImportResult per input line, in order: following | requested (this line wrote), ' +
    'already_following | already_requested (nothing to do, nothing written; also a repeated id), ' +
    'unknown_user, blocked, over_cap, self, invalid (with `error`), rate_limited, error (unexpected failure ' +
    'of that line; re-post to retry). Each line that writes takes one token of the per-user mutation rate ' +
    'limit (graph:admin exempt); once it is spent, the lines left that would need a read are rate_limited ' +
    'and the response has `Retry-After` (seconds until there is a token for each). Re-posting the same file ' +
    'writes only what is left, so it finishes an interrupted or rate-limited import. Idempotency-Key is ' +
    'not used.',
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
    ...problems(403, 404, 413),
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

/** Results of a `follow` that was refused before it wrote: its token goes back. */
const REFUSED: ReadonlySet<ImportResult> = new Set(['unknown_user', 'blocked', 'over_cap', 'self']);

/** What a repeat of an id reports, given its first line's result. */
function repeatOf(first: ResultLine, line: number): ResultLine {
  const result =
    first.result === 'following'
      ? 'already_following'
      : first.result === 'requested'
        ? 'already_requested'
        : first.result;
  return {
    line,
    ...(first.id ? { id: first.id } : {}),
    result,
    ...(first.error ? { error: first.error } : {}),
  };
}

/** The caller's token bucket for lines that write; null for `graph:admin` (exempt). */
interface Charge {
  take(): boolean;
  refund(): void;
}

/**
 * The results of `lines`, in order, in chunks (one per `MAX_RELATIONSHIP_IDS` new distinct ids);
 * see the module note. `onLimited` counts the distinct ids answered `rate_limited`.
 */
async function* importLines(
  graph: GraphApi,
  owner: UserId,
  lines: readonly string[],
  charge: Charge | null,
  onLimited: () => void,
): AsyncGenerator<ResultLine[]> {
  const parsed = lines.map((text) => parseLine(text.endsWith('\r') ? text.slice(0, -1) : text));
  /** Each id's first line (index). */
  const first = new Map<UserId, number>();
  const results: (ResultLine | undefined)[] = new Array(lines.length);
  let limited = false;
  for (let start = 0; start < lines.length; ) {
    const fresh: UserId[] = [];
    let end = start;
    for (; end < lines.length; end++) {
      const p = parsed[end]!;
      if (!('id' in p) || first.has(p.id)) continue;
      if (fresh.length === MAX_RELATIONSHIP_IDS) break;
      first.set(p.id, end);
      if (p.id !== owner) fresh.push(p.id);
    }
    const flags = fresh.length === 0 ? [] : await graph.relationships(owner, fresh);
    const edge = new Map(flags.map((f) => [f.id, f]));
    const window: number[] = [];
    const runWindow = async () => {
      await Promise.all(
        window.splice(0).map(async (i) => {
          const id = (parsed[i] as { id: UserId }).id;
          const base = { line: i + 1, id: id.toString() };
          try {
            const result = await followLine(graph, owner, id);
            results[i] = { ...base, result };
            if (REFUSED.has(result)) charge?.refund();
          } catch (e) {
            results[i] = { ...base, result: 'error', error: (e as Error).name ?? 'Error' };
          }
        }),
      );
    };
    for (let i = start; i < end; i++) {
      const p = parsed[i]!;
      const line = i + 1;
      if ('error' in p) {
        results[i] = { line, result: 'invalid', error: p.error };
        continue;
      }
      if (first.get(p.id) !== i) continue;
      const base = { line, id: p.id.toString() };
      const e = edge.get(p.id);
      if (p.id === owner) results[i] = { ...base, result: 'self' };
      else if (e?.blocking || e?.blockedBy) results[i] = { ...base, result: 'blocked' };
      else if (e?.following) results[i] = { ...base, result: 'already_following' };
      else if (e?.requested) results[i] = { ...base, result: 'already_requested' };
      else {
        if (charge && !limited && !charge.take()) {
          await runWindow();
          if (!charge.take()) limited = true;
        }
        if (limited) results[i] = { ...base, result: 'rate_limited' };
        else {
          window.push(i);
          if (window.length === IMPORT_CONCURRENCY) await runWindow();
        }
      }
      if (results[i]?.result === 'rate_limited') onLimited();
    }
    await runWindow();
    const chunk: ResultLine[] = [];
    for (let i = start; i < end; i++) {
      const p = parsed[i]!;
      chunk.push(results[i] ?? repeatOf(results[first.get((p as { id: UserId }).id)!]!, i + 1));
    }
    yield chunk;
    start = end;
  }
}

const NDJSON = 'application/x-ndjson; charset=utf-8';
const encode = (chunk: readonly ResultLine[]) => chunk.map((r) => `${JSON.stringify(r)}\n`).join('');

export function registerFollowingImport(app: ApiApp, deps: RouteDeps) {
  app.openapi(followingImportRoute, async (c) => {
    const owner = idOf(c.req.valid('param').id);
    const principal = actFor(c, owner);
    await deps.graph.getUser(owner);
    const lines = (await c.req.text()).split('\n');
    if (lines.at(-1) === '') lines.pop();
    const key = principal.sub.toString();
    const charge: Charge | null = principal.admin
      ? null
      : { take: () => deps.limiter.take(key).ok, refund: () => deps.limiter.refund(key) };
    let limited = 0;
    const results = importLines(deps.graph, owner, lines, charge, () => {
      limited++;
    });
    // `@hono/zod-openapi` types `application/x-ndjson` as a JSON variant it cannot produce
    // (`never`); the bodies below are plain text and a plain stream.
    if (charge) {
      let body = '';
      for await (const chunk of results) body += encode(chunk);
      const headers: Record<string, string> = { 'Content-Type': NDJSON };
      if (limited > 0)
        headers['Retry-After'] = String(Math.max(1, deps.limiter.secondsUntilAvailable(key, limited)));
      return c.body(body, 200, headers) as never;
    }
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
    const writer = writable.getWriter();
    const encoder = new TextEncoder();
    void (async () => {
      try {
        for await (const chunk of results) {
          await writer.ready;
          await writer.write(encoder.encode(encode(chunk)));
        }
        await writer.close();
      } catch (e) {
        await writer.abort(e).catch(() => undefined);
      }
    })();
    return c.body(readable, 200, { 'Content-Type': NDJSON }) as never;
  });
}
