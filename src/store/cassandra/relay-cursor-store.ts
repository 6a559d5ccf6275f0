/** `RelayCursorStore` on Cassandra (`relay_cursors`): one row per relay name, the newest write wins. */
import type { RelayCursorStore } from '../../ports/relay-cursor-store.js';
import type { CqlExecutor } from './executor.js';
import { S } from './statements.js';

export class CassandraRelayCursorStore implements RelayCursorStore {
  constructor(private readonly cql: CqlExecutor) {}

  async getRelayCursor(name: string): Promise<string | null> {
    const row = (await this.cql.exec('getRelayCursor', S.getRelayCursor, [name])).first();
    return (row?.get('cursor') as string | null | undefined) ?? null;
  }

  async putRelayCursor(name: string, cursor: string): Promise<void> {
    await this.cql.exec('putRelayCursor', S.putRelayCursor, [name, cursor]);
  }

  async listRelayCursors(limit: number): Promise<{ name: string; cursor: string }[]> {
    // A handful of rows (one per relay): a bounded scan of the small table.
    const rs = await this.cql.exec('listRelayCursors', S.listRelayCursors, [limit]);
    return rs.rows.flatMap((r) => (r.cursor ? [{ name: r.name as string, cursor: r.cursor as string }] : []));
  }
}
