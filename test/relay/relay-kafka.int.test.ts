/**
 * The relay against a real Kafka broker (the project's own, from the Maven jars), crashed mid-way,
 * on the real change feed: about 5,000 events written through the graph service into a fresh
 * keyspace (follows, unfollows, blocks that remove follows, account changes), read back from the
 * settled feed as the reference; then the relay as a child process, killed with SIGKILL once it
 * has committed about 40% of them, and restarted as `jobs relay` itself (the CLI, on the jobs
 * runtime's feed) to the end. The topic must hold every event, each keyed by its pair with the
 * API's value, one pair's events in one partition in feed order, and repeat only events the crash
 * could repeat: those after the cursor committed at the kill. Then the worker's `relay` job on the
 * same feed to a second topic: one worker delivers every event once, its cursor kept in the job's
 * lease row; stopped, and a second worker (another holder) resumes from that cursor and adds
 * nothing.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Admin, Consumer, stringDeserializers } from '@platformatic/kafka';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { relayMessage } from '../../src/jobs/relay.js';
import { Worker } from '../../src/jobs/worker.js';
import { workerJob } from '../../src/jobs/worker-jobs.js';
import { BucketedListService } from '../../src/lists/list-service.js';
import { type LocalKafka, startLocalKafka } from '../../src/local-kafka/broker.js';
import { defaultKafkaOptions } from '../../src/local-kafka/broker-config.js';
import type { GraphEvent } from '../../src/model/events.js';
import { CqlExecutor } from '../../src/store/cassandra/executor.js';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { CassandraLeaseStore } from '../../src/store/cassandra/lease-store.js';
import { type TestKeyspace, testKeyspace } from '../support/cassandra.js';
import { mulberry32 } from '../support/random.js';
import { knob } from '../support/soak.js';

/** Events written before the relay runs: 2,000 in CI, 5,000 with `SOAK=1`. */
const TARGET_EVENTS = knob('RELAY_EVENTS', 5000, 2000);
const USERS = 120;
const WRITERS = 16;
const SEED = Number(process.env.RELAY_SEED ?? Date.now() % 100_000);
const PARTITIONS = 8;
const NAME = 'relay-crash';
/** The test broker's port: apart from 9092, which `npm run kafka` takes by default. */
const PORT = 19092;

let broker: LocalKafka;
let ks: TestKeyspace;
/** The first test's graph and its settled events, for the worker's relay after it. */
let relayed: { graph: GraphService; store: CassandraGraphStore; events: GraphEvent[] } | undefined;

beforeAll(async () => {
  const t0 = Date.now();
  [broker, ks] = await Promise.all([
    startLocalKafka(defaultKafkaOptions({ port: PORT }), { log: (l) => console.log(`[kafka] ${l}`) }),
    testKeyspace('relay'),
  ]);
  console.log(
    `[relay test] broker ${broker.owned ? `started in ${broker.startupMs} ms (jar resolution ${broker.resolveMs} ms)` : 'reused'}, keyspace ready, ${Date.now() - t0} ms`,
  );
});

afterAll(async () => {
  await ks?.drop();
  await broker?.stop();
});

/** Writes changes through the graph service until at least `target` events were emitted (seeded). */
async function writeEvents(graph: GraphService, target: number): Promise<void> {
  const random = mulberry32(SEED);
  const ids = Array.from({ length: USERS }, (_, i) => BigInt(1000 + i));
  for (let i = 0; i < ids.length; i += WRITERS)
    await Promise.all(ids.slice(i, i + WRITERS).map((id) => graph.putUser({ id, username: `u${id}` })));
  let changes = 0;
  const busy = new Set<bigint>();
  const hidden = new Set<bigint>();
  const flipHideLists = async (id: bigint) => {
    await graph.putUser({ id, hideLists: !hidden.has(id) });
    if (!hidden.delete(id)) hidden.add(id);
    return { changed: true };
  };
  const writer = async () => {
    while (changes < target) {
      const a = ids[Math.floor(random() * USERS)] as bigint;
      const b = ids[Math.floor(random() * USERS)] as bigint;
      if (a === b || busy.has(a) || busy.has(b)) continue;
      busy.add(a);
      busy.add(b);
      try {
        const roll = random();
        const r =
          roll < 0.03
            ? await graph.block(a, b)
            : roll < 0.06
              ? await graph.unblock(a, b)
              : roll < 0.08
                ? await flipHideLists(a)
                : (await graph.getFollowStatus(a, b)).state === 'none'
                  ? await graph.follow(a, b)
                  : await graph.unfollow(a, b);
        if (r.changed) changes++;
      } catch (err) {
        // A follow behind a block is refused; anything else is a failure of the test.
        if (!(err instanceof Error && err.name === 'BlockedError')) throw err;
      } finally {
        busy.delete(a);
        busy.delete(b);
      }
    }
  };
  await Promise.all(Array.from({ length: WRITERS }, writer));
}

/** Every settled event, oldest first, once the feed has passed `until` (µs). */
async function readSettled(graph: GraphService, until: bigint): Promise<GraphEvent[]> {
  const out: GraphEvent[] = [];
  let cursor: string | null = null;
  for (;;) {
    const page = await graph.feed.read(cursor, 1000, { waitMs: 1000 });
    out.push(...page.items);
    cursor = page.next;
    if (page.items.length === 0 && BigInt(Date.now()) * 1000n > until) return out;
  }
}

function spawnLogged(args: string[], env: NodeJS.ProcessEnv = process.env) {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, out })),
  );
  return { child, exit };
}

async function consumeAll(topic: string): Promise<{ key: string; value: string; partition: number }[]> {
  const consumer = new Consumer({
    clientId: 'relay-test-consumer',
    groupId: `relay-test-${randomBytes(4).toString('hex')}`,
    bootstrapBrokers: [broker.brokers],
    deserializers: stringDeserializers,
  });
  // The end offset of every partition (latest), summed: how many messages the topic holds.
  const ends = await consumer.listOffsets({ topics: [topic] });
  const total = (ends.get(topic) ?? []).reduce((s, o) => s + Number(o), 0);
  const got: { key: string; value: string; partition: number }[] = [];
  const stream = await consumer.consume({
    topics: [topic],
    mode: 'earliest',
    autocommit: false,
    maxWaitTime: 200,
  });
  for await (const m of stream) {
    got.push({ key: m.key as string, value: m.value as string, partition: m.partition });
    if (got.length >= total) break;
  }
  await stream.close();
  await consumer.close(true);
  return got;
}

const FEED_SECRET = 'relay-test-feed-cursor-secret';

describe('the Kafka relay, crashed and restarted, on the real feed', () => {
  it(`delivers all ~${TARGET_EVENTS} events keyed by pair, in feed order per pair, repeating only what followed the committed cursor`, async () => {
    const t0 = Date.now();
    const store = new CassandraGraphStore(ks.client);
    const graph = new GraphService({
      store,
      lists: new BucketedListService({
        store,
        cursorSecret: 'relay-test-cursor-secret',
        bucketThresholds: [1_000_000_000],
      }),
      maxFollowing: 7500,
      // The secret the relays seal their cursors with: the child's flag and the CLI's environment.
      feedCursorSecrets: [FEED_SECRET],
    });
    await writeEvents(graph, TARGET_EVENTS);
    const written = Date.now();
    // Settled once the feed's lag (10 s) has passed the last write.
    const events = await readSettled(graph, BigInt(written) * 1000n + 10_500_000n);
    const settled = Date.now();
    expect(events.length).toBeGreaterThanOrEqual(TARGET_EVENTS);
    relayed = { graph, store, events };

    const topic = `graph-events-${randomBytes(4).toString('hex')}`;
    const admin = new Admin({ clientId: 'relay-test-admin', bootstrapBrokers: [broker.brokers] });
    await admin.createTopics({ topics: [topic], partitions: PARTITIONS, replicas: 1 });
    await admin.close();
    const { contactPoints, localDataCenter } = inject('cassandra');
    const relayArgs = [`--brokers=${broker.brokers}`, `--topic=${topic}`, `--name=${NAME}`, '--batch=100'];
    const index = new Map(events.map((e, i) => [e.id, i]));
    const committed = async () => {
      const c = await store.getRelayCursor(NAME);
      if (c === null) return 0;
      const i = index.get(c);
      if (i === undefined) throw new Error(`the relay committed ${c}, which is no event of the feed`);
      return i + 1;
    };

    // First run: the relay's code on the real feed, with 40 ms between each acknowledgement and
    // its commit, killed 20 ms after it is seen to have committed 40%: most likely inside that
    // window, where a crash repeats a page.
    const first = spawnLogged([
      'test/relay/relay-child.ts',
      `--contact-points=${contactPoints.join(',')}`,
      `--dc=${localDataCenter}`,
      `--keyspace=${ks.keyspace}`,
      '--feed=cassandra',
      `--cursor-secret=${FEED_SECRET}`,
      '--commit-delay-ms=40',
      '--',
      ...relayArgs,
    ]);
    let exited = false;
    void first.exit.then(() => {
      exited = true;
    });
    while ((await committed()) < events.length * 0.4) {
      if (exited) throw new Error(`the first relay exited early:\n${(await first.exit).out}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    await new Promise((r) => setTimeout(r, 20));
    first.child.kill('SIGKILL');
    expect((await first.exit).signal).toBe('SIGKILL');
    const committedAtKill = await committed();

    // Second run: `npm run jobs -- relay` as a person runs it (the CLI on the jobs runtime), to the end.
    const second = await spawnLogged(['src/cli.ts', 'relay', ...relayArgs, '--until-idle'], {
      ...process.env,
      CASSANDRA_CONTACT_POINTS: contactPoints.join(','),
      CASSANDRA_LOCAL_DC: localDataCenter,
      CASSANDRA_KEYSPACE: ks.keyspace,
      GRAPH_CURSOR_SECRET: FEED_SECRET,
    }).exit;
    expect({ code: second.code, out: second.out }).toEqual({
      code: 0,
      out: expect.stringContaining('stopped after'),
    });

    const got = await consumeAll(topic);
    const expected = new Map(events.map((e) => [e.id, relayMessage(e)]));
    const seen = new Map<string, number>();
    const perKey = new Map<string, number[]>();
    const partitionsOfKey = new Map<string, Set<number>>();
    for (const m of got) {
      const id = JSON.parse(m.value).id as string;
      const want = expected.get(id);
      expect({ key: m.key, value: m.value }).toEqual({ key: want?.key, value: want?.value });
      seen.set(id, (seen.get(id) ?? 0) + 1);
      partitionsOfKey.set(m.key, (partitionsOfKey.get(m.key) ?? new Set()).add(m.partition));
      if (seen.get(id) === 1) perKey.set(m.key, [...(perKey.get(m.key) ?? []), index.get(id) as number]);
    }
    const duplicates = [...seen].filter(([, n]) => n > 1).map(([id]) => index.get(id) as number);
    const lost = events.filter((e) => !seen.has(e.id)).length;
    console.log(
      `[relay test] seed ${SEED}: ${events.length} events written in ${((written - t0) / 1000).toFixed(1)} s, settled after ${((settled - written) / 1000).toFixed(1)} s; ` +
        `${got.length} messages, ${lost} lost, ${duplicates.length} duplicated ` +
        `(${duplicates.length ? `feed positions ${Math.min(...duplicates)}–${Math.max(...duplicates)}` : 'none'}), ` +
        `cursor committed at the kill: ${committedAtKill}, ${perKey.size} pair keys; ${Date.now() - t0} ms`,
    );

    expect(lost).toBe(0);
    expect([...seen.values()].filter((n) => n > 2)).toEqual([]);
    expect(duplicates.filter((i) => i < committedAtKill)).toEqual([]);
    expect(got.length).toBe(events.length + duplicates.length);
    expect([...partitionsOfKey].filter(([, p]) => p.size > 1)).toEqual([]);
    for (const [key, order] of perKey) {
      expect({ key, order }).toEqual({ key, order: [...order].sort((a, b) => a - b) });
    }
  });

  it('the worker’s relay job: every event once to a new topic, its cursor in the lease row; a second worker resumes there and adds nothing', async () => {
    if (!relayed) throw new Error('needs the events of the test before');
    const { graph, store, events } = relayed;
    const topic = `graph-events-${randomBytes(4).toString('hex')}`;
    const leases = new CassandraLeaseStore(new CqlExecutor(ks.client));
    const worker = (holder: string) =>
      new Worker({
        leases,
        holder,
        clockBoundMs: 2000,
        jobs: [
          {
            everyMs: 60_000,
            job: workerJob('relay', {
              store,
              lists: new BucketedListService({
                store,
                cursorSecret: 'unused-cursor-secret',
                bucketThresholds: [1_000_000_000],
              }),
              settleMs: 0,
              bucketRows: 1000,
              sweepRowsPerSecond: 1000,
              log: () => {},
              feed: () => graph.feed,
              relay: { brokers: [broker.brokers], topic, name: 'worker-relay', batch: 250 },
            }),
          },
        ],
      });
    const last = events.at(-1) as GraphEvent;
    const relayedTo = async (id: string) => {
      for (let i = 0; i < 600; i++) {
        const lease = await leases.getLease('job:relay');
        const position = lease?.state
          ? (JSON.parse(lease.state) as { position: string | null }).position
          : null;
        if (position && (await graph.feed.read(position, 1, { waitMs: 0 })).items.length === 0) {
          const c = await store.getRelayCursor('worker-relay');
          if (c === position) return { lease, position };
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`the worker's relay did not reach ${id} in 60 s`);
    };
    const first = worker('worker-a');
    first.start();
    const one = await relayedTo(last.id);
    await first.stop();
    const second = worker('worker-b');
    second.start();
    await new Promise((r) => setTimeout(r, 3000));
    const two = await leases.getLease('job:relay');
    await second.stop();
    const got = await consumeAll(topic);
    // Each event exactly once (the topic is read partition by partition, so compared as sorted ids).
    expect(got.map((m) => JSON.parse(m.value).id as string).sort()).toEqual(events.map((e) => e.id).sort());
    // The second holder took the lease (generation 2) and kept the first one's cursor.
    expect([one.lease?.holder, one.lease?.generation, two?.holder, two?.generation]).toEqual([
      'worker-a',
      1n,
      'worker-b',
      2n,
    ]);
    expect((JSON.parse(two?.state ?? '{}') as { position: string }).position).toBe(one.position);
  });
});
