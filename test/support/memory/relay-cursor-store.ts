import type { RelayCursorStore } from '../../../src/ports/relay-cursor-store.js';
import { MemoryReceiptStore } from './receipt-store.js';

/** `RelayCursorStore` in memory: one layer of `MemoryGraphStore` (`graph-store.ts`). */
export abstract class MemoryRelayCursorStore extends MemoryReceiptStore implements RelayCursorStore {
  async getRelayCursor(name: string): Promise<string | null> {
    return this.relayCursors.get(name) ?? null;
  }

  async putRelayCursor(name: string, cursor: string): Promise<void> {
    this.relayCursors.set(name, cursor);
  }

  async listRelayCursors(limit: number): Promise<{ name: string; cursor: string }[]> {
    return [...this.relayCursors].slice(0, limit).map(([name, cursor]) => ({ name, cursor }));
  }
}
