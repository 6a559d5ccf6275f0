/**
 * Which tests cover each operation (HTTP tests organised per operation). Every
 * operationId of the OpenAPI document has a row naming at least one test for its happy path, one
 * for its errors and one for its security rule; `operation-coverage.test.ts` checks that the rows
 * cover every operation and that each named title exists in the named file. Every operation also
 * runs the shared suite in `route-security.test.ts` (authentication, object-level authorization,
 * validation), named here as `SHARED_SECURITY`, and the deactivated-account sweep in
 * `deactivated-account.test.ts` (its 404 for the account's own token, others and admins), which
 * checks that it sweeps exactly the operations listed here.
 *
 * A new route: add a row `operationId: { happy: [...], error: [...], security: [SHARED_SECURITY, ...] }`
 * with the titles of its tests (one test may serve several categories when its title says so).
 */

export interface CoveringTest {
  /** Path from the repository root. */
  file: string;
  /** The exact `describe` / `it` title as written in the file. */
  title: string;
}

export interface OperationCoverage {
  happy: CoveringTest[];
  error: CoveringTest[];
  security: CoveringTest[];
}

const t =
  (file: string) =>
  (title: string): CoveringTest => ({ file: `test/http/${file}`, title });
const routes = t('routes.int.test.ts');
const edge = t('edge.test.ts');
const errors = t('operation-errors.test.ts');
const sets = t('set-routes.int.test.ts');
const part2 = t('lists-part2.int.test.ts');
const rel = t('relationships.int.test.ts');
const account = t('account-state.int.test.ts');
const counts = t('counts-visibility.test.ts');
const followedBy = t('followed-by-visibility.test.ts');
const suggest = (title: string): CoveringTest => ({ file: 'test/jobs/suggest.int.test.ts', title });
const SUGGEST_ERRORS = suggest(
  'security and errors: 401 without a token, 403 for another subject, 404 unknown, 400 bad input',
);
const queries = t('list-queries.test.ts');
const events = t('events.test.ts');
const search = t('follow-search.test.ts');
const EVENTS_SECURITY = events(
  'security: 401 without a token and 403 for a token without graph:admin, on both routes, before the feed',
);

/** The shared suite every operation runs (its title templates, as written in the file). */
export const SHARED_SECURITY: CoveringTest = t('route-security.test.ts')(
  'every operation: object-level authorization — %s',
);

const BLOCK = routes(
  'block removes follows both ways and requests, forbids follows, and unblock restores nothing',
);
const MUTE = routes('mute keeps the follow; close friends is an owner list');
const OWNER_LISTS = routes('owner-private lists (blocks, mutes, close friends, requests) are 403 to others');
const PRIVATE = routes('private account: owner and accepted followers see the lists; others get 403');
const BLOCKED = routes('blocked by the owner: 404 for the profile, lists, counts and followed-by');
const TYPED_LISTS = errors(
  'list_blocks / list_mutes / list_close_friends / list_restricts: unknown owner 404, altered cursor 400, limit 0 400',
);
const restricts = t('restricts.test.ts');
const RESTRICT = restricts(
  'put_restricts / delete_restricts / list_restricts: restrict, repeat, list and page, unrestrict; follows, close friends and counts untouched',
);
const RESTRICT_ERRORS = restricts(
  'errors: 401 without a token, 403 for another subject, 400 self and bad ids, 404 unknown accounts, 400 bad cursor and limit',
);
const RESTRICT_HIDDEN = restricts(
  'the restricted account (its own token) and a third party see nothing of it on any operation, before and after their own writes',
);
const CONTAINS = routes('contains: subset in request order, own subject or admin only, ≤1000 ids');
const SET_ERRORS = sets(
  'errors: bad, foreign and cross-route cursors 400 invalid_cursor; limit out of range 400',
);
const SET_SECURITY = sets(
  'security: not-followed-back is owner-only (403); mutuals follow list visibility (403 private, 404 blocked)',
);

const SEARCH = {
  happy: [
    search('search: prefix matches in username order, case-insensitive, paged through the cursor to the end'),
    search('search: a deactivated member is left out, and back once reactivated'),
  ],
  error: [
    search(
      'search: a bad q (missing, empty, 31 characters, a character outside usernames) is a 400 naming q',
    ),
    search('search: a cursor of another q or another list is a 400 invalid_cursor'),
  ],
  security: [
    SHARED_SECURITY,
    search(
      'search: a private account’s lists are 403 to a stranger, like the list routes; the owner sees them',
    ),
  ],
};

export const OPERATION_TESTS: Record<string, OperationCoverage> = {
  putUser: {
    happy: [routes('PUT creates (201), updates (200), needs graph:admin, keeps usernames unique, validates')],
    error: [
      edge('unknown body keys are refused (mass assignment)'),
      edge('malformed JSON → 400, wrong content type → 415'),
    ],
    security: [
      SHARED_SECURITY,
      account('only graph:admin may set state or hide_lists; bad values are a 400'),
    ],
  },
  getUser: {
    happy: [
      routes('GET returns the profile with counts and the viewer relationship; 404 unknown or blocking'),
    ],
    error: [
      routes('GET returns the profile with counts and the viewer relationship; 404 unknown or blocking'),
    ],
    security: [SHARED_SECURITY, BLOCKED],
  },
  follow: {
    happy: [
      routes('PUT follows a public account, requests a private one, and is idempotent (followed_at kept)'),
    ],
    error: [
      routes('PUT refuses self (400), blocks either way (403), unknown users (404), other actors (403)'),
      routes('PUT over the following cap is a 409'),
    ],
    security: [
      SHARED_SECURITY,
      edge('a token acting for another user gets 403'),
      edge('Graph-Position needs graph:admin, and is passed through for admins'),
    ],
  },
  unfollow: {
    happy: [routes('DELETE unfollows or cancels a request, idempotently')],
    error: [errors('unfollow: unknown target 404, self 400')],
    security: [SHARED_SECURITY, routes('DELETE unfollows or cancels a request, idempotently')],
  },
  getFollowStatus: {
    happy: [routes('GET status is open to anyone who may see the lists')],
    error: [routes('GET status is open to anyone who may see the lists')],
    security: [SHARED_SECURITY, routes('GET status is open to anyone who may see the lists')],
  },
  exportFollowing: {
    happy: [sets('export: NDJSON of every follow; another subject 403, unknown 404')],
    error: [sets('export: NDJSON of every follow; another subject 403, unknown 404')],
    security: [SHARED_SECURITY, sets('export: NDJSON of every follow; another subject 403, unknown 404')],
  },
  importFollowing: {
    happy: [sets('import: one result per line in order, every outcome; re-posting changes nothing')],
    error: [
      sets('import: over the cap per line (its token given back); another subject 403; over 1 MiB 413'),
    ],
    security: [
      SHARED_SECURITY,
      sets('import: over the cap per line (its token given back); another subject 403; over 1 MiB 413'),
    ],
  },
  listFollowing: {
    happy: [routes('following: newest first')],
    error: [routes('a cursor is valid only for its own list; altered cursors are a 400')],
    security: [SHARED_SECURITY, PRIVATE],
  },
  followingContains: {
    happy: [CONTAINS],
    error: [CONTAINS],
    security: [SHARED_SECURITY, CONTAINS, edge('refuses a large body with Content-Length')],
  },
  followersContains: {
    happy: [CONTAINS],
    error: [CONTAINS],
    security: [SHARED_SECURITY, CONTAINS],
  },
  scanFollowers: {
    happy: [routes('scan: slices are disjoint and cover every follower; admin only')],
    error: [routes('scan: slices are disjoint and cover every follower; admin only')],
    security: [SHARED_SECURITY, routes('scan: slices are disjoint and cover every follower; admin only')],
  },
  listFollowers: {
    happy: [
      routes('followers: newest first, ties by larger id, paged to the end'),
      part2('followers: forward with next_cursor, back with prev_cursor and direction=newer, the same pages'),
    ],
    error: [
      routes('limit outside 1–200 is a 400'),
      queries('a bad time is a 400 naming the parameter; since >= until is a 400 naming until'),
    ],
    security: [SHARED_SECURITY, PRIVATE, BLOCKED],
  },
  searchFollowers: SEARCH,
  searchFollowing: SEARCH,
  removeFollower: {
    happy: [routes('DELETE removes a follower (idempotent; owner only)')],
    error: [errors('removeFollower: unknown follower 404, self 400')],
    security: [SHARED_SECURITY, routes('DELETE removes a follower (idempotent; owner only)')],
  },
  followedBy: {
    happy: [routes('followed-by: people the viewer follows who follow id')],
    error: [routes('followed-by: people the viewer follows who follow id')],
    security: [
      SHARED_SECURITY,
      BLOCKED,
      followedBy(
        'a private account: 403 to a non-follower; the owner, an approved follower and an admin get the answer',
      ),
      followedBy('hide_lists: 403 to everybody but the owner, followers included; an admin gets the answer'),
    ],
  },
  getCounts: {
    happy: [routes('counts are visible like the lists')],
    error: [routes('counts are visible like the lists'), edge('path id %j → 400 with a field error')],
    security: [
      SHARED_SECURITY,
      counts('a private account hides its counts from non-followers on both routes'),
    ],
  },
  listRequests: {
    happy: [routes('lists incoming requests to the owner only')],
    error: [errors('listRequests: unknown owner 404, altered cursor 400 invalid_cursor, limit 0 400')],
    security: [SHARED_SECURITY, OWNER_LISTS],
  },
  acceptRequest: {
    happy: [routes('accept makes the requester a follower; double accept is 200; no request is 404')],
    error: [
      routes('accept makes the requester a follower; double accept is 200; no request is 404'),
      errors('acceptRequest: unknown requester 404, self 400'),
    ],
    security: [
      SHARED_SECURITY,
      routes('accept makes the requester a follower; double accept is 200; no request is 404'),
    ],
  },
  declineRequest: {
    happy: [routes('decline removes the request')],
    error: [
      errors('declineRequest: unknown requester 404, self 400'),
      errors('declineRequest: a domain NoPendingRequestError is the 404 no_pending_request'),
    ],
    security: [SHARED_SECURITY],
  },
  put_blocks: {
    happy: [BLOCK],
    error: [BLOCK, errors('put_blocks / delete_blocks: unknown target 404, self 400')],
    security: [SHARED_SECURITY, BLOCK],
  },
  delete_blocks: {
    happy: [BLOCK],
    error: [errors('put_blocks / delete_blocks: unknown target 404, self 400')],
    security: [SHARED_SECURITY],
  },
  list_blocks: {
    happy: [BLOCK, part2('following and blocks answer prev_cursor too')],
    error: [TYPED_LISTS],
    security: [SHARED_SECURITY, OWNER_LISTS],
  },
  put_mutes: {
    happy: [MUTE],
    error: [MUTE, errors('put_mutes / delete_mutes: unknown target 404, self 400')],
    security: [SHARED_SECURITY],
  },
  delete_mutes: {
    happy: [MUTE],
    error: [errors('put_mutes / delete_mutes: unknown target 404, self 400')],
    security: [SHARED_SECURITY],
  },
  list_mutes: {
    happy: [MUTE],
    error: [TYPED_LISTS],
    security: [SHARED_SECURITY, OWNER_LISTS],
  },
  put_close_friends: {
    happy: [MUTE],
    error: [errors('put_close_friends / delete_close_friends: unknown target 404, self 400')],
    security: [SHARED_SECURITY],
  },
  delete_close_friends: {
    happy: [MUTE],
    error: [errors('put_close_friends / delete_close_friends: unknown target 404, self 400')],
    security: [SHARED_SECURITY, MUTE],
  },
  list_close_friends: {
    happy: [MUTE],
    error: [TYPED_LISTS],
    security: [SHARED_SECURITY, OWNER_LISTS],
  },
  put_restricts: {
    happy: [RESTRICT],
    error: [RESTRICT_ERRORS, errors('put_restricts / delete_restricts: unknown target 404, self 400')],
    security: [SHARED_SECURITY, RESTRICT_ERRORS, RESTRICT_HIDDEN],
  },
  delete_restricts: {
    happy: [RESTRICT],
    error: [RESTRICT_ERRORS, errors('put_restricts / delete_restricts: unknown target 404, self 400')],
    security: [SHARED_SECURITY, RESTRICT_ERRORS, RESTRICT_HIDDEN],
  },
  list_restricts: {
    happy: [
      RESTRICT,
      restricts('the owner sees it: restricting in relationships, in its view of the profile, and its list'),
    ],
    error: [RESTRICT_ERRORS, TYPED_LISTS],
    security: [SHARED_SECURITY, OWNER_LISTS, RESTRICT_HIDDEN],
  },
  relationships: {
    happy: [rel('answers every flag in request order, repeats included, unknown ids all false')],
    error: [rel('validates the body: more than 100 ids, bad ids, unknown keys are 400')],
    security: [SHARED_SECURITY, rel('security: no token 401, another subject 403, unknown id 404')],
  },
  listOutgoingRequests: {
    happy: [part2('lists pending requests newest first; an accepted or cancelled one leaves the list')],
    error: [part2('security: no token 401, another subject 403, unknown id 404')],
    security: [SHARED_SECURITY, part2('security: no token 401, another subject 403, unknown id 404')],
  },
  listMutuals: {
    happy: [sets('mutuals: whole page, then limit 1 walked with the cursor')],
    error: [SET_ERRORS],
    security: [SHARED_SECURITY, SET_SECURITY],
  },
  listFollowersNotFollowedBack: {
    happy: [sets('not-followed-back: whole page for the owner and for an admin')],
    error: [SET_ERRORS],
    security: [SHARED_SECURITY, SET_SECURITY],
  },
  getSuggestions: {
    happy: [suggest('scores every user by hand-computed Adamic–Adar, leaving out every excluded kind')],
    error: [SUGGEST_ERRORS],
    security: [SHARED_SECURITY, SUGGEST_ERRORS],
  },
  listEvents: {
    happy: [
      events('pages: whole items in feed order, next_cursor resuming exactly after the last item'),
      events('wait: an event that arrives while the request is held ends the wait at once'),
    ],
    error: [
      events('a malformed cursor is a 400 invalid_cursor; one older than the retention a 410 cursor_expired'),
      events('limit: 100 by default, 1 and 1000 accepted, 0 and 1001 a 400 naming it'),
    ],
    security: [SHARED_SECURITY, EVENTS_SECURITY],
  },
  streamEvents: {
    happy: [
      events('frames exactly: an id, event and data line per event, in feed order'),
      events('resume with Last-Event-ID yields exactly the events after it (the header wins over after)'),
    ],
    error: [events('an invalid or expired cursor answers its problem before the stream starts')],
    security: [SHARED_SECURITY, EVENTS_SECURITY],
  },
};
