/**
 * The graph's change feed, as its consumers see it (`../shared/spec/api.md`, Part 3, "Events"):
 * one event per change of an edge's state, and `user.updated` for an admin change of an account.
 */
import type { Position, Relation, UserField, UserId } from './types.js';

export const EVENT_TYPES = [
  'follow.created',
  'follow.removed',
  'request.created',
  'request.removed',
  'block.created',
  'block.removed',
  'mute.created',
  'mute.removed',
  'close_friend.added',
  'close_friend.removed',
  'restrict.created',
  'restrict.removed',
  'user.updated',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** The event type of an edge of `relation` turning active (`on`) or removed. */
export function edgeEventType(relation: Relation, on: boolean): EventType {
  switch (relation) {
    case 'follows':
      return on ? 'follow.created' : 'follow.removed';
    case 'requests':
      return on ? 'request.created' : 'request.removed';
    case 'blocks':
      return on ? 'block.created' : 'block.removed';
    case 'mutes':
      return on ? 'mute.created' : 'mute.removed';
    case 'close_friends':
      return on ? 'close_friend.added' : 'close_friend.removed';
    case 'restricts':
      return on ? 'restrict.created' : 'restrict.removed';
  }
}

/** One event of the feed. */
export interface GraphEvent {
  /** Stable across re-reads: a consumer dedupes by it. Also a cursor that resumes right after the event. */
  id: string;
  type: EventType;
  /** The edge's source (for `user.updated`, the account). */
  source: UserId;
  /** The edge's target (for `user.updated`, the account). */
  target: UserId;
  /** The position of the op that made the change (µs); for `user.updated`, its write time. */
  position: Position;
  /** The feed time the event is ordered by (µs): when the change was written. */
  slot: Position;
  /** For `user.updated`: the fields the change named (absent on rows written before fields were kept). */
  fields?: readonly UserField[];
}

/** A page of the feed: the events after a cursor, and the cursor after them (also when empty). */
export interface EventPage {
  items: GraphEvent[];
  next: string;
}

/** How long the feed keeps events unless configured otherwise: 7 days. */
export const DEFAULT_EVENT_RETENTION_SECONDS = 7 * 24 * 3600;

/** Partitions per feed period: writes of one moment spread over this many (`eventShard`). */
export const EVENT_SHARDS = 8;

/** Feed time per events partition (µs): a minute. */
export const EVENT_PERIOD_MICROS = 60_000_000n;

/** The period of a slot (the events partition's time part). */
export const eventPeriod = (slot: Position): bigint => slot / EVENT_PERIOD_MICROS;

/** The shard of a pair's (or an account's: `low = high`) events; one pair's events stay in one shard. */
export function eventShard(low: UserId, high: UserId): number {
  const mixed = (low * 0x9e3779b1n + high) & 0x7fffffffn;
  return Number(mixed % BigInt(EVENT_SHARDS));
}

/**
 * The key of one row of the feed: the op whose transitions it holds (or an account's update,
 * `opKind = 'user'`), at its slot. Feed order is the order of these fields as listed.
 */
export interface EventKey {
  slot: Position;
  shard: number;
  low: UserId;
  high: UserId;
  opPosition: Position;
  opSource: UserId;
  opKind: string;
}

/** An edge turning active (`on`) or removed. */
export interface EdgeTransition {
  sourceId: UserId;
  relation: Relation;
  targetId: UserId;
  on: boolean;
}

/** One row of the feed: the transitions an op made at its slot (none: a no-op), or an account's update. */
export interface EventRow {
  key: EventKey;
  transitions: readonly EdgeTransition[];
  /** An admin change of the account `low` (`user.updated`). */
  user?: boolean;
  /** The fields that change named (`user` rows; absent on rows written before fields were kept). */
  fields?: readonly UserField[];
}

const cmp = (a: bigint | number | string, b: bigint | number | string) => (a < b ? -1 : a > b ? 1 : 0);

/** Feed order of two keys. */
export function compareEventKeys(a: EventKey, b: EventKey): number {
  return (
    cmp(a.slot, b.slot) ||
    cmp(a.shard, b.shard) ||
    cmp(a.low, b.low) ||
    cmp(a.high, b.high) ||
    cmp(a.opPosition, b.opPosition) ||
    cmp(a.opSource, b.opSource) ||
    cmp(a.opKind, b.opKind)
  );
}
