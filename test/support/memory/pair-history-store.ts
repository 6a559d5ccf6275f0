import { plainUsername } from '../../../src/model/row-username.js';
import type { Position, UserId } from '../../../src/model/types.js';
import type { PairHistoryStore } from '../../../src/ports/pair-history-store.js';
import {
  PAIR_READ_ROWS,
  PAIR_STEP_TIME,
  type PairAppend,
  type PairHistory,
  type StoredPairOp,
} from '../../../src/ports/records.js';
import { decodeCheckpoint, encodeCheckpoint } from '../../../src/store/checkpoint-codec.js';
import { MemoryState, newMemoryPair, writeCell } from './state.js';

/** `pair_ops` clustering order: position, then source id, then kind. */
function historyOrder(x: StoredPairOp, y: StoredPairOp): number {
  if (x.position !== y.position) return x.position < y.position ? -1 : 1;
  if (x.sourceId !== y.sourceId) return x.sourceId < y.sourceId ? -1 : 1;
  return x.kind < y.kind ? -1 : x.kind > y.kind ? 1 : 0;
}

/** `PairHistoryStore` in memory: one layer of `MemoryGraphStore` (`graph-store.ts`). */
export abstract class MemoryPairHistoryStore extends MemoryState implements PairHistoryStore {
  async readPairHistory(a: UserId, b: UserId): Promise<PairHistory> {
    const pair = this.pairs.get(this.pairKey(a, b));
    if (!pair)
      return {
        checkpoint: null,
        pending: null,
        ops: [],
        snapshotThrough: null,
        indexedNames: new Map(),
      };
    const { cpHorizon, cpState, compactTo, compactAt, seen, seenFor, indexedLow, indexedHigh } = pair.statics;
    const [low, high] = a < b ? [a, b] : [b, a];
    const indexedNames = new Map<UserId, string>();
    if (indexedLow.value !== null) indexedNames.set(low, plainUsername(indexedLow.value));
    if (indexedHigh.value !== null) indexedNames.set(high, plainUsername(indexedHigh.value));
    const checkpoint =
      cpHorizon.value !== null && cpState.value !== null
        ? decodeCheckpoint(cpHorizon.value, cpState.value)
        : null;
    const horizon = checkpoint?.horizon ?? 0n;
    // The rows one Cassandra statement returns from the horizon on: past its first page, the
    // history is no longer one snapshot there (`snapshotThrough`); here it always is.
    const rows = [...pair.ops.values()].filter((op) => op.position >= horizon).sort(historyOrder);
    const overflow = rows.length > PAIR_READ_ROWS ? rows[PAIR_READ_ROWS - 1] : undefined;
    return {
      checkpoint,
      pending:
        compactTo.value !== null && compactAt.value !== null
          ? {
              horizon: compactTo.value,
              announcedAt: compactAt.value,
              seenAt: seenFor.value === compactTo.value ? seen.value : null,
            }
          : null,
      ops: rows.filter((op) => op.position > horizon).map((op) => ({ ...op })),
      snapshotThrough: overflow ? overflow.position : null,
      ...(indexedNames.size > 0 ? { indexedNames } : {}),
    };
  }

  async appendPair(append: PairAppend): Promise<void> {
    const { op } = append;
    const key = this.pairKey(...append.pair);
    let pair = this.pairs.get(key);
    if (!pair) {
      pair = newMemoryPair();
      this.pairs.set(key, pair);
    }
    if (op) {
      // The op row is written at its slot (Cassandra: `USING TIMESTAMP slot`): a fence at a later
      // write time shadows it, and of two deliveries the later slot's row wins.
      const k = `${op.position}|${op.sourceId}|${op.kind}`;
      const at = op.slot ?? 0n;
      const fence = this.opFences.get(`${key}|${k}`);
      const cur = pair.ops.get(k);
      if ((fence === undefined || fence <= at) && !(cur && (cur.slot ?? 0n) > at)) pair.ops.set(k, { ...op });
    }
    // The compaction cells follow Cassandra's rules at the protocol's logical write times
    // (`PAIR_STEP_TIME`): newer write time wins, at equal times a deletion, then the larger value.
    const st = pair.statics;
    if (append.announce) {
      const { horizon, announcedAt } = append.announce;
      const at = PAIR_STEP_TIME.announce(horizon);
      writeCell(st.compactTo, horizon, at);
      writeCell(st.compactAt, announcedAt, at);
    }
    if (append.observe) {
      const { horizon, seenAt } = append.observe;
      const at = PAIR_STEP_TIME.observe(horizon);
      writeCell(st.seen, seenAt, at);
      writeCell(st.seenFor, horizon, at);
    }
    if (append.commit) {
      const { checkpoint: cp, folded } = append.commit;
      const at = PAIR_STEP_TIME.commit(cp.horizon, folded);
      writeCell(st.cpHorizon, cp.horizon, at);
      writeCell(st.cpState, encodeCheckpoint(cp), at);
      for (const cell of [st.compactTo, st.compactAt, st.seen, st.seenFor]) writeCell(cell, null, at);
      for (const [k, o] of pair.ops) if (o.position < cp.horizon) pair.ops.delete(k);
    }
  }

  async fenceOp(
    op: Pick<StoredPairOp, 'sourceId' | 'targetId' | 'position' | 'kind'>,
    slot: Position,
  ): Promise<void> {
    const key = this.pairKey(op.sourceId, op.targetId);
    const k = `${op.position}|${op.sourceId}|${op.kind}`;
    const at = slot + 1n;
    const fenceKey = `${key}|${k}`;
    if ((this.opFences.get(fenceKey) ?? -1n) < at) this.opFences.set(fenceKey, at);
    const pair = this.pairs.get(key);
    const cur = pair?.ops.get(k);
    if (pair && cur && (cur.slot ?? 0n) < at) pair.ops.delete(k);
  }

  /** Fences by pair and op: the write time of the op row's delete (`fenceOp`). */
  private readonly opFences = new Map<string, Position>();
}
