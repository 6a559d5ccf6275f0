import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { describeStoreContract } from './contract.js';

describeStoreContract('memory', async () => ({ store: new MemoryGraphStore(), teardown: async () => {} }));
