/**
 * The graph's change feed, as its consumers see it (`../shared/spec/api.md`, Part 3, "Events"):
 * one event per change of an edge's state, and `user.updated` for an admin change of an account.
 */
import type { Position, Relation, UserId } from './types.js';

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
}

/** A page of the feed: the events after a cursor, and the cursor after them (also when empty). */
export interface EventPage {
  items: GraphEvent[];
  next: string;
}
