import type { EventRow } from '../model/events.js';
import type { Position, UserField, UserFields, UserId, UserRecord } from '../model/types.js';

/** The users projection. */
export interface UserStore {
  /** The user, or null if unknown. */
  getUser(id: UserId): Promise<UserRecord | null>;
  /** The known users among `ids` (unknown ids are absent from the map). */
  getUsers(ids: readonly UserId[]): Promise<Map<UserId, UserRecord>>;
  /**
   * The user (null when its row has no username: never created), the write time of each of its
   * cells (µs; absent cells left out) and of the newest (-1 when none), read at the store's
   * quorum. A PUT writes its fields above `version`, so a PUT sent after another was acknowledged
   * supersedes it whatever the clocks; the registry waits for a field's cell to reach an event's
   * position.
   */
  getUserVersioned(id: UserId): Promise<VersionedUser>;
  /**
   * Writes the fields named in `fields`, and only those, each at write time `version` (the newer
   * write time wins per field; at an equal one, the larger value). A named `state` puts
   * (`deactivated`) or deletes (`active`) the account's registry row at the same version, whatever
   * the row held before. `event`: the account's `user.updated` row of the feed, in the same logged
   * batch (see `EventStore`). Idempotent. Usernames are claimed apart (`claimUsername`). The
   * registry's delete goes one below `version`: at one write time the `deactivated` cell beats the
   * `active` one (the larger value) while a delete beats a put, so a delete at `version` would
   * leave a deactivated account out of the registry; one below, the entry follows the cell in
   * every order.
   */
  putUserFields(id: UserId, fields: UserFields, version: Position, o?: { event?: EventRow }): Promise<void>;
  /**
   * Claims `username` (case-insensitive) for `id`: a lightweight transaction. Throws
   * `UsernameTakenError` when another id holds it; a claim `id` already holds succeeds.
   */
  claimUsername(username: string, id: UserId): Promise<void>;
  /**
   * Who holds the claim of `username` (lower-cased) and its write time (µs: when it was claimed),
   * or null when nobody does.
   */
  getUsernameClaim(username: string): Promise<{ userId: UserId; claimedAt: Position } | null>;
  /** Releases `username` if `id` holds it (a lightweight transaction); else nothing. */
  releaseUsername(username: string, id: UserId): Promise<void>;
  /**
   * Creates or replaces a user whole, now (fixtures, imports): claims its username, writes every
   * field at the clock, releases the name it had. Throws `UsernameTakenError`. Returns whether the
   * user was new. `event` as for `putUserFields`.
   */
  putUser(user: UserRecord, o?: { event?: EventRow }): Promise<{ created: boolean }>;
  /**
   * The accounts in the registry of deactivated accounts, or null when it holds more than `limit`
   * (reads `DEACTIVATED_SHARDS` partitions). Every deactivated account is in it: every write of
   * `state` puts or deletes the account's entry at the state cell's write time, so the entry of
   * the state that wins is the entry that wins (`putUserFields`). A caller still confirms the
   * entries it uses against `getUsers`: rows written before that rule may name active accounts.
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

/** A user row with its cells' write times (`UserStore.getUserVersioned`). */
export interface VersionedUser {
  user: UserRecord | null;
  /** The newest cell's write time (µs); -1 when the row has none. */
  version: Position;
  /** Each present cell's write time (µs). */
  versions: Partial<Record<UserField, Position>>;
}

/** Partitions of the deactivated-accounts registry. */
export const DEACTIVATED_SHARDS = 16;

/** The registry partition of `id`. */
export const deactivatedShard = (id: UserId): number => Number(id % BigInt(DEACTIVATED_SHARDS));
