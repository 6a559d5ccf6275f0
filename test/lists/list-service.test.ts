import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { describeListScenarios } from './list-scenarios.js';

describeListScenarios('memory', async () => ({ store: new MemoryGraphStore(), teardown: async () => {} }), {
  listSize: 3000,
  prefix1: 300,
  prefix7: 700,
  statsSize: 5000,
  scanLimit: 100,
});
