import { nowPosition } from '../../../src/model/clock.js';
import { UsernameTakenError } from '../../../src/model/errors.js';
import type { EventRow } from '../../../src/model/events.js';
import {
  type Position,
  USER_FIELDS,
  type UserFields,
  type UserId,
  type UserRecord,
} from '../../../src/model/types.js';
import type { UserStore, VersionedUser } from '../../../src/ports/user-store.js';
import { MemoryEventStore } from './event-store.js';
import { type UserCells, writeCell } from './state.js';

const emptyCells = (): UserCells => ({
  username: { value: null, at: -1n },
  private: { value: null, at: -1n },
  state: { value: null, at: -1n },
  hideLists: { value: null, at: -1n },
});

/** The record a row's cells read as (absent cells as defaults); null without a username. */
function recordOf(id: UserId, c: UserCells): UserRecord | null {
  if (c.username.value === null) return null;
  return {
    id,
    username: c.username.value,
    private: c.private.value === 'true',
    state: c.state.value === 'deactivated' ? 'deactivated' : 'active',
    hideLists: c.hideLists.value === 'true',
  };
}

/**
 * `UserStore` in memory: one layer of `MemoryGraphStore` (`graph-store.ts`). Fields are cells with
 * Cassandra's rule (`writeCell`); flags are stored as the text `true`/`false`, which order as the
 * booleans do.
 */
export abstract class MemoryUserStore extends MemoryEventStore implements UserStore {
  async getUser(id: UserId): Promise<UserRecord | null> {
    const c = this.users.get(id);
    return c ? recordOf(id, c) : null;
  }

  async getUsers(ids: readonly UserId[]): Promise<Map<UserId, UserRecord>> {
    const out = new Map<UserId, UserRecord>();
    for (const id of ids) {
      const u = await this.getUser(id);
      if (u) out.set(id, u);
    }
    return out;
  }

  async getUserVersioned(id: UserId): Promise<VersionedUser> {
    const c = this.users.get(id);
    if (!c) return { user: null, version: -1n, versions: {} };
    let version = -1n;
    const versions: VersionedUser['versions'] = {};
    for (const f of USER_FIELDS) {
      if (c[f].value === null) continue;
      versions[f] = c[f].at;
      if (c[f].at > version) version = c[f].at;
    }
    return { user: recordOf(id, c), version, versions };
  }

  async putUserFields(
    id: UserId,
    fields: UserFields,
    version: Position,
    o: { event?: EventRow } = {},
  ): Promise<void> {
    let cells = this.users.get(id);
    if (!cells && USER_FIELDS.some((f) => fields[f] !== undefined)) {
      cells = emptyCells();
      this.users.set(id, cells);
    }
    for (const f of USER_FIELDS) {
      const v = fields[f];
      if (v !== undefined && cells) writeCell(cells[f], String(v), version);
    }
    if (fields.state !== undefined) {
      let entry = this.deactivated.get(id);
      if (!entry) {
        entry = { value: null, at: -1n };
        this.deactivated.set(id, entry);
      }
      if (fields.state === 'deactivated') writeCell(entry, 'x', version);
      else writeCell(entry, null, version - 1n);
    }
    if (o.event) this.writeEvents([o.event], version);
  }

  async claimUsername(username: string, id: UserId): Promise<void> {
    const name = username.toLowerCase();
    const holder = this.usernames.get(name);
    if (holder !== undefined && holder !== id) throw new UsernameTakenError(username);
    if (holder === undefined) this.claimedAt.set(name, nowPosition());
    this.usernames.set(name, id);
  }

  async getUsernameClaim(username: string): Promise<{ userId: UserId; claimedAt: Position } | null> {
    const name = username.toLowerCase();
    const userId = this.usernames.get(name);
    return userId === undefined ? null : { userId, claimedAt: this.claimedAt.get(name) ?? 0n };
  }

  async releaseUsername(username: string, id: UserId): Promise<void> {
    const name = username.toLowerCase();
    if (this.usernames.get(name) === id) {
      this.usernames.delete(name);
      this.claimedAt.delete(name);
    }
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
    const ids = [...this.deactivated].filter(([, c]) => c.value !== null).map(([id]) => id);
    return ids.length > limit ? null : ids;
  }

  async putActivity(id: UserId, at: Position): Promise<void> {
    const cur = this.activity.get(id);
    if (cur === undefined || at > cur) this.activity.set(id, at);
  }

  async getActivity(ids: readonly UserId[]): Promise<Map<UserId, Position>> {
    const out = new Map<UserId, Position>();
    for (const id of ids) {
      const at = this.activity.get(id);
      if (at !== undefined) out.set(id, at);
    }
    return out;
  }
}
