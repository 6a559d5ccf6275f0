import { MemoryGraphStore } from '../../src/store/memory/memory-store.js';
import { describeTimeLists } from './time-lists.js';

describeTimeLists('memory', async () => ({ store: new MemoryGraphStore(), teardown: async () => {} }), 200);
