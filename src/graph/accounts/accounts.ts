/**
 * Accounts: the user row and the durable tasks its changes start.
 *
 * Design note. A user PUT may start two kinds of work that must survive a crash: going private →
 * public accepts every pending request (`accept_requests`), and a change of `state`
 * (deactivation / reactivation, `account-state.ts`) marks every counterpart's list for recount
 * (`mark_counterparts`), and a change of `username` rewrites the account's name in the list rows
 * that carry it (`rename_fanout`, `rename-fanout.ts`). Each task row is written *before* the user
 * row it serves, so a failure
 * between the two leaves the old state, and the client's retry (which still sees it) flips it
 * again; a restart (`resume`) or the next PUT runs what is left. One run per owner per task kind
 * per process; a call while one runs asks it to look again when it ends.
 *
 * The accept task walks the incoming requests list with a cursor committed after every page (at
 * the task's version plus one, so a restart resumes there and rows that stay behind — a request
 * the requester's cap keeps pending — are never read twice), and deletes the task at the version
 * it read (a newer generation's row survives, and runs next). Finding the account private, it
 * stops; it deletes the task only once it is `ACCEPT_TASK_SETTLE_MICROS` old, since a younger one
 * may belong to a go-public write that has not landed yet.
 *
 * Names. A rename claims its name (a lightweight transaction on the lower-cased name) before it
 * writes, reads its row back, and releases the names that row does not use (the old one; its own
 * after a concurrent rename won). Two overlapping PUTs of one account can then release the name the
 * winning cells carry: one renames N → M and releases N after reading M back, before the other's
 * cells, which carry N (a rename back, or a case-only change, which keeps the claim), land. So a
 * rename then checks its stored name's claim and claims it if missing: re-read after its releases
 * when it released any (else the name read back, after its own cells landed). Of the PUT whose
 * cells win and any PUT that released their name, one checks after both the release and those
 * cells: the name ends claimed. Cost: a read, or two, per rename. A write landing after every
 * check (a statement that timed out, then landed) escapes it: the repair sweep's `missing_claim`.
 */
import type { ListService } from '../../lists/contracts.js';
import {
  FollowingCapError,
  InvalidInputError,
  NoPendingRequestError,
  StoreUnavailableError,
  UserNotFoundError,
  UsernameTakenError,
} from '../../model/errors.js';
import type { EventRow } from '../../model/events.js';
import { USERNAME_PATTERN } from '../../model/limits.js';
import {
  listIn,
  type Position,
  USER_FIELDS,
  type UserField,
  type UserFields,
  type UserId,
  type UserRecord,
} from '../../model/types.js';
import type { CountStore } from '../../ports/count-store.js';
import type { FeedIntentStore } from '../../ports/event-store.js';
import type { UserStore, VersionedUser } from '../../ports/user-store.js';
import { userUpdatedRow } from '../feed-rows.js';
import type { WriteClock } from '../pair/clock-guard.js';
import { type AccountStateStore, newMarkTask, runMarkCounterparts } from './account-state.js';
import { newRenameTask, type RenameFanoutStore, runRenameFanout } from './rename-fanout.js';

/** How far ahead of the clock a reported activity may be (µs): clock skew between services. */
const ACTIVITY_AHEAD_MICROS = 60_000_000n;

/** Pending requests accepted inline when an account goes public; more run in the background. */
const INLINE_ACCEPT_LIMIT = 100;

/** Requests accepted per committed page of the accept task. */
const ACCEPT_PAGE = 200;

/**
 * Age (µs) after which an `accept_requests` task of a private account is deleted: by then the
 * go-public user write that followed it has landed or failed (a PUT's writes time out in seconds).
 */
export const ACCEPT_TASK_SETTLE_MICROS = 60_000_000n;

export interface AccountsDeps {
  store: AccountStateStore &
    RenameFanoutStore &
    UserStore &
    Pick<CountStore, 'getCount'> &
    Pick<FeedIntentStore, 'putIntent' | 'deleteIntent'>;
  lists: Pick<ListService, 'page'>;
  /** µs since the epoch. */
  clock: () => Position;
  guard: WriteClock;
  /** How far ahead the counterpart marks are dated (µs; see `account-state.ts`). */
  leaseMicros: bigint;
  /**
   * How long after a rename its fan-out starts its walk (µs): the write path's bound,
   * `feedLagMicros` of its policy (see `rename-fanout.ts`).
   */
  renameLagMicros: bigint;
  /**
   * How long after its event's slot an update's feed intent must be acknowledged (µs): the write
   * budget B, which is below L − 2S (`feed-intents.ts`); later, the update is refused unwritten.
   */
  intentBudgetMicros: bigint;
  /**
   * How long after its version a PUT's cells must be acknowledged (µs): the write path's B + V + T.
   * Later, the write stands but the PUT answers 503 (outcome unknown; a retry is idempotent).
   */
  lateMicros: bigint;
  /** Told the rows a rename's fan-out has done after every page. */
  onRenameProgress?: (userId: UserId, done: number) => void;
  /** Accepts one pending request on the owner's behalf, deactivated accounts included. */
  accept: (owner: UserId, requester: UserId) => Promise<{ changed: boolean }>;
  onTaskError: (userId: UserId, error: unknown) => void;
  /** Told the feed row of each account update once written (the feed's local tail). */
  onEvents?: (rows: readonly EventRow[]) => void;
  /** Told each user row once written (the deactivated registry enforces a flip here at once). */
  onUserWritten?: (user: UserRecord) => void;
  /** A number for each update's feed row, unlikely to repeat (see `userUpdatedRow`). */
  updateNonce: () => bigint;
}

/** A user PUT: every field but `id` optional for an existing user. */
export interface UserInput {
  id: UserId;
  username?: string;
  private?: boolean;
  state?: UserRecord['state'];
  hideLists?: boolean;
}

export class Accounts {
  private readonly acceptRuns = new Map<UserId, { rerun: boolean }>();
  private readonly markRuns = new Map<UserId, { rerun: boolean }>();
  private readonly renameRuns = new Map<UserId, { rerun: boolean }>();

  constructor(private readonly d: AccountsDeps) {}

  /**
   * Creates or updates a user: writes the fields `input` names that differ from the row read, and
   * only those (see the note), with the tasks the change starts. Throws `InvalidInputError` for a
   * username outside the rules or a new user without one, the store's `UsernameTakenError`, and
   * `StoreUnavailableError` when the update's feed intent is acknowledged too late (nothing
   * written). Returns the row as read back after the write.
   */
  async putUser(input: UserInput): Promise<{ user: UserRecord; created: boolean }> {
    const { store } = this.d;
    if (input.username !== undefined && !USERNAME_PATTERN.test(input.username))
      throw new InvalidInputError('username', 'must be 1–30 of [A-Za-z0-9._]');
    if (input.id <= 0n) throw new InvalidInputError('id', 'must be a positive integer');
    this.d.guard.assertWritable();
    const read = await store.getUserVersioned(input.id);
    const existing = read.user;
    if (!existing && input.username === undefined)
      throw new InvalidInputError('username', 'is required to create a user');
    const changed: UserFields = {};
    for (const f of USER_FIELDS) {
      const v = input[f];
      if (v !== undefined && (!existing || existing[f] !== v)) Object.assign(changed, { [f]: v });
    }
    const names = USER_FIELDS.filter((f) => changed[f] !== undefined);
    const { stored, late } =
      existing && names.length === 0
        ? { stored: existing, late: false }
        : await this.write(input.id, read, changed, names);
    // Tasks: a flip's and a rename's rows were written before the row, and they start now; a PUT
    // naming a task's field without changing it restarts an unfinished one (they are idempotent).
    const unchanged = (f: UserField) => input[f] !== undefined && changed[f] === undefined;
    const [markLeft, renameLeft, acceptLeft] = await Promise.all([
      unchanged('state') ? store.getAccountTask(input.id, 'mark_counterparts') : null,
      unchanged('username') ? store.getAccountTask(input.id, 'rename_fanout') : null,
      stored.private ? null : store.getAccountTask(input.id, 'accept_requests'),
    ]);
    if (markLeft || (existing && changed.state !== undefined)) this.startMarkTask(input.id);
    if (renameLeft || (existing && changed.username !== undefined)) this.startRenameTask(input.id);
    if (existing?.private === true && changed.private === false) {
      const pending = await store.getCount(listIn(input.id, 'requests'));
      const run = this.runAcceptTask(input.id);
      if (pending <= INLINE_ACCEPT_LIMIT) await run;
      else run.catch((e: unknown) => this.d.onTaskError(input.id, e));
    } else if (acceptLeft) {
      this.runAcceptTask(input.id).catch((e: unknown) => this.d.onTaskError(input.id, e));
    }
    if (late)
      throw new StoreUnavailableError(
        'the update was applied after its time budget, so it is not acknowledged; a retry is idempotent',
      );
    return { user: stored, created: existing === null };
  }

  /**
   * Writes the changed fields of one PUT (see `putUser`) with their tasks' rows and the update's
   * feed row; returns the row read back, and whether the cells were acknowledged past
   * `lateMicros` after the version was taken.
   */
  private async write(
    id: UserId,
    read: VersionedUser,
    changed: UserFields,
    names: readonly UserField[],
  ): Promise<{ stored: UserRecord; late: boolean }> {
    const { store } = this.d;
    const existing = read.user;
    // The name's claim (a lightweight transaction) before the version is taken, so its latency
    // is not spent from the write budget. A case-only rename keeps its claim.
    const claimed =
      changed.username !== undefined && changed.username.toLowerCase() !== existing?.username.toLowerCase()
        ? changed.username
        : undefined;
    if (claimed !== undefined) await store.claimUsername(claimed, id);
    // Above every cell read, so a PUT sent after another was acknowledged outranks it whatever
    // the clocks (two at one version: the larger value wins per cell, the store's rule).
    const now = this.d.clock();
    const version = now > read.version ? now : read.version + 1n;
    if (existing && changed.state !== undefined) await store.putAccountTask(newMarkTask(id, this.d.clock));
    if (existing && changed.username !== undefined)
      await store.putAccountTask(newRenameTask(id, changed.username, this.d.renameLagMicros, this.d.clock));
    if (existing?.private === true && changed.private === false)
      await store.putAccountTask({
        userId: id,
        task: 'accept_requests',
        cursor: null,
        version: this.d.clock(),
      });
    // An update of an existing account is an event (`user.updated`, naming its fields) at the
    // cells' version, written with them; a creation is not.
    const event = existing ? userUpdatedRow(id, version, names, this.d.updateNonce()) : undefined;
    // Its intent first (`feed-intents.ts`): readers stay below the event's slot until the row is
    // written, however long the write takes. An intent acknowledged past the write budget after
    // the slot is too late to hold them: the write is not sent (the intent is left to the recovery).
    if (event) {
      await store.putIntent(event.key, Number(this.d.intentBudgetMicros / 1000n));
      if (this.d.clock() - event.key.slot > this.d.intentBudgetMicros)
        throw new StoreUnavailableError(
          'the update could not be announced to the feed in time; nothing was written',
        );
    }
    await store.putUserFields(id, changed, version, event ? { event } : {});
    const late = this.d.clock() - now > this.d.lateMicros;
    if (event) void store.deleteIntent(event.key).catch(() => undefined);
    const stored = (await store.getUserVersioned(id)).user;
    if (!stored) throw new StoreUnavailableError('the user row could not be read back');
    // Names no row uses any more: the old one after a rename, ours after a concurrent rename won.
    // (A name left claimed by a PUT that failed here is released by the repair sweep.)
    const storedName = stored.username.toLowerCase();
    const released = [existing?.username, claimed].filter(
      (name): name is string => name !== undefined && name.toLowerCase() !== storedName,
    );
    for (const name of released) await store.releaseUsername(name, id);
    if (changed.username !== undefined) await this.keepClaim(id, released.length > 0 ? null : storedName);
    this.d.onUserWritten?.(stored);
    if (event) this.d.onEvents?.([event]);
    return { stored, late };
  }

  /**
   * After a rename's releases: claims the account's stored name again if no claim holds it (`name`,
   * read after this PUT's cells landed; null: read it again, after the releases). Another PUT of
   * the account may have released it (see the note); another account's claim is left (a conflict
   * for the repair sweep). What lands after this read is the repair sweep's (`missing_claim`).
   */
  private async keepClaim(id: UserId, name: string | null): Promise<void> {
    const { store } = this.d;
    const current = name ?? (await store.getUserVersioned(id)).user?.username.toLowerCase();
    if (current === undefined || (await store.getUsernameClaim(current)) !== null) return;
    await store.claimUsername(current, id).catch((e: unknown) => {
      if (!(e instanceof UsernameTakenError)) throw e;
    });
  }

  /** Throws `UserNotFoundError`. */
  async getUser(id: UserId): Promise<UserRecord> {
    const u = await this.d.store.getUser(id);
    if (!u) throw new UserNotFoundError(id);
    return u;
  }

  /**
   * Records the account service's report that `id` was active at `at` (µs); the latest report
   * wins. Throws `UserNotFoundError` for an unknown account, `InvalidInputError` for a time more
   * than a minute ahead of this service's clock.
   */
  async reportActivity(id: UserId, at: Position): Promise<void> {
    if (at > this.d.clock() + ACTIVITY_AHEAD_MICROS)
      throw new InvalidInputError('last_active_at', 'a time not in the future');
    await this.getUser(id);
    await this.d.store.putActivity(id, at);
  }

  /** The last reported activity of `id` (µs), or null when never reported. */
  async lastActiveAt(id: UserId): Promise<Position | null> {
    return (await this.d.store.getActivity([id])).get(id) ?? null;
  }

  /** Starts every unfinished task in the background (once, at start-up); returns how many. */
  async resume(): Promise<number> {
    const tasks = await this.d.store.listAccountTasks();
    for (const t of tasks) {
      if (t.task === 'mark_counterparts') this.startMarkTask(t.userId);
      else if (t.task === 'rename_fanout') this.startRenameTask(t.userId);
      else this.runAcceptTask(t.userId).catch((e: unknown) => this.d.onTaskError(t.userId, e));
    }
    return tasks.length;
  }

  /** Resolves when no task runs in this process (tests). */
  async settle(): Promise<void> {
    while (this.markRuns.size > 0 || this.renameRuns.size > 0 || this.acceptRuns.size > 0)
      await new Promise((r) => setTimeout(r, 20));
  }

  /**
   * Runs the owner's `mark_counterparts` task in the background. A flip while it runs asks for a
   * rerun, which runs the flip's task if the run ended before it saw it (the run's final delete
   * leaves a newer generation's row standing).
   */
  private startMarkTask(owner: UserId): void {
    this.startTask(this.markRuns, owner, () =>
      runMarkCounterparts(this.d.store, owner, { leaseMicros: this.d.leaseMicros, clock: this.d.clock }),
    );
  }

  /** Runs the owner's `rename_fanout` task in the background; a rename while it runs asks for a rerun. */
  private startRenameTask(owner: UserId): void {
    this.startTask(this.renameRuns, owner, () =>
      runRenameFanout(this.d.store, owner, {
        clock: this.d.clock,
        ...(this.d.onRenameProgress ? { onProgress: this.d.onRenameProgress } : {}),
      }),
    );
  }

  /** One run per owner in `runs`; a call while one runs makes it run again when it ends. */
  private startTask(runs: Map<UserId, { rerun: boolean }>, owner: UserId, run: () => Promise<unknown>): void {
    const running = runs.get(owner);
    if (running) {
      running.rerun = true;
      return;
    }
    const state = { rerun: false };
    runs.set(owner, state);
    (async () => {
      try {
        await run();
        while (state.rerun) {
          state.rerun = false;
          await run();
        }
      } finally {
        runs.delete(owner);
      }
    })().catch((e: unknown) => this.d.onTaskError(owner, e));
  }

  /** Accepts the pending requests the owner's `accept_requests` task still covers (see the note); returns how many. */
  async runAcceptTask(owner: UserId): Promise<number> {
    const { store } = this.d;
    const running = this.acceptRuns.get(owner);
    if (running) {
      running.rerun = true;
      return 0;
    }
    const state = { rerun: false };
    this.acceptRuns.set(owner, state);
    try {
      let accepted = 0;
      for (;;) {
        const [task, user] = await Promise.all([
          store.getAccountTask(owner, 'accept_requests'),
          store.getUser(owner),
        ]);
        if (!task) {
          if (!state.rerun) return accepted;
          state.rerun = false;
          continue;
        }
        if (!user || user.private) {
          if (this.d.clock() - task.version < ACCEPT_TASK_SETTLE_MICROS) return accepted;
          await store.deleteAccountTask(owner, 'accept_requests', task.version);
          continue;
        }
        const page = await this.d.lists.page(listIn(owner, 'requests'), ACCEPT_PAGE, task.cursor);
        for (const { id } of page.items) {
          // Deactivated requesters (or a deactivated owner) too: skipped, their requests would
          // stay pending toward the public account after reactivation, the task long deleted.
          const r = await this.d.accept(owner, id).catch((e: unknown) => {
            if (
              e instanceof NoPendingRequestError ||
              e instanceof FollowingCapError ||
              e instanceof UserNotFoundError
            )
              return null;
            throw e;
          });
          if (r?.changed) accepted++;
        }
        if (page.nextCursor === null) {
          await store.deleteAccountTask(owner, 'accept_requests', task.version);
          continue;
        }
        await store.putAccountTask({
          userId: owner,
          task: 'accept_requests',
          cursor: page.nextCursor,
          version: task.version + 1n,
        });
      }
    } finally {
      this.acceptRuns.delete(owner);
    }
  }
}
