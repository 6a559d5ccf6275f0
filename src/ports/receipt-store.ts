import type { UserId } from '../model/types.js';
import type { Receipt } from './records.js';

/** Idempotency receipts (`receipts`), what the HTTP layer's `Idempotency-Key` middleware keeps. */
export interface ReceiptStore {
  /** The receipt stored for (actor, key), or null when none (or expired). */
  getReceipt(actorId: UserId, key: string): Promise<Receipt | null>;
  /** Stores a receipt for `ttlSeconds`; the first writer of a key wins (later puts are ignored). */
  putReceipt(actorId: UserId, key: string, receipt: Receipt, ttlSeconds: number): Promise<void>;
}
