/** `RelayCursorStore` on Cassandra (`relay_cursors`): one row per relay name, the newest write wins. */
import type { RelayCursorStore } from '../../ports/store.js';
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
}
