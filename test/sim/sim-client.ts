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
 */
import cassandra from 'cassandra-driver';
import type { CqlEngine, PageState, PartitionWrite, ReadResult, ResultRow } from './cql/engine.js';
import type { Scheduler, Timer } from './scheduler.js';

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
  engine: CqlEngine;
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
    const read = (at: number): ReadResult => {
      const q = queries[0] as { query: string; params: readonly unknown[] };
      return engine.select(q.query, q.params, at, { fetchSize, page: page ?? null, meta });
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
      for (const g of groups) verdict = engine.applyWrites(g, at) ?? verdict;
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
