/** The lease's contract in memory (`support/lease-suite.ts`); the same cases run on the real node in `lease.int`. */
import { describe } from 'vitest';
import { MemoryLeaseStore } from '../support/memory/lease-store.js';
import { leaseSuite } from './support/lease-suite.js';

describe('lease (memory)', () => {
  leaseSuite(() => new MemoryLeaseStore());
});
