/**
 * The accounts' part of a whole-service schedule (`pair-sim.ts` with `service: true`): PUTs that
 * name some of `private`, `hide_lists` and `state`, one account's PUTs at once on several
 * instances in half the schedules, and what the contract (Part 4) promises of them, checked on
 * the final rows and on every pair call of the schedule.
 *
 * Design note — what is checked, once everything in flight has landed:
 *
 * 1. Per field, a PUT acknowledged after another supersedes it. A PUT p naming field f is
 *    superseded by an acknowledged PUT q naming f that started after p was acknowledged (q read
 *    p's cells, and its version is above them whatever the clocks). The stored value of f is that
 *    of a PUT naming f that is not superseded — acknowledged, or failed after sending its write
 *    (it may have landed) — or the initial one when no acknowledged PUT names f. A PUT that
 *    rewrites fields it does not name (the whole row at once: the lost update) breaks this where
 *    PUTs of different fields overlap (the planted `put-writes-whole-row`).
 * 2. The registry of deactivated accounts agrees with the state cells: a row for each account
 *    whose stored state is `deactivated`, none for the others.
 * 3. Privacy is enforced on writes: a follow that started after a switch to private was
 *    acknowledged (on any instance), with no switch back that could stand, appended a request —
 *    the write path reads the target's row uncached (the planted `privacy-from-cache` reads it
 *    through a 1 s cache, as the service once did).
 * 4. A call toward an account whose deactivation was acknowledged before the call started, with
 *    no reactivation that could stand, is refused as not found, never acknowledged.
 *
 * 5. Deactivation on pages, on every instance within 1 s. Each instance runs its registry of
 *    deactivated accounts (fed by the feed's tail, polled every 250 ms) and its read caches (TTL
 *    1 s) on the schedule's virtual time. A followers page that started 1 s or more after a
 *    deactivation was acknowledged (on any instance), with no reactivation that could stand, does
 *    not show the account. Why 1 s: a registry answers only while the last tail poll that caught
 *    up started within 1 s (it read every row landed by then), else the page reads the members'
 *    rows through the user cache, whose entries are at most 1 s old. Not checked: a deactivation
 *    whose cells landed more than 2 s after its PUT started — outside the tail's window, it waits
 *    for the registry's next load (2 min; `deactivated-accounts.ts`).
 *
 * "Could stand" (3, 4, 5): a PUT setting the opposite value that sent that field's write and is
 * not surely superseded by the switch (acknowledged before the switch started).
 */

/** A page shows a deactivation acknowledged this long before it started (µs): the registry's and caches' bound. */
const PAGE_BOUND_MICROS = 1_000_000;

/** A deactivation whose cells landed within this of its PUT's start is in every tail's window (µs). */
const TAIL_WINDOW_MICROS = 2_000_000;

import type { UserId, UserRecord } from '../../src/model/types.js';
import type { Scheduler } from './scheduler.js';

/** What one simulated PUT names (every field optional; at least one named). */
export interface AccountPut {
  private?: boolean;
  hideLists?: boolean;
  state?: UserRecord['state'];
}

export const PUT_FIELDS = ['private', 'hideLists', 'state'] as const;
type PutField = (typeof PUT_FIELDS)[number];

/** The `users` column each field's write sets (how a statement is told to have written it). */
const COLUMNS: Record<string, PutField> = { private: 'private', hide_lists: 'hideLists', state: 'state' };

/** The field an `UPDATE users` statement writes, or null for another statement. */
export function writtenField(query: string): PutField | null {
  const m = /^UPDATE users USING TIMESTAMP \? SET (\w+) =/.exec(query);
  return m ? (COLUMNS[m[1] as string] ?? null) : null;
}

/**
 * A PUT as the harness draws it from what it believes stands (the acknowledged PUTs): mostly a
 * flip of `private`, sometimes `hide_lists`, with chance `stateP` a flip of `state`.
 */
export function drawPut(
  sched: Scheduler,
  believed: { private: boolean; state: UserRecord['state'] },
  stateP: number,
): AccountPut {
  const put: AccountPut = {};
  if (sched.chance(0.7)) put.private = !believed.private;
  if (sched.chance(0.3)) put.hideLists = sched.chance(0.5);
  if (sched.chance(stateP)) put.state = believed.state === 'active' ? 'deactivated' : 'active';
  if (Object.keys(put).length === 0) put.private = !believed.private;
  return put;
}

/** One PUT of the schedule, as the checks need it. */
export interface PutRecord {
  id: number;
  account: UserId;
  put: AccountPut;
  startAt: number;
  /** When it answered (true time, µs). */
  endAt: number;
  acked: boolean;
  /** The fields whose cell write it sent (it may have landed even if the PUT failed). */
  wrote: ReadonlySet<PutField>;
  /** When the node applied its cells (true time, µs), if it did. */
  landedAt?: number;
}

/** A followers page an instance read, and the members it showed (null: the read failed). */
export interface PageRecord {
  id: number;
  writer: number;
  owner: UserId;
  startAt: number;
  members: UserId[] | null;
}

/** One pair call of the schedule, as the checks need it. */
export interface PairCallRecord {
  id: number;
  method: string;
  /** The account the call acts toward (its `other`: read uncached by the write path). */
  other: UserId;
  startAt: number;
  outcome: string;
  error?: string;
  /** The kind its own append sent, if it sent one. */
  appendedKind?: string;
  /** A replay at an explicit position (decided by the op it replays: not checked). */
  replay: boolean;
}

export type AccountRow = { private: boolean; hideLists: boolean; state: UserRecord['state'] };

export interface AccountViolation {
  kind:
    | 'account-field'
    | 'account-registry'
    | 'account-privacy'
    | 'account-deactivated'
    | 'account-stale-page';
  detail: string;
}

/** A switch of `field` to `value` on `account`: acknowledged before `at`, with nothing that could undo it. */
function switchedBefore<F extends PutField>(
  puts: readonly PutRecord[],
  account: UserId,
  field: F,
  value: AccountPut[F],
  at: number,
  also: (p: PutRecord) => boolean = () => true,
): PutRecord | undefined {
  const mine = puts.filter((p) => p.account === account && p.put[field] !== undefined);
  return mine.find(
    (p) =>
      also(p) &&
      p.acked &&
      p.put[field] === value &&
      p.endAt < at &&
      !mine.some((q) => q.put[field] !== value && q.wrote.has(field) && !(q.acked && q.endAt < p.startAt)),
  );
}

/** How much of the note a schedule exercised (a search that exercises none of it proves little). */
export interface AccountReach {
  /** PUTs that overlapped another PUT of the same account. */
  overlapping: number;
  /** Follows that had to append a request (3), and calls that had to be refused (4). */
  requests: number;
  refusals: number;
  /** Pages read while some account's deactivation had to be enforced on them (5). */
  pages: number;
}

/** The checks of the note. */
export function checkAccounts(
  initial: ReadonlyMap<UserId, AccountRow>,
  stored: ReadonlyMap<UserId, AccountRow>,
  registry: ReadonlySet<UserId>,
  puts: readonly PutRecord[],
  calls: readonly PairCallRecord[],
  pages: readonly PageRecord[] = [],
): { violations: AccountViolation[]; reach: AccountReach } {
  const out: AccountViolation[] = [];
  const reach: AccountReach = {
    overlapping: puts.filter((p) =>
      puts.some((q) => q !== p && q.account === p.account && q.startAt < p.endAt && p.startAt < q.endAt),
    ).length,
    requests: 0,
    refusals: 0,
    pages: 0,
  };
  for (const [account, first] of initial) {
    const row = stored.get(account);
    if (!row) {
      out.push({ kind: 'account-field', detail: `account ${account} has no row` });
      continue;
    }
    for (const f of PUT_FIELDS) {
      const naming = puts.filter((p) => p.account === account && p.put[f] !== undefined);
      const acked = naming.filter((p) => p.acked);
      const standing = naming.filter(
        (p) => (p.acked || p.wrote.has(f)) && !(p.acked && acked.some((q) => q.startAt > p.endAt)),
      );
      const allowed = new Set<unknown>(standing.map((p) => p.put[f]));
      if (acked.length === 0) allowed.add(first[f]);
      if (!allowed.has(row[f]))
        out.push({
          kind: 'account-field',
          detail:
            `${f} of ${account} is ${String(row[f])}, not one of [${[...allowed].map(String).join(', ')}] ` +
            `(PUTs naming it that may stand: ${standing.map((p) => `#${p.id}`).join(', ') || 'none'})`,
        });
    }
    if ((row.state === 'deactivated') !== registry.has(account))
      out.push({
        kind: 'account-registry',
        detail: `${account} is ${row.state} but ${registry.has(account) ? 'is' : 'is not'} in the registry table`,
      });
  }
  for (const c of calls) {
    if (c.replay) continue;
    const off = switchedBefore(puts, c.other, 'state', 'deactivated', c.startAt);
    if (off) reach.refusals++;
    if (off && (c.outcome === 'ok' || (c.outcome === 'refused' && c.error !== 'UserNotFoundError')))
      out.push({
        kind: 'account-deactivated',
        detail: `${c.method} #${c.id} toward ${c.other} answered ${c.error ?? c.outcome} after its deactivation (PUT #${off.id}) was acknowledged`,
      });
    if (c.method !== 'follow' || c.appendedKind === undefined) continue;
    const closed = switchedBefore(puts, c.other, 'private', true, c.startAt);
    if (closed) reach.requests++;
    if (closed && c.appendedKind !== 'request')
      out.push({
        kind: 'account-privacy',
        detail: `follow #${c.id} of ${c.other} appended a ${c.appendedKind} after the switch to private (PUT #${closed.id}) was acknowledged`,
      });
  }
  const accounts = [...new Set(puts.map((q) => q.account))];
  for (const p of pages) {
    for (const m of p.members ?? []) {
      const off = switchedBefore(
        puts,
        m,
        'state',
        'deactivated',
        p.startAt - PAGE_BOUND_MICROS,
        (q) => q.landedAt !== undefined && q.landedAt - q.startAt <= TAIL_WINDOW_MICROS,
      );
      if (!off) continue;
      out.push({
        kind: 'account-stale-page',
        detail: `page #${p.id} of ${p.owner}'s followers on instance ${p.writer} at ${p.startAt} showed ${m}, deactivated by PUT #${off.id} acknowledged at ${off.endAt}`,
      });
    }
    if (
      p.members &&
      accounts.some((m) => switchedBefore(puts, m, 'state', 'deactivated', p.startAt - PAGE_BOUND_MICROS))
    )
      reach.pages++;
  }
  return { violations: out, reach };
}
