/**
 * A Cassandra store with injectable faults on the dual write, for crash-between-writes tests:
 * `throw` fails the next `writeEdges` after the op was appended (a crash before the batch),
 * `drop-rows` writes the edge rows but loses the list rows (a projection left half-written),
 * `apply-then-timeout` applies the batch and then answers a timeout (the client cannot tell).
 */

import { StoreUnavailableError } from '../../../src/model/errors.js';
import type { EdgeWrite, ListRowWrite } from '../../../src/ports/records.js';
import { CassandraGraphStore } from '../../../src/store/cassandra/graph-store.js';

export type WriteFault = 'throw' | 'drop-rows' | 'apply-then-timeout';

export class InjectedFault extends Error {
  override name = 'InjectedFault';
}

export class FaultyStore extends CassandraGraphStore {
  private fault: WriteFault | null = null;

  /** Arms one fault for the next `writeEdges`. */
  failNextWrite(fault: WriteFault): void {
    this.fault = fault;
  }

  override async writeEdges(edges: readonly EdgeWrite[], rows: readonly ListRowWrite[], version: bigint) {
    const fault = this.fault;
    this.fault = null;
    if (fault === 'throw') throw new InjectedFault('crashed between appendPairOp and writeEdges');
    await super.writeEdges(edges, fault === 'drop-rows' ? [] : rows, version);
    if (fault === 'apply-then-timeout')
      throw new StoreUnavailableError('write timed out after it was applied');
  }
}
