import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { describeListPaging } from './list-paging.js';

describeListPaging('memory', async () => ({ store: new MemoryGraphStore(), teardown: async () => {} }), {
  runs: 300,
  maxRows: 150,
  statsRows: 4000,
});
