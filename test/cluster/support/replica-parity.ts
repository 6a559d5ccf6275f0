/**
 * The simulation's replica rules (`test/sim/cql/replicas.ts`) held to the real 3-node cluster: the
 * same statements, with the same write times, go to a `ReplicaSet` and to the cluster, each write
 * on the model's replicas that were up for it on the cluster, each read from the model's replicas
 * that served it on the cluster; every read's whole row list must be the same on both sides, and
 * the one written here (so a read the cluster did not serve as intended fails too).
 *
 * Design note — which replicas serve a read, made certain rather than likely. Which replicas a
 * coordinator asks is the snitch's choice (the dynamic snitch, which the launcher leaves on, ranks
 * them by latency), so nothing here depends on it: each read asks for as many replicas as its
 * coordinator holds alive (ONE with one, QUORUM with two), and is served by exactly those. A frozen
 * node's own failure detector does not convict its peers when it thaws (Cassandra skips conviction
 * after a local pause). Node `i` of the cluster is replica `i` of the model (RF 3 on three nodes:
 * every node holds every partition). The outages are test 4's — node 2 stopped while writes go to
 * nodes 0 and 1, then node 1 stopped while node 2 is back — plus node 0 frozen (SIGSTOP) until node
 * 2 convicts it, twice, while node 1 is still down: then node 2 is the only live replica it knows,
 * so a read at ONE it coordinates (the driver's `host`) is served by node 2 alone, and a write at
 * ONE lands on node 2 alone (hinted handoff is off on this cluster, so node 0 never gets it). With
 * node 1 down and node 0 back, a QUORUM read needs both live replicas: served by {0, 2}, and
 * repaired (blocking read repair, `read_repair` left at its default). Each window costs a
 * conviction (~11 s at phi 5) and a rejoin; a node restart costs more.
 *
 * The rules, and the reads that hold the model to them:
 * - R1, a replica that missed writes: node 2 missed what was written while it was stopped, node 0
 *   what was written while it was convicted; node 2 read alone returns its old state.
 * - R2, the quorum merge: nodes 0 and 2 then disagree both ways, and a QUORUM read returns the
 *   last-writer-wins merge cell by cell: a row whose columns come from different replicas, a row
 *   deletion newer than a value and older than one, a range deletion over an older and under a
 *   newer row, equal write times (value against value: the larger wins; tombstone against value:
 *   the tombstone wins, from either side), a static cell.
 * - R3, blocking read repair: node 2 read alone after that QUORUM read returns what it returned.
 * - H1, hint replay (the simulation lands a write on a replica that missed it later, `deliver`):
 *   while node 2 is stopped, hinted handoff is turned on at node 0 alone (`nodetool
 *   enablehandoff`, off again right after, in a `finally`), and writes node 0 coordinates — a cell,
 *   a new row, a row deletion — store hints for node 2 there. Once node 2 is back, node 0's log
 *   says the hints went (waited for, at most 60 s, before node 0 is frozen: the dispatcher looks
 *   every 10 s), the model delivers the same mutations to replica 2, and node 2 read alone holds
 *   them — and not a write to the same row made with handoff off, so the read shows which replica
 *   served it. A stored hint is replayed with handoff off again: the switch governs only whether a
 *   coordinator stores hints, not whether stored ones are sent.
 * - H2, handoff off (the suite's default): the write never reaches the replica. That is R1, and
 *   the unhinted write of H1's partition.
 * - L1, a lightweight transaction as one linearizable Paxos round (`ReplicaSet.paxos`): a row
 *   written while node 2 was stopped; then, with node 1 stopped, an `IF NOT EXISTS` insert of it
 *   and an `IF a = …` update, each coordinated by node 2, whose round has {0, 2} for its quorum:
 *   the insert is refused and the update applied, on both sides; node 2 read alone then holds the
 *   row (the round's read repaired it there) with the update's cell.
 *
 * Not held here: node 0 alone (it would need node 2 away too, one more window), reads over
 * several partitions (each read here is one partition), TTLs, Paxos contention (two rounds at
 * once), a coordinator that dies mid-batch and the batchlog's replay of it, a hint never replayed (the
 * simulation's `hintLostP`: past the hint window, or the coordinator's disk lost), a hint's delay
 * (Cassandra's depends on its dispatcher's 10 s period, not on the write's timeout).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import cassandra from 'cassandra-driver';
import { expect } from 'vitest';
import type { LocalCluster } from '../../../src/local-cassandra/cluster.js';
import { type CqlClient, createCqlClient, SCHEMA_CHANGE } from '../../../src/store/cassandra/client.js';
import type { ResultRow } from '../../sim/cql/engine.js';
import { Mutation, ReplicaSet } from '../../sim/cql/replicas.js';
import { parseSchema } from '../../sim/cql/syntax.js';
import { KEYSPACE } from './cluster-app.js';
import { logLength, sleep, until, whenConvicted, whenUp } from './cluster-control.js';
import { nodetool } from './nodetool.js';

/** The table the parity runs on, made in the suite's keyspace with the rest of its schema. */
export const PARITY_TABLE =
  'CREATE TABLE IF NOT EXISTS replica_parity (k bigint, c int, s text static, a text, b text, PRIMARY KEY (k, c))';

/** Made before the suite makes its schema durable (`flushSchemaByDrop`): test 2 kills every node. */
export async function createParityTable(client: CqlClient): Promise<void> {
  await client.execute(PARITY_TABLE, [], SCHEMA_CHANGE);
}

const INS = 'INSERT INTO replica_parity (k, c, a, b) VALUES (?, ?, ?, ?) USING TIMESTAMP ?';
const SET_A = 'UPDATE replica_parity USING TIMESTAMP ? SET a = ? WHERE k = ? AND c = ?';
const SET_B = 'UPDATE replica_parity USING TIMESTAMP ? SET b = ? WHERE k = ? AND c = ?';
const SET_S = 'UPDATE replica_parity USING TIMESTAMP ? SET s = ? WHERE k = ?';
const DEL_ROW = 'DELETE FROM replica_parity USING TIMESTAMP ? WHERE k = ? AND c = ?';
const DEL_A = 'DELETE a FROM replica_parity USING TIMESTAMP ? WHERE k = ? AND c = ?';
const DEL_B = 'DELETE b FROM replica_parity USING TIMESTAMP ? WHERE k = ? AND c = ?';
const DEL_FROM = 'DELETE FROM replica_parity USING TIMESTAMP ? WHERE k = ? AND c >= ?';
const READ = 'SELECT k, c, s, a, b, writetime(a) AS wa FROM replica_parity WHERE k = ?';
/** Lightweight transactions (no `USING TIMESTAMP`: Paxos picks the write time). */
const LWT_INSERT = 'INSERT INTO replica_parity (k, c, a, b) VALUES (?, ?, ?, ?) IF NOT EXISTS';
const LWT_SET_B = 'UPDATE replica_parity SET b = ? WHERE k = ? AND c = ? IF a = ?';

interface Stmt {
  q: string;
  p: unknown[];
  /** The statement's `USING TIMESTAMP`, passed to the model as its client timestamp too. */
  ts: bigint;
}
const ins = (k: bigint, c: number, a: string, b: string, ts: bigint): Stmt => ({
  q: INS,
  p: [k, c, a, b, ts],
  ts,
});
const setA = (k: bigint, c: number, v: string, ts: bigint): Stmt => ({ q: SET_A, p: [ts, v, k, c], ts });
const setB = (k: bigint, c: number, v: string, ts: bigint): Stmt => ({ q: SET_B, p: [ts, v, k, c], ts });
const setS = (k: bigint, v: string, ts: bigint): Stmt => ({ q: SET_S, p: [ts, v, k], ts });
const delRow = (k: bigint, c: number, ts: bigint): Stmt => ({ q: DEL_ROW, p: [ts, k, c], ts });
const delA = (k: bigint, c: number, ts: bigint): Stmt => ({ q: DEL_A, p: [ts, k, c], ts });
const delB = (k: bigint, c: number, ts: bigint): Stmt => ({ q: DEL_B, p: [ts, k, c], ts });
const delFrom = (k: bigint, c: number, ts: bigint): Stmt => ({ q: DEL_FROM, p: [ts, k, c], ts });

/** Partition A: node 2 misses writes, nothing else (R1, R3). B: nodes 0 and 2 miss writes each (R2). */
const A = 1n;
const B = 2n;
/** Every statement once, so each is prepared while every node answers (see `warm`). */
const W = 3n;
/** H: writes node 2 gets by hint replay (H1), and one it never gets (handoff off). */
const H = 4n;
/** L: a row node 2 missed, then lightweight transactions on it with nodes 0 and 2 live (L1). */
const L = 5n;
/** Each lightweight transaction once while every node answers (see `warm`). */
const WL = 6n;

const { consistencies } = cassandra.types;
/** A statement's consistency level and, for a read or write one node must coordinate, that node. */
interface At {
  consistency: number;
  host?: cassandra.Host;
}
const ALL: At = { consistency: consistencies.all };
const QUORUM: At = { consistency: consistencies.quorum };
type Row = Record<string, unknown>;
const row = (
  k: bigint,
  c: number,
  s: string | null,
  a: string | null,
  b: string | null,
  wa: bigint | null,
): Row => ({
  k,
  c,
  s,
  a,
  b,
  wa,
});

/** Partition A as every node but node 2 has it after test 4's first outage. */
const A_MERGED = [
  row(A, 1, null, 'a1new', 'b1', 200n),
  row(A, 3, null, 'a3', 'b3new', 100n),
  row(A, 4, null, 'a4', 'b4', 200n),
];
/** Partition B merged from node 0 (writes made while node 2 was down) and node 2 (while node 0 was). */
const B_MERGED = [
  // a from node 0 (200 > 100), b from node 2 (300 > 100).
  row(B, 1, 's2', 'p0', 'q2', 200n),
  // Row 2: node 0's row deletion at 300 shadows node 2's a at 200 — gone. Row 3: node 0's row
  // deletion at 200 shadows the row's marker and b (100) but not node 2's a at 300.
  row(B, 3, 's2', 'm2', null, 300n),
  // Equal write times, value against value: the larger value wins, node 0's a and node 2's b.
  row(B, 4, 's2', 'zz', 'zz', 400n),
  // Equal write times, tombstone against value: the tombstone wins (a from node 0, b from node 2).
  row(B, 5, 's2', null, null, null),
  // Row 6: node 0's row deletion at 400 ties node 2's insert at 400 — gone. Row 7: node 0's range
  // deletion (c >= 7 at 250) shadows it; row 8 (node 2, 300) outlives that deletion.
  row(B, 8, 's2', 'late', 'late', 300n),
];

/**
 * The parity run, a phase at each of test 4's moments. Each check asserts the cluster's rows
 * against the rows written here, then the model's against the cluster's; the label names the step.
 */
export class ReplicaParity {
  private readonly model = new ReplicaSet(parseSchema([PARITY_TABLE]));
  private now = 0;
  /**
   * Reads compared, the time spent with node 0 frozen, hinted writes, the time handoff was on at
   * node 0 (two nodetool runs), how long after node 0 saw node 2 UP its hints had gone, and how
   * much of that `node1Down` waited out (the rest overlapped test 4's own reads).
   */
  readonly figures = {
    reads: 0,
    writes: 0,
    isolatedMs: 0,
    hinted: 0,
    handoffMs: 0,
    hintReplayMs: 0,
    hintWaitMs: 0,
    lwts: 0,
  };
  /** The hinted writes, delivered to node 2 on the model once the cluster has replayed them. */
  private readonly hinted: Mutation[] = [];
  /** Node 0's log length when it stored the hints; node 2 seen UP again (`node2Back`) and the wait. */
  private hintLogFrom = 0;
  private hintReplay: Promise<number> | undefined;

  private constructor(
    private readonly c: LocalCluster,
    private readonly client: CqlClient,
  ) {}

  static async open(c: LocalCluster): Promise<ReplicaParity> {
    const client = createCqlClient({
      contactPoints: c.contactPoints,
      localDataCenter: 'datacenter1',
      keyspace: KEYSPACE,
      consistency: 'quorum',
      requestTimeoutMs: 10_000,
    });
    await client.connect();
    return new ReplicaParity(c, client);
  }

  async close(): Promise<void> {
    await this.client.shutdown();
  }

  /** Every node up: the rows everyone starts from, written and read at ALL. */
  async allUp(): Promise<void> {
    await this.warm();
    await this.write(
      [0, 1, 2],
      ALL,
      ins(A, 1, 'a1', 'b1', 100n),
      ins(A, 2, 'a2', 'b2', 100n),
      ins(A, 3, 'a3', 'b3', 100n),
      ins(B, 1, 'p', 'q', 100n),
      ins(B, 2, 'x', 'y', 100n),
      ins(B, 3, 'm', 'n', 100n),
      ins(B, 4, 'r', 'r', 100n),
      ins(B, 5, 'u', 'w0', 100n),
      ins(B, 7, 'g', 'h', 100n),
      setS(B, 's1', 100n),
      ins(H, 1, 'h', 'h', 100n),
      ins(H, 3, 'h', 'h', 100n),
    );
    await this.read('all up, read at ALL', [0, 1, 2], ALL, A, [
      row(A, 1, null, 'a1', 'b1', 100n),
      row(A, 2, null, 'a2', 'b2', 100n),
      row(A, 3, null, 'a3', 'b3', 100n),
    ]);
  }

  /** Node 2 stopped: these land on nodes 0 and 1 only (QUORUM waits for both). */
  async node2Down(): Promise<void> {
    await this.write(
      [0, 1],
      QUORUM,
      setA(A, 1, 'a1new', 200n),
      delRow(A, 2, 200n),
      ins(A, 4, 'a4', 'b4', 200n),
      setA(B, 1, 'p0', 200n),
      delRow(B, 2, 300n),
      delRow(B, 3, 200n),
      setA(B, 4, 'zz', 400n),
      setB(B, 4, 'aa', 400n),
      delA(B, 5, 400n),
      setB(B, 5, 'w', 400n),
      delRow(B, 6, 400n),
      delFrom(B, 7, 250n),
      setS(B, 's0', 200n),
      // H2: handoff is off on every node; node 2 never gets this.
      setA(H, 1, 'unhinted', 200n),
      // L1: a row node 2 misses.
      ins(L, 1, 'l1', 'l1', 200n),
    );
    // H1: node 0 coordinates with handoff on, so it stores hints for node 2 (down: known at once,
    // a stopped node announces its shutdown).
    const node0 = await this.host(0);
    this.hintLogFrom = await logLength(this.c.options(0).nodeDir);
    const t0 = Date.now();
    try {
      await this.handoff(0, true);
      for (const s of [setB(H, 1, 'hinted', 300n), ins(H, 2, 'hinted', 'hinted', 300n), delRow(H, 3, 300n)]) {
        await this.client.execute(s.q, s.p, { prepare: true, ...QUORUM, host: node0 });
        // The mutation as the coordinator bound it, landed on nodes 0 and 1 now, on node 2 later.
        const m = new Mutation(this.model.view.bindWrite(s.q, s.p, s.ts, 0), ++this.now);
        for (const r of [0, 1]) this.model.deliver(r, m, this.now);
        this.hinted.push(m);
        this.figures.writes++;
        this.figures.hinted++;
      }
    } finally {
      await this.handoff(0, false);
      this.figures.handoffMs = Date.now() - t0;
    }
  }

  /**
   * Node 2 back and seen UP by node 0: from now, wait (in the background, at most 60 s) for node
   * 0's log to say it has sent node 2 its hints; `node1Down` waits for that before freezing node 0.
   */
  node2Back(): void {
    const upAt = Date.now();
    const log = join(this.c.options(0).nodeDir, 'logs', 'system.log');
    const needle = `to endpoint /${this.c.addresses[2]}:7000`;
    const from = this.hintLogFrom;
    this.hintReplay = (async () => {
      for (;;) {
        const text = (await readFile(log, 'utf8').catch(() => '')).slice(from);
        if (text.split('\n').some((l) => l.includes('Finished hinted handoff of file') && l.includes(needle)))
          return Date.now() - upAt;
        if (Date.now() - upAt > 60_000)
          throw new Error(
            `node 0's log: no "Finished hinted handoff of file … ${needle}" within 60 s of node 2 UP`,
          );
        await sleep(200);
      }
    })();
    // Awaited in `node1Down`; a rejection before then is not unhandled.
    this.hintReplay.catch(() => {});
  }

  /**
   * Node 1 stopped, node 2 back and stale: a write to both live nodes; node 2 alone (R1) and
   * written alone; the QUORUM merge of nodes 0 and 2 (R2), which repairs both; node 2 alone again
   * (R3). Node 0 is frozen for the two windows and answers again after each.
   */
  async node1Down(): Promise<void> {
    if (!this.hintReplay) throw new Error('node2Back() was not called after node 2 came back');
    const waitFrom = Date.now();
    this.figures.hintReplayMs = await this.hintReplay;
    this.figures.hintWaitMs = Date.now() - waitFrom;
    // The hint rule on the model: the same mutations land on replica 2 now.
    for (const m of this.hinted) this.model.deliver(2, m, ++this.now);
    await this.write([0, 2], QUORUM, setB(A, 3, 'b3new', 300n));
    // Node 2 coordinates every read from here on: it is the node that knows node 0 convicted.
    const host = await this.host(2);
    const one2: At = { consistency: consistencies.one, host };
    const quorum2: At = { ...QUORUM, host };
    // L1, a lightweight transaction as a linearizable Paxos round on a quorum (the model's
    // `ReplicaSet.paxos`): with node 1 down the round's quorum is {0, 2}; its read merges and repairs
    // them, so an insert of the row node 2 missed is refused, and a conditional update on it holds.
    await this.lwt(
      'L1 IF NOT EXISTS on a row node 2 missed: refused',
      [0, 2],
      host,
      LWT_INSERT,
      [L, 1, 'x', 'x'],
      false,
    );
    await this.lwt('L1 IF a = on that row: applied', [0, 2], host, LWT_SET_B, ['lwt', L, 1, 'l1'], true);
    await this.alone(2, 0, async () => {
      await this.read(
        'L1 node 2 alone: the round repaired the row onto it and committed there',
        [2],
        one2,
        L,
        [row(L, 1, null, 'l1', 'lwt', 200n)],
      );
      await this.read('R1 node 2 alone: missed what was written while it was stopped', [2], one2, A, [
        row(A, 1, null, 'a1', 'b1', 100n),
        row(A, 2, null, 'a2', 'b2', 100n),
        row(A, 3, null, 'a3', 'b3new', 100n),
      ]);
      await this.read('R1 node 2 alone, partition B', [2], one2, B, [
        row(B, 1, 's1', 'p', 'q', 100n),
        row(B, 2, 's1', 'x', 'y', 100n),
        row(B, 3, 's1', 'm', 'n', 100n),
        row(B, 4, 's1', 'r', 'r', 100n),
        row(B, 5, 's1', 'u', 'w0', 100n),
        row(B, 7, 's1', 'g', 'h', 100n),
      ]);
      await this.read(
        'H1 node 2 alone: what node 0 hinted replayed to it, the unhinted write not',
        [2],
        one2,
        H,
        [row(H, 1, null, 'h', 'hinted', 100n), row(H, 2, null, 'hinted', 'hinted', 300n)],
      );
      await this.write(
        [2],
        one2,
        setB(B, 1, 'q2', 300n),
        setA(B, 2, 'x2', 200n),
        setA(B, 3, 'm2', 300n),
        setA(B, 4, 'aa', 400n),
        setB(B, 4, 'zz', 400n),
        setA(B, 5, 'v', 400n),
        delB(B, 5, 400n),
        ins(B, 6, 'e', 'f', 400n),
        ins(B, 8, 'late', 'late', 300n),
        setS(B, 's2', 300n),
      );
      await this.read('node 2 alone holds what it took while node 0 was convicted', [2], one2, B, [
        row(B, 1, 's2', 'p', 'q2', 100n),
        row(B, 2, 's2', 'x2', 'y', 200n),
        row(B, 3, 's2', 'm2', 'n', 300n),
        row(B, 4, 's2', 'aa', 'zz', 400n),
        row(B, 5, 's2', 'v', null, 400n),
        row(B, 6, 's2', 'e', 'f', 400n),
        row(B, 7, 's2', 'g', 'h', 100n),
        row(B, 8, 's2', 'late', 'late', 300n),
      ]);
    });
    await this.read('R2 QUORUM {0, 2}, node 2 stale', [0, 2], quorum2, A, A_MERGED);
    await this.read('R2 QUORUM {0, 2}, each missed writes', [0, 2], quorum2, B, B_MERGED);
    await this.alone(2, 0, async () => {
      await this.read('R3 node 2 alone after the QUORUM read', [2], one2, A, A_MERGED);
      await this.read('R3 node 2 alone after the QUORUM read, partition B', [2], one2, B, B_MERGED);
    });
  }

  /**
   * Each statement once on a partition of its own, at ALL: the driver prepares a statement on a
   * host of its plan and then on every other host, and a host frozen later would stall that. A
   * statement prepared already is re-prepared on the one connection that reports it unknown.
   */
  private async warm(): Promise<void> {
    await this.write(
      [0, 1, 2],
      ALL,
      ins(W, 1, 'w', 'w', 10n),
      setA(W, 1, 'w', 10n),
      setB(W, 1, 'w', 10n),
      setS(W, 'w', 10n),
      delA(W, 1, 10n),
      delB(W, 1, 10n),
      delRow(W, 2, 10n),
      delFrom(W, 3, 10n),
    );
    await this.read('warm-up, read at ALL', [0, 1, 2], ALL, W, [row(W, 1, 'w', null, null, null)]);
    await this.lwt('warm-up, IF NOT EXISTS', [0, 1, 2], undefined, LWT_INSERT, [WL, 1, 'w', 'w'], true);
    await this.lwt('warm-up, IF a =', [0, 1, 2], undefined, LWT_SET_B, ['w', WL, 1, 'w'], true);
  }

  /**
   * A lightweight transaction (commit at QUORUM, its round at SERIAL) coordinated by `host`, and
   * the same Paxos round on the model's replicas `quorum`: both must decide `applied`.
   */
  private async lwt(
    step: string,
    quorum: number[],
    host: cassandra.Host | undefined,
    q: string,
    p: unknown[],
    applied: boolean,
  ): Promise<void> {
    const rs = await this.client.execute(q, p, {
      prepare: true,
      consistency: consistencies.quorum,
      serialConsistency: consistencies.serial,
      ...(host ? { host } : {}),
    });
    const real = rs.rows[0]?.['[applied]'];
    // The round's write time is its coordinator's clock (µs), as Paxos's ballot is.
    const sim = this.model.write(quorum, q, p, 0n, Date.now() * 1000)?.['[applied]'];
    this.figures.writes++;
    this.figures.lwts++;
    expect({ step, applied: real }).toEqual({ step, applied });
    expect({ step, applied: sim }).toEqual({ step, applied: real });
  }

  /** Node `away` frozen until node `keep` convicts it; `during` runs then; it is thawed and seen UP. */
  private async alone(keep: number, away: number, during: () => Promise<void>): Promise<void> {
    const witness = this.c.options(keep).nodeDir;
    const peer = this.c.addresses[away] as string;
    const t0 = Date.now();
    const convicted = whenConvicted(witness, peer, 40_000);
    this.c.node(away).pause();
    try {
      await convicted;
      await during();
    } finally {
      const since = await logLength(witness);
      this.c.node(away).resume();
      await whenUp(witness, peer, since);
      this.figures.isolatedMs += Date.now() - t0;
    }
  }

  /**
   * Hinted handoff on or off at node `i` (`nodetool enablehandoff` / `disablehandoff`), checked
   * through the node's own `system_views.settings`.
   */
  private async handoff(i: number, on: boolean): Promise<void> {
    const address = this.c.addresses[i] as string;
    await nodetool(this.c.options(i).nodeDir, address, [on ? 'enablehandoff' : 'disablehandoff']);
    const rs = await this.client.execute(
      "SELECT value FROM system_views.settings WHERE name = 'hinted_handoff_enabled'",
      [],
      { consistency: consistencies.one, host: await this.host(i) },
    );
    expect({ node: i, hinted_handoff_enabled: rs.rows[0]?.value }).toEqual({
      node: i,
      hinted_handoff_enabled: String(on),
    });
  }

  /** The driver's handle of node `i`, once the driver holds it up (a node restarted comes back later). */
  private async host(i: number): Promise<cassandra.Host> {
    const address = this.c.contactPoints[i] as string;
    const host = await until(
      `the driver holds ${address} up`,
      30_000,
      async () => this.client.hosts.get(address),
      (h) => h?.isUp() === true,
    );
    return host as cassandra.Host;
  }

  private async write(on: number[], at: At, ...stmts: Stmt[]): Promise<void> {
    for (const s of stmts) {
      await this.client.execute(s.q, s.p, { prepare: true, ...at });
      this.model.write(on, s.q, s.p, s.ts, ++this.now);
      this.figures.writes++;
    }
  }

  private async read(step: string, from: number[], at: At, k: bigint, want: Row[]): Promise<void> {
    const real = (await this.client.execute(READ, [k], { prepare: true, ...at })).rows.map((r) => ({ ...r }));
    // A read at ONE is never repaired; at QUORUM or ALL Cassandra repairs what it merged.
    const sim: ResultRow[] = this.model.read(from, READ, [k], ++this.now, {
      repair: at.consistency !== consistencies.one,
    });
    this.figures.reads++;
    expect({ step, served: from, rows: real }).toEqual({ step, served: from, rows: want });
    expect({ step, served: from, rows: sim }).toEqual({ step, served: from, rows: real });
  }
}
