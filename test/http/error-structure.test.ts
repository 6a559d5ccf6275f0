/**
 * The error structure: one `as const` list of domain error classes from which the
 * union and the HTTP map derive; bad input anywhere in the domain is a named 4xx, never a 500.
 * (The import directions are `test/architecture.test.ts`.)
 */
import { describe, expect, it } from 'vitest';
import { toApiError } from '../../src/http/errors.js';
import { BucketedListService } from '../../src/lists/list-service.js';
import * as graphErrors from '../../src/model/errors.js';
import { StoreUnavailableError, UsernameTakenError } from '../../src/model/errors.js';
import type { ListKey } from '../../src/model/types.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';

describe('error structure', () => {
  it('bad input to the list service is a named 400, not a 500', async () => {
    const lists = new BucketedListService({
      store: new MemoryGraphStore(),
      cursorSecret: 'cursor-secret-0123456789abcdef',
      bucketThresholds: [1000],
    });
    const list: ListKey = { userId: 1n, relation: 'follows', direction: 'in' };
    const thrown = await Promise.all([
      lists.page(list, 0, null).catch((e: unknown) => e),
      lists.scan(list, 0, 2000, 10, null).catch((e: unknown) => e),
      lists.scan(list, 3, 2, 10, null).catch((e: unknown) => e),
      lists.scan(list, 0, 1, 1.5, null).catch((e: unknown) => e),
    ]);
    expect(
      thrown.map((e) => {
        const a = toApiError(e);
        return [(e as Error).name, a.status, a.code];
      }),
    ).toEqual(Array(4).fill(['InvalidInputError', 400, 'validation_failed']));
  });

  it('one list of error classes: every class in it maps to its own problem, store errors included', () => {
    const list = (graphErrors as unknown as { DOMAIN_ERRORS: readonly (new (...a: never[]) => Error)[] })
      .DOMAIN_ERRORS;
    expect(list).toContain(StoreUnavailableError);
    expect(list).toContain(UsernameTakenError);
    expect(list).toContain(graphErrors.InvalidCursorError);
    const samples: Error[] = [
      new graphErrors.UserNotFoundError(5n),
      new graphErrors.HiddenError(5n),
      new graphErrors.SelfFollowError(),
      new graphErrors.BlockedError(),
      new graphErrors.FollowingCapError(7500),
      new graphErrors.NoPendingRequestError(),
      new graphErrors.NotVisibleError(),
      new graphErrors.InvalidCursorError('bad mac'),
      new graphErrors.CursorExpiredError(604800),
      new graphErrors.FeedBusyError(1000),
      new graphErrors.PositionTooOldError(5n, 9n),
      new graphErrors.PositionOutOfRangeError(99n, 10n),
      new graphErrors.PairBusyError(2),
      new graphErrors.ClockSkewError(
        "this instance's clock is 3000 ms from the database's (bound 2000 ms)",
        10,
      ),
      new graphErrors.LegacyListModeError('hash'),
      new UsernameTakenError('bob'),
      new StoreUnavailableError('NoHostAvailableError 127.0.0.1:9042'),
    ];
    expect(samples.map((e) => list.some((cls) => e instanceof cls))).toEqual(samples.map(() => true));
    expect(
      samples.map((e) => {
        const a = toApiError(e, 3);
        return [e.name, a.status, a.code, a.extra.headers ?? null];
      }),
    ).toEqual([
      ['UserNotFoundError', 404, 'user_not_found', null],
      ['HiddenError', 404, 'user_not_found', null],
      ['SelfFollowError', 400, 'self_relation', null],
      ['BlockedError', 403, 'blocked', null],
      ['FollowingCapError', 409, 'following_cap', null],
      ['NoPendingRequestError', 404, 'no_pending_request', null],
      ['NotVisibleError', 403, 'not_visible', null],
      ['InvalidCursorError', 400, 'invalid_cursor', null],
      ['CursorExpiredError', 410, 'cursor_expired', null],
      ['FeedBusyError', 503, 'unavailable', { 'Retry-After': '3' }],
      ['PositionTooOldError', 409, 'position_too_old', null],
      ['PositionOutOfRangeError', 400, 'position_out_of_range', null],
      ['PairBusyError', 503, 'pair_busy', { 'Retry-After': '2' }],
      ['ClockSkewError', 503, 'unavailable', { 'Retry-After': '10' }],
      ['LegacyListModeError', 409, 'legacy_list_mode', null],
      ['UsernameTakenError', 409, 'username_taken', null],
      ['StoreUnavailableError', 503, 'unavailable', { 'Retry-After': '3' }],
    ]);
    expect(list.length).toBe(samples.length + 1);
  });
});
