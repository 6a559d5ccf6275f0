/**
 * `UserStore` on Cassandra: the users projection (each field a cell at its PUT's version), the
 * username registry (claimed and released by lightweight transactions, off the edge path) and the
 * registry of deactivated accounts.
 */
import { nowPosition } from '../../model/clock.js';
import { UsernameTakenError } from '../../model/errors.js';
import type { EventRow } from '../../model/events.js';
import {
  type Position,
  USER_FIELDS,
  type UserFields,
  type UserId,
  type UserRecord,
} from '../../model/types.js';
import {
  DEACTIVATED_SHARDS,
  deactivatedShard,
  type UserStore,
  type VersionedUser,
} from '../../ports/user-store.js';
import type { CassandraEventStore } from './event-store.js';
import type { Bound, CqlExecutor } from './executor.js';
import { toUser } from './rows.js';
import { S } from './statements.js';

/** The statement writing each field (`putUserFields`). */
const FIELD_STATEMENT = {
  username: S.putUsername,
  private: S.putUserPrivate,
  state: S.putUserState,
  hideLists: S.putUserHideLists,
} as const;

/** The `getUserVersioned` column of each field's write time. */
const WRITETIME_COLUMNS = [
  ['username', 'wu'],
  ['private', 'wp'],
  ['state', 'ws'],
  ['hideLists', 'wh'],
] as const;

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

  async getUserVersioned(id: UserId): Promise<VersionedUser> {
    const row = (await this.cql.exec('getUserVersioned', S.getUserVersioned, [id])).first();
    if (!row) return { user: null, version: -1n, versions: {} };
    let version = -1n;
    const versions: VersionedUser['versions'] = {};
    for (const [f, c] of WRITETIME_COLUMNS) {
      const at = row[c] as bigint | null | undefined;
      if (at === null || at === undefined) continue;
      versions[f] = at;
      if (at > version) version = at;
    }
    return { user: row.username ? toUser(row) : null, version, versions };
  }

  async putUserFields(
    id: UserId,
    fields: UserFields,
    version: Position,
    o: { event?: EventRow } = {},
  ): Promise<void> {
    const writes: Bound[] = [];
    for (const f of USER_FIELDS) {
      const v = fields[f];
      if (v !== undefined) writes.push({ statement: FIELD_STATEMENT[f], params: [version, v, id] });
    }
    // The registry entry follows the state cell (see `UserStore.putUserFields`: a delete one below).
    const shard = deactivatedShard(id);
    if (fields.state === 'deactivated')
      writes.push({ statement: S.registerDeactivated, params: [shard, id, version, version] });
    else if (fields.state === 'active')
      writes.push({ statement: S.unregisterDeactivated, params: [version - 1n, shard, id] });
    const events = o.event ? [o.event] : [];
    if (writes.length === 0 && events.length === 0) return;
    const feed = this.events.eventStatements(events, version);
    await this.cql.write('putUserFields', [...writes, ...feed], { logged: true });
    this.events.written(events);
  }

  async claimUsername(username: string, id: UserId): Promise<void> {
    const row = (await this.cql.exec('claimUsername', S.claimUsername, [username.toLowerCase(), id])).first();
    if (!row?.['[applied]'] && (row?.user_id as bigint | undefined) !== id)
      throw new UsernameTakenError(username);
  }

  async getUsernameClaim(username: string): Promise<{ userId: UserId; claimedAt: Position } | null> {
    const row = (
      await this.cql.exec('getUsernameClaim', S.getUsernameClaim, [username.toLowerCase()])
    ).first();
    if (!row || row.user_id === null || row.user_id === undefined) return null;
    return { userId: row.user_id as bigint, claimedAt: (row.claimed_at as bigint | null) ?? 0n };
  }

  async releaseUsername(username: string, id: UserId): Promise<void> {
    await this.cql.exec('releaseUsername', S.releaseUsername, [username.toLowerCase(), id]);
  }

  async putUser(user: UserRecord, o: { event?: EventRow } = {}): Promise<{ created: boolean }> {
    const existing = await this.getUser(user.id);
    const name = user.username.toLowerCase();
    const oldName = existing?.username.toLowerCase();
    if (oldName !== name) await this.claimUsername(user.username, user.id);
    const { id, ...fields } = user;
    await this.putUserFields(id, fields, nowPosition(), o);
    if (oldName !== undefined && oldName !== name) await this.releaseUsername(oldName, user.id);
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
