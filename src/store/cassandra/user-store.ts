/**
 * `UserStore` on Cassandra: the users projection, the username registry (claimed and released by
 * lightweight transactions, off the edge path) and the registry of deactivated accounts.
 */
import { nowPosition } from '../../model/clock.js';
import { UsernameTakenError } from '../../model/errors.js';
import type { EventRow } from '../../model/events.js';
import type { Position, UserId, UserRecord } from '../../model/types.js';
import { DEACTIVATED_SHARDS, deactivatedShard, type UserStore } from '../../ports/user-store.js';
import type { CassandraEventStore } from './event-store.js';
import type { Bound, CqlExecutor } from './executor.js';
import { toUser } from './rows.js';
import { S } from './statements.js';

export class CassandraUserStore implements UserStore {
  constructor(
    private readonly cql: CqlExecutor,
    private readonly events: CassandraEventStore,
  ) {}

  async getUser(id: UserId): Promise<UserRecord | null> {
    const rs = await this.cql.exec('getUser', S.getUser, [id]);
    const row = rs.first();
    return row?.username ? toUser(row) : null;
  }

  async putActivity(id: UserId, at: Position): Promise<void> {
    // Write time = the instant reported: the latest report wins at any arrival order.
    await this.cql.exec('putActivity', S.putActivity, [id, at, at]);
  }

  getActivity(ids: readonly UserId[]): Promise<Map<UserId, Position>> {
    return pointReads(ids, async (id) => {
      const at = (await this.cql.exec('getActivity', S.getActivity, [id])).first()?.last_active_at;
      return at === undefined || at === null ? null : (at as bigint);
    });
  }

  getUsers(ids: readonly UserId[]): Promise<Map<UserId, UserRecord>> {
    return pointReads(ids, (id) => this.getUser(id));
  }

  async putUser(user: UserRecord, o: { event?: EventRow } = {}): Promise<{ created: boolean }> {
    const existing = await this.getUser(user.id);
    const name = user.username.toLowerCase();
    const oldName = existing?.username.toLowerCase();
    if (oldName !== name) {
      const rs = await this.cql.exec('claimUsername', S.claimUsername, [name, user.id]);
      const row = rs.first();
      if (!row?.['[applied]'] && (row?.user_id as bigint | undefined) !== user.id)
        throw new UsernameTakenError(user.username);
    }
    // The user row and its registry entry in one logged batch at one write time, so the entry
    // of the state that wins is the entry that wins (see `UserStore.listDeactivated`).
    const at = nowPosition();
    const put: Bound = {
      statement: S.putUser,
      params: [user.id, user.username, user.private, user.state, user.hideLists, at],
    };
    const shard = deactivatedShard(user.id);
    const registry: Bound | null =
      user.state === 'deactivated'
        ? { statement: S.registerDeactivated, params: [shard, user.id, at, at] }
        : existing?.state === 'deactivated'
          ? { statement: S.unregisterDeactivated, params: [at, shard, user.id] }
          : null;
    const events = o.event ? [o.event] : [];
    const feed = this.events.eventStatements(events, at);
    await this.cql.write('putUser', [put, ...(registry ? [registry] : []), ...feed], { logged: true });
    this.events.written(events);
    if (oldName !== undefined && oldName !== name) {
      await this.cql.exec('releaseUsername', S.releaseUsername, [oldName, user.id]);
    }
    return { created: existing === null };
  }

  async listDeactivated(limit: number): Promise<UserId[] | null> {
    // Shard after shard, each read limited to what is left of `limit` (plus one to see an
    // overflow), so an oversized registry costs at most `limit + 1` rows in memory.
    const ids: UserId[] = [];
    for (let shard = 0; shard < DEACTIVATED_SHARDS; shard++) {
      const rows = await this.cql.allRows('listDeactivated', S.listDeactivated, [
        shard,
        limit - ids.length + 1,
      ]);
      for (const r of rows) ids.push(r.user_id as bigint);
      if (ids.length > limit) return null;
    }
    return ids;
  }
}

/**
 * One point read per distinct id, at most 256 in flight (a reconcile page asks for thousands of
 * members at once, a scan page for up to 1,000); ids `read` finds nothing for are absent.
 */
async function pointReads<V>(
  ids: readonly UserId[],
  read: (id: UserId) => Promise<V | null>,
): Promise<Map<UserId, V>> {
  const unique = [...new Set(ids)];
  const out = new Map<UserId, V>();
  for (let i = 0; i < unique.length; i += 256) {
    const chunk = unique.slice(i, i + 256);
    const values = await Promise.all(chunk.map(read));
    chunk.forEach((id, j) => {
      const v = values[j];
      if (v !== null && v !== undefined) out.set(id, v);
    });
  }
  return out;
}
