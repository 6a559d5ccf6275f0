import type { UserId } from '../../../src/model/types.js';
import type { ReceiptStore } from '../../../src/ports/receipt-store.js';
import type { Receipt } from '../../../src/ports/records.js';
import { MemoryScanStore } from './scan-store.js';

/** `ReceiptStore` in memory: one layer of `MemoryGraphStore` (`graph-store.ts`). */
export abstract class MemoryReceiptStore extends MemoryScanStore implements ReceiptStore {
  async getReceipt(actorId: UserId, key: string): Promise<Receipt | null> {
    const r = this.receipts.get(`${actorId}|${key}`);
    if (!r || r.expires < Date.now()) return null;
    return { ...r.receipt };
  }

  async putReceipt(actorId: UserId, key: string, receipt: Receipt, ttlSeconds: number): Promise<void> {
    const k = `${actorId}|${key}`;
    const existing = this.receipts.get(k);
    if (existing && existing.expires >= Date.now()) return;
    this.receipts.set(k, {
      receipt: { ...receipt },
      expires: Date.now() + ttlSeconds * 1000,
    });
  }
}
