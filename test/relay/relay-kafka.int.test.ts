/**
 * The relay against a real Kafka broker (the project's own, from the Maven jars), crashed mid-way:
 * 5,000 feed events, the relay as a child process killed with SIGKILL once it has committed about
 * 40% of them, then restarted to the end. The topic must hold every event, each keyed by its pair
 * with the API's value, one pair's events in feed order, and repeat only events the crash could
 * repeat: those after the cursor committed at the kill.
 *
 * The feed is the generated one (`generated-feed.ts`) until the real feed is on main; the cursor
 * store is the real Cassandra store in a fresh keyspace.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Admin, Consumer, stringDeserializers } from '@platformatic/kafka';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { relayMessage } from '../../src/jobs/relay.js';
import { type LocalKafka, startLocalKafka } from '../../src/local-kafka/broker.js';
import { defaultKafkaOptions } from '../../src/local-kafka/broker-config.js';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { type TestKeyspace, testKeyspace } from '../support/cassandra.js';
import { generatedOffset, generateEvents } from './generated-feed.js';

const COUNT = 5000;
const PAIRS = 300;
const SEED = Number(process.env.RELAY_SEED ?? 20);
const PARTITIONS = 8;
const NAME = 'relay-crash';
/** The test broker's port: apart from 9092, which `npm run kafka` takes by default. */
const PORT = 19092;

let broker: LocalKafka;
let ks: TestKeyspace;

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

function startRelay(
  topic: string,
  extra: { readDelayMs: number; commitDelayMs: number; untilIdle: boolean },
) {
  const { contactPoints, localDataCenter } = inject('cassandra');
  const child: ChildProcess = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'test/relay/relay-child.ts',
      `--contact-points=${contactPoints.join(',')}`,
      `--dc=${localDataCenter}`,
      `--keyspace=${ks.keyspace}`,
      `--count=${COUNT}`,
      `--pairs=${PAIRS}`,
      `--seed=${SEED}`,
      `--read-delay-ms=${extra.readDelayMs}`,
      `--commit-delay-ms=${extra.commitDelayMs}`,
      '--',
      `--brokers=${broker.brokers}`,
      `--topic=${topic}`,
      `--name=${NAME}`,
      '--batch=100',
      ...(extra.untilIdle ? ['--until-idle'] : []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
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
  const admin = new Admin({ clientId: 'relay-test-admin', bootstrapBrokers: [broker.brokers] });
  const partitions = Array.from({ length: PARTITIONS }, (_, partitionIndex) => ({
    partitionIndex,
    timestamp: -1n,
  }));
  const ends = await admin.listOffsets({ topics: [{ name: topic, partitions }] });
  await admin.close();
  const total = ends.flatMap((t) => t.partitions).reduce((s, p) => s + Number(p.offset), 0);

  const consumer = new Consumer({
    clientId: 'relay-test-consumer',
    groupId: `relay-test-${randomBytes(4).toString('hex')}`,
    bootstrapBrokers: [broker.brokers],
    deserializers: stringDeserializers,
  });
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

describe('the Kafka relay, crashed and restarted', () => {
  it(`delivers all ${COUNT} events keyed by pair, in feed order per pair, repeating only what followed the committed cursor`, async () => {
    const t0 = Date.now();
    const topic = `graph-events-${randomBytes(4).toString('hex')}`;
    const admin = new Admin({ clientId: 'relay-test-admin', bootstrapBrokers: [broker.brokers] });
    await admin.createTopics({ topics: [topic], partitions: PARTITIONS, replicas: 1 });
    await admin.close();
    const events = generateEvents({ count: COUNT, pairs: PAIRS, seed: SEED });
    const store = new CassandraGraphStore(ks.client);

    // First run, slowed down (pages of 100; 5 ms a read, 40 ms from acknowledgement to commit),
    // killed 20 ms after it is seen to have committed 40%: most likely between an acknowledgement
    // and its commit, where a crash repeats a page.
    const first = startRelay(topic, { readDelayMs: 5, commitDelayMs: 40, untilIdle: false });
    let exited = false;
    void first.exit.then(() => {
      exited = true;
    });
    for (;;) {
      const c = await store.getRelayCursor(NAME);
      if (c !== null && generatedOffset(c) >= COUNT * 0.4) break;
      if (exited) throw new Error(`the first relay exited early:\n${(await first.exit).out}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 20));
    first.child.kill('SIGKILL');
    const killed = await first.exit;
    expect(killed.signal).toBe('SIGKILL');
    const committedAtKill = generatedOffset(await store.getRelayCursor(NAME));

    // Second run, to the end of the feed.
    const second = await startRelay(topic, { readDelayMs: 0, commitDelayMs: 0, untilIdle: true }).exit;
    expect({ code: second.code, out: second.out }).toMatchObject({ code: 0 });
    expect(await store.getRelayCursor(NAME)).toBe(`g:${COUNT}`);

    const got = await consumeAll(topic);
    const index = new Map(events.map((e, i) => [e.id, i]));
    const expected = new Map(events.map((e) => [e.id, relayMessage(e)]));
    const seen = new Map<string, number>();
    const perKey = new Map<string, number[]>();
    const partitionOfKey = new Map<string, Set<number>>();
    for (const m of got) {
      const id = JSON.parse(m.value).id as string;
      const want = expected.get(id);
      expect({ key: m.key, value: m.value }).toEqual({ key: want?.key, value: want?.value });
      seen.set(id, (seen.get(id) ?? 0) + 1);
      if (!partitionOfKey.has(m.key)) partitionOfKey.set(m.key, new Set());
      partitionOfKey.get(m.key)?.add(m.partition);
      if ((seen.get(id) ?? 0) === 1) {
        if (!perKey.has(m.key)) perKey.set(m.key, []);
        perKey.get(m.key)?.push(index.get(id) as number);
      }
    }
    const duplicates = [...seen].filter(([, n]) => n > 1).map(([id]) => index.get(id) as number);
    const lost = events.filter((e) => !seen.has(e.id)).length;
    console.log(
      `[relay test] seed ${SEED}: ${COUNT} events, ${got.length} messages, ${lost} lost, ${duplicates.length} duplicated ` +
        `(events ${duplicates.length ? `${Math.min(...duplicates)}–${Math.max(...duplicates)}` : '-'}), ` +
        `cursor committed at the kill: ${committedAtKill}, ${perKey.size} pair keys, ${Date.now() - t0} ms`,
    );

    expect(lost).toBe(0);
    expect([...seen.values()].every((n) => n <= 2)).toBe(true);
    expect(duplicates.filter((i) => i < committedAtKill)).toEqual([]);
    expect(got.length).toBe(COUNT + duplicates.length);
    expect([...partitionOfKey.values()].every((p) => p.size === 1)).toBe(true);
    for (const [key, order] of perKey) {
      expect({ key, order }).toEqual({ key, order: [...order].sort((a, b) => a - b) });
    }
  });
});
