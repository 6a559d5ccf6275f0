/** The registry's cross-instance suite (`support/registry-suite.ts`) on the in-memory store. */
import { MemoryGraphStore } from '../../support/memory/graph-store.js';
import { describeRegistryAcrossInstances } from '../support/registry-suite.js';

describeRegistryAcrossInstances('memory', async () => ({
  store: new MemoryGraphStore(),
  teardown: async () => {},
}));
