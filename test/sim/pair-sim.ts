/**
 * One schedule of the pair-protocol simulation: 2–6 app servers (each its own `GraphService`,
 * `ListService` and `CassandraGraphStore` over its own simulated driver, its own skewed wall clock
 * and monotonic clock) running live and replayed mutations on 1–3 pairs against one simulated
 * Cassandra node, under the faults the schedule's knobs allow; then the invariant.
 *
 * Design note — the invariant, checked once every writer has stopped (finished or crashed) and
 * every statement in flight has landed or been dropped:
 *
 * 1. History. Let H be the stored checkpoint's horizon, S the stored ops above it, A the ops whose
 *    call resolved (2xx) and U the ops of calls that failed after sending their append (503,
 *    timeout, crash) and whose append the node applied (the simulation knows). Every op of A above
 *    H is in S; every op of S is in A ∪ U; and some F with A≤H ⊆ F ⊆ (A ∪ U)≤H has exactly the
 *    checkpoint's count and folds (`foldPair`, the reference fold) to exactly the checkpoint's
 *    edges: every acknowledged op is in the stored history at its position, above the horizon or
 *    folded into the checkpoint, and nothing else is. An op refused (4xx, or 503 `pair_busy`,
 *    which is refused before its append) was never sent, so it is in neither.
 * 2. Projections. `edges_out`, `edges_in`, every list table of every user, and each list's count
 *    after a reconcile equal the fold of the stored history. Decision: strictly, without repair,
 *    when the schedule had no statement fault (slow-past-timeout, dropped, lost ack, applied twice,
 *    timeout), no crash and no call that failed after sending its append; after running the repair
 *    of every pair (`repairPair`) otherwise — a writer that dies between its append and its edge
 *    write leaves the projection behind by design (`src/graph/pair/view-writer.ts`: repair restores it).
 *
 * Diagnosis. A violation of 1 is tagged with what made a commit on its pair unsafe, from what the
 * simulation knows and the code cannot: a commit is unsafe when its op read reached the node less
 * than the write budget after the announcement it commits did (an append acknowledged within the
 * budget by a writer that read before the announcement can then land after the commit's read).
 * Why: F4 `stale-seen` — the `compact_seen` the committer read was written before that
 * announcement (a stale observation); F1 `slow-observer` — the observer's read started before the
 * announcement reached the node (its read arrived late, so `seenAt` predates visibility); F2
 * `clock-skew` — neither, so the settle measured on two different clocks was shorter than it
 * looked. F3 `torn-read` — another commit on the pair reached the node between the committer's
 * static read and its op read.
 */

import { readdirSync, readFileSync } from 'node:fs';
import { DEFAULT_CACHE_OPTIONS } from '../../src/graph/caches/graph-caches.js';
import { GraphService } from '../../src/graph/graph-service.js';
import { compareOps, foldPair, opKey } from '../../src/graph/pair/pair-fold.js';
import {
  DEFAULT_HISTORY_POLICY,
  feedLagMicros,
  type HistoryPolicy,
  settleMicros,
} from '../../src/graph/pair/pair-history.js';
import { reconcileList } from '../../src/jobs/reconcile.js';
import { repairPair } from '../../src/jobs/repair.js';
import { repairSweep } from '../../src/jobs/repair-sweep.js';
import { BucketedListService } from '../../src/lists/list-service.js';
import { isDomainError, PairBusyError, StoreUnavailableError } from '../../src/model/errors.js';
import type { EdgeRecord, ListKey, OpKind, PairOp, Position, UserId } from '../../src/model/types.js';
import { edgeKey, listIn } from '../../src/model/types.js';
import type { PairHistory } from '../../src/ports/records.js';
import type { CqlClient } from '../../src/store/cassandra/client.js';
import { CqlExecutor } from '../../src/store/cassandra/executor.js';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { CassandraLeaseStore } from '../../src/store/cassandra/lease-store.js';
import {
  type AccountPut,
  type AccountReach,
  type AccountRow,
  type AccountViolation,
  type ClaimRow,
  checkAccounts,
  checkClaims,
  checkRenamedRows,
  completeRenames,
  drawPut,
  hideRenameTasks,
  type NamedRow,
  type PageRecord,
  type PutRecord,
  type RenameReach,
  RenameWorker,
  renameReach,
  writtenField,
} from './account-sim.js';
import { CqlEngine } from './cql/engine.js';
import { ReplicaSet } from './cql/replicas.js';
import { parseSchema, type Schema, type Term } from './cql/syntax.js';
import {
  checkFeed,
  checkTails,
  type FeedKnobs,
  FeedLandings,
  type FeedPlant,
  type FeedReader,
  type FeedViolation,
  feedKnobsFor,
  finalRecovery,
  plantedStore,
  RECOVERY_LEASE_TTL_MS,
  type ReaderContext,
  readToEnd,
  recordTailReads,
  recoveryIsDown,
  runReader,
  runRecoveryWorker,
  simFeed,
  type TailWitness,
  tailKey,
} from './feed-sim.js';
import {
  checkReads,
  PartitionWatch,
  plantNeverExpiringUsers,
  READ_KINDS,
  type ReadKind,
  type ReadReach,
  type ReadRecord,
  type ReadViolation,
  readAnswer,
  windowStart,
} from './read-sim.js';
import { Scheduler } from './scheduler.js';
import {
  type FaultKnobs,
  NO_FAULTS,
  type ReplicaKnobs,
  type ReplicaOptions,
  SimClient,
  type StatementRecord,
} from './sim-client.js';
import { type ClockReach, clockReach, WriterClock } from './writer-clock.js';

// ---- knobs ----

/** What a schedule stresses; the search draws one per seed. */
export type Profile = 'calm' | 'skewed' | 'slow' | 'stalls' | 'chaos';

export interface SimKnobs {
  profile: Profile;
  writers: number;
  pairs: number;
  opsPerWriter: number;
  /** Each writer's wall clock is off the true time by up to ± half this (ms). */
  skewMs: number;
  /**
   * Chance a writer's wall clock steps, 1–3 times, forward or backward, each time to an offset
   * within ±S (`policy.clockSkewMs`) of true time: an NTP step inside the bound (`writer-clock.ts`).
   */
  clockStepP: number;
  requestTimeoutMs: number;
  /** Longest pause between two calls of a writer (ms). */
  thinkMaxMs: number;
  /** Chance a call is a replay at an explicit older position (an admin import), and how old at most (ms). */
  replayP: number;
  replayAgeMs: number;
  /** Chance each user is private (follows become requests). */
  privateP: number;
  faults: FaultKnobs;
  /** Chance a writer is sluggish: its stall and slow-statement chances × 4 (a loaded app server). */
  sluggishP: number;
  /** Chance a writer is laggy (a slow path to the node), and how slow: see `FaultKnobs.lagMs`. */
  laggyP: number;
  lagMs: number;
  policy: HistoryPolicy;
  /**
   * RF 3 replicas instead of one node (`cql/replicas.ts`), in about half of the whole-service
   * schedules (null in the pair-only ones and the scripted scenarios), and their faults.
   */
  replicas: ReplicaKnobs | null;
}

/** The streams of draws (`Scheduler.stream`) of the writers' clock steps: the knob's, the steps'. */
const CLOCK_KNOB_STREAM = 1;
const CLOCK_STEP_STREAM = 2;
/** The replicas' streams: whether a schedule has them and their knobs; each write's and read's fates. */
const REPLICA_KNOB_STREAM = 4;
const REPLICA_STREAM = 5;
/** The stream of a client's second deliveries of its explicit-position calls (`runSchedule`). */
const RETRY_STREAM = 6;

/** The review's policy: compactions come fast, with the production budget and clock bound (settle B + 2S). */
export const SIM_POLICY: HistoryPolicy = {
  ...DEFAULT_HISTORY_POLICY,
  compactAbove: 4,
  keep: 1,
  maxOps: 64,
  writeBudgetMs: 1_000,
  // S: every simulated clock is within ±skewMs/2 ≤ 1.5 s of true time (2 s in the F2 scenario).
  clockSkewMs: 2_000,
};

/**
 * The knobs of a seed: its first draws pick a size and a profile, so the search covers calm and
 * hostile schedules alike. Most schedules are small (the search's speed); one in ten is long
 * enough for several compactions of one pair.
 */
export function knobsFor(sched: Scheduler): SimKnobs {
  const s = sched;
  // From a stream of its own, so the other knobs' draws are those of a schedule without steps.
  const clockStepP = sched.stream(CLOCK_KNOB_STREAM).pick([0, 0, 0.5, 1]);
  // Likewise the replicas' (used only by whole-service schedules).
  const r = sched.stream(REPLICA_KNOB_STREAM);
  const replicas: ReplicaKnobs | null = r.chance(0.5)
    ? {
        missP: r.pick([0.01, 0.03, 0.08]),
        slowP: r.pick([0, 0.02, 0.1]),
        slowMaxMs: r.pick([500, 3_000]),
        hintMaxMs: 60_000,
        hintLostP: r.pick([0, 0.1, 0.3]),
        coordinatorDeathP: r.pick([0, 0.01, 0.03]),
        batchlogMaxMs: 60_000,
      }
    : null;
  const size = s.random();
  const [writers, opsPerWriter] =
    size < 0.55
      ? [s.int(2, 3), s.int(1, 3)]
      : size < 0.88
        ? [s.int(3, 5), s.int(3, 6)]
        : [s.int(4, 6), s.int(6, 10)];
  const pairs = s.pick([1, 1, 1, 2, 3]);
  const profile = s.pick<Profile>(['calm', 'skewed', 'slow', 'stalls', 'chaos', 'chaos']);
  const faults: FaultKnobs = { ...NO_FAULTS };
  let skewMs = s.pick([0, 0, 100]);
  let sluggishP = 0;
  let laggyP = 0;
  const lagMs = s.pick([600, 900, 1_200]);
  if (profile === 'skewed') {
    skewMs = s.pick([1_000, 2_000, 3_000]);
    faults.slowP = s.pick([0.02, 0.05]);
    faults.slowMaxMs = 1_000;
    sluggishP = 0.3;
  } else if (profile === 'slow') {
    faults.slowP = s.pick([0.05, 0.15, 0.3]);
    faults.slowMaxMs = s.pick([900, 1_000, 1_200]);
    faults.slowAckP = s.pick([0, 0.03]);
    sluggishP = s.pick([0, 0.3]);
    laggyP = s.pick([0, 0.3]);
  } else if (profile === 'stalls') {
    faults.stallP = s.pick([0.03, 0.08]);
    faults.stallMaxMs = s.pick([500, 1_000, 1_500]);
    sluggishP = s.pick([0, 0.3]);
  } else if (profile === 'chaos') {
    skewMs = s.pick([0, 200, 1_000, 2_000]);
    faults.stallP = s.pick([0, 0.02, 0.08]);
    faults.stallMaxMs = s.pick([300, 1_000, 1_500]);
    faults.slowP = s.pick([0, 0.02, 0.06, 0.15]);
    faults.slowMaxMs = s.pick([500, 1_000, 1_500, 3_000]);
    faults.slowAckP = s.pick([0, 0.02, 0.06]);
    faults.dropP = s.pick([0, 0, 0.01, 0.03]);
    faults.lostAckP = s.pick([0, 0, 0.01, 0.03]);
    faults.twiceP = s.pick([0, 0, 0.01, 0.03]);
    faults.crashP = s.pick([0, 0, 0.003, 0.01]);
    sluggishP = s.pick([0, 0.3]);
    laggyP = s.pick([0, 0.2]);
  }
  return {
    profile,
    writers,
    pairs,
    opsPerWriter,
    skewMs,
    clockStepP,
    requestTimeoutMs: s.pick([2_000, 5_000]),
    thinkMaxMs: s.pick([0, 10, 100, 500]),
    replayP: s.pick([0, 0.1, 0.3]),
    replayAgeMs: s.pick([1_000, 3_000]),
    privateP: s.pick([0, 0, 0.5]),
    faults,
    sluggishP,
    laggyP,
    lagMs,
    // The clock bound S each schedule's clocks keep (offsets lie within ±skewMs/2), at least 250 ms:
    // a tighter bound settles sooner (B + 2S), so calm schedules commit often.
    policy: { ...SIM_POLICY, clockSkewMs: Math.max(250, skewMs / 2) },
    replicas,
  };
}

// ---- the schema, parsed once ----

let schemaCache: Schema | null = null;

/** The schema of `cql/*.cql`, applied in file order. */
export function simSchema(): Schema {
  if (!schemaCache) {
    const dir = new URL('../../cql/', import.meta.url);
    const files = readdirSync(dir)
      .filter((f) => f.endsWith('.cql'))
      .sort();
    schemaCache = parseSchema(files.map((f) => readFileSync(new URL(f, dir), 'utf8')));
  }
  return schemaCache;
}

// ---- the store's own timer ----

/** The event store's gather of intent deletes, as far as the schedule drives it. */
// ---- what a statement does to a pair history ----

/**
 * A statement's part in the pair protocol, read from its parsed form rather than its text, so the
 * harness keeps following the store's statements when they change: a pair read (of the static
 * compaction cells, of the ops, or both), and for a write the bind positions of the op it appends,
 * the horizon it announces, the observation it records, the checkpoint it commits.
 */
interface PairRole {
  staticRead: boolean;
  opsRead: boolean;
  append?: { position: number; source: number; kind: number };
  announce?: number;
  observe?: number;
  commit?: { horizon: number; state: number };
}

const ROLES = new Map<string, PairRole>();

function pairRole(engine: CqlEngine, query: string): PairRole {
  let role = ROLES.get(query);
  if (role) return role;
  const s = engine.statement(query);
  role = { staticRead: false, opsRead: false };
  const bind = (t: Term | undefined) => (t?.k === 'bind' ? t.i : undefined);
  if (s.table === 'pair_ops') {
    if (s.kind === 'select') {
      const cols = new Set(s.selectors.map((x) => (x.k === 'col' ? x.col : '')));
      role.staticRead = cols.has('compact_seen') || cols.has('cp_state');
      role.opsRead = cols.has('position');
    } else if (s.kind === 'insert') {
      const at = (c: string) => bind(s.values[s.cols.indexOf(c)]);
      const [position, source, kind] = [at('position'), at('source_id'), at('kind')];
      if (position !== undefined && source !== undefined && kind !== undefined)
        role.append = { position, source, kind };
    } else if (s.kind === 'update') {
      const set = (c: string) =>
        bind(s.assignments.find((a) => a.k === 'set' && a.col === c)?.term as Term | undefined);
      role.announce = set('compact_to');
      role.observe = set('compact_seen');
      const [horizon, state] = [set('cp_horizon'), set('cp_state')];
      if (horizon !== undefined && state !== undefined) role.commit = { horizon, state };
    }
  }
  ROLES.set(query, role);
  return role;
}

// ---- the ledger ----

const METHODS = {
  follow: { weight: 4, inbound: false, kind: 'follow' },
  unfollow: { weight: 2, inbound: false, kind: 'unfollow' },
  block: { weight: 2, inbound: false, kind: 'block' },
  unblock: { weight: 2, inbound: false, kind: 'unblock' },
  mute: { weight: 1, inbound: false, kind: 'mute' },
  unmute: { weight: 1, inbound: false, kind: 'unmute' },
  addCloseFriend: { weight: 1, inbound: false, kind: 'close_friend_add' },
  removeCloseFriend: { weight: 1, inbound: false, kind: 'close_friend_remove' },
  removeFollower: { weight: 1, inbound: true, kind: 'remove_follower' },
  acceptRequest: { weight: 2, inbound: true, kind: 'accept' },
  declineRequest: { weight: 1, inbound: true, kind: 'decline' },
  restrict: { weight: 1, inbound: false, kind: 'restrict' },
  unrestrict: { weight: 1, inbound: false, kind: 'unrestrict' },
} as const satisfies Record<string, { weight: number; inbound: boolean; kind: OpKind }>;

type Method = keyof typeof METHODS;
const bag = (ms: readonly Method[]): Method[] =>
  ms.flatMap((m) => Array.from({ length: METHODS[m].weight }, () => m));
/** The pair-only schedules' calls (their seeds replay as recorded), and the whole service's. */
const METHOD_BAG = bag(
  (Object.keys(METHODS) as Method[]).filter((m) => m !== 'restrict' && m !== 'unrestrict'),
);
const SERVICE_BAG = bag(Object.keys(METHODS) as Method[]);

type Outcome = 'pending' | 'ok' | 'refused' | 'busy' | 'unavailable' | 'crashed' | 'error';

export interface CallRecord {
  id: number;
  writer: number;
  /** The call's index among its writer's calls. */
  index: number;
  /** A pair method, or an account PUT (whole-service schedules; `put` is its input). */
  method: Method | 'putUser';
  put?: AccountPut;
  /**
   * The fields whose cell write a PUT sent; set once it sent one (so its `user.updated` event may
   * stand).
   */
  wroteFields?: Set<'private' | 'hideLists' | 'state' | 'username'>;
  /** True time the node applied a PUT's cells. */
  userWriteAppliedAt?: number;
  /** A PUT's write of its cells (when it answered: the instance dropped the row after that). */
  cellsWrite?: StatementRecord;
  /** A PUT's releases of name claims. */
  releases?: StatementRecord[];
  actor: UserId;
  other: UserId;
  pair: string;
  /** The op's edge and kind (the position is chosen by the service, or `explicit`). */
  sourceId: UserId;
  targetId: UserId;
  kind: OpKind;
  explicit?: Position;
  /** The call this one delivers again (a client's hedge or retry through another instance). */
  retryOf?: number;
  startAt: number;
  endAt: number;
  outcome: Outcome;
  error?: string;
  position?: Position;
  duplicate?: boolean;
  /** The op its append sent, and whether the node applied that append. */
  appended?: PairOp & { stmt: number };
  appendApplied: boolean;
  /** True time the node first applied the append. */
  appendAppliedAt?: number;
  /** True time of the first read's start, and when its static and op reads reached the node. */
  readAt?: number;
  staticApplied?: number;
  opsApplied?: number;
  staticMeta?: Record<string, { ts: bigint; at: number; by: number }>;
  /** Every pair read of the call (the first read, re-reads): when its two SELECTs reached the node. */
  reads: { calledAt: number; staticAt?: number; opsAt?: number }[];
  /** Statements of the call so far, by kind (scripted delays). */
  nth: Map<string, number>;
}

/** An op an account task appended (accepting pending requests after a flip to public). */
export type TaskOp = PairOp & { stmt: number; call: number; pair: string; applied: boolean };

export interface CommitRecord {
  pair: string;
  call: number;
  stmt: number;
  horizon: Position;
  state: string;
  applied: number[];
}

export type FindingTag =
  | 'F1-slow-observer'
  | 'F2-clock-skew'
  | 'F3-torn-read'
  | 'F4-stale-seen'
  | 'unexplained';

export interface Violation {
  kind:
    | 'lost-acked'
    | 'phantom-op'
    | 'checkpoint'
    | 'refused-in-effect'
    | 'projection'
    | 'count'
    | 'error'
    | 'stuck'
    | FeedViolation['kind']
    | AccountViolation['kind']
    | ReadViolation['kind'];
  pair?: string;
  detail: string;
}

export interface ScheduleResult {
  seed: number;
  knobs: SimKnobs;
  violations: Violation[];
  tags: FindingTag[];
  repaired: boolean;
  /** A whole-service schedule's feed: its knobs, readers and what the final recovery resolved. */
  feed?: {
    knobs: FeedKnobs;
    readers: { pages: number; failed: number; refused: number; events: number; waited: number }[];
    events: number;
    recovered: { present: number; fenced: number };
    /** The recovery worker's pauses holding the lease (`FeedKnobs.lease`): when, µs after the start, and how long. */
    pauses: { atMs: number; forMs: number }[];
    /** How much of the accounts' checks the schedule exercised. */
    accounts: AccountReach;
    /** How much of the renames' checks, and of the cached reads' (`read-sim.ts`). */
    renames: RenameReach;
    reads: ReadReach;
    /** Events of the final feed held to an instance's tail (`checkTails`), summed over instances. */
    tailEvents: number;
  };
  stats: {
    calls: number;
    acked: number;
    statements: number;
    commits: number;
    virtualMs: number;
    inconclusive: number;
    /** Lists whose served count was off the fold before a reconcile (counter drift). */
    reconciled: number;
    /** Commits that read less than the write budget after the announcement became visible, by cause. */
    unsafeCommits: Partial<Record<FindingTag, number>>;
    /** The writers' clock steps (`writer-clock.ts`). */
    clock: ClockReach;
    /**
     * Second deliveries of explicit-position calls (`retryOf`): how many, how many started while
     * the first was at work, and how many appended beside a first that appended too.
     */
    again: { calls: number; overlapping: number; bothAppended: number };
  };
  trace: () => string;
}

/** What the second deliveries of a schedule reached (`stats.again`). */
function againReach(calls: readonly CallRecord[]): ScheduleResult['stats']['again'] {
  const again = calls.filter((c) => c.retryOf !== undefined);
  const first = (c: CallRecord) => calls[c.retryOf as number] as CallRecord;
  return {
    calls: again.length,
    overlapping: again.filter((c) => first(c).endAt < 0 || c.startAt < first(c).endAt).length,
    bothAppended: again.filter((c) => c.appended !== undefined && first(c).appended !== undefined).length,
  };
}

const START = 1_700_000_000_000_000;
const USERS: UserId[] = [11n, 12n, 13n, 14n];
const pairKey = (a: UserId, b: UserId) => (a < b ? `${a}|${b}` : `${b}|${a}`);

/**
 * A named scenario: writers on the pair 11|12 with no random fault, each call at a fixed true time
 * (ms after the start), an explicit position given as ms after the start, and the delays of chosen
 * statements fixed: `delays(writer, call index, statement, nth such statement in the call)`, where
 * `statement` is `static` / `ops` (the pair reads), `append`, or `other`.
 */
export interface Script {
  writers: {
    skewMs?: number;
    calls: {
      atMs: number;
      method: Method;
      actor: UserId;
      other: UserId;
      positionMs?: number;
      /** With `service`: instead of `method`, a PUT of `actor`'s account naming these fields. */
      put?: AccountPut;
    }[];
  }[];
  delays?: (
    writer: number,
    call: number,
    statement: 'static' | 'ops' | 'append' | 'marks' | 'view' | 'resolve' | 'other',
    nth: number,
  ) => { stallMs?: number; reachMs?: number; backMs?: number; crash?: boolean } | undefined;
  /** With `service`: the span (ms after the start) in which no recovery pass resolves anything. */
  recoveryDown?: { fromMs: number; toMs: number };
  /** With `service`: every reader's clock offset (ms). */
  readerSkewMs?: number;
  /** With `service`: the first reader's clock steps by `byMs` at `atMs` after the start (and stays). */
  readerStep?: { atMs: number; byMs: number };
  /** With `service`: when the readers start (ms after the start). */
  readerStartMs?: number;
  /** With `service`: false, no reader long-polls. */
  readerWaits?: boolean;
  /** With `service`: every reader's page size. */
  readerLimit?: number;

  /** With `service`: the recovery under its lease (`FeedKnobs.lease`), its pause in ms after the start. */
  lease?: { pause: { atMs: number; forMs: number } | null };
}

/** Whether `r` is a PUT's write of the user row's cells (the hooks record when it is sent and applied). */
const putCells = (call: CallRecord, r: StatementRecord) =>
  call.method === 'putUser' && r.queries.some((q) => q.query.startsWith('UPDATE users '));

/** The fixed delays of a scripted statement, in µs. */
function scriptDelay(
  engine: CqlEngine,
  r: StatementRecord,
  calls: readonly CallRecord[],
  script: Script,
): { stall?: number; reach?: number; back?: number; crash?: boolean } | undefined {
  const call = calls[r.call];
  if (!call || !script.delays) return undefined;
  const role = pairRole(engine, r.queries[0]?.query ?? '');
  const has = (re: RegExp) => r.queries.some((q) => re.test(q.query));
  const what = role.staticRead
    ? 'static'
    : role.opsRead
      ? 'ops'
      : role.append
        ? 'append'
        : has(/^INSERT INTO feed_intents/)
          ? 'marks'
          : has(/^INSERT INTO graph_events/)
            ? 'view'
            : has(/^DELETE FROM feed_intents/)
              ? 'resolve'
              : 'other';
  const nth = call.nth.get(what) ?? 0;
  call.nth.set(what, nth + 1);
  const d = script.delays(call.writer, call.index, what, nth);
  if (!d) return undefined;
  const us = (ms?: number) => (ms === undefined ? undefined : ms * 1000);
  const out: {
    stall?: number;
    reach?: number;
    back?: number;
    crash?: boolean;
  } = {};
  if (d.crash) out.crash = true;
  if (d.stallMs !== undefined) out.stall = us(d.stallMs) as number;
  if (d.reachMs !== undefined) out.reach = us(d.reachMs) as number;
  if (d.backMs !== undefined) out.back = us(d.backMs) as number;
  return out;
}

export interface ScheduleOptions {
  /** Replace some of the seed's knobs. */
  knobs?: (k: SimKnobs) => SimKnobs;
  /** Run a named scenario instead of the seed's random calls (the seed still draws the rest). */
  script?: Script;
  /**
   * A whole-service schedule: feed readers throughout, each writer instance running the intent
   * recovery, writes that land late, and the feed's invariant (`feed-sim.ts`).
   */
  service?: boolean;
  /** One rule of the feed's design switched off (with `service`). */
  plant?: FeedPlant;
  /** Replace some of the seed's feed knobs (with `service`; shrinking). */
  feedKnobs?: (k: FeedKnobs) => FeedKnobs;
  /** Told the schedule's calls and commits before the check (diagnosis tooling). */
  inspect?: (calls: readonly CallRecord[], commits: readonly CommitRecord[]) => void;
}

/**
 * A broken schedule for a person: its violations (the first 8), what the diagnosis recognised, its
 * feed's figures (whole-service schedules), how to replay it, and its trace (at most 120 lines).
 */
export function reportSchedule(r: ScheduleResult, again: string): string {
  const lines = r.violations
    .slice(0, 8)
    .map((v) => `  ${v.kind}${v.pair ? ` on ${v.pair}` : ''}: ${v.detail}`);
  const trace = r.trace().split('\n');
  const shown = trace.length > 120 ? [...trace.slice(0, 1), '  …', ...trace.slice(-119)] : trace;
  return [
    `seed ${r.seed} broke the invariant (${r.violations.length} violations; findings: ${r.tags.join(', ') || 'none recognised'}; ${r.repaired ? 'after repair' : 'no repair'})`,
    `replay: ${again}`,
    ...lines,
    ...(r.feed ? [`feed: ${JSON.stringify(r.feed, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`] : []),
    'trace (true time since the start; w = writer, # = call):',
    ...shown,
  ].join('\n');
}

/** Runs one schedule of `seed` and checks the invariant. */
export async function runSchedule(seed: number, o: ScheduleOptions = {}): Promise<ScheduleResult> {
  const sched = new Scheduler(seed, START);
  let knobs = knobsFor(sched);
  // Replicas only in the whole-service schedules, never in a scripted scenario (it replays as recorded).
  if (!o.service || o.script) knobs = { ...knobs, replicas: null };
  if (o.knobs) knobs = o.knobs(knobs);
  if (o.script)
    knobs = {
      ...knobs,
      profile: 'calm',
      writers: o.script.writers.length,
      pairs: 1,
      skewMs: 0,
      clockStepP: 0,
      replayP: 0,
      privateP: 0,
      thinkMaxMs: 0,
      faults: { ...NO_FAULTS },
      sluggishP: 0,
      laggyP: 0,
      // A script sets each writer's clock offset itself (up to 2 s): the production bound holds it.
      policy: SIM_POLICY,
    };
  let feedKnobs = o.service
    ? feedKnobsFor(
        sched,
        knobs.profile === 'chaos' || knobs.profile === 'slow',
        START,
        knobs.policy.clockSkewMs * 1000,
      )
    : null;
  if (feedKnobs && o.feedKnobs) feedKnobs = o.feedKnobs(feedKnobs);
  // Scripted scenarios replay as recorded: the recovery unleased, unless the script says.
  if (feedKnobs && o.script) {
    const l = o.script.lease;
    const pause = l?.pause ? { at: START + l.pause.atMs * 1000, micros: l.pause.forMs * 1000 } : null;
    feedKnobs = { ...feedKnobs, lease: l ? { pause } : null };
  }
  const readerStep = o.script?.readerStep;
  if (feedKnobs && readerStep)
    feedKnobs = {
      ...feedKnobs,
      readerStep: { at: START + readerStep.atMs * 1000, by: readerStep.byMs * 1000 },
    };
  const down = o.script?.recoveryDown;
  if (feedKnobs && down)
    feedKnobs = {
      ...feedKnobs,
      recoveryDown: {
        from: START + down.fromMs * 1000,
        to: START + down.toMs * 1000,
      },
    };
  if (feedKnobs)
    knobs = {
      ...knobs,
      faults: {
        ...knobs.faults,
        lateP: feedKnobs.lateP,
        lateMaxMs: feedKnobs.lateMaxMs,
        batchlogLateMs: feedKnobs.batchlogLateMs,
      },
    };
  const replicaSet = knobs.replicas ? new ReplicaSet(simSchema()) : null;
  const replicas: { replicas?: ReplicaOptions } =
    replicaSet && knobs.replicas
      ? { replicas: { set: replicaSet, knobs: knobs.replicas, draws: sched.stream(REPLICA_STREAM) } }
      : {};
  // With replicas, their view: every write that landed on one (what the end's checks read).
  const engine = replicaSet ? replicaSet.view : new CqlEngine(simSchema());
  // When each feed row and each period's index entry reached each replica (the tail check's).
  const feedLandings = new FeedLandings(replicaSet ? replicaSet.engines : [engine]);
  // The instances' cached reads of user rows, edge states and counts, checked against the node
  // (`read-sim.ts`): where the instances run their caches.
  const watch = feedKnobs?.registries && feedKnobs.reads && !o.script ? new PartitionWatch(engine) : null;
  const log: StatementRecord[] = [];
  const ids = { next: 1 };
  const calls: CallRecord[] = [];
  const commits: CommitRecord[] = [];
  const taskOps: TaskOp[] = [];
  const stmtCall = new Map<number, number>();
  const violations: Violation[] = [];

  // Users and pairs.
  const nUsers = knobs.pairs === 1 ? 2 : knobs.pairs === 2 ? 3 : 4;
  const users = USERS.slice(0, nUsers);
  const privateUsers = new Set(users.filter(() => sched.chance(knobs.privateP)));
  const allPairs: [UserId, UserId][] = [];
  for (let i = 0; i < users.length; i++)
    for (let j = i + 1; j < users.length; j++) allPairs.push([users[i] as UserId, users[j] as UserId]);
  const pairs: [UserId, UserId][] = [];
  while (pairs.length < knobs.pairs) {
    const p = sched.pick(allPairs);
    if (!pairs.includes(p)) pairs.push(p);
  }

  /** A client without delay or fault at `trueNow`. */
  const direct = (trueNow: () => number) => {
    const client = new SimClient({
      engine,
      scheduler: null,
      trueNow,
      wallMicros: trueNow,
      writer: -1,
      requestTimeoutMs: knobs.requestTimeoutMs,
      faults: NO_FAULTS,
      ids,
      ...replicas,
    });
    const store = new CassandraGraphStore(client as unknown as CqlClient, {
      clock: () => BigInt(Math.floor(trueNow())),
    });
    const lists = new BucketedListService({
      store,
      cursorSecret: 'simulation-cursor-secret',
      bucketThresholds: [1_000_000_000],
      layoutCacheTtlMs: 0,
    });
    const leases = new CassandraLeaseStore(new CqlExecutor(client as unknown as CqlClient));
    return { client, store, lists, leases };
  };
  {
    const { store } = direct(() => sched.now);
    // At the schedule's time (the store's `putUser` writes at the system clock's).
    for (const id of users) {
      await store.claimUsername(`u${id}`, id);
      const fields = {
        username: `u${id}`,
        private: privateUsers.has(id),
        state: 'active',
        hideLists: false,
      } as const;
      await store.putUserFields(id, fields, BigInt(Math.floor(sched.now)) - 60_000_000n);
    }
  }

  // Hooks: what the diagnosis and the ledger need from the statements.
  const hooks = (writer: { current: number }) => ({
    call: () => writer.current,
    wantMeta: (q: string) => pairRole(engine, q).staticRead,
    onSend: (r: StatementRecord) => {
      stmtCall.set(r.id, r.call);
      const call = calls[r.call];
      if (!call) {
        // No call in flight on this writer (between calls): a background task's append.
        for (const q of r.queries) {
          const role = pairRole(engine, q.query);
          if (!role.append) continue;
          const sourceId = q.params[role.append.source] as bigint;
          const position = q.params[role.append.position] as bigint;
          const kind = q.params[role.append.kind] as OpKind;
          // The target is not among the append's binds the role names: the other of the row's pair.
          const [low, high] = [q.params[0] as bigint, q.params[1] as bigint];
          const targetId = sourceId === low ? high : low;
          taskOps.push({
            sourceId,
            targetId,
            position,
            kind,
            stmt: r.id,
            call: -1,
            pair: pairKey(low, high),
            applied: false,
          });
        }
        return;
      }
      if (call.method === 'putUser' && r.queries[0]?.query.startsWith('DELETE FROM usernames ')) {
        call.releases ??= [];
        call.releases.push(r);
      }
      if (putCells(call, r)) {
        call.cellsWrite = r;
        call.wroteFields ??= new Set();
        for (const q of r.queries) {
          const f = writtenField(q.query);
          if (f) call.wroteFields.add(f);
        }
      }
      const first = pairRole(engine, r.queries[0]?.query ?? '');
      if ((first.staticRead || first.opsRead) && call.readAt === undefined) call.readAt = r.calledAt;
      for (const q of r.queries) {
        const role = pairRole(engine, q.query);
        if (role.append) {
          const p = q.params;
          const sourceId = p[role.append.source] as bigint;
          const targetId = sourceId === call.sourceId ? call.targetId : call.sourceId;
          const op = {
            position: p[role.append.position] as bigint,
            sourceId,
            targetId,
            kind: p[role.append.kind] as OpKind,
          };
          // An op the call did not ask for (an account task's accept, run inline by a PUT or in the
          // background while another call is in flight) is a task op: in effect or not. A second
          // op of the call's own shape in one call is one too for now (a background accept of the
          // same pair as the call's): the call's answer tells which was its own (`settleOwn`).
          const own =
            call.method !== 'putUser' &&
            call.appended === undefined &&
            op.sourceId === call.sourceId &&
            pairKey(op.sourceId, op.targetId) === call.pair &&
            (op.kind === call.kind ||
              (call.method === 'follow' && (op.kind === 'follow' || op.kind === 'request')));
          if (own) call.appended = { ...op, stmt: r.id };
          else {
            const [low, high] = [p[0] as bigint, p[1] as bigint];
            const targetId = op.sourceId === low ? high : low;
            taskOps.push({
              ...op,
              targetId,
              stmt: r.id,
              call: call.id,
              pair: pairKey(low, high),
              applied: false,
            });
          }
        }
        if (role.commit) {
          const horizon = q.params[role.commit.horizon] as bigint;
          const state = q.params[role.commit.state] as string;
          commits.push({ pair: call.pair, call: call.id, stmt: r.id, horizon, state, applied: r.applied });
        }
      }
    },
    onApply: (r: StatementRecord, at: number) => {
      for (const t of taskOps) if (t.stmt === r.id) t.applied = true;
      const call = calls[r.call];
      if (!call) return;
      const role = pairRole(engine, r.queries[0]?.query ?? '');
      if (role.staticRead || role.opsRead) {
        let read = call.reads.find((x) => x.calledAt === r.calledAt);
        if (!read) {
          read = { calledAt: r.calledAt };
          call.reads.push(read);
        }
        if (role.staticRead) read.staticAt ??= at;
        if (role.opsRead) read.opsAt ??= at;
        if (r.calledAt === call.readAt) {
          if (role.staticRead && call.staticApplied === undefined) {
            call.staticApplied = at;
            call.staticMeta = r.result?.meta?.[0] ?? {};
          }
          if (role.opsRead) call.opsApplied ??= at;
        }
      }
      if (putCells(call, r)) call.userWriteAppliedAt ??= at;
      if (call.appended?.stmt === r.id) {
        call.appendApplied = true;
        call.appendAppliedAt ??= at;
      }
    },
  });

  /**
   * An acknowledged call's own op is the append at the position it answered: when the append taken
   * for its own is not (a task's append of the same shape came first), the two swap; when none
   * is, the call appended nothing (a duplicate) and the append is a task's.
   */
  const settleOwn = (call: CallRecord) => {
    const mine = call.appended;
    if (!mine || call.position === undefined || mine.position === call.position) return;
    const i = taskOps.findIndex(
      (t) =>
        t.call === call.id &&
        t.position === call.position &&
        t.sourceId === mine.sourceId &&
        t.kind === mine.kind,
    );
    const asTask: TaskOp = { ...mine, call: call.id, pair: call.pair, applied: call.appendApplied };
    delete call.appendAppliedAt;
    call.appendApplied = false;
    if (i < 0) {
      taskOps.push(asTask);
      delete call.appended;
      return;
    }
    const t = taskOps[i] as TaskOp;
    taskOps[i] = asTask;
    call.appended = {
      position: t.position,
      sourceId: t.sourceId,
      targetId: t.targetId,
      kind: t.kind,
      stmt: t.stmt,
    };
    call.appendApplied = t.applied;
    const at = log.find((r) => r.id === t.stmt)?.applied[0];
    if (at !== undefined) call.appendAppliedAt = at;
  };

  /** A call that threw: its outcome by the error; anything but the service's own errors is a violation. */
  const failed = (call: CallRecord, e: unknown) => {
    call.error = e instanceof Error ? e.name : String(e);
    if (e instanceof StoreUnavailableError) call.outcome = 'unavailable';
    else if (e instanceof PairBusyError) call.outcome = 'busy';
    else if (isDomainError(e)) call.outcome = 'refused';
    else {
      call.outcome = 'error';
      violations.push({
        kind: 'error',
        detail: `${call.method === 'putUser' ? 'PUT' : 'call'} #${call.id} threw ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`,
      });
    }
  };

  // Account PUTs (`account-sim.ts`): flips of `private` and `state` as the harness believes they
  // stand (acknowledged PUTs), and of `hide_lists`; a flip to public accepts pending requests
  // (task ops). One account's PUTs run one at a time unless the schedule lets them overlap.
  const believedPrivate = new Set(privateUsers);
  const believedDeactivated = new Set<UserId>();
  const believedName = new Map(users.map((id) => [id, `u${id}`]));
  // The renames' fan-out on the schedule's time (the instances' own runs see no task:
  // `account-sim.ts`, 6), on a client without faults.
  const renameWorker = feedKnobs
    ? new RenameWorker(direct(() => sched.now).store, sched, (detail) =>
        violations.push({ kind: 'error', detail }),
      )
    : null;
  let updateNonces = 0;
  const putting = new Map<UserId, number>();
  const putCall = async (
    w: number,
    index: number,
    id: UserId,
    graph: GraphService,
    current: { current: number },
    fixed?: AccountPut,
  ): Promise<CallRecord> => {
    putting.set(id, (putting.get(id) ?? 0) + 1);
    const believed = {
      private: believedPrivate.has(id),
      state: believedDeactivated.has(id) ? ('deactivated' as const) : ('active' as const),
      username: believedName.get(id) ?? `u${id}`,
    };
    const put =
      fixed ??
      drawPut(sched, believed, feedKnobs?.stateP ?? 0, {
        p: feedKnobs?.renameP ?? 0,
        account: id,
        others: users.filter((u) => u !== id),
      });
    const call: CallRecord = {
      id: calls.length,
      writer: w,
      index,
      method: 'putUser',
      put,
      actor: id,
      other: id,
      pair: `user:${id}`,
      sourceId: id,
      targetId: id,
      kind: 'follow',
      startAt: sched.now,
      endAt: -1,
      outcome: 'pending',
      appendApplied: false,
      reads: [],
      nth: new Map(),
    };
    calls.push(call);
    current.current = call.id;
    try {
      await graph.putUser({ id, ...put });
      call.outcome = 'ok';
      if (put.private === true) believedPrivate.add(id);
      else if (put.private === false) believedPrivate.delete(id);
      if (put.state === 'deactivated') believedDeactivated.add(id);
      else if (put.state === 'active') believedDeactivated.delete(id);
      if (put.username !== undefined) believedName.set(id, put.username);
    } catch (e) {
      failed(call, e);
    }
    call.endAt = sched.now;
    if (put.username !== undefined) renameWorker?.trigger(id);
    const left = (putting.get(id) ?? 1) - 1;
    if (left > 0) putting.set(id, left);
    else putting.delete(id);
    return call;
  };

  // Followers pages read by the instances, with what they showed.
  const pages: PageRecord[] = [];
  const pageCall = async (
    w: number,
    owner: UserId,
    graph: GraphService,
    current: { current: number },
  ): Promise<void> => {
    current.current = -1;
    const page: PageRecord = { id: pages.length, writer: w, owner, startAt: sched.now, members: null };
    pages.push(page);
    try {
      const p = await graph.listPage(listIn(owner, 'follows'), 50, null);
      page.members = p.items.map((i) => i.id);
    } catch (e) {
      if (!(e instanceof StoreUnavailableError) && !isDomainError(e))
        violations.push({ kind: 'error', detail: `page #${page.id} threw ${String(e)}` });
    }
  };

  // User rows, edge states and counts read through an instance's caches, each with the same read
  // made uncached on the node as it answered (`read-sim.ts`).
  const ttlMicros = DEFAULT_CACHE_OPTIONS.ttlMs * 1000;
  const reads: ReadRecord[] = [];
  const reference = watch
    ? (() => {
        const d = direct(() => sched.now);
        return new GraphService({
          store: d.store,
          lists: d.lists,
          maxFollowing: 1_000_000,
          clock: () => BigInt(Math.floor(sched.now)),
          monotonic: () => sched.now / 1000,
          historyPolicy: knobs.policy,
          setCursorSecret: 'simulation-cursor-secret',
          registry: false,
        });
      })()
    : null;
  /** The latest drop of what a read of `kind` reads by a call this instance acknowledged (`read-sim.ts`). */
  const localDrop = (w: number, kind: ReadKind, args: readonly UserId[]): number => {
    let at = Number.NEGATIVE_INFINITY;
    if (kind === 'status') return at;
    for (const c of calls) {
      if (c.writer !== w || c.endAt < 0) continue;
      if (c.method === 'putUser') {
        const cells = c.cellsWrite;
        if (c.outcome !== 'ok' || !cells || cells.outcome !== 'ok') continue;
        if (kind === 'counts' || (kind === 'user' && c.actor === args[0])) at = Math.max(at, cells.endAt);
      } else if (c.outcome !== 'crashed' && c.outcome !== 'pending') {
        const dropped =
          kind === 'relationship'
            ? c.pair === pairKey(args[0] as UserId, args[1] as UserId)
            : kind === 'counts' && (c.actor === args[0] || c.other === args[0]);
        if (dropped) at = Math.max(at, c.endAt);
      }
    }
    return at;
  };
  const cachedRead = async (
    w: number,
    graph: GraphService,
    current: { current: number },
    pw: PartitionWatch,
    ref: GraphService,
    what?: { kind: ReadKind; args: UserId[] },
  ): Promise<void> => {
    current.current = -1;
    let kind: ReadKind;
    let args: UserId[];
    if (what) ({ kind, args } = what);
    else {
      kind = sched.pick(READ_KINDS);
      const [a, b] = sched.pick(pairs);
      args = kind === 'user' || kind === 'counts' ? [sched.pick(users)] : sched.chance(0.5) ? [a, b] : [b, a];
    }
    const startAt = sched.now;
    const { from, local } = windowStart(startAt, ttlMicros, localDrop(w, kind, args));
    let got: string | null;
    try {
      got = await readAnswer(graph, kind, args);
    } catch (e) {
      violations.push({ kind: 'error', detail: `${kind} read on instance ${w} threw ${String(e)}` });
      return;
    }
    const endAt = sched.now;
    const want = await pw.reading(() => readAnswer(ref, kind, args));
    reads.push({
      id: reads.length,
      writer: w,
      kind,
      args,
      startAt,
      endAt,
      from,
      local,
      got,
      want: want.value ?? 'unavailable',
      partitions: want.partitions,
      lastWrite: want.lastWrite,
    });
  };
  /** A read now and then: a followers page, or half the time (with `reads`) a cached read. */
  const readCall = (w: number, graph: GraphService, current: { current: number }): Promise<void> =>
    watch && reference && sched.chance(0.5)
      ? cachedRead(w, graph, current, watch, reference)
      : pageCall(w, sched.pick(users), graph, current);
  /**
   * Half the time (with `reads`), the instance reads back at once what its call just changed: the
   * account's row after a PUT, the pair's relationship or an account's counts after a mutation
   * (`read-sim.ts`: nothing stale on the instance that acknowledged).
   */
  const readBack = async (
    w: number,
    graph: GraphService,
    current: { current: number },
    call: CallRecord,
  ): Promise<void> => {
    if (!watch || !reference || !sched.chance(0.5)) return;
    const kind: ReadKind =
      call.method === 'putUser' ? 'user' : sched.pick(['relationship', 'counts'] as const);
    const args = kind === 'counts' ? [sched.pick([call.actor, call.other])] : [call.actor, call.other];
    await cachedRead(w, graph, current, watch, reference, {
      kind,
      args: kind === 'user' ? [call.actor] : args,
    });
  };

  // Writers.
  const writerDone: boolean[] = [];
  const tails: TailWitness[] = [];
  let tailChecked = 0;
  const clients: SimClient[] = [];
  const clocks: WriterClock[] = [];
  const clockDraws = sched.stream(CLOCK_STEP_STREAM);
  const acked: CallRecord[] = [];
  // A client's second delivery of a call it made at an explicit position, through another
  // instance: queued as the first is sent (a hedge: both at work at once) or once the first answered
  // 503 (a retry, while the first may still land), and taken by the next writer that starts a call.
  // Whole-service schedules only, drawn from a stream of their own: a schedule with none is the
  // schedule it was.
  const retryDraws = sched.stream(RETRY_STREAM);
  const retries: { from: number; of: CallRecord }[] = [];
  const retryLater = (w: number, call: CallRecord, p: number) => {
    if (feedKnobs && call.explicit !== undefined && retryDraws.chance(p)) retries.push({ from: w, of: call });
  };
  const runWriter = async (w: number) => {
    let offset = sched.uniform(-knobs.skewMs / 2, knobs.skewMs / 2) * 1000;
    const monoOffset = sched.uniform(1e6, 2e6);
    const sluggish = sched.chance(knobs.sluggishP);
    const laggy = sched.chance(knobs.laggyP);
    const faults: FaultKnobs = {
      ...knobs.faults,
      ...(sluggish
        ? { slowP: Math.min(0.6, knobs.faults.slowP * 4), stallP: Math.min(0.6, knobs.faults.stallP * 4) }
        : {}),
      lagMs: laggy ? knobs.lagMs : 0,
    };
    const script = o.script?.writers[w];
    if (script) offset = (script.skewMs ?? 0) * 1000;
    // Its wall clock, stepped within ±S if the schedule says so (`writer-clock.ts`): drawn here, in
    // writer order, before the writer's first await.
    const clock = new WriterClock(offset, clockDraws, {
      stepP: knobs.clockStepP,
      calls: script?.calls.length ?? knobs.opsPerWriter,
      delayMicros: (knobs.thinkMaxMs + 400) * 1000,
      boundMicros: knobs.policy.clockSkewMs * 1000,
    });
    clocks[w] = clock;
    const wall = () => clock.read(sched.now);
    const current = { current: -1 };
    // The service's readings, noted per call in flight (`clockReach`: a call below an earlier one's).
    const serviceClock = () => {
      const id = current.current;
      return BigInt(Math.floor(clock.readFor(sched.now, calls[id]?.endAt === -1 ? id : -1)));
    };
    const client = new SimClient({
      engine,
      scheduler: sched,
      wallMicros: wall,
      writer: w,
      requestTimeoutMs: knobs.requestTimeoutMs,
      faults,
      hooks: hooks(current),
      log,
      ids,
      ...replicas,
      ...(o.script?.delays
        ? { override: (r: StatementRecord) => scriptDelay(engine, r, calls, o.script as Script) }
        : {}),
    });
    clients.push(client);
    const planted = plantedStore(
      new CassandraGraphStore(client as unknown as CqlClient, { clock: serviceClock }),
      o.plant,
      'writer',
      () => sched.now,
      feedKnobs?.tailPage,
    );
    // With registries on, the instance's tail reads are recorded (outside any plant: what the tail
    // was answered), for the tail check.
    const witness: TailWitness | null =
      feedKnobs?.registries && !o.script ? { instance: w, reads: [], heard: new Set() } : null;
    if (witness) tails[w] = witness;
    const store = feedKnobs
      ? hideRenameTasks(
          witness ? recordTailReads(planted, feedKnobs.tailPage, () => sched.now, witness) : planted,
        )
      : planted;
    const lists = new BucketedListService({
      store,
      cursorSecret: 'simulation-cursor-secret',
      bucketThresholds: [1_000_000_000],
      layoutCacheTtlMs: 3_600_000,
    });
    const graph = new GraphService({
      store,
      lists,
      maxFollowing: 1_000_000,
      clock: serviceClock,
      monotonic: () => sched.now / 1000 + monoOffset,
      historyPolicy: knobs.policy,
      setCursorSecret: 'simulation-cursor-secret',
      // Whole-service schedules (a third): the registry of deactivated accounts and the read caches on, the
      // feed's tail poll and their clocks on the schedule's virtual time (they stop when this
      // instance finishes or crashes). Pair-only and scripted schedules: off (they replay as
      // recorded).
      ...(feedKnobs?.registries && !o.script
        ? {
            timers: sched.timers(() => !writerDone[w] && clients[w]?.crashed !== true),
            feedTailPage: feedKnobs.tailPage,
          }
        : { registry: false }),
      // Replayable: a count shared by the instances, not random bits.
      updateNonce: () => {
        updateNonces++;
        return 1_000_000_000n + BigInt(updateNonces);
      },
    });
    if (o.plant === 'user-cache-never-expires') plantNeverExpiringUsers(graph.caches);
    // What this instance's tail passes on (its caches and registry listen beside; no read more).
    if (witness) graph.feed.subscribe((e) => witness.heard.add(tailKey(e.slot, e.source, e.target)));
    const calls_ = script?.calls.length ?? knobs.opsPerWriter;
    let recoveredAt = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < calls_; i++) {
      clock.reach(i, sched.now);
      // As every instance does (`GRAPH_INTENT_RECOVERY_MS`): a recovery pass at its start and every
      // R after, here between the writer's calls (its statements belong to no call). While the
      // recovery is down the instance's frontier still looks (here: the instance serves a feed read).
      if (feedKnobs && sched.now - recoveredAt >= feedKnobs.recoveryEveryMs * 1000) {
        recoveredAt = sched.now;
        current.current = -1;
        // Leased schedules: the instances look only, and the two workers stand for their
        // recoveries on timers of their own, competing for the lease (`runRecoveryWorker`): an
        // instance's passes here come only between its calls, so as a holder it would starve the
        // recovery through a long call while its lease renews.
        const pass =
          recoveryIsDown(feedKnobs, sched.now) || feedKnobs.lease
            ? graph.feed.read(null, 1)
            : graph.intentRecovery.runOnce();
        await pass.catch((e: unknown) => {
          if (!(e instanceof StoreUnavailableError))
            violations.push({
              kind: 'error',
              detail: `recovery pass of writer ${w} threw ${String(e)}`,
            });
        });
      }
      const think = sched.uniform(0, knobs.thinkMaxMs * 1000);
      const step = script?.calls[i];
      await sched.sleep(step ? Math.max(0, START + step.atMs * 1000 - sched.now) : think);
      if (step?.put && feedKnobs) {
        await readBack(w, graph, current, await putCall(w, i, step.actor, graph, current, step.put));
        continue;
      }
      // A race for one free name: every writer's first call renames an account of its own to it.
      if (i === 0 && !step && feedKnobs?.nameRace && feedKnobs.putP > 0 && feedKnobs.renameP > 0) {
        const id = users[w % users.length] as UserId;
        if (feedKnobs.concurrentPuts || !putting.has(id)) {
          const fixed = { username: sched.pick(['n1', 'N1']) };
          await readBack(w, graph, current, await putCall(w, i, id, graph, current, fixed));
          continue;
        }
      }
      // A read now and then (whole-service schedules with caches): a followers page, its members
      // checked against the deactivations acknowledged before it (`account-sim.ts`), or a user
      // row, an edge state or counts, checked against the node (`read-sim.ts`).
      if (feedKnobs?.registries && !step && sched.chance(feedKnobs.pageP)) {
        await readCall(w, graph, current);
        continue;
      }
      // An account PUT now and then (whole-service schedules).
      const putId = feedKnobs && !step && sched.chance(feedKnobs.putP) ? sched.pick(users) : null;
      if (putId !== null && (feedKnobs?.concurrentPuts || !putting.has(putId))) {
        await readBack(w, graph, current, await putCall(w, i, putId, graph, current));
        continue;
      }
      const taken = step ? -1 : retries.findIndex((x) => x.from !== w);
      const retry = taken < 0 ? null : (retries.splice(taken, 1)[0]?.of ?? null);
      const [a, b] = retry ? [retry.actor, retry.other] : sched.pick(pairs);
      let method =
        (retry?.method as Method | undefined) ??
        step?.method ??
        sched.pick(feedKnobs ? SERVICE_BAG : METHOD_BAG);
      let [actor, other] = retry || step ? [a, b] : sched.chance(0.5) ? [a, b] : [b, a];
      if (step) [actor, other] = [step.actor, step.other];
      let explicit: Position | undefined =
        retry?.explicit ??
        (step?.positionMs === undefined ? undefined : BigInt(START + step.positionMs * 1000));
      let replayOf: CallRecord | undefined = retry ?? undefined;
      let fresh = false;
      if (!step && !retry && sched.chance(knobs.replayP)) {
        const earlier = acked.filter((c) => c.pair === pairKey(a, b));
        if (earlier.length > 0 && sched.chance(0.3)) {
          const e = sched.pick(earlier);
          replayOf = e;
          method = e.method as Method; // a PUT is on no pair
          actor = e.actor;
          other = e.other;
          explicit = e.position;
        } else {
          explicit = BigInt(Math.floor(wall() - sched.uniform(0, knobs.replayAgeMs * 1000)));
          fresh = true;
        }
      }
      const m = METHODS[method];
      const [sourceId, targetId] = m.inbound ? [other, actor] : [actor, other];
      const kind: OpKind = method === 'follow' && believedPrivate.has(targetId) ? 'request' : m.kind;
      const call: CallRecord = {
        id: calls.length,
        writer: w,
        index: i,
        method,
        actor,
        other,
        pair: pairKey(a, b),
        sourceId,
        targetId,
        kind,
        startAt: sched.now,
        endAt: -1,
        outcome: 'pending',
        appendApplied: false,
        reads: [],
        nth: new Map(),
      };
      if (explicit !== undefined) call.explicit = explicit;
      if (retry) call.retryOf = retry.id;
      calls.push(call);
      current.current = call.id;
      if (fresh) retryLater(w, call, 0.3);
      try {
        const opts = explicit === undefined ? {} : { position: explicit };
        const r = await graph[method](actor, other, opts);
        call.position = r.position;
        settleOwn(call);
        // A follow is a request toward a private account: the service decides, its append says
        // (a replay found stored is the op it replays: as that one's append stored it, or as
        // another delivery of the same call stored it — a second delivery of a call that failed
        // before its append knows only what the sim believed).
        if (call.appended) call.kind = call.appended.kind;
        else if (r.duplicate && replayOf)
          call.kind =
            replayOf.appended?.kind ??
            calls.find(
              (c) => c.appended?.position === call.explicit && c.appended?.sourceId === call.sourceId,
            )?.appended?.kind ??
            replayOf.kind;
        call.outcome = 'ok';
        call.duplicate = r.duplicate;
        acked.push(call);
      } catch (e) {
        failed(call, e);
        if (call.outcome === 'unavailable' && !retry) retryLater(w, call, 0.5);
      }
      call.endAt = sched.now;
      await readBack(w, graph, current, call);
    }
    // With registries on, the instance reads for 3 s more (a read every 0.1–0.4 s), so reads
    // come after the last deactivations and PUTs by more than the 1 s bound.
    if (feedKnobs?.registries && !o.script) {
      const until = sched.now + 3_000_000;
      while (sched.now < until && clients[w]?.crashed !== true) {
        await sched.sleep(sched.uniform(100_000, 400_000));
        await readCall(w, graph, current);
      }
    }
    writerDone[w] = true;
  };
  const running = Array.from({ length: knobs.writers }, (_, w) => {
    writerDone[w] = false;
    return runWriter(w);
  });
  // Feed readers, each through an instance and a clock of its own.
  const lagMicros = feedLagMicros(knobs.policy);
  const skewMicros = BigInt(knobs.policy.clockSkewMs) * 1000n;
  const readers: FeedReader[] = [];
  let writersDoneAt: number | null = null;
  const pauses: { atMs: number; forMs: number }[] = [];
  const readerContext = feedKnobs
    ? {
        sched,
        client: (wall: () => number, id: number) =>
          new SimClient({
            engine,
            scheduler: sched,
            wallMicros: wall,
            writer: 100 + id,
            requestTimeoutMs: knobs.requestTimeoutMs,
            faults: { ...knobs.faults, crashP: 0, twiceP: 0, lagMs: 0 },
            ids,
            ...replicas,
          }),
        lagMicros,
        skewMicros,
        skewHalfMicros: (knobs.skewMs / 2) * 1000,
        plant: o.plant,
        onPause: (from: number, to: number) =>
          pauses.push({ atMs: (from - START) / 1000, forMs: (to - from) / 1000 }),
        writersDone: () => {
          if (writersDoneAt === null && writerDone.every((d, w) => d || clients[w]?.crashed))
            writersDoneAt = sched.now;
          return writersDoneAt;
        },
        tailMicros: Number(lagMicros) + (feedKnobs.lateMaxMs + 2 * knobs.requestTimeoutMs) * 1000,
        ...(o.script?.readerSkewMs === undefined ? {} : { readerOffsetMicros: o.script.readerSkewMs * 1000 }),
        ...(o.script?.readerStartMs === undefined
          ? {}
          : { readerStartMicros: o.script.readerStartMs * 1000 }),
        ...(o.script?.readerWaits === false ? { readerWaits: false } : {}),
        ...(o.script?.readerLimit === undefined ? {} : { readerLimit: o.script.readerLimit }),
      }
    : null;
  const readersRunning = Array.from({ length: feedKnobs?.readers ?? 0 }, (_, r) =>
    runReader(readerContext as ReaderContext, r, feedKnobs as FeedKnobs).then((x) => readers.push(x)),
  );
  // The recovery worker; leased, a second one beside it (as production runs several processes:
  // the instances' own passes stop with their calls), which takes over when the first pauses.
  if (readerContext && feedKnobs)
    for (let id = 0; id < (feedKnobs.lease ? 2 : 1); id++)
      void runRecoveryWorker(
        readerContext,
        direct(() => sched.now),
        feedKnobs,
        id,
      ).catch((e: unknown) =>
        violations.push({
          kind: 'error',
          detail: `recovery worker ${id} threw ${String(e)}`,
        }),
      );
  await sched.run();
  void running;
  void readersRunning;
  for (let w = 0; w < knobs.writers; w++) {
    if (!writerDone[w] && !clients[w]?.crashed)
      violations.push({ kind: 'stuck', detail: `writer ${w} neither finished nor crashed` });
  }
  for (const c of calls) if (c.outcome === 'pending') c.outcome = 'crashed';

  o.inspect?.(calls, commits);

  // ---- the invariant ----
  let recovered = { present: 0, fenced: 0 };
  if (feedKnobs) {
    // What the instances' recovery does once the writers are gone: every intent older than L resolved.
    const at = Math.ceil(sched.now) + Number(lagMicros) + 1_000_000;
    const d = direct(() => at);
    recovered = await finalRecovery(
      plantedStore(d.store, o.plant, 'recovery'),
      d.lists,
      () => BigInt(at),
      lagMicros,
      BigInt(START) - 3_600_000_000n,
    );
    sched.now = at;
  }
  const end = Math.ceil(sched.now) + 1_000_000;
  const { client, store, lists } = direct(() => end);
  // Every rename's fan-out left unfinished runs to completion (`account-sim.ts`, 6).
  if (feedKnobs) await completeRenames(store, BigInt(end));
  // The final user rows (no step below writes them): the accounts' checks and the counts' both.
  const stored = new Map<UserId, AccountRow>(
    (await scan(client, 'SELECT user_id, username, private, hide_lists, state FROM users')).map((r) => [
      r.user_id as bigint,
      {
        username: String(r.username),
        private: r.private === true,
        hideLists: r.hide_lists === true,
        state: r.state === 'deactivated' ? 'deactivated' : 'active',
      },
    ]),
  );
  const putRecords: PutRecord[] = calls
    .filter((c) => c.method === 'putUser')
    .map((c) => ({
      id: c.id,
      account: c.actor,
      put: c.put ?? {},
      startAt: c.startAt,
      endAt: c.endAt,
      acked: c.outcome === 'ok',
      ...(c.outcome === 'ok' || c.error === undefined ? {} : { error: c.error }),
      wrote: c.wroteFields ?? new Set(),
      ...(c.userWriteAppliedAt === undefined ? {} : { landedAt: c.userWriteAppliedAt }),
      released: (c.releases ?? [])
        .filter((r) => r.lwtApplied === true)
        .map((r) => ({ name: String(r.queries[0]?.params[0]), at: r.applied[0] as number })),
    }));
  const claims = async (): Promise<ClaimRow[]> =>
    (await scan(client, 'SELECT username, user_id FROM usernames')).map((r) => ({
      name: String(r.username),
      holder: r.user_id as bigint,
    }));
  // A statement that timed out (and so may land late), was dropped, lost its answer or was applied
  // twice; a crash; a call that failed after sending its append: the projection may be behind.
  const statementFaults = log.some(
    (r) => r.outcome === 'timeout' || r.outcome === 'crashed' || /dropped|lost-ack|twice/.test(r.fate),
  );
  const failedAfterAppend =
    calls.some((c) => c.outcome !== 'ok' && c.appended !== undefined) ||
    taskOps.some((t) => calls[t.call]?.outcome !== 'ok');
  const repaired = statementFaults || failedAfterAppend;
  let inconclusive = 0;
  const histories = new Map<string, PairHistory>();
  for (const [a, b] of pairs) {
    const pair = pairKey(a, b);
    const history = await store.readPairHistory(a, b);
    histories.set(pair, history);
    const r = checkHistory(pair, history, calls, taskOps);
    violations.push(...r.violations);
    inconclusive += r.inconclusive ? 1 : 0;
  }
  let feed: ScheduleResult['feed'];
  let claimReach = { lostClaims: 0, orphans: 0 };
  if (feedKnobs) {
    // Every reader reads on to the watermark, at L + 1 s past the recovery, as does a new reader
    // from the start (the reference); then the invariant of `feed-sim.ts`.
    const at = end + Number(lagMicros);
    const d = direct(() => at);
    const feedAt = () => BigInt(at);
    const open = () =>
      simFeed(plantedStore(d.store, o.plant, 'reader'), feedAt, lagMicros, skewMicros, o.plant);
    for (const r of readers) r.events.push(...(await readToEnd(open(), r.cursor)));
    const reference = await readToEnd(open(), null);
    // D: an intent left standing is resolved by the worker's first pass after its slot + L (one
    // every R), and a reader's clock is within S of true time, as is the slot's writer's.
    const downFor = feedKnobs.recoveryDown ? feedKnobs.recoveryDown.to - feedKnobs.recoveryDown.from : 0;
    // Leased: a holder that stops renewing (worker 0 paused) holds the recovery back until its lease is past its expiry + S on the next taker's clock
    // (the lease's TTL after its last renewal, and two S for the clocks), then that taker's next pass.
    const leaseFor = feedKnobs.lease
      ? RECOVERY_LEASE_TTL_MS * 1000 + 2 * Number(skewMicros) + feedKnobs.recoveryEveryMs * 1000
      : 0;
    const bound =
      Number(lagMicros) +
      feedKnobs.recoveryEveryMs * 1000 +
      2 * Number(skewMicros) +
      1_000_000 +
      downFor +
      leaseFor;
    const puts = calls
      .filter((c) => c.method === 'putUser')
      .map((c) => ({ account: c.actor, acked: c.outcome === 'ok', wrote: c.wroteFields !== undefined }));
    violations.push(...checkFeed(reference, readers, histories, bound, puts));
    feedLandings.finish(engine, at);
    const tailCheck = checkTails(reference, feedLandings, tails.filter(Boolean));
    violations.push(...tailCheck.violations);
    tailChecked = tailCheck.checked;
    // The accounts' promises (`account-sim.ts`) on the final rows and every call.
    const initial = new Map<UserId, AccountRow>(
      users.map((id) => [
        id,
        { username: `u${id}`, private: privateUsers.has(id), hideLists: false, state: 'active' },
      ]),
    );
    const registered = new Set(
      (await scan(client, 'SELECT user_id FROM deactivated_accounts')).map((r) => r.user_id as bigint),
    );
    const accounts = checkAccounts(
      initial,
      stored,
      registered,
      putRecords,
      calls
        .filter((c) => c.method !== 'putUser')
        .map((c) => ({
          id: c.id,
          method: c.method,
          other: c.other,
          startAt: c.startAt,
          outcome: c.outcome,
          ...(c.error === undefined ? {} : { error: c.error }),
          ...(c.appended ? { appendedKind: c.appended.kind } : {}),
          replay: c.explicit !== undefined,
        })),
      pages,
    );
    violations.push(...accounts.violations);
    // The names (`account-sim.ts`, 6) and the cached reads (`read-sim.ts`).
    const named = checkClaims(stored, await claims(), putRecords);
    violations.push(...named.violations);
    claimReach = { lostClaims: named.lost.length, orphans: named.orphans };
    const cached = checkReads(reads, ttlMicros);
    violations.push(...cached.violations);
    feed = {
      knobs: feedKnobs,
      readers: readers.map((r) => ({
        pages: r.pages,
        failed: r.failed,
        refused: r.refused,
        events: r.events.length,
        waited: r.waited,
      })),
      events: reference.length,
      recovered,
      pauses,
      accounts: accounts.reach,
      renames: renameReach(putRecords, { renamedRows: 0, unnamedRows: 0, lateRows: 0 }, claimReach),
      reads: cached.reach,
      tailEvents: tailChecked,
    };
  }
  if (repaired) {
    // The repair: every pair re-folded and rewritten (`repairPair`), then the sweep, which also
    // deletes ghost rows at positions no history knows any more (`repair-sweep.ts`).
    for (const [a, b] of pairs) await repairPair({ store, lists }, a, b);
    await repairSweep({ store, lists }, { ranges: 1, pageSize: 1_000 });
  }
  // Counts leave out members deactivated at the end (what a reconcile counts).
  const deactivated = new Set([...stored].filter(([, u]) => u.state === 'deactivated').map(([id]) => id));
  const projections = await checkProjections(client, store, pairs, histories, repaired, deactivated);
  violations.push(...projections.violations);
  if (feed) {
    // The names list rows show, where the projections are checked (`account-sim.ts`, 6); after the
    // repair's sweep, no orphan claim.
    if (repaired) violations.push(...checkClaims(stored, await claims(), putRecords, true).violations);
    // Each name cell with the statement that wrote it (the node's cell metadata): an instance's
    // write that landed more than L after it was called is outside the write path's bound.
    const sent = new Map(log.map((r) => [r.id, r]));
    const named: NamedRow[] = [];
    for (const t of ['following', 'followers', 'relation_lists'] as const) {
      const read = engine.select(`SELECT user_id, other_id, username FROM ${t}`, [], end, {
        fetchSize: 1_000_000,
        meta: true,
      });
      read.rows.forEach((r, i) => {
        const cell = read.meta?.[i]?.username;
        const by = cell ? sent.get(cell.by) : undefined;
        named.push({
          table: t,
          owner: r.user_id as bigint,
          member: r.other_id as bigint,
          cell: (r.username as string | null) ?? null,
          late:
            cell !== undefined &&
            by !== undefined &&
            // With replicas a cell's time is its first landing on any replica; a write whose other
            // shares landed late (a coordinator that died, the batchlog replaying the rest) was
            // not readable at a quorum until then: its last landing counts.
            (knobs.replicas ? Math.max(cell.at, ...by.applied) : cell.at) - by.calledAt > Number(lagMicros),
        });
      });
    }
    const rows = checkRenamedRows(stored, named, repaired ? 'after repair' : 'without repair');
    violations.push(...rows.violations);
    const { renamedRows, unnamedRows, lateRows } = rows;
    feed.renames = renameReach(putRecords, { renamedRows, unnamedRows, lateRows }, claimReach);
  }

  const unsafeCommits: Partial<Record<FindingTag, number>> = {};
  const stepped = clockReach(clocks, calls);
  const tags = diagnose(violations, calls, commits, stmtCall, knobs, unsafeCommits);
  const result: ScheduleResult = {
    seed,
    knobs,
    violations,
    tags,
    repaired,
    ...(feed ? { feed } : {}),
    stats: {
      calls: calls.length,
      acked: acked.length,
      statements: log.length,
      commits: commits.length,
      virtualMs: Math.round((sched.now - START) / 1000),
      inconclusive,
      reconciled: projections.reconciled,
      unsafeCommits,
      clock: stepped.reach,
      again: againReach(calls),
    },
    trace: () =>
      renderTrace(
        engine,
        seed,
        knobs,
        users,
        privateUsers,
        pairs,
        calls,
        log,
        commits,
        clocks,
        stepped.below,
      ),
  };
  return result;
}

// ---- the history check ----

const keyOf = (o: { position: Position; sourceId: UserId; kind: OpKind }) => opKey(o as PairOp);

function edgeString(e: EdgeRecord): string {
  return `${edgeKey(e.sourceId, e.relation, e.targetId)}:${e.state}:${e.position}:${e.createdAt}`;
}

/**
 * An edge as the reference fold is compared with a checkpoint: a never-activated edge's `position`
 * (its newest candidate in a fold of the whole history) is left out, because a checkpoint keeps the
 * newest candidate *it* folded and `foldPair(ops, checkpoint.edges)` does not move it on (noted,
 * not client-visible: such an edge is `removed` with `createdAt` 0).
 */
function checkpointEdgeString(e: EdgeRecord): string {
  const position = e.state === 'removed' && e.createdAt === 0n ? '-' : e.position;
  return `${edgeKey(e.sourceId, e.relation, e.targetId)}:${e.state}:${position}:${e.createdAt}`;
}

/** Every op a call put in effect or may have: acknowledged ones, and applied appends of failed calls. */
function ledger(pair: string, calls: readonly CallRecord[], taskOps: readonly TaskOp[]) {
  const acked = new Map<string, PairOp & { call: number }>();
  const maybe = new Map<string, PairOp & { call: number }>();
  const refused = new Map<string, PairOp & { call: number }>();
  for (const c of calls) {
    if (c.pair !== pair) continue;
    if (c.outcome === 'ok') {
      const op = {
        sourceId: c.sourceId,
        targetId: c.targetId,
        kind: c.kind,
        position: c.position as Position,
        call: c.id,
      };
      acked.set(keyOf(op), op);
    } else if (c.appended && c.appendApplied) {
      maybe.set(keyOf(c.appended), { ...c.appended, call: c.id });
    } else if (!c.appended && c.explicit !== undefined && (c.outcome === 'refused' || c.outcome === 'busy')) {
      const op = {
        sourceId: c.sourceId,
        targetId: c.targetId,
        kind: c.kind,
        position: c.explicit,
        call: c.id,
      };
      refused.set(keyOf(op), op);
    }
  }
  for (const t of taskOps)
    if (t.pair === pair && t.applied) {
      const { stmt: _, pair: __, applied: ___, ...op } = t;
      maybe.set(keyOf(op), op);
    }
  for (const k of acked.keys()) maybe.delete(k);
  return { acked, maybe, refused };
}

const MAX_SUBSETS = 20_000;

function checkHistory(
  pair: string,
  h: PairHistory,
  calls: readonly CallRecord[],
  taskOps: readonly TaskOp[],
): { violations: Violation[]; inconclusive: boolean } {
  const out: Violation[] = [];
  const { acked, maybe, refused } = ledger(pair, calls, taskOps);
  const horizon = h.checkpoint?.horizon ?? 0n;
  const stored = new Set(h.ops.map((o) => keyOf(o)));
  for (const c of calls) {
    if (
      c.pair === pair &&
      c.outcome === 'ok' &&
      c.appended &&
      keyOf(c.appended) !== keyOf({ ...c, position: c.position as Position })
    )
      out.push({
        kind: 'error',
        pair,
        detail: `call #${c.id} appended ${keyOf(c.appended)} but answered position ${c.position}`,
      });
  }
  const fmt = (op: PairOp & { call: number }) =>
    `#${op.call} ${op.kind} ${op.sourceId}→${op.targetId} @${op.position}`;
  for (const [k, op] of acked) {
    if (op.position > horizon && !stored.has(k))
      out.push({
        kind: 'lost-acked',
        pair,
        detail: `acknowledged ${fmt(op)} is above the horizon ${horizon} but not stored`,
      });
  }
  for (const op of h.ops) {
    const k = keyOf(op);
    if (!acked.has(k) && !maybe.has(k))
      out.push({
        kind: 'phantom-op',
        pair,
        detail: `stored op ${op.kind} ${op.sourceId}→${op.targetId} @${op.position} was never sent`,
      });
  }
  for (const [k, op] of refused) {
    if (stored.has(k) && !acked.has(k) && !maybe.has(k))
      out.push({ kind: 'refused-in-effect', pair, detail: `refused ${fmt(op)} is in the stored history` });
  }
  let inconclusive = false;
  const cp = h.checkpoint;
  const ackedBelow = [...acked.values()].filter((o) => o.position <= horizon);
  if (!cp) {
    if (ackedBelow.length > 0)
      out.push({ kind: 'lost-acked', pair, detail: 'acknowledged ops below a horizon with no checkpoint' });
    return { violations: out, inconclusive };
  }
  const want = cp.edges.map(checkpointEdgeString).sort().join(' ');
  const candidates = [...maybe.values()].filter((o) => o.position <= horizon);
  const need = cp.count - ackedBelow.length;
  let found = false;
  if (need >= 0 && need <= candidates.length) {
    let tried = 0;
    const pickFrom = (start: number, chosen: PairOp[]): boolean => {
      if (chosen.length === need) {
        if (++tried > MAX_SUBSETS) {
          inconclusive = true;
          return true;
        }
        const fold = foldPair([...ackedBelow, ...chosen]);
        const got = [...fold.edges.values()]
          .map(({ candidates: _, ...e }) => checkpointEdgeString(e))
          .sort()
          .join(' ');
        return got === want;
      }
      for (let i = start; i <= candidates.length - (need - chosen.length); i++) {
        if (pickFrom(i + 1, [...chosen, candidates[i] as PairOp])) return true;
      }
      return false;
    };
    found = pickFrom(0, []);
  }
  if (!found) {
    const lostBelow = ackedBelow.sort(compareOps).map(fmt).join(', ');
    out.push({
      kind: 'checkpoint',
      pair,
      detail:
        `checkpoint @${horizon} (count ${cp.count}, edges ${want || 'none'}) is not the fold of the acknowledged ops at or ` +
        `below it [${lostBelow}] plus any of the ${candidates.length} unacknowledged applied ones`,
    });
  }
  return { violations: out, inconclusive };
}

// ---- projections ----

/** Every row of a table, read through a direct client (a full scan). */
async function scan(client: SimClient, query: string): Promise<Record<string, unknown>[]> {
  return (await client.execute(query, [], { fetchSize: 1_000_000 })).rows;
}

/**
 * The projections against the fold of the stored history: every row of `edges_out`, `edges_in` and
 * the three list tables (scanned whole, so a stray row anywhere shows), then each list's served
 * count (counter shards plus correction; members in `deactivated` not counted); a list whose
 * count is off is reconciled and read again.
 */
async function checkProjections(
  client: SimClient,
  store: CassandraGraphStore,
  pairs: readonly [UserId, UserId][],
  histories: Map<string, PairHistory>,
  repaired: boolean,
  deactivated: ReadonlySet<UserId>,
): Promise<{ violations: Violation[]; reconciled: number }> {
  const out: Violation[] = [];
  const how = repaired ? 'after repair' : 'without repair';
  const wantOut: string[] = [];
  const wantIn: string[] = [];
  const wantRows: string[] = [];
  const wantCounts = new Map<string, number>();
  const listOf = (u: UserId, r: string, d: string) => `${u}|${r}|${d}`;
  for (const [a, b] of pairs) {
    const h = histories.get(pairKey(a, b)) as PairHistory;
    for (const { candidates: _, ...e } of foldPair(h.ops, h.checkpoint?.edges).edges.values()) {
      wantOut.push(edgeString(e));
      wantIn.push(`1:${edgeString(e)}`);
      if (e.state !== 'active') continue;
      for (const [owner, other, dir] of [
        [e.sourceId, e.targetId, 'out'],
        [e.targetId, e.sourceId, 'in'],
      ] as const) {
        const list = listOf(owner, e.relation, dir);
        wantRows.push(`${list}|1:${e.createdAt}:${other}`);
        if (!deactivated.has(other)) wantCounts.set(list, (wantCounts.get(list) ?? 0) + 1);
      }
    }
  }
  const compare = (what: string, got: string[], want: string[]) => {
    const g = got.sort().join('\n');
    const w = want.sort().join('\n');
    if (g === w) return;
    const missing = want.filter((x) => !got.includes(x));
    const extra = got.filter((x) => !want.includes(x));
    out.push({
      kind: 'projection',
      detail: `${what} ${how}: missing [${missing.join(', ')}], extra [${extra.join(', ')}]`,
    });
  };
  const edge = (r: Record<string, unknown>, source: string, target: string): EdgeRecord => ({
    sourceId: r[source] as bigint,
    targetId: r[target] as bigint,
    relation: r.relation as EdgeRecord['relation'],
    state: r.state as EdgeRecord['state'],
    position: r.position as bigint,
    createdAt: (r.created_at as bigint | null) ?? 0n,
  });
  const outRows = await scan(
    client,
    'SELECT source_id, relation, target_id, state, position, created_at FROM edges_out',
  );
  compare(
    'edges_out',
    outRows.map((r) => edgeString(edge(r, 'source_id', 'target_id'))),
    wantOut,
  );
  const inRows = await scan(
    client,
    'SELECT target_id, relation, bucket, source_id, state, position, created_at FROM edges_in',
  );
  compare(
    'edges_in',
    inRows.map((r) => `${r.bucket}:${edgeString(edge(r, 'source_id', 'target_id'))}`),
    wantIn,
  );
  const rows: string[] = [];
  for (const t of ['following', 'followers'] as const) {
    for (const r of await scan(client, `SELECT user_id, bucket, created_at, other_id FROM ${t}`))
      rows.push(
        `${listOf(r.user_id as bigint, 'follows', t === 'following' ? 'out' : 'in')}|${r.bucket}:${r.created_at}:${r.other_id}`,
      );
  }
  for (const r of await scan(
    client,
    'SELECT user_id, relation, direction, bucket, created_at, other_id FROM relation_lists',
  ))
    rows.push(
      `${listOf(r.user_id as bigint, r.relation as string, r.direction as string)}|${r.bucket}:${r.created_at}:${r.other_id}`,
    );
  compare('list rows', rows, wantRows);
  // Served counts: Σ shards + the reconciler's correction, per list.
  const served = new Map<string, number>();
  for (const r of await scan(client, 'SELECT user_id, relation, direction, n FROM list_counts')) {
    const list = listOf(r.user_id as bigint, r.relation as string, r.direction as string);
    served.set(list, (served.get(list) ?? 0) + Number(r.n as bigint));
  }
  for (const r of await scan(
    client,
    'SELECT DISTINCT user_id, relation, direction, correction FROM bucket_counts',
  )) {
    const list = listOf(r.user_id as bigint, r.relation as string, r.direction as string);
    served.set(list, (served.get(list) ?? 0) + Number((r.correction as bigint | null) ?? 0n));
  }
  let reconciled = 0;
  for (const list of new Set([...served.keys(), ...wantCounts.keys()])) {
    const want = wantCounts.get(list) ?? 0;
    if ((served.get(list) ?? 0) === want) continue;
    const [userId, relation, direction] = list.split('|') as [
      string,
      ListKey['relation'],
      ListKey['direction'],
    ];
    const key: ListKey = { userId: BigInt(userId), relation, direction };
    await reconcileList(store, key, { now: () => new Date(0) });
    reconciled++;
    const n = await store.getCount(key);
    if (n !== want)
      out.push({ kind: 'count', detail: `count of ${list} after a reconcile: ${n}, the fold: ${want}` });
  }
  return { violations: out, reconciled };
}

// ---- diagnosis ----

function diagnose(
  violations: readonly Violation[],
  calls: readonly CallRecord[],
  commits: readonly CommitRecord[],
  stmtCall: Map<number, number>,
  knobs: SimKnobs,
  unsafeCommits: Partial<Record<FindingTag, number>>,
): FindingTag[] {
  const tags = new Set<FindingTag>();
  const budget = knobs.policy.writeBudgetMs * 1000;
  const settle = Number(settleMicros(knobs.policy));
  /** Whether another commit on `pair` reached the node strictly between a read's two SELECTs. */
  const torn = (pair: string, read: CallRecord['reads'][number], except?: CommitRecord) => {
    if (read.staticAt === undefined || read.opsAt === undefined) return false;
    const lo = Math.min(read.staticAt, read.opsAt);
    const hi = Math.max(read.staticAt, read.opsAt);
    return commits.some((o) => o !== except && o.pair === pair && o.applied.some((t) => t > lo && t < hi));
  };
  /**
   * Why a commit could miss an op still in flight (see the note): none when it read a budget or
   * more after the announcement became visible; else a stale observation, an observation that
   * predates visibility (a slow observer read), a settle shortened by clock skew, or both of these.
   */
  const unsafe = (c: CommitRecord): FindingTag[] => {
    const call = calls[c.call] as CallRecord;
    const { compact_to: to, compact_seen: seen } = call.staticMeta ?? {};
    if (!to || !seen || call.opsApplied === undefined || call.opsApplied - to.at >= budget) return [];
    if (seen.at < to.at) return ['F4-stale-seen'];
    const observer = calls[stmtCall.get(seen.by) ?? -1];
    if (observer?.readAt === undefined) return [];
    const out: FindingTag[] = [];
    if (observer.readAt < to.at) out.push('F1-slow-observer');
    if ((call.readAt ?? 0) - observer.readAt < settle) out.push('F2-clock-skew');
    return out;
  };
  for (const c of commits) {
    for (const why of c.applied.length > 0 ? unsafe(c) : [])
      unsafeCommits[why] = (unsafeCommits[why] ?? 0) + 1;
  }
  const lossPairs = new Set(
    violations.filter((v) => v.kind === 'lost-acked' || v.kind === 'checkpoint').map((v) => v.pair),
  );
  for (const pair of lossPairs) {
    // The commits that folded past an acknowledged op they had not read (its append reached the
    // node after their op read), and commits from a torn read: each loss is theirs.
    let explained = false;
    for (const c of commits) {
      if (c.pair !== pair || c.applied.length === 0) continue;
      const call = calls[c.call] as CallRecord;
      const missed = calls.some(
        (x) =>
          x.pair === pair &&
          x.outcome === 'ok' &&
          x.appendAppliedAt !== undefined &&
          (x.position as Position) <= c.horizon &&
          call.opsApplied !== undefined &&
          x.appendAppliedAt > call.opsApplied,
      );
      const first = call.reads.find((r) => r.calledAt === call.readAt);
      if (first && torn(pair, first, c)) {
        tags.add('F3-torn-read');
        explained = true;
      }
      for (const why of missed ? unsafe(c) : []) {
        tags.add(why);
        explained = true;
      }
    }
    if (!explained) tags.add('unexplained');
  }
  // Without a loss, a wrong projection comes from a torn re-read: it folds an old checkpoint with
  // newer ops and writes that view at the newest op's version, rows no later write or repair deletes.
  const projection = violations.some((v) => v.kind === 'projection' || v.kind === 'count');
  if (projection && lossPairs.size === 0)
    tags.add(
      calls.some((call) => call.reads.some((r) => torn(call.pair, r))) ? 'F3-torn-read' : 'unexplained',
    );
  if (
    violations.some(
      (v) =>
        v.kind !== 'lost-acked' && v.kind !== 'checkpoint' && v.kind !== 'projection' && v.kind !== 'count',
    )
  )
    tags.add('unexplained');
  return [...tags].sort();
}

// ---- the trace ----

function renderTrace(
  engine: CqlEngine,
  seed: number,
  knobs: SimKnobs,
  users: readonly UserId[],
  privateUsers: ReadonlySet<UserId>,
  pairs: readonly [UserId, UserId][],
  calls: readonly CallRecord[],
  log: readonly StatementRecord[],
  commits: readonly CommitRecord[],
  clocks: readonly WriterClock[],
  below: ReadonlyMap<number, number>,
): string {
  const t = (at: number) => `${((at - START) / 1000).toFixed(3)}ms`.padStart(12);
  const ms = (us: number) => `${us >= 0 ? '+' : ''}${(us / 1000).toFixed(3)}ms`;
  const lines: string[] = [];
  const f = knobs.faults;
  lines.push(
    `seed ${seed} (${knobs.profile}): ${knobs.writers} writers × ${knobs.opsPerWriter} calls on ${pairs.map(([a, b]) => `${a}|${b}`).join(', ')}` +
      ` (users ${users.join(',')}; private ${[...privateUsers].join(',') || 'none'}); skew ±${knobs.skewMs / 2}ms,` +
      ` clock steps ${knobs.clockStepP} within ±${knobs.policy.clockSkewMs}ms,` +
      ` timeout ${knobs.requestTimeoutMs}ms, think ≤${knobs.thinkMaxMs}ms, replay ${knobs.replayP} ≤${knobs.replayAgeMs}ms old; faults stall ${f.stallP}≤${f.stallMaxMs}ms` +
      ` slow ${f.slowP}≤${f.slowMaxMs}ms slow-ack ${f.slowAckP} drop ${f.dropP} lost-ack ${f.lostAckP} twice ${f.twiceP} crash ${f.crashP}; sluggish writers ${knobs.sluggishP}; laggy writers ${knobs.laggyP} ≤${knobs.lagMs}ms`,
  );
  // A pair call's pair statements; a PUT's reads and writes of its row and of name claims.
  const tableOf = (r: StatementRecord) => engine.statement(r.queries[0]?.query ?? '').table;
  const shown = log.filter((r) =>
    calls[r.call]?.method === 'putUser'
      ? tableOf(r) === 'users' || tableOf(r) === 'usernames'
      : r.queries.some((q) => engine.statement(q.query).table === 'pair_ops'),
  );
  const byCall = new Map<number, StatementRecord[]>();
  for (const r of shown) byCall.set(r.call, [...(byCall.get(r.call) ?? []), r]);
  const name = (r: StatementRecord) => {
    const q0 = r.queries[0] as { query: string; params: readonly unknown[] };
    const s = engine.statement(q0.query);
    if (s.table === 'usernames')
      return `${s.kind === 'insert' ? 'claim' : s.kind === 'delete' ? 'release' : 'read claim'} ${q0.params[0]}`;
    if (s.table === 'users') return s.kind === 'select' ? 'read row' : 'write cells';
    const first = pairRole(engine, q0.query);
    if (first.staticRead || first.opsRead)
      return first.staticRead && first.opsRead ? 'read' : first.staticRead ? 'read static' : 'read ops';
    const parts = r.queries.map((x) => {
      const role = pairRole(engine, x.query);
      return role.append
        ? 'append'
        : role.commit
          ? 'commit'
          : role.announce !== undefined
            ? 'announce'
            : role.observe !== undefined
              ? 'observe'
              : '';
    });
    return parts.filter(Boolean).join('+');
  };
  // The writers' clock steps they took, each before the first call that started after it.
  const steps = clocks
    .flatMap((c, w) => c.taken.map((s) => ({ ...s, w })))
    .sort((a, b) => a.at - b.at || a.w - b.w);
  let shownSteps = 0;
  const stepsUntil = (at: number) => {
    for (let s = steps[shownSteps]; s !== undefined && s.at <= at; s = steps[++shownSteps])
      lines.push(
        `${t(s.at)} w${s.w} clock steps ${s.to < s.from ? 'back' : 'ahead'} ${Math.abs((s.to - s.from) / 1000).toFixed(3)}ms: ` +
          `offset ${ms(s.from)} → ${ms(s.to)}`,
      );
  };
  for (const c of calls) {
    stepsUntil(c.startAt);
    const crossed = below.get(c.id);
    const args =
      c.explicit !== undefined ? `, position ${c.explicit}` : c.put ? `, ${JSON.stringify(c.put)}` : '';
    lines.push(
      `${t(c.startAt)} w${c.writer} #${c.id} ${c.method}(${c.actor}, ${c.other}${args}) → ${c.outcome}${c.error ? ` ${c.error}` : ''}` +
        `${c.position !== undefined ? ` @${c.position}` : ''}${c.duplicate ? ' (duplicate)' : ''}${c.retryOf !== undefined ? ` (again: #${c.retryOf})` : ''} at ${t(c.endAt).trim()}` +
        `${crossed === undefined ? '' : ` [its clock read ${(crossed / 1000).toFixed(3)}ms below w${c.writer}'s earlier calls]`}`,
    );
    for (const r of byCall.get(c.id) ?? []) {
      const step = name(r);
      let extra = '';
      for (const q of r.queries) {
        const role = pairRole(engine, q.query);
        if (role.append) extra += ` op @${q.params[role.append.position]}`;
        if (role.commit)
          extra += ` horizon ${q.params[role.commit.horizon]} ${String(q.params[role.commit.state]).slice(0, 12)}…`;
        else if (role.announce !== undefined) extra += ` horizon ${q.params[role.announce]}`;
        if (role.observe !== undefined) extra += ` seenAt ${q.params[role.observe]}`;
      }
      if (step.startsWith('read') && step !== 'read ops' && r.result?.rows[0]) {
        const row = r.result.rows[0];
        const seen = r.result.rows.flatMap((x) => (x.position == null ? [] : [String(x.position).slice(-7)]));
        extra = ` cp ${row.cp_horizon ?? '-'} to ${row.compact_to ?? '-'} seen ${row.compact_seen ?? '-'} ops [${seen.join(' ')}]`;
      }
      const applied = r.applied.map((x) => t(x).trim()).join(',') || 'never';
      lines.push(
        `${' '.repeat(14)}${step}${extra}: sent ${r.sentAt >= 0 ? t(r.sentAt).trim() : '-'}, applied ${applied}, ${r.outcome}` +
          `${r.fate ? ` [${r.fate}]` : ''}`,
      );
    }
  }
  stepsUntil(Number.POSITIVE_INFINITY);
  if (commits.length > 0) lines.push(`commits: ${commits.map((c) => `#${c.call}@${c.horizon}`).join(' ')}`);
  return lines.join('\n');
}
