import type { Position, UserId } from '../model/types.js';
import type { PairAppend, PairHistory, StoredPairOp } from './records.js';

/**
 * The pair histories (`pair_ops`): one partition per unordered pair holding a checkpoint, a pending
 * compaction and the ops above the checkpoint's horizon. The algorithm that uses it, and why it is
 * safe without lightweight transactions, is in `src/graph/pair/pair-history.ts`.
 */
export interface PairHistoryStore {
  /**
   * The pair's checkpoint, pending compaction and every op above the horizon, in history order
   * (position, source id, kind). Reads every page; ops at or below the horizon that a late write
   * left behind are not returned.
   */
  readPairHistory(a: UserId, b: UserId): Promise<PairHistory>;
  /**
   * One single-partition write, atomic and isolated on each replica: inserts the op (the same op
   * twice is one row), and announces or commits a compaction when asked. A commit writes the
   * checkpoint at a write time that grows with its horizon (a later commit of a lower horizon
   * never wins), clears the announcement and deletes the folded ops. `timeoutMs` bounds the call.
   */
  appendPair(append: PairAppend, timeoutMs?: number): Promise<void>;
  /**
   * Fences an op that never landed: deletes its row at a write time after its append's (an op row
   * is written at its slot), so an append of it that lands later changes nothing. A row of the
   * op appended again at a later slot (a new delivery) stands.
   */
  fenceOp(
    op: Pick<StoredPairOp, 'sourceId' | 'targetId' | 'position' | 'kind'>,
    slot: Position,
  ): Promise<void>;
}
