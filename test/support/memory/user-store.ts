import { nowPosition } from '../../../src/model/clock.js';
import { UsernameTakenError } from '../../../src/model/errors.js';
import type { EventRow } from '../../../src/model/events.js';
import type { Position, UserId, UserRecord } from '../../../src/model/types.js';
import type { UserStore } from '../../../src/ports/user-store.js';
import { MemoryEventStore } from './event-store.js';

/** `UserStore` in memory: one layer of `MemoryGraphStore` (`graph-store.ts`). */
export abstract class MemoryUserStore extends MemoryEventStore implements UserStore {
  async getUser(id: UserId): Promise<UserRecord | null> {
    const u = this.users.get(id);
    return u ? { ...u } : null;
  }

  async getUsers(ids: readonly UserId[]): Promise<Map<UserId, UserRecord>> {
    const out = new Map<UserId, UserRecord>();
    for (const id of ids) {
      const u = this.users.get(id);
      if (u) out.set(id, { ...u });
    }
    return out;
  }

  async putUser(user: UserRecord, o: { event?: EventRow } = {}): Promise<{ created: boolean }> {
    const name = user.username.toLowerCase();
    const holder = this.usernames.get(name);
    if (holder !== undefined && holder !== user.id) throw new UsernameTakenError(user.username);
    const existing = this.users.get(user.id);
    if (existing && existing.username.toLowerCase() !== name)
      this.usernames.delete(existing.username.toLowerCase());
    this.usernames.set(name, user.id);
    this.users.set(user.id, { ...user });
    if (user.state === 'deactivated') this.deactivated.add(user.id);
    else if (existing?.state === 'deactivated') this.deactivated.delete(user.id);
    if (o.event) this.writeEvents([o.event], nowPosition());
    return { created: !existing };
  }

  async listDeactivated(limit: number): Promise<UserId[] | null> {
    return this.deactivated.size > limit ? null : [...this.deactivated];
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
