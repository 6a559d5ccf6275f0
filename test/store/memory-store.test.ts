import { MemoryGraphStore } from '../../src/store/memory/memory-store.js';
import { describeStoreContract } from './contract.js';

describeStoreContract('memory', async () => ({ store: new MemoryGraphStore(), teardown: async () => {} }));
