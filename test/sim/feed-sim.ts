/**
 * The feed's part of a whole-service schedule (`pair-sim.ts` with `service: true`): readers that
 * page the change feed through instances of their own while the writers run, the intent recovery
 * every instance runs, and the feed's invariant, checked once everything in flight has landed.
 *
 * Design note — what is checked, after a final recovery pass (at L + 1 s past the last landing)
 * and at a clock L + 1 s past that:
 *
 * 1. Exactly once, in order. A reference reader reads the whole feed from the start. Every reader
 *    (each started from the start at a random time, paging with limits 1–1,000 through its own
 *    instance, its statements subject to the schedule's faults) then reads on from its cursor;
 *    what it collected must equal the reference, event for event (ids, types, edges, slots): no
 *    event missed behind a cursor, none twice.
 * 2. Every change that took effect is delivered. For a pair whose stored history has no
 *    checkpoint, the reference's events of that pair equal the events the pair's stored ops
 *    define (`pairEventRows` over the whole history: each op's transitions at its slot) — so an op
 *    that answered 503 (or whose writer died) and took effect is delivered, and one that did not
 *    take effect is not. For a pair with a checkpoint (ops folded, one by one no longer known):
 *    each edge's events alternate on, off, on… from off, and the last one is the edge's state in
 *    the fold of the stored history.
 * 3. Within D. A reader whose page came back short (caught up) at true time t had every event
 *    with a slot before t − D, D = L + R + 2S + 1 s (R: the recovery's period), plus the span the
 *    recovery was down: a change left by a dead or failed writer waits at most for the recovery.
 * 4. Account updates: per account, one `user.updated` for each acknowledged PUT that wrote its
 *    cells, and at most one for each that wrote and then failed (it may have landed).
 * 5. No event of a pair no writer touched.
 *
 * Faults the feed adds to the schedule's: writes that time out and land up to a minute later (a
 * hint replay; `FaultKnobs.lateP`), a dropped logged batch replayed by the batchlog up to a minute
 * late, a recovery that is down for a while, readers' clocks within S of true time — one of them
 * stepping ahead past S, which its clock guard must refuse. Planted faults (`FeedPlant`) switch one
 * rule of the design off, to show the invariant catches its loss.
 */

import type { WriteClock } from '../../src/graph/contracts.js';
import { Feed } from '../../src/graph/feed.js';
import { IntentFrontier, IntentRecovery, recoverIntents } from '../../src/graph/feed-intents.js';
import { TAIL_PAGE } from '../../src/graph/feed-tail.js';
import { ClockGuard } from '../../src/graph/pair/clock-guard.js';
import { pairEventRows } from '../../src/graph/pair/pair-events.js';
import { foldPair } from '../../src/graph/pair/pair-fold.js';
import type { BucketedListService } from '../../src/lists/list-service.js';
import { ClockSkewError, StoreUnavailableError } from '../../src/model/errors.js';
import {
  DEFAULT_EVENT_RETENTION_SECONDS,
  EVENT_SHARDS,
  type EventKey,
  type EventRow,
  edgeEventType,
  eventPeriod,
  type GraphEvent,
} from '../../src/model/events.js';
import type { Timers } from '../../src/model/timers.js';
import type { Position, UserFields, UserId, UserRecord } from '../../src/model/types.js';
import { edgeKey } from '../../src/model/types.js';
import type { LeaseStore } from '../../src/ports/lease-store.js';
import type { PairHistory } from '../../src/ports/records.js';
import type { CqlClient } from '../../src/store/cassandra/client.js';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import type { CqlEngine, PartitionWrite } from './cql/engine.js';
import type { Scheduler } from './scheduler.js';
import type { SimClient } from './sim-client.js';

/**
 * One rule of the design switched off (the invariant must then fail on some schedules): the
 * feed's (the first five), the accounts' (`account-sim.ts`) or the read caches' (`read-sim.ts`).
 */
export type FeedPlant =
  /** Readers read up to now − L, not below the oldest unresolved intent. */
  | 'watermark-without-intents'
  /** The recovery finds an op absent and does not fence it (its append may still land). */
  | 'recovery-without-fence'
  /** Compaction does not wait for intents: the writers' frontier sees none. */
  | 'compaction-folds-intents'
  /** Readers never read the saved bound, so an orphan intent that lands behind it holds them. */
  | 'orphan-intents-hold'
  /** Readers read without the clock guard: one whose clock stepped past S reads on. */
  | 'reader-clock-unguarded'
  /** A PUT rewrites the whole row as it reads it just before writing (the lost update; `account-sim.ts`). */
  | 'put-writes-whole-row'
  /** The write path reads the other account through a 1 s cache per instance (privacy decided stale). */
  | 'privacy-from-cache'
  /**
   * The instances' feed tails hear nothing (each poll answers empty, and so looks caught up): the
   * registries trust a tail that never tells them of another instance's deactivation.
   */
  | 'tail-hears-nothing'
  /**
   * The tail takes a full page for the end of what landed (the defect before a poll resumed where
   * a page stopped): a tail read that fills its page answers one row short, so the poll moves past
   * the rest of the burst and no listener hears it.
   */
  | 'tail-skips-past-page'
  /** A rename writes the new name without claiming it first (two accounts can end with one name). */
  | 'rename-skips-claim'
  /**
   * The instances' user caches keep a row for good and ignore every invalidation (their own PUTs'
   * and the feed tail's): a user row read serves what was first read (`read-sim.ts`).
   */
  | 'user-cache-never-expires'
  /**
   * The recovery acts on its read of the pair without deciding the intent first (`decideIntent`):
   * a holder paused between that read and its fence fences an op the next holder found present.
   */
  | 'recovery-undecided'
  /**
   * A delivery of an op with an explicit position takes its own slot without claiming it
   * (`claimOpSlot`): two concurrent deliveries of one op (a client's retry on another instance)
   * store two feed rows for it.
   */
  | 'op-slot-unclaimed'
  /** An account update writes no intent before its user row and event (`accounts.ts`). */
  | 'put-without-intent'
  /**
   * A feed read stops after its first read of rows (`limit + 1` from just before its cursor's row):
   * rows that differ from the cursor's only in op kind, skipped, shorten the page into a jump to
   * the watermark (the readers' store answers nothing to a read that goes on from a row).
   */
  | 'kind-rows-shorten-page';

/** The feed knobs of a whole-service schedule. */
export interface FeedKnobs {
  readers: number;
  /** Longest pause between two pages of a reader while the writers run (ms). */
  readEveryMs: number;
  /** How often each writer instance runs a recovery pass, between its calls (ms). */
  recoveryEveryMs: number;
  /** Chance a write lands late (after its timeout), and how late at most (ms). */
  lateP: number;
  lateMaxMs: number;
  /** How late a dropped logged batch's batchlog replay lands at most (ms). */
  batchlogLateMs: number;
  /**
   * A span of true time (µs) in which no recovery pass resolves anything (its lease holder paused,
   * say); the instances' frontiers still look. Null: none.
   */
  recoveryDown: { from: number; to: number } | null;
  /**
   * Chance a writer's call is an account PUT instead (each names some of `private`, `hide_lists`
   * and `state`: `account-sim.ts`).
   */
  putP: number;
  /** Whether PUTs of one account may run at once on several instances (else one at a time). */
  concurrentPuts: boolean;
  /** Chance a PUT names `state` (deactivates or reactivates the account). */
  stateP: number;
  /** Chance a PUT names `username` (a rename; `account-sim.ts`, 6). */
  renameP: number;
  /**
   * With renames, whether each writer's first call renames an account of its own (writer w the
   * w-th, round the accounts) to one free name, all at the start: a race for the name.
   */
  nameRace: boolean;
  /**
   * Whether the instances run their registries of deactivated accounts and read caches (on
   * virtual time; each tail poll is a statement every 250 ms, so a third of the schedules).
   */
  registries: boolean;
  /**
   * Chance a writer's call is a read instead (with `registries`): a followers page (its members
   * checked), or with `reads` as often a user row, an edge state or counts (`read-sim.ts`).
   */
  pageP: number;
  /** Whether the instances' reads include user rows, edge states and counts besides pages. */
  reads: boolean;
  /** Reader 0's wall clock steps ahead at true time `at` by `by` (µs), past S; null: no step. */
  readerStep: { at: number; by: number } | null;
  /**
   * Half the schedules: the recovery runs as production runs it, under the lease
   * `feed:intent-recovery` (TTL `RECOVERY_LEASE_TTL_MS`) on the simulated node — two recovery
   * workers compete for it and only its holder resolves (the writer instances only look). In half
   * of those worker 0, holding it, stalls (a GC pause) for `pause.micros` right after its first
   * pair read at or after true time `pause.at`: its renewals stop, worker 1 takes over once the
   * lease is past its expiry + S, and worker 0 then resumes where it stopped (its read done before
   * the pause, its writes after). Drawn from a stream of its own, so the other
   * draws of a schedule are those it had before. Null: no lease (every pass resolves).
   */
  lease: { pause: { at: number; micros: number } | null } | null;
  /**
   * Rows per read of the instances' feed tails (with `registries`): production's 1,000 in half the
   * schedules, 3–7 in the other half, so a burst of rows within one poll (a view batch writes a row
   * per op of its pair) spans pages and the poll must resume where a page stopped. Drawn from a
   * stream of its own.
   */
  tailPage: number;
}

/** The recovery lease's TTL in the simulation (ms): production's. */
export const RECOVERY_LEASE_TTL_MS = 10_000;
/** The scheduler stream the lease knobs are drawn from (`Scheduler.stream`). */
const LEASE_STREAM = 3;
/** The first stream of the readers' long-poll draws (reader `id` draws from this + `id`). */
const LONG_POLL_STREAM = 100;
/** The scheduler stream the tail's page size is drawn from. */
const TAIL_PAGE_STREAM = 7;

export function feedKnobsFor(
  sched: Scheduler,
  hostile: boolean,
  start: number,
  skewBoundMicros: number,
): FeedKnobs {
  const stepAt = start + sched.uniform(0, 5e6);
  const step = sched.chance(0.15) ? { at: stepAt, by: skewBoundMicros + sched.uniform(3e6, 8e6) } : null;
  const downFrom = start + sched.uniform(0, 3_000_000);
  const down = sched.chance(0.1) ? { from: downFrom, to: downFrom + sched.uniform(5e6, 30e6) } : null;
  return {
    recoveryDown: down,
    putP: sched.pick([0, 0.1, 0.25]),
    readerStep: step,
    readers: sched.int(1, 3),
    readEveryMs: sched.pick([50, 300, 1_500]),
    recoveryEveryMs: 2_000,
    lateP: hostile ? sched.pick([0, 0.01, 0.03]) : 0,
    lateMaxMs: sched.pick([10_000, 60_000]),
    batchlogLateMs: sched.pick([5_000, 60_000]),
    concurrentPuts: sched.chance(0.5),
    stateP: sched.pick([0, 0.2, 0.4]),
    registries: sched.chance(0.35),
    pageP: sched.pick([0.1, 0.2, 0.3]),
    renameP: sched.pick([0, 0.3, 0.5]),
    nameRace: sched.chance(0.25),
    reads: true,
    lease: leaseKnobs(sched, start),
    tailPage: tailPageKnob(sched),
  };
}

function tailPageKnob(sched: Scheduler): number {
  const draws = sched.stream(TAIL_PAGE_STREAM);
  return draws.chance(0.5) ? draws.int(3, 7) : TAIL_PAGE;
}

function leaseKnobs(sched: Scheduler, start: number): FeedKnobs['lease'] {
  const draws = sched.stream(LEASE_STREAM);
  if (!draws.chance(0.5)) return null;
  if (!draws.chance(0.5)) return { pause: null };
  return {
    pause: {
      at: start + draws.uniform(0, 4e6),
      micros: (RECOVERY_LEASE_TTL_MS + 2_000) * 1000 + draws.uniform(1e6, 30e6),
    },
  };
}

/**
 * A store as a planted fault sees it (the store itself otherwise): a writer instance's, or the
 * final recovery's (which a blind compaction does not blind).
 */
export function plantedStore(
  store: CassandraGraphStore,
  plant: FeedPlant | undefined,
  role: 'writer' | 'recovery' | 'reader',
  nowMicros?: () => number,
  tailPage: number = TAIL_PAGE,
): CassandraGraphStore {
  if (plant === 'put-writes-whole-row' && role === 'writer')
    return new Proxy(store, {
      get: (t, k, r) =>
        k === 'putUserFields'
          ? async (id: UserId, fields: UserFields, version: Position, o?: { event?: EventRow }) => {
              const read = (await t.getUserVersioned(id)).user;
              const { id: _, ...all } = read ?? { id };
              return t.putUserFields(id, { ...all, ...fields }, version, o);
            }
          : Reflect.get(t, k, r),
    });
  if (plant === 'rename-skips-claim' && role === 'writer')
    return new Proxy(store, {
      get: (t, k, r) => (k === 'claimUsername' ? async () => undefined : Reflect.get(t, k, r)),
    });
  // The tail's polls are the writer instances' only reads of `tailPage` feed rows (`Feed.pollTail`;
  // their other reads take 1, 2 or 8, and a small page is 3–7).
  if (plant === 'tail-hears-nothing' && role === 'writer')
    return withTailReads(store, tailPage, async () => []);
  if (plant === 'tail-skips-past-page' && role === 'writer')
    return withTailReads(store, tailPage, async (read) => {
      const rows = await read();
      return rows.length === tailPage ? rows.slice(0, -1) : rows;
    });
  if (plant === 'privacy-from-cache' && role === 'writer' && nowMicros) {
    const cached = new Map<UserId, { at: number; row: UserRecord | undefined }>();
    return new Proxy(store, {
      get: (t, k, r) =>
        k === 'getUsers'
          ? async (ids: readonly UserId[]) => {
              const out = new Map<UserId, UserRecord>();
              for (const id of ids) {
                let hit = cached.get(id);
                if (!hit || nowMicros() - hit.at >= 1_000_000) {
                  hit = { at: nowMicros(), row: (await t.getUsers([id])).get(id) };
                  cached.set(id, hit);
                }
                if (hit.row) out.set(id, hit.row);
              }
              return out;
            }
          : Reflect.get(t, k, r),
    });
  }
  if (plant === 'orphan-intents-hold' && role === 'reader')
    return new Proxy(store, {
      get: (t, k, r) => (k === 'readIntentBound' ? async () => null : Reflect.get(t, k, r)),
    });
  // Every recovery acts on its own read: the decision it proposes is the one that stands.
  if (plant === 'recovery-undecided')
    return new Proxy(store, {
      get: (t, k, r) =>
        k === 'decideIntent' ? async (_key: unknown, decision: unknown) => decision : Reflect.get(t, k, r),
    });
  // A read that goes on from a row it was handed (its `from` names an op kind) gets nothing.
  if (plant === 'kind-rows-shorten-page' && role === 'reader')
    return new Proxy(store, {
      get: (t, k, r) =>
        k === 'readEventRows'
          ? (from: { opKind: string } | null, until: Position, limit: number) =>
              from !== null && from.opKind !== ''
                ? Promise.resolve([])
                : t.readEventRows(from as never, until, limit)
          : Reflect.get(t, k, r),
    });
  // An account update's intent is never written (an op's rides in its marks batch, not here).
  if (plant === 'put-without-intent')
    return new Proxy(store, {
      get: (t, k, r) => (k === 'putIntent' ? async () => undefined : Reflect.get(t, k, r)),
    });
  // Every delivery keeps the slot it took: the claim is never made.
  if (plant === 'op-slot-unclaimed')
    return new Proxy(store, {
      get: (t, k, r) =>
        k === 'claimOpSlot' ? async (key: { slot: Position }) => key.slot : Reflect.get(t, k, r),
    });
  if (plant === 'recovery-without-fence')
    return new Proxy(store, {
      get: (t, k, r) => (k === 'fenceOp' ? async () => undefined : Reflect.get(t, k, r)),
    });
  // The writer instances' frontier (one intent a shard per look) sees none, so their compaction
  // folds any op; their recovery passes save no bound from that blind look (others trust it).
  if (plant === 'compaction-folds-intents' && role === 'writer')
    return new Proxy(store, {
      get: (t, k, r) =>
        k === 'readIntents'
          ? (shard: number, after: Position, until: Position, limit: number) =>
              limit === 1 ? Promise.resolve([]) : t.readIntents(shard, after, until, limit)
          : k === 'saveIntentBound'
            ? async () => undefined
            : Reflect.get(t, k, r),
    });
  return store;
}

const RETENTION_MICROS = BigInt(DEFAULT_EVENT_RETENTION_SECONDS) * 1_000_000n;

/** A feed as the service builds it (`graph-parts.ts`), over `store`, on `clock`. */
export function simFeed(
  store: CassandraGraphStore,
  clock: () => Position,
  lagMicros: bigint,
  skewMicros: bigint,
  plant: FeedPlant | undefined,
  guard?: WriteClock,
  timers?: Timers,
): Feed {
  const intents =
    plant === 'watermark-without-intents'
      ? undefined
      : new IntentFrontier({ store, lagMicros, retentionMicros: RETENTION_MICROS });
  return new Feed({
    store,
    clock,
    lagMicros,
    skewMicros,
    retentionSeconds: DEFAULT_EVENT_RETENTION_SECONDS,
    ...(intents ? { intents } : {}),
    ...(guard ? { guard } : {}),
    ...(timers ? { timers } : {}),
  });
}

export interface FeedReader {
  id: number;
  /** True time of its first read. */
  startedAt: number;
  cursor: string | null;
  events: GraphEvent[];
  pages: number;
  failed: number;
  /** What its reads threw that is not the database being unavailable. */
  errors: string[];
  /** Its short pages (caught up to the watermark): when the read started, and how many events it had then. */
  caughtUp: { at: number; delivered: number }[];
  /** Reads the clock guard refused (its clock stepped past S). */
  refused: number;
  /** Reads that could wait for events (long-polls). */
  waited: number;
}

export interface ReaderContext {
  sched: Scheduler;
  client: (wall: () => number, id: number) => SimClient;
  lagMicros: bigint;
  skewMicros: bigint;
  /** Half the spread of the readers' clock offsets (µs). */
  skewHalfMicros: number;
  plant: FeedPlant | undefined;
  /** Whether every writer has finished or crashed, and when the last did (true time). */
  writersDone: () => number | null;
  /** How long after the writers a reader goes on (µs): past the late landings. */
  tailMicros: number;
  /** Every reader's clock offset (µs), instead of a drawn one (named scenarios). */
  readerOffsetMicros?: number;
  /** When every reader starts (µs after the start), instead of a drawn time (named scenarios). */
  readerStartMicros?: number;
  /** False: no reader long-polls (named scenarios; the draw is made all the same). */
  readerWaits?: boolean;
  /** Every reader's page size, instead of a drawn one (named scenarios; drawn all the same). */
  readerLimit?: number;
  /** Told when the recovery worker's pause starts and ends (true time, µs): the trace. */
  onPause?: (from: number, to: number) => void;
}

/**
 * One reader: from the start of the feed, a page of 1–1,000 events at a time, through its own
 * instance and clock, until the writers have stopped and `tailMicros` has passed.
 */
export async function runReader(ctx: ReaderContext, id: number, k: FeedKnobs): Promise<FeedReader> {
  const { sched } = ctx;
  // Within 0.9 S of true time (the guard's check adds its own uncertainty), stepped if so drawn.
  const drawn = 0.9 * sched.uniform(-ctx.skewHalfMicros, ctx.skewHalfMicros);
  const offset = ctx.readerOffsetMicros ?? drawn;
  const step = id === 0 ? k.readerStep : null;
  const wall = () => sched.now + offset + (step && sched.now >= step.at ? step.by : 0);
  const clock = () => BigInt(Math.floor(wall()));
  // The clock guard as an instance runs it (`clock-guard.ts`): a check every second against the
  // database's clock (true time, one round trip away); a read is refused while it does not vouch.
  const guard =
    ctx.plant === 'reader-clock-unguarded'
      ? undefined
      : new ClockGuard({
          boundMs: Number(ctx.skewMicros / 1000n),
          databaseClockMs: async () => {
            await sched.sleep(sched.uniform(100, 2_000));
            return sched.now / 1000;
          },
          clock,
          monotonic: () => sched.now / 1000,
          intervalMs: 1_000,
        });
  let checkedAt = Number.NEGATIVE_INFINITY;
  const store = plantedStore(
    new CassandraGraphStore(ctx.client(wall, id) as unknown as CqlClient, {
      clock,
    }),
    ctx.plant,
    'reader',
  );
  // Half the readers long-poll (a wait of 0.2–5 s when a read finds nothing: the feed's one poller
  // per instance on the schedule's time), drawn from a stream of the reader's own.
  let ended = false;
  const waits = sched.stream(LONG_POLL_STREAM + id);
  const longPolls = waits.chance(0.5) && ctx.readerWaits !== false;
  const feed = simFeed(
    store,
    clock,
    ctx.lagMicros,
    ctx.skewMicros,
    ctx.plant,
    guard,
    sched.timers(() => !ended),
  );
  const startIn = sched.uniform(0, 2_000_000);
  await sched.sleep(ctx.readerStartMicros ?? startIn);
  const r: FeedReader = {
    id,
    startedAt: sched.now,
    cursor: null,
    events: [],
    pages: 0,
    failed: 0,
    errors: [],
    caughtUp: [],
    refused: 0,
    waited: 0,
  };
  for (;;) {
    const done = ctx.writersDone();
    if (done !== null && sched.now > done + ctx.tailMicros) break;
    if (guard && sched.now - checkedAt >= 1e6) {
      checkedAt = sched.now;
      await guard.check();
    }
    const drawnLimit = sched.pick([1, 2, 3, 7, 50, 1_000]);
    const limit = ctx.readerLimit ?? drawnLimit;
    const waitMs = longPolls ? waits.pick([0, 200, 1_000, 5_000]) : 0;
    const at = sched.now;
    try {
      const page = await feed.read(r.cursor, limit, waitMs > 0 ? { waitMs } : {});
      if (waitMs > 0) r.waited++;
      r.events.push(...page.items);
      r.cursor = page.next;
      r.pages++;
      if (page.items.length < limit) r.caughtUp.push({ at, delivered: r.events.length });
    } catch (e) {
      if (e instanceof StoreUnavailableError) r.failed++;
      else if (e instanceof ClockSkewError) r.refused++;
      else r.errors.push(e instanceof Error ? `${e.name}: ${e.message}` : String(e));
    }
    await sched.sleep(
      sched.uniform(0, (done === null ? k.readEveryMs : Math.max(k.readEveryMs, 1_000)) * 1_000),
    );
  }
  ended = true;
  return r;
}

/**
 * The recovery as a worker runs it (`IntentRecovery`, every `recoveryEveryMs`) from the start of
 * the schedule until the readers stop, on a client without faults: the bound on delivery (D in
 * `checkFeed`) counts on a pass every R. The writer instances' own passes (with faults) run too.
 * Leased (`FeedKnobs.lease`), worker `id` 0 is the one that may pause, and a worker 1 runs beside it.
 */
export async function runRecoveryWorker(
  ctx: ReaderContext,
  d: { store: CassandraGraphStore; lists: BucketedListService; leases: LeaseStore },
  k: FeedKnobs,
  id = 0,
): Promise<void> {
  const { sched } = ctx;
  const clock = () => BigInt(Math.floor(sched.now));
  let stopped = false;
  // The pause (`FeedKnobs.lease`): once, right after the first history read at or after its time
  // (a pass holding the lease, with an intent to resolve, between its read and what it decides
  // from it: the fence or the rewrite).
  const pause = id === 0 ? (k.lease?.pause ?? null) : null;
  let pausedUntil = Number.NEGATIVE_INFINITY;
  const planted = plantedStore(d.store, ctx.plant, 'recovery');
  const store =
    pause === null
      ? planted
      : new Proxy(planted, {
          get(target, prop, receiver) {
            const v = Reflect.get(target, prop, receiver);
            if (prop !== 'readPairHistory' || typeof v !== 'function') return v;
            return async (...a: unknown[]) => {
              const read = await v.apply(target, a);
              if (pausedUntil === Number.NEGATIVE_INFINITY && sched.now >= pause.at) {
                pausedUntil = sched.now + pause.micros;
                ctx.onPause?.(sched.now, pausedUntil);
                await sched.sleep(pause.micros);
              }
              return read;
            };
          },
        });
  // The worker's timers: a paused process runs no timer until the pause ends (its lease's
  // renewals come late, and find the lease taken).
  const base = sched.timers(() => !stopped);
  const timers: Timers = {
    ...base,
    every: (ms, fn) =>
      base.every(ms, () => {
        if (sched.now < pausedUntil) void sched.sleep(pausedUntil - sched.now).then(() => !stopped && fn());
        else fn();
      }),
  };
  const frontier = new IntentFrontier({
    store,
    lagMicros: ctx.lagMicros,
    retentionMicros: RETENTION_MICROS,
  });
  const recovery = new IntentRecovery(
    { store, lists: d.lists, clock, lagMicros: ctx.lagMicros },
    frontier,
    k.lease
      ? {
          lease: {
            store: d.leases,
            holder: `recovery-worker-${id}`,
            clockBoundMs: Number(ctx.skewMicros) / 1000,
            ttlMs: RECOVERY_LEASE_TTL_MS,
            timers,
          },
        }
      : {},
  );
  try {
    for (;;) {
      const done = ctx.writersDone();
      if (done !== null && sched.now > done + ctx.tailMicros) return;
      if (!recoveryIsDown(k, sched.now)) await recovery.runOnce();
      await sched.sleep(k.recoveryEveryMs * 1_000);
    }
  } finally {
    stopped = true;
    recovery.stop();
  }
}

/** Whether no recovery pass resolves anything at true time `at`. */
export function recoveryIsDown(k: FeedKnobs, at: number): boolean {
  return k.recoveryDown !== null && at >= k.recoveryDown.from && at < k.recoveryDown.to;
}

/** Reads `feed` from `cursor` to its watermark (pages of 1,000). */
export async function readToEnd(feed: Feed, cursor: string | null): Promise<GraphEvent[]> {
  const out: GraphEvent[] = [];
  let at = cursor;
  for (let i = 0; i < 10_000; i++) {
    const page = await feed.read(at, 1_000);
    out.push(...page.items);
    at = page.next;
    if (page.items.length < 1_000) return out;
  }
  throw new Error('the feed did not end in 10,000 pages');
}

/** Resolves every intent older than L at `clock` (passes until one resolves none). */
export async function finalRecovery(
  store: CassandraGraphStore,
  lists: BucketedListService,
  clock: () => Position,
  lagMicros: bigint,
  from: Position,
): Promise<{ present: number; fenced: number }> {
  const total = { present: 0, fenced: 0 };
  for (let pass = 0; pass < 100; pass++) {
    const r = await recoverIntents(
      { store, lists, clock, lagMicros },
      { after: Array.from({ length: EVENT_SHARDS }, () => from) },
    );
    total.present += r.present;
    total.fenced += r.fenced;
    if (r.present + r.fenced === 0) return total;
  }
  throw new Error('the recovery did not end in 100 passes');
}

export interface FeedViolation {
  kind:
    | 'feed-reader'
    | 'feed-late'
    | 'feed-user'
    | 'feed-delivery'
    | 'feed-alternation'
    | 'feed-state'
    | 'feed-phantom'
    | 'feed-tail'
    | 'feed-error';
  pair?: string;
  detail: string;
}

/** What one instance's feed tail read and passed on to its listeners. */
export interface TailWitness {
  instance: number;
  /**
   * Each read of its tail that answered (fresh read or sweep): when it was sent (true µs) and the
   * slots it covered, `(after, through]` (a full page: to its last row's slot, exclusive).
   */
  reads: { at: number; after: Position; through: Position }[];
  /** `tailKey` of every event passed on. */
  heard: Set<string>;
}

/**
 * `store` with the instance's tail reads recorded into `witness`: its reads of `tailPage` rows
 * (its other reads of the feed take 1, 2 or 8). Outside a plant, so it records what the tail was
 * answered.
 */
export function recordTailReads(
  store: CassandraGraphStore,
  tailPage: number,
  now: () => number,
  witness: TailWitness,
): CassandraGraphStore {
  return withTailReads(store, tailPage, async (read, from, to) => {
    const at = now();
    const rows = await read();
    const last = rows.at(-1);
    const through = rows.length >= tailPage && last ? last.key.slot - 1n : to;
    witness.reads.push({ at, after: from?.slot ?? 0n, through });
    return rows;
  });
}

/**
 * `store` with its tail reads (`readEventRows` of `tailPage` rows) answered by `f`, which may make
 * the read (`read`); every other read as it is.
 */
function withTailReads(
  store: CassandraGraphStore,
  tailPage: number,
  f: (read: () => Promise<EventRow[]>, from: EventKey | null, to: Position) => Promise<EventRow[]>,
): CassandraGraphStore {
  return new Proxy(store, {
    get: (t, k, r) =>
      k === 'readEventRows'
        ? (from: EventKey | null, to: Position, limit: number) =>
            limit === tailPage
              ? f(() => t.readEventRows(from, to, limit), from, to)
              : t.readEventRows(from, to, limit)
        : Reflect.get(t, k, r),
  });
}

/** A feed row's (or event's) slot and pair: what the tail check matches an event by. */
export const tailKey = (slot: Position, a: UserId, b: UserId) => `${slot}|${pairOf(a, b)}`;

/**
 * When each feed row and each period's index entry reached each replica (true µs; a single node is
 * one replica): every write applied to an engine is noted, and what it left in the feed's
 * partitions read there. Repairs are not noted (a row a repair brought counts from its next
 * delivery there, or never), so a row is never taken as readable sooner than it was.
 */
/** What `FeedLandings` compares of a feed row: its key and its events. */
const FEED_ROWS = 'SELECT slot, low_id, high_id, op_position, op_source, op_kind, events FROM graph_events';

export class FeedLandings {
  /** Per row key (`tailKey`), per replica: its rows' content there and since when (true µs). */
  private readonly rows = new Map<string, ({ value: string; since: number } | null)[]>();
  private readonly periods = new Map<bigint, number[]>();
  /** The rows' final content (the merge of every replica), once `finish` has read it. */
  private finals = new Map<string, string>();

  constructor(private readonly engines: readonly CqlEngine[]) {
    engines.forEach((e, r) => {
      const apply = e.applyWrites.bind(e);
      e.applyWrites = (writes, now, o) => {
        const verdict = apply(writes, now, o);
        this.note(r, writes, o?.landed ?? now);
        return verdict;
      };
    });
  }

  /** The final content of every row, from `view` (the merge of all replicas) at true time `at`. */
  finish(view: CqlEngine, at: number): void {
    this.finals = FeedLandings.contents(view, FEED_ROWS, [], at);
  }

  /** The rows a read returns, grouped by `tailKey`: each key's rows' op keys and events, in one string. */
  private static contents(
    engine: CqlEngine,
    q: string,
    params: readonly unknown[],
    at: number,
  ): Map<string, string> {
    const parts = new Map<string, string[]>();
    for (const row of engine.select(q, params, at, { fetchSize: 1_000_000 }).rows) {
      const key = tailKey(row.slot as bigint, row.low_id as bigint, row.high_id as bigint);
      const list = parts.get(key) ?? [];
      list.push(`${row.op_position}|${row.op_source}|${row.op_kind}|${row.events}`);
      parts.set(key, list);
    }
    return new Map([...parts].map(([k, v]) => [k, v.sort().join(';')]));
  }

  private note(r: number, writes: readonly PartitionWrite[], at: number): void {
    const engine = this.engines[r] as CqlEngine;
    // Its reads are bookkeeping: not reads a staleness check should see (`PartitionWatch`).
    const watch = engine.watch;
    engine.watch = null;
    try {
      this.noteOn(engine, r, writes, at);
    } finally {
      engine.watch = watch;
    }
  }

  private noteOn(engine: CqlEngine, r: number, writes: readonly PartitionWrite[], at: number): void {
    for (const w of writes) {
      if (w.table === 'graph_events') {
        const now = FeedLandings.contents(engine, `${FEED_ROWS} WHERE period = ? AND shard = ?`, w.pk, at);
        for (const [key, value] of now) {
          let per = this.rows.get(key);
          if (!per) {
            per = this.engines.map(() => null);
            this.rows.set(key, per);
          }
          if (per[r]?.value !== value) per[r] = { value, since: at };
        }
      } else if (w.table === 'graph_event_periods') {
        const read = engine.select('SELECT period FROM graph_event_periods WHERE day = ?', w.pk, at, {
          fetchSize: 1_000_000,
        });
        for (const row of read.rows) {
          const period = row.period as bigint;
          let times = this.periods.get(period);
          if (!times) {
            times = this.engines.map(() => Number.POSITIVE_INFINITY);
            this.periods.set(period, times);
          }
          if (times[r] === Number.POSITIVE_INFINITY) times[r] = at;
        }
      }
    }
  }

  /**
   * When a quorum held the row's final content (`finish`) and its period's index entry (every read
   * then returns the row as it ends), or undefined. A row rewritten later (a view that saw more)
   * counts from its rewrite: the tail passes a row's events as it reads them.
   */
  readableAt(key: string, slot: Position): number | undefined {
    const quorum = Math.floor(this.engines.length / 2) + 1;
    const nth = (times: number[]) => [...times].sort((a, b) => a - b)[quorum - 1] as number;
    const final = this.finals.get(key);
    const per = this.rows.get(key);
    const rowAt =
      final === undefined || !per
        ? Number.POSITIVE_INFINITY
        : nth(per.map((x) => (x?.value === final ? x.since : Number.POSITIVE_INFINITY)));
    const periodTimes = this.periods.get(eventPeriod(slot));
    const t = Math.max(rowAt, periodTimes ? nth(periodTimes) : Number.POSITIVE_INFINITY);
    return Number.isFinite(t) ? t : undefined;
  }
}

/**
 * The tail's promise (`Feed.subscribe`), read by read: a row that a read of the tail could see
 * reaches the listeners. A read sent after the row was readable — on a quorum, with its minute's
 * index entry (`FeedLandings`: a logged batch that times out can land the row and the index entry
 * seconds apart) — whose range covers its slot must have answered it, and the tail must have passed
 * its events on. (Reads that failed promise nothing: the tail is stale meanwhile, which the caches
 * check, and a fresh read never reaches back past the settled feed's edge, L.) What the instance's
 * caches and registry hear is then whole, so a tail that skips rows (past a page,
 * `tail-skips-past-page`) or hears nothing is caught here, not only when a skipped row was a
 * deactivation a read then met.
 */
export function checkTails(
  reference: readonly GraphEvent[],
  landings: FeedLandings,
  tails: readonly TailWitness[],
): { violations: FeedViolation[]; checked: number } {
  const out: FeedViolation[] = [];
  let checked = 0;
  const readable = reference.flatMap((e) => {
    const key = tailKey(e.slot, e.source, e.target);
    const at = landings.readableAt(key, e.slot);
    return at === undefined ? [] : [{ e, key, at }];
  });
  for (const t of tails) {
    const missed: string[] = [];
    for (const { e, key, at } of readable) {
      const read = t.reads.find((r) => r.at >= at && r.after < e.slot && e.slot <= r.through);
      if (!read) continue;
      checked++;
      if (!t.heard.has(key))
        missed.push(
          `${show(e)} (readable ${((at - Number(e.slot)) / 1000).toFixed(0)} ms after its slot, covered by a read sent at ${read.at})`,
        );
    }
    if (missed.length > 0)
      out.push({
        kind: 'feed-tail',
        detail: `instance ${t.instance}'s tail passed on none of ${missed.length} events its reads covered: ${missed.slice(0, 3).join('; ')}`,
      });
  }
  return { violations: out, checked };
}

const show = (e: GraphEvent) => `${e.type} ${e.source}→${e.target} @${e.slot}`;
const pairOf = (a: UserId, b: UserId) => (a < b ? `${a}|${b}` : `${b}|${a}`);

/** The invariant of the note, on the reference read and the readers' collections. */
export function checkFeed(
  reference: readonly GraphEvent[],
  readers: readonly FeedReader[],
  histories: ReadonlyMap<string, PairHistory>,
  boundMicros: number,
  puts: readonly { account: UserId; acked: boolean; wrote: boolean }[] = [],
): FeedViolation[] {
  const out: FeedViolation[] = [];
  // Account updates: one event for each acknowledged PUT that wrote its cells, and at most one for
  // each that wrote and then failed (it may have landed); none for a PUT that wrote nothing.
  const updates = new Map<UserId, number>();
  for (const e of reference)
    if (e.type === 'user.updated') updates.set(e.source, (updates.get(e.source) ?? 0) + 1);
  for (const account of new Set([...updates.keys(), ...puts.map((p) => p.account)])) {
    const mine = puts.filter((p) => p.account === account && p.wrote);
    const must = mine.filter((p) => p.acked).length;
    const n = updates.get(account) ?? 0;
    if (n < must || n > mine.length)
      out.push({
        kind: 'feed-user',
        detail: `${n} user.updated events of ${account}: ${must} acknowledged PUTs wrote, ${mine.length - must} more may have`,
      });
  }
  // Within D: a reader caught up at `at` has every event with a slot before `at − D` (feed order
  // is slot order, so those are a prefix of the feed).
  for (const r of readers) {
    const late = r.caughtUp.find(
      (c) => reference.filter((e) => Number(e.slot) < c.at - boundMicros).length > c.delivered,
    );
    if (late) {
      const due = reference.filter((e) => Number(e.slot) < late.at - boundMicros).slice(late.delivered);
      out.push({
        kind: 'feed-late',
        detail: `reader ${r.id} caught up at ${late.at} without [${due.slice(0, 4).map(show).join('; ')}], due by D = ${boundMicros / 1e6} s`,
      });
    }
  }
  const ids = reference.map((e) => `${e.id} ${show(e)}`);
  for (const r of readers) {
    for (const e of r.errors) out.push({ kind: 'feed-error', detail: `reader ${r.id}: ${e}` });
    const got = r.events.map((e) => `${e.id} ${show(e)}`);
    if (got.join('\n') === ids.join('\n')) continue;
    const at = got.findIndex((g, i) => g !== ids[i]);
    const want = new Set(ids);
    const seen = new Set<string>();
    const twice = got.filter((g) => {
      const again = seen.has(g);
      seen.add(g);
      return again;
    });
    const missing = ids.filter((x) => !seen.has(x));
    const extra = got.filter((g) => !want.has(g));
    out.push({
      kind: 'feed-reader',
      detail:
        `reader ${r.id} (from ${r.startedAt}, ${r.pages} pages) diverges at event ${at < 0 ? got.length : at} of ` +
        `${ids.length}: missed [${missing.slice(0, 4).join('; ')}], twice [${twice.slice(0, 4).join('; ')}], ` +
        `not in the feed [${extra.slice(0, 4).join('; ')}]`,
    });
  }
  const byPair = new Map<string, GraphEvent[]>();
  for (const e of reference) {
    if (e.type === 'user.updated') continue;
    const p = pairOf(e.source, e.target);
    byPair.set(p, [...(byPair.get(p) ?? []), e]);
  }
  for (const p of byPair.keys())
    if (!histories.has(p))
      out.push({
        kind: 'feed-phantom',
        pair: p,
        detail: `events of an untouched pair`,
      });
  for (const [pair, h] of histories) {
    const events = byPair.get(pair) ?? [];
    if (!h.checkpoint) {
      const want = pairEventRows({ checkpoint: null, ops: h.ops }, 0n).flatMap((row) =>
        row.transitions.map(
          (t) => `${edgeEventType(t.relation, t.on)} ${t.sourceId}→${t.targetId} @${row.key.slot}`,
        ),
      );
      const got = events.map(show);
      const sort = (xs: string[]) => [...xs].sort();
      if (sort(got).join('\n') !== sort(want).join('\n')) {
        const missing = want.filter((x) => !got.includes(x));
        const extra = got.filter((x) => !want.includes(x));
        out.push({
          kind: 'feed-delivery',
          pair,
          detail: `the feed is not the stored history's events: missing [${missing.join('; ')}], extra [${extra.join('; ')}]`,
        });
      }
      continue;
    }
    const last = new Map<string, boolean>();
    for (const e of events) {
      const on = !e.type.endsWith('.removed');
      const relation = e.type.split('.')[0] as string;
      const k = `${e.source}|${relation}|${e.target}`;
      if ((last.get(k) ?? false) === on) {
        out.push({
          kind: 'feed-alternation',
          pair,
          detail: `${show(e)} repeats the edge's state`,
        });
        break;
      }
      last.set(k, on);
    }
    const fold = foldPair(h.ops, h.checkpoint.edges);
    for (const e of fold.edges.values()) {
      const relation = edgeEventType(e.relation, true).split('.')[0] as string;
      const k = `${e.sourceId}|${relation}|${e.targetId}`;
      if ((last.get(k) ?? false) !== (e.state === 'active'))
        out.push({
          kind: 'feed-state',
          pair,
          detail: `${edgeKey(e.sourceId, e.relation, e.targetId)} is ${e.state} but its events end ${last.get(k) ? 'on' : 'off'}`,
        });
    }
  }
  return out;
}
