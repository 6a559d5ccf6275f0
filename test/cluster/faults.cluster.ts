/**
 * A 3-node cluster (RF 3, LOCAL_QUORUM) under faults, with nothing acknowledged
 * lost. The suite starts its own cluster on loopback addresses from `CLUSTER_BASE_ADDRESS`
 * (default 127.0.0.21–23, so a developer's node on 127.0.0.1 is never touched), with hinted
 * handoff off so a node that was down really comes back stale (test 4's parity turns it on at one
 * node while it makes three writes of its own table, and off again), and stops it at the end — on
 * failure too (and the launcher's supervisors stop the JVMs if this process dies).
 *
 * The service runs in-process on the cluster with the driver settings of `src/config.ts`; the
 * tests use only the HTTP API and the repair job's command, so they survive schema changes (test
 * 4 also holds the simulation's replica model to the cluster, with raw CQL on a table of its own:
 * `support/replica-parity.ts`).
 * Each test prints its figures; the summary at the end repeats them. Seed: `CLUSTER_SEED`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { clusterAddresses, type LocalCluster, startLocalCluster } from '../../src/local-cassandra/cluster.js';
import { type ClusterApp, clusterApp, clusterEnv } from './support/cluster-app.js';
import {
  flushSchemaByDrop,
  logLength,
  runRepairJob,
  sleep,
  until,
  whenConvicted,
  whenUp,
} from './support/cluster-control.js';
import {
  type Accounts,
  accounts,
  createAccounts,
  expectedEdges,
  feedAfter,
  feedBreaks,
  feedEnd,
  figures,
  observedEdges,
  type PairState,
  startLoad,
} from './support/load.js';
import { createParityTable, ReplicaParity } from './support/replica-parity.js';

const BASE = process.env.CLUSTER_BASE_ADDRESS ?? '127.0.0.21';
const HEAP = process.env.CLUSTER_HEAP ?? '512M';
const SEED = Number(process.env.CLUSTER_SEED ?? Math.floor(Math.random() * 2 ** 31));
const WRITERS = 8;
/**
 * Test 1's load is lighter: four writers and one reader keep requests in flight through the kill
 * and the rejoin, and leave the restarting JVM more of this 2-core machine (with eight writers and
 * two readers the two survivors took ~1.3 cores, the restart 60–77 s and the test ~130–140 s; with
 * four and one, 43–69 s and 98–133 s over four runs: the load is not all of it; an idle restart
 * takes ~13 s).
 */
const KILL_WRITERS = 4;

let dir: string;
let cluster: LocalCluster | undefined;
let env: Record<string, string>;
let app: ClusterApp;
const summary: string[] = [];
const note = (test: string, line: string) => {
  summary.push(`${test}: ${line}`);
  console.log(`[cluster] ${test}: ${line}`);
};
const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

beforeAll(async () => {
  console.log(`[cluster] seed=${SEED} (replay: CLUSTER_SEED=${SEED}) addresses from ${BASE}, heap ${HEAP}`);
  dir = await mkdtemp(join(tmpdir(), 'flocklist-cluster-'));
  const t0 = Date.now();
  cluster = await startLocalCluster({
    addresses: clusterAddresses(BASE, 3),
    dir,
    heap: HEAP,
    fresh: true,
    // Group commit from the start: test 2 needs it, and for a kill -9 (a process crash, the
    // page cache survives) periodic and group lose the same — nothing.
    // phi 5 instead of the default 8: a dead node is convicted after ~11 s of silence instead of
    // ~18 s (the window test 1 allows write failures in), still far above this box's GC pauses.
    // Schema changes unflushed (made durable by `flushSchemaByDrop` once the keyspace is made):
    // the keyspace's ~30 tables took ~38 s on three busy nodes with a flush after each.
    node: { hintedHandoff: false, commitlogSync: 'group', phiConvictThreshold: 5, flushSchemaChanges: false },
    log: (line) => console.log(`[cluster] ${line}`),
  });
  // Every node must see every other one UP before the keyspace is made at LOCAL_QUORUM: on an idle
  // machine a node answers CQL within seconds, before gossip has settled (a CI run failed there
  // with "2 required but only 1 alive" from the last node started).
  const c = cluster;
  await Promise.all(
    c.addresses.flatMap((a, i) =>
      c.addresses.filter((b) => b !== a).map((b) => whenUp(c.options(i).nodeDir, b, 0, 120_000)),
    ),
  );
  const t1 = Date.now();
  env = clusterEnv(cluster.contactPoints);
  app = await clusterApp(env, { create: true });
  // Test 4's replica parity table, made before the schema is flushed: test 2 kills every node.
  await createParityTable(app.client);
  const t2 = Date.now();
  await flushSchemaByDrop(
    app.client,
    c.addresses.map((_, i) => c.options(i).nodeDir),
  );
  note(
    'setup',
    `3 nodes up in ${s(t1 - t0)}, keyspace made from the baseline in ${s(t2 - t1)}, schema flushed in ${s(Date.now() - t2)}`,
  );
});

afterAll(async () => {
  await app?.close().catch(() => {});
  const t0 = Date.now();
  await cluster?.stop();
  if (cluster) note('teardown', `3 nodes stopped in ${s(Date.now() - t0)}`);
  if (dir) await rm(dir, { recursive: true, force: true });
  console.log(`\n[cluster] summary (seed ${SEED})\n${summary.map((l) => `  ${l}`).join('\n')}\n`);
});

/**
 * The feed's promise over a run: every change that took effect — the writes answered 503 that
 * landed anyway included — is in the feed read from `origin` (a cursor taken before the load), once,
 * each edge's events alternating, replaying to `want`. Within D: the last change settles after L
 * (10 s) and an intent left behind is resolved by the next recovery pass (every 2 s) after that;
 * read every 2 s for at most 60 s.
 */
async function settledFeed(
  origin: string,
  want: string[],
): Promise<{ events: number; breaks: string[]; ms: number }> {
  const t0 = Date.now();
  let breaks: string[] = ['not read yet'];
  let events: Awaited<ReturnType<typeof feedAfter>> = [];
  while (breaks.length > 0 && Date.now() - t0 < 60_000) {
    await sleep(2000);
    events = await feedAfter(app, origin);
    breaks = feedBreaks(events, want);
  }
  return { events: events.length, breaks, ms: Date.now() - t0 };
}

/** Asserts the API's view of the accounts' edges, from both sides, equals `want`. */
async function expectEdges(a: Accounts, want: string[]) {
  const got = await observedEdges(app, a);
  expect(got.out).toEqual(want);
  expect(got.in).toEqual(want);
}

describe.sequential('3-node cluster, RF 3, LOCAL_QUORUM', () => {
  it('1. a node killed under load: no acknowledged write lost, reads never fail, writes fail only before conviction and while it rejoins', async () => {
    const c = cluster as LocalCluster;
    const a = accounts(10_000n, KILL_WRITERS, 4, 12);
    await createAccounts(app, a);
    const origin = await feedEnd(app);
    const load = startLoad(app, a, { seed: SEED, readers: 1 });
    await sleep(6000);

    const victim = 1;
    const peer = c.addresses[victim] as string;
    // Each survivor convicts the victim (and later sees it UP) on its own gossip clock, and either
    // may coordinate a write: the window ends when the last of them has (a CI run failed on a write
    // started 0.2 s after the first survivor's conviction, coordinated by the other).
    const witnesses = [0, 2].map((i) => c.options(i).nodeDir);
    const convicted = Promise.all(witnesses.map((w) => whenConvicted(w, peer)));
    const killedAt = Date.now();
    await c.node(victim).kill();
    const convictedAt = Math.max(...(await convicted));
    await sleep(6000);
    const since = await Promise.all(witnesses.map((w) => logLength(w)));
    const restartAt = Date.now();
    const node = await c.start(victim);
    const upAt = Math.max(...(await Promise.all(witnesses.map((w, i) => whenUp(w, peer, since[i] ?? 0)))));
    await sleep(5000);
    await load.stop();
    const loadEnd = Date.now();

    const repairStart = Date.now();
    await runRepairJob(env, [...a.sources, ...a.targets]);
    const repairMs = Date.now() - repairStart;

    const f = figures(load.ledger.attempts, killedAt);
    // Writes may fail (503, never lost: the writers retry until acknowledged) while the killed
    // node is not yet convicted, and while it rejoins: other nodes see it UP through gossip before
    // it takes batchlog writes, and a batch that carries feed rows never goes without its batchlog
    // (the unlogged fallback that hid this window is gone for them). Nowhere else.
    const failedAfterConviction = load.ledger.attempts.filter(
      (x) =>
        x.kind === 'write' &&
        x.status !== 200 &&
        x.startedAt > convictedAt &&
        !(x.startedAt >= restartAt && x.startedAt <= upAt + 5000),
    );
    note(
      '1 node kill',
      `seed ${SEED}; load ${s(loadEnd - killedAt + 6000)}, ${f.writes} write attempts (${load.ledger.opsAcked} acknowledged), ${f.reads} page reads`,
    );
    note(
      '1 node kill',
      `convicted ${s(convictedAt - killedAt)} after kill -9; restarted node answered CQL in ${s(node.startupMs)}, seen UP ${s(upAt - restartAt)} after restart; repair job ${s(repairMs)}`,
    );
    note(
      '1 node kill',
      `failed writes ${f.writesFailed} (started ${f.failedWritesFrom === null ? '—' : `${s(f.failedWritesFrom)} … ${s(f.failedWritesTo ?? 0)}`} after the kill; ${failedAfterConviction.length} after conviction outside the rejoin), failed reads ${f.readsFailed}, longest request ${f.longestMs} ms, by status ${JSON.stringify(f.statuses)}`,
    );
    expect(load.ledger.unknown.size).toBe(0);
    const want = expectedEdges(load.ledger.acked);
    await expectEdges(a, want);
    note(
      '1 node kill',
      `edges expected from the ledger ${want.length}, found ${want.length} (both directions, whole lists)`,
    );
    expect(f.readsFailed).toBe(0);
    // A failure under a node kill is a 503 the client retries, never a 500.
    expect(Object.keys(f.statuses).filter((k) => !k.endsWith(' 503'))).toEqual([]);
    expect(failedAfterConviction).toEqual([]);
    // The feed's promise: every change that took effect — the writes answered 503 that landed
    // anyway included — is in the feed read from a cursor taken before the load, once, each edge's
    // events alternating, replaying to the lists. Within D: the last change settles after L (10 s)
    // and an intent left behind is resolved by the next recovery pass (every 2 s) after that.
    const feed = await settledFeed(origin, want);
    note(
      '1 node kill',
      `feed: ${feed.events} events from a cursor taken before the load, ${feed.breaks.length} breaks of the promise, settled ${s(feed.ms)} after the repair (${f.writesFailed} writes answered 503 first)`,
    );
    expect(feed.breaks).toEqual([]);
  });

  it('4. a node comes back stale: LOCAL_QUORUM reads never return the stale state', async () => {
    const c = cluster as LocalCluster;
    const a = accounts(20_000n, 4, 2, 6);
    await createAccounts(app, a);
    const before = new Map<string, PairState>();
    for (const s0 of a.sources)
      for (const t of a.targets.slice(0, 3)) {
        expect((await app.call('PUT', `/v1/users/${s0}/following/${t}`, { as: s0 })).status).toBe(200);
        before.set(`${s0}>${t}`, 'following');
      }
    // The simulation's replica rules are held to the cluster at this test's outages, on a table of
    // their own (`support/replica-parity.ts`): the same statements on a model `ReplicaSet`.
    let parityMs = Date.now();
    const parity = await ReplicaParity.open(c);
    onTestFinished(() => parity.close());
    await parity.allUp();
    parityMs = Date.now() - parityMs;
    const stale = 2;
    await c.node(stale).stop();
    const after = new Map(before);
    for (const s0 of a.sources) {
      for (const t of a.targets.slice(0, 2)) {
        expect((await app.call('DELETE', `/v1/users/${s0}/following/${t}`, { as: s0 })).status).toBe(200);
        after.set(`${s0}>${t}`, 'none');
      }
      for (const t of a.targets.slice(3)) {
        expect((await app.call('PUT', `/v1/users/${s0}/following/${t}`, { as: s0 })).status).toBe(200);
        after.set(`${s0}>${t}`, 'following');
      }
    }
    const parityDown2 = Date.now();
    await parity.node2Down();
    parityMs += Date.now() - parityDown2;
    const since = await logLength(c.options(0).nodeDir);
    await c.start(stale);
    await whenUp(c.options(0).nodeDir, c.addresses[stale] as string, since);
    // Node 0 holds hints for node 2 (the parity's H1); its dispatcher sends them from now on.
    parity.node2Back();
    // With node 1 down, every quorum is {node 0, the stale node}: the stale replica takes part
    // in every read.
    await c.node(1).stop();
    const oneApp = await clusterApp({ ...env, CASSANDRA_CONSISTENCY: 'localOne' });
    let staleAtOne = 0;
    const rounds = 3;
    try {
      const want = expectedEdges(after);
      const old = expectedEdges(before);
      for (let r = 0; r < rounds; r++) {
        const seen = await observedEdges(oneApp, a);
        if (
          JSON.stringify(seen.out) !== JSON.stringify(want) ||
          JSON.stringify(seen.in) !== JSON.stringify(want)
        )
          staleAtOne++;
      }
      for (let r = 0; r < rounds; r++) await expectEdges(a, want);
      note(
        '4 stale node',
        `${after.size} pairs, ${old.length} edges before the outage, ${want.length} after; LOCAL_ONE read rounds that saw stale state ${staleAtOne}/${rounds} (shows the replica was stale); LOCAL_QUORUM rounds stale 0/${rounds}`,
      );
      const parityDown1 = Date.now();
      await parity.node1Down();
      parityMs += Date.now() - parityDown1;
      const pf = parity.figures;
      note(
        '4 replica parity',
        `R1–R3, H1 and L1 against the model's ReplicaSet: ${pf.writes} writes (${pf.lwts} lightweight transactions, each decided alike), ${pf.reads} reads (whole partitions) equal on both sides; ${s(parityMs)} in all, of which node 0 frozen until node 2 convicted it and back UP (twice) ${s(pf.isolatedMs)}`,
      );
      note(
        '4 replica parity',
        `H1 hint replay: handoff on at node 0 for ${pf.hinted} writes (${s(pf.handoffMs)} with the two nodetool runs); node 0 had sent node 2 its hints ${s(pf.hintReplayMs)} after it saw node 2 UP (${s(pf.hintWaitMs)} of it waited out here); node 2 alone then held them`,
      );
    } finally {
      await oneApp.close();
      await c.start(1);
    }
  });

  it('3. the database unreachable: 503 problem+json with Retry-After within the request timeout, recovery without restart', async () => {
    const c = cluster as LocalCluster;
    const timeout = app.config.cassandra.requestTimeoutMs;
    const a = accounts(30_000n, 1, 1, 1);
    await createAccounts(app, a);
    const [src] = a.sources as [bigint];
    const [dst] = a.targets as [bigint];
    // Every statement below is prepared already (a first PREPARE may try a second host).
    expect((await app.call('GET', '/readyz')).status).toBe(200);
    for (let i = 0; i < 3; i++) c.node(i).pause();
    const pausedAt = Date.now();
    try {
      const replies = await Promise.all([
        app.call('GET', `/v1/users/${src}`, { as: src }),
        app.call('PUT', `/v1/users/${src}/following/${dst}`, { as: src }),
        app.call('GET', `/v1/users/${dst}/followers`, { as: src }),
        app.call('GET', '/readyz'),
      ]);
      const [profile, follow, list, ready] = replies;
      const longest = Math.max(...replies.map((r) => r.ms));
      const show = (r: typeof profile) => `${r?.status} in ${Math.round(r?.ms ?? 0)} ms`;
      note(
        '3 unreachable',
        `all nodes frozen (SIGSTOP): profile ${show(profile)}, follow ${show(follow)}, list ${show(list)}, readyz ${show(ready)} (request timeout ${timeout} ms)`,
      );
      for (const r of [profile, follow, list]) {
        expect(r?.status).toBe(503);
        expect(r?.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
        expect(r?.headers.get('retry-after')).toBe('1');
        expect(r?.json).toMatchObject({ status: 503, code: 'unavailable' });
      }
      expect(ready?.status).toBe(503);
      expect(longest).toBeLessThan(timeout + 1500);
    } finally {
      for (let i = 0; i < 3; i++) c.node(i).resume();
    }
    const resumedAt = Date.now();
    await until(
      'follow 200 after the nodes thaw',
      90_000,
      () => app.call('PUT', `/v1/users/${src}/following/${dst}`, { as: src }),
      (r) => r.status === 200,
    );
    const back = Date.now();
    await until(
      'readyz 200',
      30_000,
      () => app.call('GET', '/readyz'),
      (r) => r.status === 200,
    );
    note(
      '3 unreachable',
      `frozen ${s(resumedAt - pausedAt)}; first acknowledged write ${s(back - resumedAt)} after thaw, same app and driver client`,
    );
  });

  // By hand (`CLUSTER_PAUSES=1 npm run test:cluster`), ~45 s: CI's 3-node run keeps to tests 1–4
  // (test 1 checks the same feed promise, with writes answered 503 while a node dies).
  it.runIf(process.env.CLUSTER_PAUSES === '1')(
    '5. the database paused under load (every node frozen 4 s, three times): no acknowledged write lost, failures only 503s the writers retry, and the feed from before the load replays to the lists, each change once',
    async () => {
      const c = cluster as LocalCluster;
      const a = accounts(40_000n, KILL_WRITERS, 4, 12);
      await createAccounts(app, a);
      const origin = await feedEnd(app);
      const load = startLoad(app, a, { seed: SEED + 5, readers: 1 });
      const loadAt = Date.now();
      // Longer than the write budget (2 s: a write answers 503 then, and may still take effect when
      // the nodes thaw) and shorter than conviction; the writers retry with the same key.
      for (let i = 0; i < 3; i++) {
        await sleep(4000);
        for (let n = 0; n < 3; n++) c.node(n).pause();
        try {
          await sleep(4000);
        } finally {
          for (let n = 0; n < 3; n++) c.node(n).resume();
        }
      }
      await sleep(4000);
      await load.stop();
      const f = figures(load.ledger.attempts, loadAt);
      note(
        '5 paused',
        `load ${s(Date.now() - loadAt)}, ${f.writes} write attempts (${load.ledger.opsAcked} acknowledged), ${f.reads} page reads; failed writes ${f.writesFailed}, failed reads ${f.readsFailed}, longest request ${f.longestMs} ms, by status ${JSON.stringify(f.statuses)}`,
      );
      expect(load.ledger.unknown.size).toBe(0);
      const want = expectedEdges(load.ledger.acked);
      await expectEdges(a, want);
      expect(Object.keys(f.statuses).filter((k) => !k.endsWith(' 503'))).toEqual([]);
      const feed = await settledFeed(origin, want);
      note(
        '5 paused',
        `edges from the ledger ${want.length}, found ${want.length}; feed: ${feed.events} events from a cursor taken before the load, ${feed.breaks.length} breaks of the promise, settled ${s(feed.ms)} after the load (${f.writesFailed} writes answered 503 first)`,
      );
      // The pauses did fail writes: otherwise this run showed nothing about a 503 that took effect.
      expect(f.writesFailed).toBeGreaterThan(0);
      expect(feed.breaks).toEqual([]);
    },
  );

  it('2. every node killed under load (commitlog group): after restart every acknowledged edge is there', async () => {
    const c = cluster as LocalCluster;
    const restart = async () => {
      const t = Date.now();
      // Together, as an operator restarts a cluster: one at a time, the first waits out its
      // connectivity check (10 s) for peers that are still down.
      await Promise.all([0, 1, 2].map((i) => c.start(i)));
      await until(
        'writes through the API',
        90_000,
        () => app.call('GET', '/readyz'),
        (r) => r.status === 200,
      );
      return Date.now() - t;
    };
    expect(c.options(0).commitlogSync).toBe('group');
    // Two sources a writer: 192 pairs are plenty for the ~70 writes before the kill, and the
    // repair job's pairs among 28 accounts are 378 (with four sources, 44 accounts and 946).
    const a = accounts(40_000n, WRITERS, 2, 12);
    await createAccounts(app, a);
    const load = startLoad(app, a, { seed: SEED + 7, readers: 1 });
    await sleep(8000);
    const killedAt = Date.now();
    await Promise.all([0, 1, 2].map((i) => c.node(i).kill()));
    await load.stop({ abandon: true });
    const restartMs = await restart();

    const f = figures(load.ledger.attempts, killedAt);
    const acked = load.ledger.acked;
    const unknown = load.ledger.unknown;
    // A pair whose last op was in flight at the kill may show either that op's state or the
    // last acknowledged one, in each direction on its own: the op's logged batch may have reached
    // one list's replicas and not the other's, and Cassandra's batchlog replay (or the repair
    // job) completes it later. Every other pair must show exactly its last acknowledged state in
    // both directions, and after the repair job the two directions must agree for every pair.
    const check = async (when: string, symmetric: boolean) => {
      const got = await observedEdges(app, a);
      const pairs = new Set([...acked.keys(), ...unknown.keys()]);
      const lost: string[] = [];
      for (const [direction, edges] of [
        ['out', got.out],
        ['in', got.in],
      ] as const) {
        const seen = new Set(edges);
        for (const k of pairs) {
          const ok = new Set<PairState>([acked.get(k) ?? 'none']);
          const maybe = unknown.get(k);
          if (maybe) ok.add(maybe);
          if (!ok.has(seen.has(k) ? 'following' : 'none')) lost.push(`${direction} ${k}`);
        }
        for (const k of seen) if (!pairs.has(k)) lost.push(`${direction} ${k}`);
      }
      const outSet = new Set(got.out);
      const inSet = new Set(got.in);
      const halfDone = [...new Set([...got.out, ...got.in])].filter((k) => outSet.has(k) !== inSet.has(k));
      note(
        '2 crash all',
        `${when}: ${got.out.length} edges out, ${got.in.length} in; ${lost.length} pairs differ from the ledger; ` +
          `${halfDone.length} in-flight pairs in one direction only (${halfDone.join(' ') || 'none'})`,
      );
      expect(lost).toEqual([]);
      if (symmetric) expect(got.in).toEqual(got.out);
      else expect(halfDone.filter((k) => !unknown.has(k))).toEqual([]);
    };
    await check('after restart', false);
    await runRepairJob(env, [...a.sources, ...a.targets]);
    await check('after repair', true);
    note(
      '2 crash all',
      `${load.ledger.opsAcked} writes acknowledged before kill -9 of all 3 nodes (${f.writes} attempts, ${unknown.size} in flight at the kill); ` +
        `expected edges ${expectedEdges(acked).length} (±${unknown.size} in flight); cluster back and serving ${s(restartMs)} after restart began`,
    );
  });
});
