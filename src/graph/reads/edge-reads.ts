/**
 * Edge probes: which of some ids have an active edge to or from one account. `out` reads the
 * owner's `edges_out` partition of the relation; `in` reads the owner's inverse edge state in the
 * buckets of its `in` list as readers see it now (a growth flips `buckets` only after it copied the
 * inverse rows), one partition per bucket among the ids.
 */
import type { ListService } from '../../lists/contracts.js';
import { type Direction, type EdgeRecord, listIn, type Relation, type UserId } from '../../model/types.js';
import type { EdgeStore } from '../../ports/edge-store.js';

export class EdgeReads {
  constructor(
    private readonly store: Pick<EdgeStore, 'getEdgesOut' | 'getEdgesIn'>,
    private readonly lists: Pick<ListService, 'currentLayout'>,
  ) {}

  /** Edge states `s → target` of `relation` for the ids (missing ids have none). */
  async inverseEdges(
    target: UserId,
    relation: Relation,
    sourceIds: readonly UserId[],
  ): Promise<Map<UserId, EdgeRecord>> {
    const layout = await this.lists.currentLayout(listIn(target, relation));
    return this.store.getEdgesIn(target, relation, sourceIds, layout);
  }

  /** The ids with an active `relation` edge from `owner` (`out`) or to it (`in`); member state not consulted. */
  async activeEdges(
    owner: UserId,
    relation: Relation,
    direction: Direction,
    ids: readonly UserId[],
  ): Promise<Set<UserId>> {
    const edges =
      direction === 'out'
        ? await this.store.getEdgesOut(owner, relation, ids)
        : await this.inverseEdges(owner, relation, ids);
    return new Set(ids.filter((id) => edges.get(id)?.state === 'active'));
  }
}
