/**
 * The registry of deactivated accounts held in memory: what list pages, scans and set pages take
 * deactivation from instead of reading every member's user row.
 *
 * Design note. The registry is loaded whole (`UserStore.listDeactivated`, 16 partitions, then the
 * listed accounts confirmed against their user rows in batches of 500, since the table may name a
 * few active accounts) at first use and every `reloadMs` (2 min). Between loads it follows the
 * change feed's unsettled tail (`Feed.subscribe`): every `user.updated` event names an account
 * whose state may have flipped, and the registry re-reads those accounts' rows (one batched read
 * per burst of events), never the whole registry. Changes made on this instance are noted at once
 * (`note`, from the user write that acknowledged them); other instances' arrive by the tail poll
 * (200 ms), so a flip on A is enforced on B's pages within about 0.5 s (the API's 1 s goal).
 *
 * Staleness. The feed's tail is best effort, so the registry trusts itself only while the tail
 * completed a poll within `staleMs` (1 s) and the last load is younger than 2 × `reloadMs`; past
 * either bound, and for accounts whose event arrived but whose row is not read yet, the filter
 * reads the members' rows per member (`deactivatedFilter`). It also does so while the registry
 * holds more than `bound` accounts (`REGISTRY_BOUND`): memory stays bounded. A service built
 * without the feed (`events: false`) has no registry and reads per member.
 *
 * Non-isolation. A logged batch is atomic, not isolated: a poll may read an update's feed row
 * before the user row of the same batch (or long before, when the batchlog replays it). So an
 * account stays pending until its row shows a `state` cell written at or after the event's
 * position (the cells' version: `Accounts.putUser`); events that name fields without `state` are
 * skipped. While pending, pages answer the account by a quorum read of its row, per request, and
 * the flush reads it again every `RETRY_MS`. Pending accounts are bounded (`PENDING_BOUND`): past
 * it the registry reports itself unfresh, and every member is read.
 *
 * Rejected: reloading the whole registry every 500 ms (16 partitions and every confirmation read,
 * twice a second per instance); a change table of our own (a second write on every account change,
 * for what the feed's rows, written in the user row's own batch, already give).
 * Limits: the tail reads each row about twice (its fresh read and its sweep, `feed.ts`), at most
 * 20 pages of 1,000 each a period; past that it falls behind and says so (the registry is then
 * not fresh, and pages read members per request). A row whose writer's clock fell behind more than
 * the fresh read reaches back (twice the furthest seen in the last 30–60 s) comes by the sweep, 2 s +
 * 2S after its slot, and widens the fresh read from then on. An update whose row lands more
 * than 2 s after its version (a PUT slow near its budget) is outside that window: the next load.
 */
import type { MemberFilter } from '../../lists/contracts.js';
import { SYSTEM_TIMERS } from '../../model/timers.js';
import type { Position, UserId, UserRecord } from '../../model/types.js';
import type { UserStore } from '../../ports/user-store.js';
import type { Feed } from '../feed.js';
import { deactivatedFilter, REGISTRY_BOUND } from './account-state.js';

export interface DeactivatedAccountsOptions {
  store: Pick<UserStore, 'getUsers' | 'getUserVersioned' | 'listDeactivated'>;
  /** The change feed whose tail carries other instances' `user.updated` events. */
  feed: Pick<Feed, 'subscribe' | 'tailPolledAtMs'>;
  /** Accounts held in memory at most (default `REGISTRY_BOUND`); above it, per-member reads. */
  bound?: number;
  /** Full reload period (ms; default 120 s). */
  reloadMs?: number;
  /** How recent the tail's last poll must be for the registry to be trusted (ms; default 1000). */
  staleMs?: number;
  /** ms clock (default `Date.now`): the feed's tail's (`tailPolledAtMs`). */
  nowMs?: () => number;
  /** Waits `ms` between a flush's reads (default: a timer that does not keep the process alive). */
  sleep?: (ms: number) => Promise<void>;
  /** Where the per-member reads (while the registry is not fresh) read rows; default `store`. */
  memberRows?: Pick<UserStore, 'getUsers'>;
}

const CONFIRM_BATCH = 500;

/** Pending accounts read at once by a flush. */
const FLUSH_READS = 64;

/** How long a flush waits before reading the accounts still pending again (ms). */
const RETRY_MS = 100;

/** Pending accounts held at most; past it the registry is not fresh. */
export const PENDING_BOUND = 10_000;

export class DeactivatedAccounts {
  private registered = new Set<UserId>();
  /** Over the bound at the last load: no set held. */
  private overflow = false;
  private loadedAtMs: number | null = null;
  private loading: Promise<void> | null = null;
  /** Accounts named by an event, with the position their `state` cell must reach (see the note). */
  private readonly pending = new Map<UserId, Position>();
  /** States noted since the running load began (applied over its snapshot). */
  private sinceLoad: Map<UserId, UserRecord['state']> | null = null;
  private unsubscribe: (() => void) | null = null;
  private flushing: Promise<void> | null = null;
  private readonly perMember: MemberFilter;
  /** The per-request reads of pending accounts: the store's, uncached. */
  private readonly fresh_: MemberFilter;
  private readonly o: Required<Omit<DeactivatedAccountsOptions, 'store' | 'feed' | 'memberRows'>> &
    DeactivatedAccountsOptions;

  constructor(o: DeactivatedAccountsOptions) {
    this.o = {
      bound: REGISTRY_BOUND,
      reloadMs: 120_000,
      staleMs: 1_000,
      nowMs: SYSTEM_TIMERS.nowMs,
      sleep: SYSTEM_TIMERS.sleep,
      ...o,
    };
    this.perMember = deactivatedFilter(o.memberRows ?? o.store);
    this.fresh_ = deactivatedFilter(o.store);
  }

  /** The page filter (see the note): from memory while the registry is fresh, else per member. */
  readonly filter: MemberFilter = async (ids) => {
    if (ids.length === 0) return new Set();
    await this.ensureLoaded();
    if (!this.fresh()) return this.perMember(ids);
    const hidden = new Set(ids.filter((id) => this.registered.has(id) && !this.pending.has(id)));
    const unsure = ids.filter((id) => this.pending.has(id));
    if (unsure.length > 0) for (const id of await this.fresh_(unsure)) hidden.add(id);
    return hidden;
  };

  /** A user write this instance acknowledged: enforced at once. */
  note(user: UserRecord): void {
    this.apply(user.id, user.state);
    this.pending.delete(user.id);
  }

  /**
   * Whether `id` is deactivated, from memory: null when the registry cannot say (not fresh, or an
   * event about `id` whose row is not read yet). The account gate uses it for the caller's own
   * state, so a page by another account reads only the owner's row.
   */
  isDeactivated(id: UserId): boolean | null {
    if (!this.fresh() || this.pending.has(id)) return null;
    return this.registered.has(id);
  }

  /** Whether the registry may answer without reads (loaded, in bound, tail and load recent). */
  fresh(): boolean {
    const now = this.o.nowMs();
    const tail = this.o.feed.tailPolledAtMs();
    return (
      !this.overflow &&
      this.pending.size <= PENDING_BOUND &&
      this.loadedAtMs !== null &&
      now - this.loadedAtMs < 2 * this.o.reloadMs &&
      tail !== null &&
      now - tail <= this.o.staleMs
    );
  }

  /** Stops following the feed. */
  close(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  private apply(id: UserId, state: UserRecord['state']): void {
    this.sinceLoad?.set(id, state);
    if (state === 'deactivated') {
      if (!this.overflow) this.registered.add(id);
      if (this.registered.size > this.o.bound) this.overflowed();
    } else this.registered.delete(id);
  }

  private overflowed(): void {
    this.overflow = true;
    this.registered = new Set();
  }

  private async ensureLoaded(): Promise<void> {
    if (!this.unsubscribe) {
      this.unsubscribe = this.o.feed.subscribe((e) => {
        if (e.type !== 'user.updated' || (e.fields && !e.fields.includes('state'))) return;
        const waiting = this.pending.get(e.source);
        if (waiting === undefined || e.position > waiting) this.pending.set(e.source, e.position);
        this.flushing ??= this.flush()
          .catch(() => undefined)
          .finally(() => {
            this.flushing = null;
          });
      });
    }
    const due = this.loadedAtMs === null || this.o.nowMs() - this.loadedAtMs >= this.o.reloadMs;
    // A failed load leaves the last one standing; its age makes the registry stale in time.
    if (due)
      this.loading ??= this.load()
        .catch(() => undefined)
        .finally(() => {
          this.loading = null;
        });
    // Only the first load is waited for; a reload runs behind the registry it replaces.
    if (this.loadedAtMs === null && this.loading) await this.loading;
  }

  /** Loads the registry and starts following the feed (the service calls it once it is built). */
  start(): void {
    void this.ensureLoaded();
  }

  /**
   * Reads the pending accounts' rows until each shows its `state` cell at or after the position
   * its event named (see the note); those not there yet are read again after `RETRY_MS`.
   */
  private async flush(): Promise<void> {
    await Promise.resolve();
    while (this.pending.size > 0) {
      let waiting = false;
      const ids = [...this.pending.keys()];
      for (let i = 0; i < ids.length; i += FLUSH_READS) {
        const batch = ids.slice(i, i + FLUSH_READS);
        const rows = await Promise.all(batch.map((id) => this.o.store.getUserVersioned(id)));
        batch.forEach((id, j) => {
          const row = rows[j];
          const needed = this.pending.get(id);
          if (!row || needed === undefined) return;
          const at = row.versions.state ?? -1n;
          if (row.user && at < needed) {
            waiting = true;
            return;
          }
          if (row.user) this.apply(id, row.user.state);
          // A newer event that arrived during the read keeps the account pending.
          if (this.pending.get(id) === needed) this.pending.delete(id);
        });
      }
      if (waiting) await this.o.sleep(RETRY_MS);
    }
  }

  private async load(): Promise<void> {
    const started = this.o.nowMs();
    this.sinceLoad = new Map();
    try {
      const listed = await this.o.store.listDeactivated(this.o.bound);
      const next = new Set<UserId>();
      if (listed !== null) {
        for (let i = 0; i < listed.length; i += CONFIRM_BATCH) {
          const batch = listed.slice(i, i + CONFIRM_BATCH);
          const users = await this.o.store.getUsers(batch);
          for (const id of batch) if (users.get(id)?.state === 'deactivated') next.add(id);
        }
      }
      const noted = this.sinceLoad;
      this.overflow = listed === null;
      this.registered = listed === null ? new Set() : next;
      for (const [id, state] of noted) this.apply(id, state);
      this.loadedAtMs = started;
    } finally {
      this.sinceLoad = null;
    }
  }
}
