/**
 * `ReceiptStore` on Cassandra: idempotency receipts (`receipts`), the first outcome of a key
 * fixed by a lightweight transaction and kept for a TTL.
 */
import type { UserId } from '../../model/types.js';
import type { ReceiptStore } from '../../ports/receipt-store.js';
import type { Receipt } from '../../ports/records.js';
import type { CqlExecutor } from './executor.js';
import { toReceipt } from './rows.js';
import { S } from './statements.js';

export class CassandraReceiptStore implements ReceiptStore {
  constructor(private readonly cql: CqlExecutor) {}

  async getReceipt(actorId: UserId, key: string): Promise<Receipt | null> {
    const rs = await this.cql.exec('getReceipt', S.getReceipt, [actorId, key]);
    const row = rs.first();
    return row ? toReceipt(row) : null;
  }

  async putReceipt(actorId: UserId, key: string, receipt: Receipt, ttlSeconds: number): Promise<void> {
    await this.cql.exec('putReceipt', S.putReceipt, [
      actorId,
      key,
      receipt.requestHash,
      receipt.status,
      receipt.body,
      ttlSeconds,
    ]);
  }
}
