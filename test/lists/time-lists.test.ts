import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { describeTimeLists } from './time-lists.js';

describeTimeLists('memory', async () => ({ store: new MemoryGraphStore(), teardown: async () => {} }), 200);
