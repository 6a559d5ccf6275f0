/**
 * Deactivation and reactivation: an account's edges hidden from every read at once, restored
 * exactly, without rewriting a single list row.
 *
 * Design note. Deactivation is one cell, `users.state`. Reads apply it where they meet members:
 * list pages, set queries and export skip members that `deactivatedFilter` names (a `MemberFilter`,
 * applied once per batch, reading on so pages stay full); `contains`, `relationships` and
 * `followed-by` drop them; every route on the account answers 404 to every caller, its own token
 * included, and a token of a deactivated account gets 404 on every route (the HTTP account gate,
 * `assertAccountsActive`; only graph:admin still sees the account, on `GET`/`PUT /v1/users/{id}`);
 * a mutation that names a deactivated account (as actor or target) is a 404 like an unknown one. Nothing about the
 * edges changes, so reactivation is the same cell flipped back and every edge reappears exactly
 * as it was (FlockDB's "archived" node state, without its rewrite of every edge row).
 *
 * Counts are the one place where the hiding must be *written*: the counterparts' counters
 * (each follower's `following`, each followee's `followers`) still include the account. The state
 * change records a durable `mark_counterparts` task (in `account_tasks`) before it answers, then
 * walks the account's two follow lists with `walkList`, marking the counterpart list bucket
 * dirty and committing the walk cursor after every page. The reconciler (`reconcile-dirty.ts`)
 * recounts marked buckets *excluding deactivated members*, so the counters converge to exclude
 * the account within a lease and a reconcile interval of the walk, and to include it again after
 * reactivation. Marking is idempotent, so a walk resumed after a crash (start-up resumes
 * unfinished tasks) or re-run by a second flip is harmless; a flip during a walk restarts it.
 *
 * Generations. Each flip writes its task row at version = its generation (the clock), each
 * cursor commit one version higher, and the run deletes the row at the version it last wrote or
 * read (`AccountTaskStore`), so a delete conditioned on the generation needs no lightweight
 * transaction: a newer flip's row, written later at a higher version, survives it. (The first
 * design checked the generation, then deleted unconditionally; a flip on another instance landing
 * between the two lost its task, and the reactivated account's counterparts kept counts that
 * excluded it, `exact: true`.) This relies on a generation's commits staying below the next
 * generation, i.e. on two flips of one account being more microseconds apart than the first run
 * made commits by then (each commit is a round trip). The task is written before the state it
 * serves, so a run (another instance's, or the previous generation's looking again after its
 * delete) may walk before the flip's user write has landed: its marks are dated a lease ahead
 * (`COUNT_LEASE_MICROS`, as a write's in `pair/count-step.ts`), so no reconcile pass that began
 * before the state write can clear them.
 *
 * Cost: one mark per edge of the account: the same order as a FlockDB archive, but in
 * counter-sized writes rather than edge rewrites; a celebrity's counterparts converge at the
 * reconciler's pace (marks per pass), which `docs/design/counts.md` states.
 *
 * Recounts meet every member of a bucket, so they do not read every member's user row: the store
 * keeps a registry of deactivated accounts (`deactivated_accounts`, written in the user write's
 * logged batch), and `registryFilter` reads it once per pass and confirms only the members it
 * names. Reads that serve a request (pages, scans, set queries, followed-by, the export) take
 * deactivation from the in-memory registry (`deactivated-accounts.ts`): a flip acknowledged on this
 * instance is enforced at once, one on another instance within the feed tail's poll (the API's 1 s
 * bound), and a registry whose tail has not polled within its staleness bound is not trusted: those
 * reads then use `deactivatedFilter`, a batched user read per page, as do services built without the
 * feed.
 */

import type { MemberFilter } from '../../lists/contracts.js';
import { type WalkCursor, walkList } from '../../lists/list-walker.js';
import { bucketCodeOf } from '../../model/buckets.js';
import { nowPosition } from '../../model/clock.js';
import type { Direction, ListEntry, ListKey, Position, UserId, UserRecord } from '../../model/types.js';
import type { AccountTaskStore } from '../../ports/account-task-store.js';
import type { CountStore } from '../../ports/count-store.js';
import type { ListStore } from '../../ports/list-store.js';
import type { AccountTask } from '../../ports/records.js';
import type { UserStore } from '../../ports/user-store.js';
import { COUNT_LEASE_MICROS } from '../pair/count-step.js';

export type AccountStateStore = Pick<UserStore, 'getUsers'> &
  Pick<ListStore, 'getLayout' | 'getDirectory' | 'listBucket'> &
  Pick<CountStore, 'markDirty'> &
  AccountTaskStore;

/**
 * The `MemberFilter` of deactivated accounts: one batched user read per call. With `seen`, the
 * rows it reads are kept there (null: no such user) and ids already in it are not read again, so
 * a page can take its members' usernames from the filter's reads (`page-members.ts`).
 */
export function deactivatedFilter(
  store: Pick<UserStore, 'getUsers'>,
  seen?: Map<UserId, UserRecord | null>,
): MemberFilter {
  return async (ids) => {
    const missing = [...new Set(ids)].filter((id) => !seen?.has(id));
    const users = missing.length > 0 ? await store.getUsers(missing) : new Map<UserId, UserRecord>();
    if (seen) for (const id of missing) seen.set(id, users.get(id) ?? null);
    const state = (id: UserId) => (seen ? seen.get(id)?.state : users.get(id)?.state);
    return new Set(ids.filter((id) => state(id) === 'deactivated'));
  };
}

/** Registered accounts a `registryFilter` holds in memory; above it, per-member reads. */
export const REGISTRY_BOUND = 100_000;

/**
 * The `MemberFilter` of deactivated accounts for recounts, which meet every member of a bucket
 * (140,625 of a 9M list at 64 buckets): on first use it reads the registry of deactivated
 * accounts (`UserStore.listDeactivated`) once, then reads the user rows of only the members the
 * registry names, to confirm them. A recount's cost is then its list rows, not a point read per
 * member. With more than `bound` registered accounts it reads every member's row, as
 * `deactivatedFilter` does.
 *
 * Freshness: the registry is read at the filter's first use, so create the filter after the
 * dirty marks it serves were read (`reconcile-dirty.ts`). A flip after that read marks the
 * buckets again (its `mark_counterparts` walk) and the next pass recounts them.
 */
export function registryFilter(
  store: Pick<UserStore, 'getUsers' | 'listDeactivated'>,
  bound = REGISTRY_BOUND,
): MemberFilter {
  const perMember = deactivatedFilter(store);
  let registered: Promise<Set<UserId> | null> | undefined;
  return async (ids) => {
    if (ids.length === 0) return new Set();
    registered ??= store.listDeactivated(bound).then((l) => (l === null ? null : new Set(l)));
    const snapshot = await registered;
    return perMember(snapshot === null ? ids : ids.filter((id) => snapshot.has(id)));
  };
}

/**
 * Where a counterpart walk stands: the generation (the state flip that started it), which of the
 * account's follow lists, and the walk cursor in it.
 */
export interface MarkCursor {
  generation: string;
  direction: Direction;
  walk: WalkCursor | null;
}

/** The task's cursor as stored in `account_tasks.cursor` (plain data; never leaves the server). */
export function encodeMarkCursor(c: MarkCursor): string {
  const after = c.walk?.after;
  return JSON.stringify({
    g: c.generation,
    d: c.direction,
    b: c.walk?.bucketCode ?? null,
    t: after ? after.createdAt.toString() : null,
    o: after ? after.otherId.toString() : null,
  });
}

export function decodeMarkCursor(raw: string | null): MarkCursor {
  if (!raw) return { generation: '', direction: 'in', walk: null };
  const j = JSON.parse(raw) as {
    g: string;
    d: Direction;
    b: number | null;
    t: string | null;
    o: string | null;
  };
  const after: ListEntry | null =
    j.t !== null && j.o !== null ? { createdAt: BigInt(j.t), otherId: BigInt(j.o) } : null;
  return { generation: j.g, direction: j.d, walk: j.b === null ? null : { bucketCode: j.b, after } };
}

/**
 * The task row a state flip writes before its state (and before it answers): a new generation,
 * from the start, at version = generation = the clock now.
 */
export function newMarkTask(owner: UserId, clock: () => Position = nowPosition): AccountTask {
  const generation = clock();
  return {
    userId: owner,
    task: 'mark_counterparts',
    cursor: encodeMarkCursor({ generation: generation.toString(), direction: 'in', walk: null }),
    version: generation,
  };
}

/** The counterpart's list that counts an edge of `owner`'s list `direction`. */
const counterpartList = (direction: Direction, other: UserId): ListKey => ({
  userId: other,
  relation: 'follows',
  direction: direction === 'in' ? 'out' : 'in',
});

class Superseded extends Error {}

/**
 * Runs (or resumes) the `mark_counterparts` task of `owner`: marks dirty, for every follow edge of
 * `owner` in either direction, the counterpart's list bucket that counts it, each mark dated
 * `o.leaseMicros` (default `COUNT_LEASE_MICROS`) ahead of the clock. Commits the cursor after
 * every page, at the task's version plus one; a page that finds a newer generation (another flip
 * meanwhile) starts over from the beginning, so every mark of the last flip is written after its
 * task. At the end it deletes its own generation's row, at the version it last wrote or read, and
 * looks again: a newer flip's row, written at a higher version, survives that delete and is run
 * next. Returns the number of marks written.
 */
export async function runMarkCounterparts(
  store: AccountStateStore,
  owner: UserId,
  o: { pageSize?: number; leaseMicros?: bigint; clock?: () => Position } = {},
): Promise<number> {
  const clock = o.clock ?? nowPosition;
  const lease = o.leaseMicros ?? COUNT_LEASE_MICROS;
  let marked = 0;
  // Keyed by list, not by account: a mutual's two lists have their own layouts (a celebrity's
  // followers list has grown, its following list has not), and a mark addressed with the wrong
  // layout maps onto every bucket of the list (`readCodesFor`), a full recount.
  const layouts = new Map<string, number>();
  for (;;) {
    const task = await store.getAccountTask(owner, 'mark_counterparts');
    if (!task) return marked;
    const start = decodeMarkCursor(task.cursor);
    const { generation } = start;
    let version = task.version;
    /** The stored task, when it is still this generation's (else the run is superseded). */
    const current = async () => {
      const now = await store.getAccountTask(owner, 'mark_counterparts');
      if (!now || decodeMarkCursor(now.cursor).generation !== generation) throw new Superseded();
      if (now.version > version) version = now.version;
    };
    const commit = async (at: MarkCursor) => {
      await current();
      version += 1n;
      await store.putAccountTask({
        userId: owner,
        task: 'mark_counterparts',
        cursor: encodeMarkCursor(at),
        version,
      });
    };
    try {
      for (const direction of ['in', 'out'] as const) {
        if (direction === 'in' && start.direction === 'out') continue;
        const list: ListKey = { userId: owner, relation: 'follows', direction };
        await walkList(
          store,
          list,
          async (rows, _code, next) => {
            await Promise.all(
              rows.map(async ({ otherId }) => {
                const target = counterpartList(direction, otherId);
                const key = `${otherId}|${target.direction}`;
                let n = layouts.get(key);
                if (n === undefined) {
                  n = (await store.getLayout(target)).buckets;
                  if (layouts.size >= 10_000) layouts.clear();
                  layouts.set(key, n);
                }
                await store.markDirty(target, bucketCodeOf(n, owner), clock() + lease);
              }),
            );
            marked += rows.length;
            if (next) await commit({ generation, direction, walk: next });
          },
          { pageSize: o.pageSize ?? 500, from: start.direction === direction ? start.walk : null },
        );
        if (direction === 'in') await commit({ generation, direction: 'out', walk: null });
      }
      await current();
      // This generation's row only: the check above and this delete are not atomic, and a flip
      // landing between them writes a newer generation at a higher version, which survives.
      await store.deleteAccountTask(owner, 'mark_counterparts', version);
    } catch (e) {
      if (e instanceof Superseded) continue;
      throw e;
    }
  }
}
