/**
 * A Cassandra store whose next read or append of a pair can be held before it reaches the node:
 * the caller's clocks run from the call, the statement executes `ms` later. What a slow network,
 * a GC pause or an overloaded coordinator does to one request, on demand.
 */

import type { UserId } from '../../../src/model/types.js';
import type { PairAppend, PairHistory } from '../../../src/ports/records.js';
import { CassandraGraphStore } from '../../../src/store/cassandra/graph-store.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class HeldStore extends CassandraGraphStore {
  private holds: { readPairHistory: number[]; appendPair: number[] } = {
    readPairHistory: [],
    appendPair: [],
  };

  /** Holds the next call of `method` for `ms` before it executes. */
  holdNext(method: 'readPairHistory' | 'appendPair', ms: number): void {
    this.holds[method].push(ms);
  }

  override async readPairHistory(a: UserId, b: UserId): Promise<PairHistory> {
    const ms = this.holds.readPairHistory.shift();
    if (ms) await sleep(ms);
    return super.readPairHistory(a, b);
  }

  override async appendPair(append: PairAppend, timeoutMs?: number): Promise<void> {
    const ms = this.holds.appendPair.shift();
    if (ms) await sleep(ms);
    return super.appendPair(append, timeoutMs);
  }
}
