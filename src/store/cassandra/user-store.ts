/**
 * `UserStore` on Cassandra: the users projection, the username registry (claimed and released by
 * lightweight transactions, off the edge path) and the registry of deactivated accounts.
 */
import { nowPosition } from '../../model/clock.js';
import { UsernameTakenError } from '../../model/errors.js';
import type { EventRow } from '../../model/events.js';
import type { Position, UserId, UserRecord } from '../../model/types.js';
import type { UserStore } from '../../ports/store.js';
import { DEACTIVATED_SHARDS, deactivatedShard } from '../../ports/store.js';
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

  async getActivity(ids: readonly UserId[]): Promise<Map<UserId, Position>> {
    // Point reads, at most 256 in flight (a scan page asks for up to 1,000 members).
    const unique = [...new Set(ids)];
    const out = new Map<UserId, Position>();
    for (let i = 0; i < unique.length; i += 256) {
      await Promise.all(
        unique.slice(i, i + 256).map(async (id) => {
          const at = (await this.cql.exec('getActivity', S.getActivity, [id])).first()?.last_active_at;
          if (at !== undefined && at !== null) out.set(id, at as bigint);
        }),
      );
    }
    return out;
  }

  async getUsers(ids: readonly UserId[]): Promise<Map<UserId, UserRecord>> {
    // Point reads, at most 256 in flight: a reconcile page asks for thousands of members at once.
    const unique = [...new Set(ids)];
    const out = new Map<UserId, UserRecord>();
    for (let i = 0; i < unique.length; i += 256) {
      const users = await Promise.all(unique.slice(i, i + 256).map((id) => this.getUser(id)));
      for (const u of users) if (u) out.set(u.id, u);
    }
    return out;
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
