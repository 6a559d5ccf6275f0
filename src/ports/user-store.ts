import type { EventRow } from '../model/events.js';
import type { Position, UserId, UserRecord } from '../model/types.js';

/** The users projection. */
export interface UserStore {
  /** The user, or null if unknown. */
  getUser(id: UserId): Promise<UserRecord | null>;
  /** The known users among `ids` (unknown ids are absent from the map). */
  getUsers(ids: readonly UserId[]): Promise<Map<UserId, UserRecord>>;
  /**
   * Creates or updates a user. Throws `UsernameTakenError` when another id holds the username
   * (case-insensitive). Returns whether the user was new. `event`: the account's `user.updated`
   * row of the feed, written in the same logged batch as the user row (see `EventStore`).
   */
  putUser(user: UserRecord, o?: { event?: EventRow }): Promise<{ created: boolean }>;
  /**
   * The accounts in the registry of deactivated accounts, or null when it holds more than `limit`
   * (reads `DEACTIVATED_SHARDS` partitions). Every deactivated account is in it: each `putUser`
   * of a deactivated state registers the account at the same write time, and only the write that
   * reactivates an account seen deactivated unregisters it. It may also name a few active
   * accounts (a reactivation raced by a write that read the old state), so a caller confirms the
   * entries it uses against `getUsers`.
   */
  listDeactivated(limit: number): Promise<UserId[] | null>;
  /**
   * Records that `id` was active at `at` (µs since the epoch; the account service's report). The
   * latest instant wins whatever order reports arrive in (an older report changes nothing). Kept
   * apart from the user row: no `user.updated` event, no user-row cache sees it. Idempotent.
   */
  putActivity(id: UserId, at: Position): Promise<void>;
  /** The last reported activity of each of `ids` (µs); accounts never reported are absent. */
  getActivity(ids: readonly UserId[]): Promise<Map<UserId, Position>>;
}

/** Partitions of the deactivated-accounts registry. */
export const DEACTIVATED_SHARDS = 16;

/** The registry partition of `id`. */
export const deactivatedShard = (id: UserId): number => Number(id % BigInt(DEACTIVATED_SHARDS));
