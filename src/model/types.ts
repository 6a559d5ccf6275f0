/**
 * The domain's nouns: ids, positions, relations, directions, op kinds, edges, list keys and
 * entries, users, list layouts. The ground floor (`src/model/`) imports nothing from `src/`
 * outside it. Ids are signed 64-bit `bigint`s; positions are µs since the epoch as `bigint`.
 */

export type UserId = bigint;

/** µs since the epoch; strictly increasing per edge. */
export type Position = bigint;

/**
 * Append only: a relation's index here is stored in list cursors (`cursor-codec.ts`), so a new
 * relation goes at the end.
 */
export const RELATIONS = ['follows', 'requests', 'blocks', 'mutes', 'close_friends', 'restricts'] as const;

export type Relation = (typeof RELATIONS)[number];

/** `out`: the owner is the edge's source (following); `in`: the owner is its target (followers). */
export type Direction = 'out' | 'in';

export type EdgeState = 'active' | 'removed';

/** One operation on a pair, as recorded in the pair history. */
export const OP_KINDS = [
  'follow',
  'request',
  'accept',
  'decline',
  'unfollow',
  'remove_follower',
  'block',
  'unblock',
  'mute',
  'unmute',
  'close_friend_add',
  'close_friend_remove',
  'restrict',
  'unrestrict',
] as const;

export type OpKind = (typeof OP_KINDS)[number];

/**
 * An operation on the edge `sourceId → targetId` (for `accept`, `decline` and `remove_follower`
 * the source is the requester/follower and the target the account acting).
 */
export interface PairOp {
  sourceId: UserId;
  targetId: UserId;
  kind: OpKind;
  position: Position;
}

/** The stored state of one edge. */
export interface EdgeRecord {
  sourceId: UserId;
  targetId: UserId;
  relation: Relation;
  state: EdgeState;
  /** Position of the last transition. */
  position: Position;
  /** Start of the current active run (µs); meaningful when `state === 'active'`. */
  createdAt: Position;
}

/** A list: one owner, one relation, one direction. */
export interface ListKey {
  userId: UserId;
  relation: Relation;
  direction: Direction;
}

/** A list's identity as one string (map keys, log fields). */
/** `userId`'s outgoing list of `relation` (whom it follows, blocks, …). */
export const listOut = (userId: UserId, relation: Relation): ListKey => ({
  userId,
  relation,
  direction: 'out',
});

/** `userId`'s incoming list of `relation` (who follows it, …). */
export const listIn = (userId: UserId, relation: Relation): ListKey => ({
  userId,
  relation,
  direction: 'in',
});

export const listId = (l: ListKey): string => `${l.userId}|${l.relation}|${l.direction}`;

/** One row of a list projection. */
export interface ListEntry {
  createdAt: Position;
  otherId: UserId;
  /**
   * The member's (`otherId`'s) username as the row holds it: written by the row's put, rewritten
   * by a rename's fan-out (`rename-fanout.ts`). Absent on rows written before the column existed
   * (and on rows a put wrote without one); readers then read the user row.
   */
  username?: string;
}

/** List order (the tables' clustering order): newest `createdAt` first, ties by larger id first. */
export function compareEntries(a: ListEntry, b: ListEntry): number {
  if (a.createdAt !== b.createdAt) return a.createdAt > b.createdAt ? -1 : 1;
  if (a.otherId !== b.otherId) return a.otherId > b.otherId ? -1 : 1;
  return 0;
}

/** A list's bucket layout. `buckets` is what readers use; `growingTo` is set during a growth. */
export interface BucketLayout {
  buckets: number;
  /**
   * While set, writers also write this layout's bucket codes: the target (2N) while a growth
   * copies, then the retired layout (N, below `buckets`) for one settle period after the flip.
   */
  growingTo: number | null;
  /** Old-layout buckets already copied into the new layout during a growth. */
  copiedThrough: number;
}

export interface UserRecord {
  id: UserId;
  username: string;
  private: boolean;
  state: 'active' | 'deactivated';
  hideLists: boolean;
}

/** The fields of an account a PUT may name, in the order events list them. */
export const USER_FIELDS = ['username', 'private', 'state', 'hideLists'] as const;
export type UserField = (typeof USER_FIELDS)[number];

/** Some fields of an account: what one PUT names, written cell by cell. */
export type UserFields = Partial<Pick<UserRecord, UserField>>;

/** The key of an edge in a pair's fold and in every map of edges. */
export const edgeKey = (source: UserId, relation: Relation, target: UserId): string =>
  `${source}|${relation}|${target}`;

/** The two lists an edge projects into, each with the id stored in its rows. */
export function projections(e: {
  sourceId: UserId;
  relation: Relation;
  targetId: UserId;
}): { list: ListKey; otherId: UserId }[] {
  return [
    { list: listOut(e.sourceId, e.relation), otherId: e.targetId },
    { list: listIn(e.targetId, e.relation), otherId: e.sourceId },
  ];
}
