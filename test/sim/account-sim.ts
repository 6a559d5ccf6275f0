/**
 * The accounts' part of a whole-service schedule (`pair-sim.ts` with `service: true`): PUTs that
 * name some of `private`, `hide_lists`, `state` and `username`, one account's PUTs at once on
 * several instances in half the schedules, and what the contract (Part 4) promises of them,
 * checked on the final rows and on every pair call of the schedule.
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
 *
 * 6. Renames. A PUT names `username` (in a fraction of the PUTs, `FeedKnobs.renameP`): one of a few
 *    names every account of the schedule may want (`n1`, `N1` — the same name, names are unique
 *    whatever their case — and `n2`); a change of its name's case only; its first name back;
 *    another account's first name (taken, unless released); or a name of its own. In a quarter of
 *    those schedules every writer's first call renames an account of its own to `n1` or `N1`, all
 *    at the start (`FeedKnobs.nameRace`): accounts race for one free name. The PUT claims a new
 *    name (`INSERT INTO usernames … IF NOT EXISTS` on the lower-cased name, before it takes its
 *    version; a case-only change keeps its claim), refuses the PUT as taken (409, nothing written)
 *    when another account holds it, and after writing releases the names the row it reads back
 *    does not use: its old name, and its claim when a concurrent rename won (`accounts.ts`). The
 *    checks, on the final rows:
 *    - `username` follows rule 1 like every field;
 *    - no two accounts' stored names are one name (compared lower-cased);
 *    - every account's stored name is claimed by that account (else another could claim it) —
 *      except where the release race took the claim (not held, counted: `RenameReach.lostClaims`).
 *      The race, in `Accounts.write`: PUT A of an account renames it away from N (N → M), PUT B
 *      of the same account, on another instance, reads A's row and renames it back to N (or only
 *      changes N's case, which keeps the claim): B's claim of N finds the account already holding
 *      it and writes nothing; A reads its row back before B's cells land, sees M, and releases N
 *      (`IF user_id = ?` holds); B's cells win. The account is then named N with no claim, and
 *      another account may claim N and take it (then one name is held twice, counted the same
 *      way). The check tells it apart: a PUT of the account released N (its condition held)
 *      after another PUT of it that named N had started, and that one had not answered before the
 *      releasing PUT started;
 *    - every claim row names a schedule's account, whose stored name it is — or it is an orphan
 *      (its holder's row uses another name), which is what the repair sweep releases
 *      (`orphan_claim`, `repair-sweep.ts`: a claim its holder's row does not use, claimed over 60
 *      s ago). An orphan is allowed only of an account one of whose PUTs did not complete (answered
 *      an error other than the name being taken, or never answered) or two of whose PUTs
 *      overlapped: a PUT that ran alone and completed released every name it left itself. In the
 *      schedules whose repair runs the sweep (its clock is the real one, so every claim is old to
 *      it), no orphan is left after it and every stored name is still claimed by its account.
 *    - List rows show each member's stored name, once every rename's fan-out has run to completion
 *      (`rename-fanout.ts`), checked where the projections are: strictly when the schedule had no
 *      statement fault (every write within the write path's bound, which the fan-out's start
 *      waits out), after the repair otherwise (a write landed a minute late may carry a name read
 *      before the rename and land after the walk passed its row; the repair rewrites the rows
 *      with the names it reads). Not held, counted (`RenameReach.lateRows`): a row whose plain name
 *      was written by a write that landed more than the bound after it was sent (a hint's late
 *      landing: it read the old name before the rename and lands after the walk passed), the
 *      limit `rename-fanout.ts` names — until the pair's next write, since a repair re-puts the
 *      row at the same write time and its name loses the tie to one that sorts after it (`u11`
 *      over `n2`). A row with no name is not held to it either, and counted
 *      (`RenameReach.unnamedRows`): a page reads such a member's row (`page-members.ts`), so it
 *      shows the stored name too. Such rows exist: a put writes its row's name one below the
 *      row's write time, and when an earlier write of the pair deleted that row at exactly that
 *      time (its version one below the put's, as the write path makes them), the delete wins the
 *      tie and takes the name, the row staying.
 *    The instances' own fan-out runs sleep on real timers (`runRenameFanout`'s default; the
 *    service's `Timers` do not reach the account tasks), which a schedule cannot drive, so their
 *    stores show them no task (`hideRenameTasks`) and a fan-out worker runs each renamed account's
 *    task on the schedule's time instead, as a restarted instance's resume would, from when the
 *    PUT answers (`RenameWorker`); what is left when the schedule ends runs to completion then.
 *    The planted `rename-skips-claim` writes the name without its claim: two accounts can then
 *    end with one name.
 */

/** A page shows a deactivation acknowledged this long before it started (µs): the registry's and caches' bound. */
const PAGE_BOUND_MICROS = 1_000_000;

/** A deactivation whose cells landed within this of its PUT's start is in every tail's window (µs). */
const TAIL_WINDOW_MICROS = 2_000_000;

import { runRenameFanout } from '../../src/graph/accounts/rename-fanout.js';
import { StoreUnavailableError } from '../../src/model/errors.js';
import { plainUsername } from '../../src/model/row-username.js';
import type { Position, UserId, UserRecord } from '../../src/model/types.js';
import type { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import type { Scheduler } from './scheduler.js';

/** What one simulated PUT names (every field optional; at least one named). */
export interface AccountPut {
  private?: boolean;
  hideLists?: boolean;
  state?: UserRecord['state'];
  username?: string;
}

export const PUT_FIELDS = ['private', 'hideLists', 'state', 'username'] as const;
type PutField = (typeof PUT_FIELDS)[number];

/** The `users` column each field's write sets (how a statement is told to have written it). */
const COLUMNS: Record<string, PutField> = {
  private: 'private',
  hide_lists: 'hideLists',
  state: 'state',
  username: 'username',
};

/** The field an `UPDATE users` statement writes, or null for another statement. */
export function writtenField(query: string): PutField | null {
  const m = /^UPDATE users USING TIMESTAMP \? SET (\w+) =/.exec(query);
  return m ? (COLUMNS[m[1] as string] ?? null) : null;
}

/**
 * A PUT as the harness draws it from what it believes stands (the acknowledged PUTs): mostly a
 * flip of `private`, sometimes `hide_lists`, with chance `stateP` a flip of `state`, with chance
 * `rename.p` a new `username` (`drawName`; no draw when it is 0).
 */
export function drawPut(
  sched: Scheduler,
  believed: { private: boolean; state: UserRecord['state']; username: string },
  stateP: number,
  rename: { p: number; account: UserId; others: readonly UserId[] } = { p: 0, account: 0n, others: [] },
): AccountPut {
  const put: AccountPut = {};
  if (sched.chance(0.7)) put.private = !believed.private;
  if (sched.chance(0.3)) put.hideLists = sched.chance(0.5);
  if (sched.chance(stateP)) put.state = believed.state === 'active' ? 'deactivated' : 'active';
  if (rename.p > 0 && sched.chance(rename.p))
    put.username = drawName(sched, rename.account, believed.username, rename.others);
  if (Object.keys(put).length === 0) put.private = !believed.private;
  return put;
}

/** The names any account of a schedule may rename to (`n1` and `N1` are one name: unique whatever the case). */
export const SHARED_NAMES = ['n1', 'N1', 'n2'] as const;

/** `name` with its first letter's case flipped (a case-only rename). */
const flipCase = (name: string) => {
  const c = name.charAt(0);
  const flipped = c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase();
  return flipped + name.slice(1);
};

/**
 * A rename's name (see the note, 6): a shared name (two accounts may race for it), the current
 * name's case flipped, the account's first name, another account's first name, or its own.
 */
export function drawName(
  sched: Scheduler,
  account: UserId,
  current: string,
  others: readonly UserId[],
): string {
  const r = sched.random();
  if (r < 0.45) return sched.pick(SHARED_NAMES);
  if (r < 0.6) return flipCase(current);
  if (r < 0.75) return `u${account}`;
  if (r < 0.85 && others.length > 0) return `u${sched.pick(others)}`;
  return `u${account}r${sched.int(1, 2)}`;
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
  /** What it answered when it failed (the error's name; none: acknowledged, or never answered). */
  error?: string;
  /** The fields whose cell write it sent (it may have landed even if the PUT failed). */
  wrote: ReadonlySet<PutField>;
  /** When the node applied its cells (true time, µs), if it did. */
  landedAt?: number;
  /** The name claims it released (lower-cased; the release's condition held), and when. */
  released?: readonly { name: string; at: number }[];
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

export type AccountRow = {
  private: boolean;
  hideLists: boolean;
  state: UserRecord['state'];
  username: string;
};

export interface AccountViolation {
  kind:
    | 'account-field'
    | 'account-registry'
    | 'account-privacy'
    | 'account-deactivated'
    | 'account-stale-page'
    | 'account-username-unique'
    | 'account-claim'
    | 'account-rename-rows';
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

/** How much of the renames' part of the note (6) a schedule exercised. */
export interface RenameReach {
  /** Acknowledged PUTs that changed a name. */
  renames: number;
  /** PUTs of two accounts naming one name (lower-cased) that overlapped. */
  races: number;
  /** Renames refused because another account held the name. */
  taken: number;
  /** List rows that show a name other than their member's first one (the fan-out reached them). */
  renamedRows: number;
  /** List rows without a name (the note, 6: served by reading the member's row). */
  unnamedRows: number;
  /** List rows left with an old name by a write that landed outside the bound (the note, 6). */
  lateRows: number;
  /** Accounts whose name's claim the release race took (the note, 6: a known gap, not held). */
  lostClaims: number;
  /** Orphan claims at the end, before any repair (the sweep releases them where it runs). */
  orphans: number;
}

/** A claim row of `usernames`: the lower-cased name and its holder. */
export interface ClaimRow {
  name: string;
  holder: UserId;
}

/** A list row's member and the name it shows (the cell as stored: plain or a rename's tagged cell). */
export interface NamedRow {
  table: string;
  owner: UserId;
  member: UserId;
  cell: string | null;
  /** Whether the name cell was written by a write that landed outside the write path's bound. */
  late: boolean;
}

/**
 * Whether `id`'s claim of `name` (lower-cased) went to the release race the note names (6): a PUT
 * of `id` released it while another PUT of `id` that named it was running beside it (started
 * before the release, not answered before the releasing PUT started).
 */
function lostToRelease(puts: readonly PutRecord[], id: UserId, name: string): boolean {
  return puts.some(
    (p) =>
      p.account === id &&
      (p.released ?? []).some(
        (r) =>
          r.name === name &&
          puts.some(
            (q) =>
              q !== p &&
              q.account === id &&
              q.put.username?.toLowerCase() === name &&
              q.startAt < r.at &&
              (q.endAt < 0 || q.endAt > p.startAt),
          ),
      ),
  );
}

/**
 * The name checks of the note (6) but rule 1 (checked with the other fields): one name per
 * account, each stored name claimed by its account, orphan claims only where a PUT left one
 * (`swept`: after the repair sweep, none). What the release race explains is returned apart
 * (`lost`), not as a violation.
 */
export function checkClaims(
  stored: ReadonlyMap<UserId, AccountRow>,
  claims: readonly ClaimRow[],
  puts: readonly PutRecord[],
  swept = false,
): { violations: AccountViolation[]; lost: string[]; orphans: number } {
  const out: AccountViolation[] = [];
  const lost: string[] = [];
  let orphans = 0;
  const when = swept ? ' after the repair sweep' : '';
  const claimOf = new Map(claims.map((c) => [c.name, c.holder]));
  const holders = new Map<string, UserId[]>();
  for (const [id, row] of stored) {
    const name = row.username.toLowerCase();
    holders.set(name, [...(holders.get(name) ?? []), id]);
  }
  for (const [name, ids] of holders) {
    if (ids.length < 2) continue;
    const detail = `accounts ${ids.join(', ')} all hold the name ${name}${when}`;
    // Taken again after the race lost one holder's claim: every holder but the claim's lost it so.
    if (ids.every((id) => id === claimOf.get(name) || lostToRelease(puts, id, name))) lost.push(detail);
    else out.push({ kind: 'account-username-unique', detail });
  }
  for (const [id, row] of stored) {
    const name = row.username.toLowerCase();
    const holder = claimOf.get(name);
    if (holder === id) continue;
    const detail = `${id}'s name ${row.username} is ${holder === undefined ? 'not claimed' : `claimed by ${holder}`}${when}`;
    if (lostToRelease(puts, id, name)) lost.push(detail);
    else out.push({ kind: 'account-claim', detail });
  }
  for (const c of claims) {
    const row = stored.get(c.holder);
    if (row?.username.toLowerCase() === c.name) continue;
    orphans++;
    const mine = puts.filter((p) => p.account === c.holder);
    const left = mine.find((p) => !p.acked && p.error !== 'UsernameTakenError');
    const overlapped = mine.some((p) =>
      mine.some((q) => q !== p && q.startAt < p.endAt && p.startAt < q.endAt),
    );
    if (!row || swept || (!left && !overlapped))
      out.push({
        kind: 'account-claim',
        detail:
          `the claim of ${c.name} by ${c.holder} (whose name is ${row?.username ?? 'none'}) is an orphan${when}` +
          (row && !swept ? ': every PUT of the account ran alone and completed' : ''),
      });
  }
  return { violations: out, lost, orphans };
}

/**
 * Every list row that carries a name shows its member's stored name (the note, 6: the fan-outs
 * have run); rows without one are counted (`unnamedRows`).
 */
export function checkRenamedRows(
  stored: ReadonlyMap<UserId, AccountRow>,
  rows: readonly NamedRow[],
  how: string,
): { violations: AccountViolation[]; renamedRows: number; unnamedRows: number; lateRows: number } {
  const out: AccountViolation[] = [];
  let renamedRows = 0;
  let unnamedRows = 0;
  let lateRows = 0;
  for (const r of rows) {
    const want = stored.get(r.member)?.username;
    if (r.cell === null) {
      unnamedRows++;
      continue;
    }
    const shown = plainUsername(r.cell);
    if (shown !== `u${r.member}`) renamedRows++;
    if (shown === want) continue;
    // A put's plain name from a write that landed past the bound the fan-out waits out: the limit
    // `rename-fanout.ts` names (until the pair's next write; a repair's put at the same write time
    // loses the tie to a name that sorts after its own).
    if (r.late && r.cell === shown) {
      lateRows++;
      continue;
    }
    out.push({
      kind: 'account-rename-rows',
      detail: `${r.table} row of ${r.owner} for ${r.member} shows ${shown} (cell ${r.cell}), its name is ${want} (${how})`,
    });
  }
  return { violations: out.slice(0, 8), renamedRows, unnamedRows, lateRows };
}

/** The renames' reach of a schedule's PUTs (`rows`: what `checkRenamedRows` counted). */
export function renameReach(
  puts: readonly PutRecord[],
  rows: { renamedRows: number; unnamedRows: number; lateRows: number },
  claims: { lostClaims: number; orphans: number },
): RenameReach {
  const naming = puts.filter((p) => p.put.username !== undefined);
  const lower = (p: PutRecord) => (p.put.username as string).toLowerCase();
  return {
    renames: naming.filter((p) => p.acked && p.wrote.has('username')).length,
    races: naming.filter((p) =>
      naming.some(
        (q) => q.account !== p.account && lower(q) === lower(p) && q.startAt < p.endAt && p.startAt < q.endAt,
      ),
    ).length,
    taken: naming.filter((p) => p.error === 'UsernameTakenError').length,
    ...rows,
    ...claims,
  };
}

/**
 * A writer instance's store as its own rename fan-outs see it: no `rename_fanout` task (they would
 * sleep on real timers; the note, 6). A PUT naming an unchanged name then restarts none either.
 */
export function hideRenameTasks(store: CassandraGraphStore): CassandraGraphStore {
  return new Proxy(store, {
    get: (t, k, r) =>
      k === 'getAccountTask'
        ? (id: UserId, task: string) =>
            task === 'rename_fanout' ? Promise.resolve(null) : t.getAccountTask(id, task as never)
        : Reflect.get(t, k, r),
  });
}

/**
 * The rename fan-out as a worker runs it on the schedule's time (the note, 6): one run per account
 * at a time, asked to run again when a rename comes while it runs (as `Accounts` starts its own),
 * over a store without faults, on true time.
 */
export class RenameWorker {
  private readonly runs = new Map<UserId, { again: boolean }>();

  constructor(
    private readonly store: CassandraGraphStore,
    private readonly sched: Scheduler,
    private readonly onError: (detail: string) => void,
  ) {}

  /** Runs `owner`'s task (a PUT naming a username answered). */
  trigger(owner: UserId): void {
    const running = this.runs.get(owner);
    if (running) {
      running.again = true;
      return;
    }
    const state = { again: false };
    this.runs.set(owner, state);
    const { sched } = this;
    void (async () => {
      try {
        do {
          state.again = false;
          await runRenameFanout(this.store, owner, {
            clock: () => BigInt(Math.floor(sched.now)),
            sleep: (ms) => sched.sleep(ms * 1000),
          });
        } while (state.again);
      } catch (e) {
        if (!(e instanceof StoreUnavailableError))
          this.onError(
            `the rename fan-out of ${owner} threw ${e instanceof Error ? (e.stack ?? e.message) : e}`,
          );
      } finally {
        this.runs.delete(owner);
      }
    })();
  }
}

/**
 * Runs every `rename_fanout` task left to completion at `from` (µs), on a clock its waits move on:
 * what an instance's resume does once the schedule is over. Returns how many it ran.
 */
export async function completeRenames(store: CassandraGraphStore, from: Position): Promise<number> {
  let now = from;
  const o = {
    clock: () => now,
    sleep: async (ms: number) => {
      now += BigInt(Math.ceil(ms * 1000));
    },
  };
  const tasks = (await store.listAccountTasks()).filter((t) => t.task === 'rename_fanout');
  for (const t of tasks) await runRenameFanout(store, t.userId, o);
  return tasks.length;
}
