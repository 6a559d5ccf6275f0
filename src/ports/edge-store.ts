import type { EventRow } from '../model/events.js';
import type { BucketLayout, EdgeRecord, Relation, UserId } from '../model/types.js';
import type { EdgeWrite, ListRowWrite } from './records.js';

/** Pair-keyed edge state (forward and bucketed inverse), written with the list rows it implies. */
export interface EdgeStore {
  /**
   * Writes derived edge states and list rows as one logged batch (all-or-nothing eventually),
   * every cell at write time `version`. Idempotent. Each edge goes to the forward table and to
   * every code of its `inBucketCodes`; each list row to every code of its `bucketCodes`, in the
   * table its `ListKey` selects (follows: the card's `following` / `followers`; other relations:
   * `relation_lists`). `events`: rows of the feed (see `EventStore`) that ride in the same batch,
   * at the same version; a batch that carries events is never sent without the batchlog (it fails
   * with `StoreUnavailableError` instead), so the events and the change are all-or-nothing.
   */
  writeEdges(
    edges: readonly EdgeWrite[],
    rows: readonly ListRowWrite[],
    version: bigint,
    events?: readonly EventRow[],
  ): Promise<void>;
  /** Edge states `sourceId → t` for each t in `targetIds` (absent: no edge ever). One partition. */
  getEdgesOut(
    sourceId: UserId,
    relation: Relation,
    targetIds: readonly UserId[],
  ): Promise<Map<UserId, EdgeRecord>>;
  /**
   * Edge states `sourceId → t` of each of `relations` for each t in `targetIds` (absent: no edge
   * ever), in one read of the one partition: what a follow status asks (follows and requests).
   */
  getEdgesOutOf(
    sourceId: UserId,
    relations: readonly Relation[],
    targetIds: readonly UserId[],
  ): Promise<EdgeRecord[]>;
  /**
   * Edge states `s → targetId` for each s in `sourceIds` (absent: no edge ever). The inverse state
   * is bucketed like the target's `in` list of `relation`: pass that list's layout (its `buckets`,
   * the read layout, is used). One single-partition `IN` read per distinct bucket code among
   * `sourceIds`, so at most `min(layout.buckets, |sourceIds|)` partitions.
   *
   * @example
   * const layout = await lists.currentLayout({ userId: b, relation: 'follows', direction: 'in' });
   * const edges = await store.getEdgesIn(b, 'follows', [a1, a2, a3], layout);
   */
  getEdgesIn(
    targetId: UserId,
    relation: Relation,
    sourceIds: readonly UserId[],
    layout: BucketLayout,
  ): Promise<Map<UserId, EdgeRecord>>;
  /** Every edge state between `a` and `b`, all relations, both directions. */
  getPairEdges(a: UserId, b: UserId): Promise<EdgeRecord[]>;
}
