/**
 * Replicas: RF copies of the simulated node (`engine.ts`), each a `CqlEngine`, that a write reaches
 * one by one and a read merges.
 *
 * Design note.
 *
 * Modelled. A write is bound once, as its coordinator takes it (its client timestamp, and at the
 * coordinator's time its TTLs, `now()` and an LWT's write time: Cassandra fixes them there, so
 * every replica stores the same cells), and lands on each replica at an instant of its own (the
 * simulated client draws them: `sim-client.ts`), or never. A read is served by the replicas it
 * contacts, each at its own instant; their data for what the read touches is merged cell by cell
 * last-writer-wins (`CqlEngine.mergePartition`: the rule one node applies to two writes of a cell,
 * tombstones included), the SELECT runs on the merge, and with `repair` (Cassandra 4+'s blocking
 * read repair; the default) the merge is written into each contacted replica before the read
 * answers.
 *
 * Scope of a read's merge and of its repair: whole partitions — the partitions named by `=` / `IN`
 * on the partition key, or every partition of the table either replica holds for a token range or
 * a full scan. Cassandra repairs what the read returned (the rows and slices it asked for, a page
 * at a time); repairing the whole of each partition it touched writes more, never anything else:
 * every cell copied is one of a write that was sent to every replica, and landing it on another
 * replica at the repair's instant is what a hint replay or another read's repair could have done
 * then. So it takes some divergence away sooner than Cassandra would (a less hostile schedule,
 * never an impossible one), and a read's answer is exactly Cassandra's: it is the merge of what
 * the contacted replicas hold either way. The repair lands at the instant the merge is made (its
 * mutations' network delay is left out: the read waits for them in Cassandra too).
 *
 * LWT (`IF NOT EXISTS`, `IF c = ?`): Paxos as linearizable. A round at one instant contacts a
 * quorum, merges and repairs its data (Paxos reads at SERIAL with read repair), evaluates the
 * condition on that merge, and when it holds commits the write on the quorum at that instant; the
 * other replicas get the commit later, unconditionally (`deliver` with `unconditional`). Two rounds
 * never interleave (Paxos contention is not modelled), and any later quorum read or round sees a
 * committed write, which is what linearizability promises.
 *
 * Counters: applied to every replica at one instant (the leader replica's increment and its
 * replication as one), so replicas never differ on a counter and a merge takes any one's value.
 * Cassandra merges counter shards per replica; a model of that would only matter to a read that
 * could see a counter update on some replicas and not others, which the service's counts tolerate
 * already (they are reconciled, not exact).
 *
 * The view. `view` is one more engine that takes every write the first time it lands on any
 * replica: it is the merge of all replicas (what a full repair would leave; the end-of-schedule
 * checks and the set-up read it), and its cells' `at` is when each write first landed somewhere.
 * Its `watch` (`CqlEngine.watch`, the staleness check's) is told every landing on every replica,
 * and every repair that changed a replica (a direct read, `readAll`, repairs every replica: a
 * read at ALL).
 *
 * Not modelled: replicas of more than one data centre, token ownership (every partition is on
 * every replica: RF 3 in a 3-node cluster), Merkle-tree repair (the end's merged read stands for
 * it), hint windows, speculative retries, Paxos contention, counter shards (above).
 */
import { CqlEngine, type PageState, type PartitionWrite, type ReadResult, type ResultRow } from './engine.js';
import type { Schema } from './syntax.js';

/** One statement's writes, or one partition's share of a batch, as its coordinator bound them. */
export class Mutation {
  /** Whether it has landed on some replica yet (then the view has it). */
  landed = false;

  constructor(
    readonly writes: readonly PartitionWrite[],
    /** The coordinator's true time (µs): TTLs, `now()`, an LWT's write time. */
    readonly now: number,
  ) {}

  get lwt(): boolean {
    return this.writes.some((w) => w.lwt);
  }

  get counter(): boolean {
    return this.writes.some((w) => w.counter);
  }
}

/** Options of a read's page: the engine's `select` options, and whether to repair. */
export interface ReplicaReadOptions {
  fetchSize: number;
  page?: PageState | null;
  meta?: boolean;
  /** Blocking read repair of the contacted replicas (default true). */
  repair?: boolean;
}

/** A read being served: each contacted replica's data taken at its own instant, then merged. */
export class ReplicaRead {
  private readonly merged: CqlEngine;
  private readonly taken: number[] = [];
  private readonly keys = new Set<string>();

  constructor(
    private readonly set: ReplicaSet,
    private readonly query: string,
    private readonly params: readonly unknown[],
    private readonly scope: { table: string; keys: string[] | null },
  ) {
    this.merged = new CqlEngine(set.schema);
    this.merged.watch = {
      read: (partition) => set.view.watch?.read(partition),
      write: () => {},
    };
  }

  /** Replica `r` serves its share now: its data for what the read touches. */
  take(r: number): void {
    const engine = this.set.engines[r] as CqlEngine;
    const keys = this.scope.keys ?? engine.partitionKeys(this.scope.table);
    for (const k of keys) {
      this.keys.add(k);
      const raw = engine.rawPartition(this.scope.table, k);
      if (raw) this.merged.mergePartition(raw);
    }
    this.taken.push(r);
  }

  /** The merge answers at true time `now`; with repair, each contacted replica takes the merge first. */
  finish(now: number, o: ReplicaReadOptions): ReadResult {
    const result = this.merged.select(this.query, this.params, now, o);
    if (o.repair ?? true) {
      const { table } = this.scope;
      for (const k of this.keys) {
        const raw = this.merged.rawPartition(table, k);
        if (!raw) continue;
        for (const r of this.taken)
          if ((this.set.engines[r] as CqlEngine).mergePartition(raw))
            this.set.view.watch?.write(`${table}|${k}`, now);
      }
    }
    return result;
  }
}

/**
 * RF replicas of the simulated node, and the view (the merge of all of them). The parity API
 * (`write`, `read`) lands and reads at one instant; the simulated client uses `deliver`, `paxos`
 * and `beginRead`, which let each replica take its share at an instant of its own.
 */
export class ReplicaSet {
  /** Replicas 0..rf−1. */
  readonly engines: readonly CqlEngine[];
  /** Every write, the first time it landed on some replica: the merge of all replicas. */
  readonly view: CqlEngine;

  constructor(
    readonly schema: Schema,
    readonly rf = 3,
  ) {
    this.engines = Array.from({ length: rf }, () => new CqlEngine(schema));
    this.view = new CqlEngine(schema);
  }

  /**
   * Binds one statement (client timestamp `ts`) and applies it on the listed replicas only, at
   * true time `now` (µs). An LWT is a Paxos round whose quorum is the listed replicas (its
   * condition on their merge, committed on all of them); a counter update adds on each listed one.
   * Returns an LWT's `[applied]` row.
   */
  write(
    on: readonly number[],
    query: string,
    params: readonly unknown[],
    ts: bigint,
    now: number,
  ): ResultRow | undefined {
    const m = new Mutation(this.view.bindWrite(query, params, ts, 0), now);
    if (m.lwt) return this.paxos(on, m, now);
    for (const r of on) this.deliver(r, m, now);
    return undefined;
  }

  /**
   * A read served by the listed replicas: their data for what the read touches merged
   * last-writer-wins (cell by cell, tombstones included), the SELECT run on the merge, and — when
   * `repair` (default true, Cassandra's blocking read repair) — what was merged written back into
   * each listed replica before returning. The first page (5,000 rows, the driver's default).
   */
  read(
    from: readonly number[],
    query: string,
    params: readonly unknown[],
    now: number,
    o: { repair?: boolean } = {},
  ): ResultRow[] {
    return this.select(from, query, params, now, { fetchSize: 5_000, ...o }).rows;
  }

  /** `read` with paging and cell metadata: one page as the engine's `select` returns it. */
  select(
    from: readonly number[],
    query: string,
    params: readonly unknown[],
    now: number,
    o: ReplicaReadOptions,
  ): ReadResult {
    const read = this.beginRead(query, params);
    for (const r of from) read.take(r);
    return read.finish(now, o);
  }

  /** A read whose replicas take their shares one at a time (`ReplicaRead.take`), then `finish`. */
  beginRead(query: string, params: readonly unknown[]): ReplicaRead {
    return new ReplicaRead(this, query, params, this.view.readScope(query, params));
  }

  /**
   * Lands `m` on replica `r` at true time `at` (an LWT's write without its condition: a commit).
   * Its first landing anywhere also goes to the view. Returns whether this was its first landing.
   */
  deliver(r: number, m: Mutation, at: number): boolean {
    (this.engines[r] as CqlEngine).applyWrites(m.writes, m.now, { landed: at, unconditional: true });
    return this.landed(m, at);
  }

  /**
   * A Paxos round at `at` on the replicas `quorum`: their data for `m`'s partition merged and
   * written back to them, `m`'s condition evaluated on the merge, and when it holds `m` committed on
   * every one of them at `at`. Returns the `[applied]` row. (The other replicas get the commit by
   * `deliver`.)
   */
  paxos(quorum: readonly number[], m: Mutation, at: number): ResultRow {
    for (const w of m.writes) {
      const raws = quorum.map((r) => (this.engines[r] as CqlEngine).rawPartition(w.table, w.key));
      for (const r of quorum)
        for (const raw of raws)
          if (raw && (this.engines[r] as CqlEngine).mergePartition(raw))
            this.view.watch?.write(`${w.table}|${w.key}`, at);
    }
    const [first, ...rest] = quorum;
    const verdict = (this.engines[first as number] as CqlEngine).applyWrites(m.writes, m.now, {
      landed: at,
    }) ?? { '[applied]': true };
    if (verdict['[applied]'] !== true) return verdict;
    for (const r of rest)
      (this.engines[r] as CqlEngine).applyWrites(m.writes, m.now, { landed: at, unconditional: true });
    this.landed(m, at);
    return verdict;
  }

  /**
   * A write that reaches every replica at once (the set-up's and the end's direct client): an LWT
   * decided on the merge of all of them.
   */
  applyEverywhere(m: Mutation, at: number): ResultRow | undefined {
    if (m.lwt)
      return this.paxos(
        this.engines.map((_, i) => i),
        m,
        at,
      );
    for (let r = 0; r < this.rf; r++) this.deliver(r, m, at);
    return undefined;
  }

  /**
   * A read at ALL with blocking read repair: the merge of every replica (the view) answers, and
   * each replica takes the merge of what the read touched first — so no later read, of any quorum,
   * can miss what this one returned (a read of the view without the repair could: it answered a
   * write that one replica alone held, and a quorum of the other two then read it absent — the
   * simulation's own fault, found by seed 7608). A partition a replica held otherwise is told to
   * the view's watch as changed now.
   */
  readAll(query: string, params: readonly unknown[], now: number, o: ReplicaReadOptions): ReadResult {
    const { table, keys } = this.view.readScope(query, params);
    for (const k of keys ?? this.view.partitionKeys(table)) {
      const raw = this.view.rawPartition(table, k);
      if (!raw) continue;
      let changed = false;
      for (const e of this.engines) changed = e.mergePartition(raw) || changed;
      if (changed) this.view.watch?.write(`${table}|${k}`, now);
    }
    return this.view.select(query, params, now, o);
  }

  /** Whether every replica holds the view's version of every partition (a test's check). */
  converged(): boolean {
    for (const table of this.schema.keys()) {
      const keys = new Set([this.view, ...this.engines].flatMap((e) => e.partitionKeys(table)));
      for (const k of keys) {
        const want = this.view.partitionState(table, k);
        if (this.engines.some((e) => e.partitionState(table, k) !== want)) return false;
      }
    }
    return true;
  }

  private landed(m: Mutation, at: number): boolean {
    if (m.landed) {
      for (const w of m.writes) this.view.watch?.write(`${w.table}|${w.key}`, at);
      return false;
    }
    m.landed = true;
    this.view.applyWrites(m.writes, m.now, { landed: at, unconditional: true });
    return true;
  }
}
