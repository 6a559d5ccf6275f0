/**
 * The request and response schemas shared by the routes. The same zod objects validate requests
 * and produce `/openapi.json`, so the document cannot drift from the code. Request objects are
 * strict (unknown keys are a 400: the mass-assignment defence); ids stay strings here and become
 * `bigint` in the handler (`idOf`).
 */

import { z } from '@hono/zod-openapi';
import { MAX_CURSOR_LENGTH } from '../lists/cursor/cursor-codec.js';
import { MAX_SET_CURSOR_LENGTH } from '../lists/cursor/set-cursor.js';
import { EVENT_TYPES } from '../model/events.js';
import { MAX_CONTAINS_IDS, MAX_RELATIONSHIP_IDS, USERNAME_PATTERN } from '../model/limits.js';
import { ERROR_CODES } from './errors.js';
import { parseUserId } from './ids.js';
import { parseTimeOrNull, TIME_MESSAGE } from './times.js';

export const ID_MESSAGE = 'a positive 64-bit integer as a decimal string without leading zeros';
export const UserIdString = z
  .string()
  .refine((v) => parseUserId(v) !== null, ID_MESSAGE)
  .openapi({
    description: 'User id: positive signed 64-bit integer (1…9223372036854775807), decimal string.',
    pattern: '^[1-9][0-9]{0,18}$',
    example: '42',
  });

export const Time = z.string().openapi({
  description: 'RFC 3339 UTC with microseconds (the precision of positions).',
  example: '2026-11-30T04:31:18.123456Z',
});

/** A time a client sends (e.g. list bounds): RFC 3339 with up to 6 fraction digits → µs. */
export const TimeInput = z
  .string()
  .refine((v) => parseTimeOrNull(v) !== null, TIME_MESSAGE)
  .transform((v) => parseTimeOrNull(v) as bigint)
  .openapi({
    type: 'string',
    description: 'RFC 3339 with at most 6 fraction digits, `Z` or a numeric offset.',
    example: '2026-11-30T04:31:18.123456Z',
  });

/** Path parameter objects, one per shape. */
export const IdParams = z.object({ id: UserIdString.openapi({ param: { name: 'id', in: 'path' } }) });
export const pairParams = <K extends string>(other: K) =>
  z.object({
    id: UserIdString.openapi({ param: { name: 'id', in: 'path' } }),
    [other]: UserIdString.openapi({ param: { name: other, in: 'path' } }),
  } as { id: typeof UserIdString } & Record<K, typeof UserIdString>);

const intParam = (min: number, max: number, dflt: number) =>
  z
    .string()
    .regex(/^(0|[1-9][0-9]{0,6})$/, 'an integer')
    .optional()
    .transform((v) => (v === undefined ? dflt : Number(v)))
    .pipe(z.number().int().min(min).max(max))
    .openapi({ type: 'integer', minimum: min, maximum: max, default: dflt });

export const Cursor = z
  .string()
  .min(1)
  .max(MAX_CURSOR_LENGTH)
  .optional()
  .openapi({ description: 'Opaque cursor from a previous page (`next_cursor`).' });

/**
 * A query-string schema: an unknown parameter is a 400 `validation_failed` naming it, never
 * silently ignored (a client sending `direction=newer` before the server knows it must not get
 * the other order). Like unknown body keys, they come back as one `errors` entry
 * `{ path: 'query', message: 'Unrecognized key: "direction"' }`. Adding a known parameter is one
 * line in the shape.
 */
const queryParams = <T extends z.ZodRawShape>(shape: T) => z.strictObject(shape);

export const ListQuery = queryParams({
  limit: intParam(1, 200, 50),
  cursor: Cursor,
  direction: z
    .enum(['older', 'newer'])
    .optional()
    .openapi({
      description:
        '`older` (default) continues from a `next_cursor`; `newer` goes back from a `prev_cursor` toward ' +
        'the newest. Items are newest first either way; a cursor used with the other direction is a 400.',
    }),
  since: TimeInput.optional().openapi({
    description: 'Only members whose `followed_at` is at or after this time (RFC 3339).',
  }),
  until: TimeInput.optional().openapi({
    description:
      'Only members whose `followed_at` is before this time (RFC 3339). A cursor is bound to its `since` / `until`.',
  }),
});
/** Search within a follows list: a username prefix, and a list's limit and cursor. */
export const SearchQuery = queryParams({
  q: z.string().regex(USERNAME_PATTERN, '1 to 30 of A-Z a-z 0-9 . _').openapi({
    description: 'Username prefix, 1–30 of `[A-Za-z0-9._]`, case-insensitive.',
    example: 'ad',
  }),
  limit: intParam(1, 200, 50),
  cursor: Cursor.openapi({
    description: 'Opaque cursor from a previous page of the same list and `q` (`next_cursor`).',
  }),
});
/** Set queries (mutuals, not-followed-back): a list query whose cursor wraps a list cursor. */
export const SetQuery = queryParams({
  limit: intParam(1, 200, 50),
  cursor: z
    .string()
    .min(1)
    .max(MAX_SET_CURSOR_LENGTH)
    .optional()
    .openapi({ description: 'Opaque cursor from a previous page of the same query (`next_cursor`).' }),
  since: TimeInput.optional().openapi({
    description: 'Only members whose `followed_at` is at or after this time (RFC 3339).',
  }),
  until: TimeInput.optional().openapi({
    description:
      'Only members whose `followed_at` is before this time (RFC 3339). A cursor is bound to its `since` / `until`.',
  }),
});
/** A route that takes no query parameters: any is a 400 naming it. */
export const NoQuery = queryParams({});
export const FollowedByQuery = queryParams({ limit: intParam(0, 50, 3) });
export const SuggestionsQuery = queryParams({ limit: intParam(1, 100, 20) });
export const ScanQuery = queryParams({
  slice: intParam(0, 1023, 0),
  slices: intParam(1, 1024, 1),
  limit: intParam(1, 1000, 50),
  cursor: Cursor,
  active_since: TimeInput.optional().openapi({
    description:
      'Skip members whose `last_active_at` is older than this time (RFC 3339), or never reported: fan-out ' +
      'leaves inactive accounts out. Slices stay disjoint and cover every active member once; a page may be ' +
      'short (even empty) with a `next_cursor`. Costs one point read of activity per member read.',
  }),
});

/** Headers a mutating call may send; declared for the document, enforced by middleware. */
export const MutationHeaders = z.object({
  'idempotency-key': z
    .string()
    .optional()
    .openapi({ description: '1–128 printable ASCII characters; retries with the same key replay.' }),
  'graph-position': z
    .string()
    .optional()
    .openapi({ description: 'graph:admin only: apply at this µs position (replay/import).' }),
});

export const FieldErrorSchema = z.object({ path: z.string(), message: z.string() });
export const Problem = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.enum(ERROR_CODES),
    request_id: z.string(),
    errors: z.array(FieldErrorSchema).optional(),
  })
  .openapi('Problem');

export const PutUserBody = z
  .strictObject({
    username: z
      .string()
      .regex(USERNAME_PATTERN, '1–30 characters of A–Z, a–z, 0–9, dot and underscore')
      .optional()
      .openapi({ description: 'Required to create a user; kept when left out of an update.' }),
    private: z.boolean().optional(),
    state: z
      .enum(['active', 'deactivated'])
      .optional()
      .openapi({
        description:
          '`deactivated` hides every edge of the account from every read at once (lists, counts, contains, ' +
          'relationships, scans, set queries) without rewriting them; `active` restores them exactly. ' +
          "The counterparts' counts converge within seconds.",
      }),
    hide_lists: z.boolean().optional().openapi({
      description: "The account's followers/following lists and counts are visible only to itself.",
    }),
    last_active_at: TimeInput.optional().openapi({
      description:
        "The account service's report that the account was active at this time (RFC 3339; at most a minute " +
        'ahead of the server clock). The latest report wins, in any arrival order. Kept apart from the account ' +
        'row: no `user.updated` event, not in the caches. A body with only this field updates an existing ' +
        'account (404 when unknown).',
    }),
  })
  .openapi('PutUser');

export const UserSchema = z
  .object({
    id: UserIdString,
    username: z.string(),
    private: z.boolean(),
    state: z.enum(['active', 'deactivated']),
    hide_lists: z.boolean(),
    last_active_at: Time.nullable().openapi({
      description: 'The last reported activity (`last_active_at`); null when never reported.',
    }),
  })
  .openapi('User');

export const CountsSchema = z
  .object({
    followers: z.number().int(),
    following: z.number().int(),
    exact: z.boolean().openapi({
      description:
        'True when both counters have been reconciled since the last write they could have missed ' +
        '(no recount pending): they equal the list sizes as of `as_of`.',
    }),
    as_of: z
      .string()
      .nullable()
      .openapi({
        description:
          'RFC 3339 µs time of the older of the two lists’ last reconciliation (for a list never written, ' +
          'the read time); null while a list holds counts that were never reconciled.',
        example: '2026-11-30T04:31:18.123456Z',
      }),
  })
  .openapi('Counts');

export const RelationshipSchema = z
  .object({
    following: z.enum(['none', 'following', 'requested']),
    followed_by: z.boolean(),
    blocking: z.boolean(),
    muting: z.boolean(),
    restricting: z.boolean().openapi({
      description:
        'The viewer restricts this account. Whether this account restricts the viewer is never shown.',
    }),
  })
  .openapi('Relationship');

export const ProfileSchema = z
  .object({
    id: UserIdString,
    username: z.string(),
    private: z.boolean(),
    counts: CountsSchema.nullable().openapi({ description: 'null when the viewer may not see the counts.' }),
    relationship: RelationshipSchema,
    state: z.enum(['active', 'deactivated']).optional().openapi({
      description:
        'graph:admin callers only: the only callers who see a deactivated account (everyone else gets 404).',
    }),
    last_active_at: Time.nullable().optional().openapi({
      description: 'graph:admin callers only: the last reported activity; null when never reported.',
    }),
  })
  .openapi('Profile');

export const ListItemSchema = z
  .object({ id: UserIdString, username: z.string(), followed_at: Time })
  .openapi('ListItem');

/** A cursor that is null at the end and only there, though a page may come back short. */
const onwardCursor = (what: string) =>
  z
    .string()
    .nullable()
    .openapi({
      description:
        `${what}; null at the end, and only there: a page may come back short, even empty, when its ` +
        'work budget is spent (e.g. many deactivated members in a row).',
    });

export const SearchPageSchema = z
  .object({ items: z.array(ListItemSchema), next_cursor: onwardCursor('The next page of matches') })
  .openapi('SearchPage');

export const ListPageSchema = z
  .object({
    items: z.array(ListItemSchema),
    next_cursor: onwardCursor('Older items (`direction=older`)'),
    prev_cursor: z
      .string()
      .nullable()
      .openapi({
        description:
          'Newer items (`direction=newer`); null on the first page, and going newer only once the newest ' +
          'item is shown (a short `direction=newer` page keeps it).',
      }),
  })
  .openapi('ListPage');

/** One line of a following export (`application/x-ndjson`). */
export const ExportLineSchema = z
  .object({ id: UserIdString, username: z.string(), followed_at: Time })
  .openapi('FollowingExportLine');

/** The results an import line can have (`following/import`). */
export const IMPORT_RESULTS = [
  'following',
  'requested',
  'already_following',
  'already_requested',
  'unknown_user',
  'blocked',
  'over_cap',
  'self',
  'invalid',
  'rate_limited',
  'error',
] as const;

/** One line of an import response (`application/x-ndjson`), in input order. */
export const ImportResultLineSchema = z
  .object({
    line: z.number().int().openapi({ description: '1-based line number of the input line.' }),
    id: UserIdString.optional().openapi({ description: 'The id read from the line (absent when invalid).' }),
    result: z.enum(IMPORT_RESULTS),
    error: z.string().optional().openapi({ description: 'Why a line is `invalid` or failed (`error`).' }),
  })
  .openapi('FollowingImportResult');

export const IdsBody = z
  .strictObject({ ids: z.array(UserIdString).max(MAX_CONTAINS_IDS) })
  .openapi('Ids', { description: `At most ${MAX_CONTAINS_IDS} ids.` });

export const IdsResult = z.object({ ids: z.array(UserIdString) }).openapi('IdsResult');

export const ScanPageSchema = z
  .object({ ids: z.array(UserIdString), next_cursor: z.string().nullable() })
  .openapi('ScanPage');

export const FollowStatusSchema = z
  .object({ state: z.enum(['none', 'following', 'requested']), followed_at: Time.optional() })
  .openapi('FollowStatus');

export const FollowedBySchema = z
  .object({
    sample: z.array(z.object({ id: UserIdString, username: z.string() })),
    total: z.number().int(),
  })
  .openapi('FollowedBy');

export const stateSchema = <S extends string>(name: string, states: readonly [S, ...S[]]) =>
  z.object({ state: z.enum(states) }).openapi(name);

export const RelationshipIdsBody = z
  .strictObject({ ids: z.array(UserIdString).max(MAX_RELATIONSHIP_IDS) })
  .openapi('RelationshipIds', { description: `At most ${MAX_RELATIONSHIP_IDS} ids.` });

export const RelationshipsSchema = z
  .object({
    items: z.array(
      z.object({
        id: UserIdString,
        following: z.boolean(),
        followed_by: z.boolean(),
        requested: z.boolean(),
        requested_by: z.boolean(),
        blocking: z.boolean(),
        blocked_by: z.boolean(),
        muting: z.boolean(),
        close_friend: z.boolean(),
        restricting: z.boolean(),
      }),
    ),
  })
  .openapi('Relationships');

export const SuggestionsSchema = z
  .object({
    items: z.array(
      z.object({
        id: UserIdString,
        username: z.string(),
        score: z.number().openapi({ description: 'Adamic–Adar score at the last run (6 decimals)' }),
        via: z.array(UserIdString).openapi({ description: 'Mutual accounts with the biggest contribution' }),
      }),
    ),
  })
  .openapi('Suggestions');

/** Longest feed cursor accepted (the feed's cursors are opaque; a longer one is a 400 before the feed). */
export const MAX_EVENT_CURSOR_LENGTH = 512;

const EventCursor = z
  .string()
  .min(1)
  .max(MAX_EVENT_CURSOR_LENGTH)
  .openapi({ description: 'Opaque feed cursor: a `next_cursor`, or an event `id`.' });

export const EventsQuery = queryParams({
  after: EventCursor.optional().openapi({
    description:
      'Resume right after this cursor (a `next_cursor` or an event `id`). Without it: from the oldest retained event.',
  }),
  limit: intParam(1, 1000, 100),
  wait: intParam(0, 30, 0).openapi({
    description:
      'Seconds (0–30) to hold the request when nothing follows the cursor yet; it answers as soon as ' +
      'something does, or with an empty page when the time is up.',
  }),
});

export const EventStreamQuery = queryParams({
  after: EventCursor.optional().openapi({
    description:
      'Start right after this cursor; without it, from the oldest retained event. A `Last-Event-ID` header wins over it.',
  }),
});

/** Headers of the SSE route (declared for the document; not strict: a browser sends many). */
export const EventStreamHeaders = z.object({
  'last-event-id': z
    .string()
    .max(MAX_EVENT_CURSOR_LENGTH)
    .optional()
    .openapi({
      description:
        'Sent by an EventSource when it reconnects: the `id` of the last event it received. Resumes right ' +
        'after it and wins over `after` (a reconnect repeats the original URL). Empty: as if absent.',
    }),
});

export const EventSchema = z
  .object({
    id: z.string().openapi({
      description: 'Stable across re-reads (dedupe by it); also a cursor right after the event.',
    }),
    type: z.enum(EVENT_TYPES),
    source: UserIdString.openapi({ description: "The edge's source; for `user.updated`, the account." }),
    target: UserIdString.openapi({ description: "The edge's target; for `user.updated`, the account." }),
    position: z.number().int().openapi({
      description:
        'The position (µs) of the operation that made the change; for `user.updated`, its write time.',
    }),
    at: Time.openapi({ description: 'When the change was written: the feed orders by it.' }),
    fields: z
      .array(z.enum(['username', 'private', 'state', 'hide_lists']))
      .optional()
      .openapi({ description: '`user.updated` only: the fields the change named (PUT body names).' }),
  })
  .openapi('Event');

export const EventPageSchema = z
  .object({
    items: z.array(EventSchema),
    next_cursor: z.string().openapi({
      description:
        'Resumes exactly after the last item; always present, also on an empty page (then it resumes where ' +
        'this page began).',
    }),
  })
  .openapi('EventPage');
