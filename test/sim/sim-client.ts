/**
 * A fake `CqlClient` (the part of the DataStax driver's `Client` the store uses: `execute`, `batch`
 * with paging through `pageState`, `shutdown`) over the simulated node (`cql/engine.ts`).
 *
 * Every call is one statement's life on the scheduler: the writer may stall before it goes out
 * (a GC pause: the client timestamp is taken when it is sent, as the driver takes it when it
 * writes the request), it reaches the node after a network delay and is applied there at one
 * instant (a batch: each partition's share at its own instant), the answer comes back after
 * another delay. The client gives up at the request timeout (`options.readTimeout`, else the
 * configured `requestTimeoutMs`) with the driver's `OperationTimedOutError`, whether or not the
 * statement was applied. Faults, drawn per statement: a slow statement (applied up to past its
 * timeout: late), a dropped one (never applied), a lost acknowledgement (applied; the client times
 * out), an idempotent statement applied a second time later (a driver retry on another host, with
 * the same client timestamp), and a crash of the writer before it sends (the call never returns,
 * nor does any later call of that writer). A logged batch is applied whole or not at all, but each
 * partition's share at its own instant; an unlogged one loses partitions independently.
 *
 * A direct client (no scheduler) applies each statement at once at the given time, with no fault:
 * what the end-of-schedule check, the repair and the set-up use.
 *
 * With `replicas` (RF 3, `cql/replicas.ts`) the same fates are drawn from the schedule, and each
 * statement's replica-level ones from the replicas' own draws: each share of a write lands on each
 * replica after its own delay, or by hint replay, or never (`replicaWrite`); a read merges the
 * replicas its consistency level contacts, with blocking read repair (`replicaRead`); the direct
 * client writes to every replica at once and reads their merge.
 */
import cassandra from 'cassandra-driver';
import type { CqlEngine, PageState, PartitionWrite, ReadResult, ResultRow } from './cql/engine.js';
import { Mutation, type ReplicaSet } from './cql/replicas.js';
import type { Draws, Scheduler, Timer } from './scheduler.js';

export interface FaultKnobs {
  /** Chance a statement waits before it is sent (the writer stalls), and the longest wait (ms). */
  stallP: number;
  stallMaxMs: number;
  /** Chance a statement takes long to reach the node, and the longest such delay (ms; may pass the timeout). */
  slowP: number;
  slowMaxMs: number;
  /** Chance the answer takes long to come back (up to `slowMaxMs`). */
  slowAckP: number;
  /** Chance a statement is never applied. */
  dropP: number;
  /** Chance a statement is applied but its answer never comes back. */
  lostAckP: number;
  /** Chance an idempotent statement is applied a second time, later. */
  twiceP: number;
  /** Chance the writer crashes just before sending a statement. */
  crashP: number;
  /** A laggy path: every statement takes 10–100 % of this to reach the node (ms; 0: 50 µs–2 ms). */
  lagMs: number;
  /**
   * Chance a write times out at the client yet lands later, up to `lateMaxMs` past its timeout: a
   * replica that missed it gets it by hint replay or read repair (the single node's model of a
   * write that sat on one replica). Optional: absent, no draw is made (old seeds replay as before).
   */
  lateP?: number;
  lateMaxMs?: number;
  /** How late past its timeout a dropped logged batch's batchlog replays it, at most (ms; default 0). */
  batchlogLateMs?: number;
}

/**
 * The replicas' faults (`ReplicaSet`, RF 3): how each replica takes a write and serves a read. The
 * store's writes and reads are LOCAL_QUORUM: 2 of 3.
 */
export interface ReplicaKnobs {
  /** Chance a replica misses a write (down, overloaded, a message lost): it gets it by hint replay. */
  missP: number;
  /** Chance a replica takes long to apply a write or serve a read, and how long at most (ms). */
  slowP: number;
  slowMaxMs: number;
  /** How long past the timeout a hint replays at most (ms), and the chance it never does. */
  hintMaxMs: number;
  hintLostP: number;
  /** Chance a write's coordinator dies while sending it to the replicas. */
  coordinatorDeathP: number;
  /** How long past the timeout the batchlog replays a logged batch its coordinator left, at most (ms). */
  batchlogMaxMs: number;
}

/** A client's replicas: the set, its knobs, and the draws of its per-replica fates (not the schedule's). */
export interface ReplicaOptions {
  set: ReplicaSet;
  knobs: ReplicaKnobs;
  draws: Draws;
}

/** How many replicas a consistency level waits for (RF 3); the driver's default here is LOCAL_QUORUM. */
function required(consistency: unknown): number {
  const c = cassandra.types.consistencies;
  if (consistency === c.one || consistency === c.localOne || consistency === c.any) return 1;
  if (consistency === c.three || consistency === c.all) return 3;
  if (consistency === c.two) return 2;
  return 2;
}

export const NO_FAULTS: FaultKnobs = {
  stallP: 0,
  stallMaxMs: 0,
  slowP: 0,
  slowMaxMs: 0,
  slowAckP: 0,
  dropP: 0,
  lostAckP: 0,
  twiceP: 0,
  crashP: 0,
  lagMs: 0,
};

/** One statement or batch as the simulation saw it (the trace and the diagnosis read these). */
export interface StatementRecord {
  id: number;
  writer: number;
  /** The call of the writer it belongs to (set by the harness), or -1. */
  call: number;
  queries: { query: string; params: readonly unknown[] }[];
  select: boolean;
  calledAt: number;
  sentAt: number;
  /** True times at which (a partition's share of) it was applied. */
  applied: number[];
  /** The end as the client saw it. */
  outcome: 'pending' | 'ok' | 'timeout' | 'error' | 'crashed';
  endAt: number;
  fate: string;
  /** The first page's rows of a read, when the harness asked for them. */
  result?: ReadResult;
  /** For each partition group of a write: the partition it touched. */
  partitions: string[];
  /** A conditional write's verdict, once the node applied it (whether its condition held). */
  lwtApplied?: boolean;
}

export interface SimClientHooks {
  /** Whether a read should carry cell metadata (`ReadResult.meta`). */
  wantMeta?: (query: string) => boolean;
  /** The writer's current call, stamped on each statement. */
  call?: () => number;
  onSend?: (r: StatementRecord) => void;
  onApply?: (r: StatementRecord, at: number) => void;
}

export interface SimClientOptions {
  /** The node; with `replicas`, their view (`ReplicaSet.view`), which binds and parses. */
  engine: CqlEngine;
  /**
   * RF 3 replicas instead of one node: each write lands replica by replica, a read merges the
   * replicas it contacts (`cql/replicas.ts`). Absent: the single node (every seed as before).
   */
  replicas?: ReplicaOptions;
  /** Null: a direct client (apply at once at `trueNow()`, no faults). */
  scheduler: Scheduler | null;
  /** True time (µs) for a direct client. */
  trueNow?: () => number;
  /** The writer's wall clock (µs), for client timestamps. */
  wallMicros: () => number;
  writer: number;
  requestTimeoutMs: number;
  faults: FaultKnobs;
  hooks?: SimClientHooks;
  /** Every statement record is appended here. */
  log?: StatementRecord[];
  /** Ids for statement records, shared by the clients of one schedule. */
  ids?: { next: number };
  /** Fixed delays (µs) for a statement, replacing the drawn ones (named scenarios). */
  override?: (
    r: StatementRecord,
  ) => { stall?: number; reach?: number; back?: number; crash?: boolean } | undefined;
}

type Query = { query: string; params?: readonly unknown[] };

interface SimResultSet {
  rows: ResultRow[];
  rowLength: number;
  pageState: string | null;
  first(): ResultRow | null;
}

class ResultSet implements SimResultSet {
  readonly rowLength: number;
  constructor(
    readonly rows: ResultRow[],
    readonly pageState: string | null,
  ) {
    this.rowLength = rows.length;
  }
  first(): ResultRow | null {
    return this.rows[0] ?? null;
  }
}

const resultSet = (rows: ResultRow[], pageState: string | null): SimResultSet =>
  new ResultSet(rows, pageState);

export class SimClient {
  /** The writer crashed: every call from now on never returns. */
  crashed = false;
  private lastTs = 0n;
  private readonly pages = new Map<string, PageState>();
  private pageIds = 0;
  private readonly ids: { next: number };

  constructor(private readonly o: SimClientOptions) {
    this.ids = o.ids ?? { next: 1 };
  }

  /** The driver's monotonic timestamp generator over the writer's clock. */
  private timestamp(): bigint {
    const now = BigInt(Math.floor(this.o.wallMicros()));
    this.lastTs = now > this.lastTs ? now : this.lastTs + 1n;
    return this.lastTs;
  }

  private now(): number {
    return this.o.scheduler ? this.o.scheduler.now : (this.o.trueNow as () => number)();
  }

  execute(
    query: string,
    params: readonly unknown[] = [],
    options: Record<string, unknown> = {},
  ): Promise<SimResultSet> {
    return this.run([{ query, params }], options, false);
  }

  batch(queries: readonly (Query | string)[], options: Record<string, unknown> = {}): Promise<SimResultSet> {
    const qs = queries.map((q) =>
      typeof q === 'string' ? { query: q, params: [] } : { query: q.query, params: q.params ?? [] },
    );
    return this.run(qs, options, true);
  }

  async shutdown(): Promise<void> {}

  /** `n` distinct replicas, drawn. */
  private static contact(d: Draws, rf: number, n: number): number[] {
    const all = Array.from({ length: rf }, (_, i) => i);
    for (let i = all.length - 1; i > 0; i--) {
      const j = d.int(0, i);
      [all[i], all[j]] = [all[j] as number, all[i] as number];
    }
    return all.slice(0, n);
  }

  /** A replica's delay to apply or serve (µs): fast, or with `slowP` up to `slowMaxMs`. */
  private static replicaDelay(rs: ReplicaOptions): number {
    return rs.draws.chance(rs.knobs.slowP)
      ? rs.draws.uniform(0, rs.knobs.slowMaxMs * 1000)
      : rs.draws.uniform(50, 2_000);
  }

  /**
   * A read on replicas: at `reach` its coordinator contacts as many replicas as its consistency
   * level needs (drawn), each serves its share after a delay of its own, and when the last has
   * the merge answers with blocking read repair (`ReplicaRead`). `done` once it answered.
   */
  private replicaRead(
    rs: ReplicaOptions,
    rec: StatementRecord,
    options: Record<string, unknown>,
    o: { fetchSize: number; page: PageState | null; meta: boolean },
    reach: number,
    done: () => void,
  ): void {
    const sched = this.o.scheduler as Scheduler;
    const q = rec.queries[0] as { query: string; params: readonly unknown[] };
    sched.after(
      reach,
      () => {
        const contacted = SimClient.contact(rs.draws, rs.set.rf, required(options.consistency));
        const read = rs.set.beginRead(q.query, q.params);
        let left = contacted.length;
        for (const r of contacted)
          sched.after(
            SimClient.replicaDelay(rs),
            () => {
              read.take(r);
              if (--left > 0) return;
              rec.result = read.finish(sched.now, o);
              rec.applied.push(sched.now);
              this.o.hooks?.onApply?.(rec, sched.now);
              done();
            },
            false,
          );
      },
      false,
    );
  }

  /**
   * A write on replicas. Each kept share (`delays`: when it reaches its coordinator, null: never)
   * lands on each replica after a delay of its own, or — a replica that missed it — by hint replay
   * up to `hintMaxMs` past the timeout, or never (`hintLostP`: then only a read's repair or the
   * end's merge brings it). The client is answered once every share is on as many replicas as its
   * consistency level needs. A late write (`late`) reaches one replica in time at most, the
   * others when it lands; a batchlog replay (`batchlog`) lands everywhere late; a counter update
   * lands on every replica at once; an LWT is a Paxos round on a drawn quorum at its instant
   * (`ReplicaSet.paxos`), the commit reaching the third replica later. A coordinator that dies
   * (`coordinatorDeathP`) leaves what reached a replica before it died; the rest lands by the
   * batchlog's replay for a logged batch of several partitions, never otherwise, and the client
   * times out.
   */
  private replicaWrite(
    rs: ReplicaOptions,
    rec: StatementRecord,
    options: Record<string, unknown>,
    groups: PartitionWrite[][],
    delays: (number | null)[],
    o: {
      reach: number;
      timeoutMicros: number;
      late: boolean;
      batchlog: boolean;
      logged: boolean;
      again: number | null;
      onAck: ((verdict: ResultRow | undefined) => void) | null;
    },
  ): void {
    const sched = this.o.scheduler as Scheduler;
    const { set, knobs: k, draws: d } = rs;
    const need = required(options.consistency);
    const sentAt = sched.now;
    const hint = (): number | null =>
      d.chance(k.hintLostP) ? null : o.timeoutMicros + d.uniform(0, k.hintMaxMs * 1000);
    const isLwt = groups.some((g) => g.some((w) => w.lwt));
    const dies = !o.late && !o.batchlog && !isLwt && o.onAck !== null && d.chance(k.coordinatorDeathP);
    let verdict: ResultRow | undefined;
    const landedOn = (m: Mutation, r: number) => () => {
      if (!set.deliver(r, m, sched.now)) return;
      rec.applied.push(sched.now);
      this.o.hooks?.onApply?.(rec, sched.now);
    };
    // When each share's consistency level is met (µs after sending; null: not in time or never).
    const acks: (number | null)[] = [];
    const plans: { m: Mutation; landings: (number | null)[] }[] = [];
    groups.forEach((g, i) => {
      const delay = delays[i];
      if (delay === null || delay === undefined) return;
      const counter = g.some((w) => w.counter);
      if (isLwt) {
        sched.after(
          delay,
          () => {
            const m = new Mutation(g, sched.now);
            const quorum = SimClient.contact(d, set.rf, Math.max(need, Math.floor(set.rf / 2) + 1));
            verdict = set.paxos(quorum, m, sched.now);
            rec.lwtApplied = verdict['[applied]'] === true;
            rec.applied.push(sched.now);
            this.o.hooks?.onApply?.(rec, sched.now);
            if (!rec.lwtApplied) return;
            for (let r = 0; r < set.rf; r++) {
              if (quorum.includes(r)) continue;
              const at = d.chance(k.missP) ? hint() : SimClient.replicaDelay(rs);
              if (at !== null) sched.after(at, landedOn(m, r), false);
            }
          },
          false,
        );
        acks.push(delay);
        return;
      }
      const m = new Mutation(g, sentAt + o.reach);
      let landings: (number | null)[];
      if (counter) landings = set.engines.map(() => delay);
      else if (o.late) {
        // One replica may have taken it in time; the others get it when it lands, or never.
        const inTime = d.int(0, set.rf - 1);
        landings = set.engines.map((_, r) =>
          r === inTime
            ? d.chance(0.5)
              ? o.reach + SimClient.replicaDelay(rs)
              : delay
            : d.chance(k.hintLostP)
              ? null
              : delay + d.uniform(0, 2_000),
        );
      } else if (o.batchlog) landings = set.engines.map(() => delay + SimClient.replicaDelay(rs));
      else
        landings = set.engines.map(() => (d.chance(k.missP) ? hint() : delay + SimClient.replicaDelay(rs)));
      const sorted = landings.filter((x): x is number => x !== null).sort((a, b) => a - b);
      acks.push(sorted.length >= need ? (sorted[need - 1] as number) : null);
      plans.push({ m, landings });
    });
    if (dies) {
      // It dies after sending to some replicas: a cut among the landings before any hint.
      const all = plans.flatMap((p) =>
        p.landings.filter((x): x is number => x !== null && x < o.timeoutMicros),
      );
      const last = all.length > 0 ? Math.max(...all) : o.reach;
      const cut = o.reach + d.uniform(0, Math.max(1, last - o.reach));
      const replay = o.logged ? o.timeoutMicros + d.uniform(0, k.batchlogMaxMs * 1000) : null;
      for (const p of plans)
        p.landings = p.landings.map((x) =>
          x !== null && x < cut ? x : replay === null ? null : replay + d.uniform(50, 2_000),
        );
      rec.fate = [rec.fate, 'coordinator died'].filter(Boolean).join(',');
    }
    for (const p of plans)
      p.landings.forEach((at, r) => {
        if (at !== null) sched.after(at, landedOn(p.m, r), false);
        if (at !== null && o.again !== null) sched.after(at + o.again, landedOn(p.m, r), false);
      });
    const again = o.again;
    if (isLwt && again !== null)
      groups.forEach((g, i) => {
        const delay = delays[i];
        if (delay === null || delay === undefined) return;
        sched.after(
          delay + again,
          () => {
            set.paxos(SimClient.contact(d, set.rf, need), new Mutation(g, sched.now), sched.now);
          },
          false,
        );
      });
    if (dies || !o.onAck || acks.some((a) => a === null)) return;
    const onAck = o.onAck;
    const ackAt = Math.max(...(acks as number[]));
    // The answer leaves the coordinator once the last share's level is met (the timer may fire first).
    sched.after(ackAt, () => onAck(verdict), false);
  }

  private run(
    queries: { query: string; params: readonly unknown[] }[],
    options: Record<string, unknown>,
    isBatch: boolean,
  ): Promise<SimResultSet> {
    const { engine, scheduler: sched } = this.o;
    // Parse before anything else: an unknown statement shape fails the call at once, loudly.
    const select = engine.isSelect(queries[0]?.query ?? '');
    if (isBatch && queries.some((q) => engine.isSelect(q.query))) throw new Error('a SELECT in a batch');
    const rec: StatementRecord = {
      id: this.ids.next++,
      writer: this.o.writer,
      call: this.o.hooks?.call?.() ?? -1,
      queries,
      select,
      calledAt: this.now(),
      sentAt: -1,
      applied: [],
      outcome: 'pending',
      endAt: -1,
      fate: '',
      partitions: [],
    };
    this.o.log?.push(rec);
    if (this.crashed) {
      rec.outcome = 'crashed';
      return new Promise(() => {});
    }
    const page = typeof options.pageState === 'string' ? this.pages.get(options.pageState) : undefined;
    if (typeof options.pageState === 'string' && !page) throw new Error('unknown page state');
    const fetchSize = typeof options.fetchSize === 'number' ? options.fetchSize : 5000;
    const meta = select && (this.o.hooks?.wantMeta?.(queries[0]?.query ?? '') ?? false);
    const idempotent = options.isIdempotent !== false;
    const logged = isBatch && options.logged !== false;
    const rs = this.o.replicas;
    const read = (at: number): ReadResult => {
      const q = queries[0] as { query: string; params: readonly unknown[] };
      const o = { fetchSize, page: page ?? null, meta };
      // A direct client reads at ALL, repairing every replica (`readAll`).
      return rs ? rs.set.readAll(q.query, q.params, at, o) : engine.select(q.query, q.params, at, o);
    };
    const answer = (r: ReadResult | null): SimResultSet => {
      if (!r) return resultSet([], null);
      let state: string | null = null;
      if (r.next) {
        state = `p${this.pageIds++}`;
        this.pages.set(state, r.next);
      }
      return resultSet(r.rows, state);
    };
    const bind = (): PartitionWrite[][] => {
      const ts = this.timestamp();
      const writes = queries.flatMap((q) => engine.bindWrite(q.query, q.params, ts, rec.id));
      if (isBatch && writes.some((w) => w.lwt))
        throw new Error('a conditional statement in a batch (not modelled)');
      if (isBatch && writes.some((w) => w.counter) && options.counter !== true)
        throw new Error('counter updates in a non-counter batch');
      const groups = new Map<string, PartitionWrite[]>();
      for (const w of writes) {
        const k = `${w.table}|${w.key}`;
        const g = groups.get(k);
        if (g) g.push(w);
        else groups.set(k, [w]);
      }
      rec.partitions = [...groups.keys()];
      return [...groups.values()];
    };

    if (!sched) {
      const at = this.now();
      rec.sentAt = at;
      rec.applied.push(at);
      rec.fate = 'direct';
      rec.outcome = 'ok';
      rec.endAt = at;
      if (select) {
        const r = read(at);
        if (meta) rec.result = r;
        this.o.hooks?.onSend?.(rec);
        this.o.hooks?.onApply?.(rec, at);
        return Promise.resolve(answer(r));
      }
      const groups = bind();
      this.o.hooks?.onSend?.(rec);
      let verdict: ResultRow | undefined;
      for (const g of groups)
        verdict =
          (rs ? rs.set.applyEverywhere(new Mutation(g, at), at) : engine.applyWrites(g, at)) ?? verdict;
      if (verdict) rec.lwtApplied = verdict['[applied]'] === true;
      this.o.hooks?.onApply?.(rec, at);
      return Promise.resolve(resultSet(verdict ? [verdict] : [], null));
    }

    // Draw the statement's whole fate now, always the same draws in the same order whatever the
    // knobs' values, so a seed replays exactly and a seed rerun with one knob turned off is the same
    // schedule but for that knob.
    const f = this.o.faults;
    const ms = 1000;
    const crash = sched.chance(f.crashP);
    const stalled = sched.chance(f.stallP);
    const stallFor = sched.uniform(0, f.stallMaxMs * ms);
    const slow = sched.chance(f.slowP);
    const slowAck = sched.chance(f.slowAckP);
    const drop = sched.chance(f.dropP);
    const lostAck = sched.chance(f.lostAckP);
    const twice = sched.chance(f.twiceP) && idempotent && !select;
    const slowReach = sched.uniform(0, f.slowMaxMs * ms);
    const slowBack = sched.uniform(0, f.slowMaxMs * ms);
    const u = sched.random();
    const fastReach = f.lagMs > 0 ? (0.1 + 0.9 * u) * f.lagMs * ms : 50 + 1_950 * u;
    const fastBack = sched.uniform(50, 2_000);
    const fixed = this.o.override?.(rec);
    const reach = fixed?.reach ?? (slow ? slowReach : fastReach);
    const back = fixed?.back ?? (slowAck ? slowBack : fastBack);
    const again = sched.uniform(0, 2 * f.slowMaxMs * ms + 10_000);
    const stall = fixed?.stall ?? (stalled ? stallFor : 0);
    // Drawn only where the knob is set, so the seeds of schedules without it replay unchanged.
    const lateBy =
      (f.lateP ?? 0) > 0 && !select && sched.chance(f.lateP ?? 0)
        ? sched.uniform(0, (f.lateMaxMs ?? 0) * ms)
        : null;
    const batchlogBy = (f.batchlogLateMs ?? 0) > 0 ? sched.uniform(0, (f.batchlogLateMs ?? 0) * ms) : 0;
    if (crash || fixed?.crash) {
      this.crashed = true;
      rec.outcome = 'crashed';
      rec.fate = 'crash';
      return new Promise(() => {});
    }
    const timeoutMs = typeof options.readTimeout === 'number' ? options.readTimeout : this.o.requestTimeoutMs;
    if (stall > 0 || slow || slowAck || drop || lostAck || twice || lateBy !== null) {
      rec.fate = [
        stall > 0 ? `stall ${(stall / ms).toFixed(0)}ms` : '',
        slow ? 'slow' : '',
        slowAck ? 'slow-ack' : '',
        drop ? 'dropped' : '',
        lostAck ? 'lost-ack' : '',
        twice ? 'twice' : '',
        lateBy !== null ? `late ${(lateBy / ms).toFixed(0)}ms` : '',
      ]
        .filter(Boolean)
        .join(',');
    }

    return new Promise<SimResultSet>((resolve, reject) => {
      let settled = false;
      let timer: Timer | null = null;
      const settle = (outcome: StatementRecord['outcome'], fn: () => void) => {
        if (settled) return;
        settled = true;
        timer?.cancel();
        rec.outcome = outcome;
        rec.endAt = sched.now;
        fn();
      };
      const send = () => {
        if (this.crashed) {
          rec.outcome = 'crashed';
          return;
        }
        rec.sentAt = sched.now;
        let groups: PartitionWrite[][] = [];
        try {
          if (!select) groups = bind();
        } catch (e) {
          settle('error', () => reject(e));
          return;
        }
        this.o.hooks?.onSend?.(rec);
        timer = sched.after(timeoutMs * ms, () =>
          settle('timeout', () =>
            reject(
              new cassandra.errors.OperationTimedOutError(`simulated timeout after ${timeoutMs} ms`, 'sim'),
            ),
          ),
        );
        if (select && rs) {
          if (!drop)
            this.replicaRead(rs, rec, options, { fetchSize, page: page ?? null, meta }, reach, () => {
              if (!lostAck) sched.after(back, () => settle('ok', () => resolve(answer(rec.result ?? null))));
            });
          return;
        }
        if (select) {
          if (drop) return;
          sched.after(
            reach,
            () => {
              const r = read(sched.now);
              rec.applied.push(sched.now);
              if (meta) rec.result = r;
              this.o.hooks?.onApply?.(rec, sched.now);
              if (!lostAck) sched.after(back, () => settle('ok', () => resolve(answer(r))));
            },
            false,
          );
          return;
        }
        // Which partitions' shares are applied: all, or for a dropped statement none — but a
        // logged batch's batchlog may still replay it whole, late, and an unlogged one keeps some.
        const multi = groups.length > 1;
        let kept = groups.map(() => !drop);
        let late = false;
        if (drop && multi && logged && sched.chance(0.5)) {
          kept = groups.map(() => true);
          late = true;
        } else if (drop && multi && !logged) kept = groups.map(() => sched.chance(0.5));
        let pending = kept.filter(Boolean).length;
        let verdict: ResultRow | undefined;
        if (rs) {
          // When each kept share reaches its coordinator: as the single node applied it (the same
          // draws), then replica by replica (`replicaWrite`).
          const delays = groups.map((_, i) =>
            !kept[i]
              ? null
              : lateBy !== null
                ? timeoutMs * ms + lateBy + (multi ? sched.uniform(0, 2_000) : 0)
                : reach +
                  (multi ? sched.uniform(0, slow ? f.slowMaxMs * ms : 2_000) : 0) +
                  (late ? timeoutMs * ms + batchlogBy : 0),
          );
          const acked = !drop && !lostAck && lateBy === null && !late;
          this.replicaWrite(rs, rec, options, groups, delays, {
            reach,
            timeoutMicros: timeoutMs * ms,
            late: lateBy !== null,
            batchlog: late,
            logged: logged && multi,
            again: twice ? again : null,
            onAck: acked
              ? (v) => sched.after(back, () => settle('ok', () => resolve(resultSet(v ? [v] : [], null))))
              : null,
          });
          return;
        }
        groups.forEach((g, i) => {
          if (!kept[i]) return;
          const delay =
            lateBy !== null
              ? timeoutMs * ms + lateBy + (multi ? sched.uniform(0, 2_000) : 0)
              : reach +
                (multi ? sched.uniform(0, slow ? f.slowMaxMs * ms : 2_000) : 0) +
                (late ? timeoutMs * ms + batchlogBy : 0);
          const apply = () => {
            verdict = engine.applyWrites(g, sched.now) ?? verdict;
            if (verdict) rec.lwtApplied = verdict['[applied]'] === true;
            rec.applied.push(sched.now);
            this.o.hooks?.onApply?.(rec, sched.now);
          };
          sched.after(
            delay,
            () => {
              apply();
              if (--pending === 0 && !lostAck && !drop && lateBy === null)
                sched.after(back, () =>
                  settle('ok', () => resolve(resultSet(verdict ? [verdict] : [], null))),
                );
            },
            false,
          );
          if (twice) sched.after(delay + again, apply, false);
        });
      };
      if (stall > 0) sched.after(stall, send);
      else send();
    });
  }
}
