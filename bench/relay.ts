/**
 * `npm run bench:relay -- [--events 100000] [--crash-events 100000] [--crashes 3] [--batch 1000]
 * [--pairs 5000] [--seed 42] [--port 19092]`: the Kafka relay into the project's local broker
 * (started from the Maven jars, or reused when one answers on `--port`), from a pre-generated feed
 * (`test/relay/generated-feed.ts`), so only the relay and the broker are measured.
 *
 * - **E3, throughput** (target ≥ 20,000 events/s): `runRelay` in this process with the Kafka sink
 *   (idempotent, acks = all) and an in-memory cursor store, `--events` events in pages of
 *   `--batch`, each page acknowledged before the next is read; events/s over the whole run, after
 *   a warm-up run of up to 10,000 other events through the same producer.
 * - **E4, crashes** (target: 0 lost, duplicates counted): `--crash-events` events relayed by the
 *   relay as a child process (`test/relay/relay-child.ts`, the `jobs relay` code) with its cursor
 *   in Cassandra (a throwaway keyspace, or `--keyspace`), killed with SIGKILL `--crashes` times at
 *   evenly spaced points of the committed cursor (at least a page apart; the kill comes a seeded
 *   0–150 ms after the point is seen), restarted after each, then run to the end. The
 *   topic is read back whole: every event must be there; each duplicate must lie after the cursor
 *   committed at some kill (what that crash could repeat).
 *
 * Prints both results and writes them as JSON under the results directory.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Admin, Consumer, stringDeserializers } from '@platformatic/kafka';
import { kafkaSink, runRelay } from '../src/jobs/relay.js';
import { startLocalKafka } from '../src/local-kafka/broker.js';
import { defaultKafkaOptions } from '../src/local-kafka/broker-config.js';
import { CassandraGraphStore } from '../src/store/cassandra/graph-store.js';
import { generatedFeed, generatedOffset, generateEvents } from '../test/relay/generated-feed.js';
import { MemoryGraphStore } from '../test/support/memory/graph-store.js';
import { mulberry32 } from '../test/support/random.js';
import { barChartSvg } from './support/charts.js';
import { openBench } from './support/harness.js';

const bench = openBench({
  usage:
    'npm run bench:relay -- [--events 100000] [--crash-events 100000] [--crashes 3] [--batch 1000] [--pairs 5000] [--seed 42] [--port 19092]',
  options: {
    events: { type: 'string', default: '100000' },
    'crash-events': { type: 'string', default: '100000' },
    crashes: { type: 'string', default: '3' },
    batch: { type: 'string', default: '1000' },
    pairs: { type: 'string', default: '5000' },
    seed: { type: 'string', default: '42' },
    port: { type: 'string', default: '19092' },
  },
});
const a = bench.args;
const N3 = Number(a.events);
const N4 = Number(a['crash-events']);
const CRASHES = Number(a.crashes);
const BATCH = Number(a.batch);
const PAIRS = Number(a.pairs);
const SEED = Number(a.seed);
const PARTITIONS = 8;
const log = (line: string) => console.log(`[bench:relay] ${line}`);

const broker = await startLocalKafka(defaultKafkaOptions({ port: Number(a.port) }), {
  log: (l) => log(`kafka: ${l}`),
});
log(
  `broker ${broker.brokers} ${broker.owned ? `started in ${(broker.startupMs / 1000).toFixed(1)} s` : 'reused'}; seed ${SEED}, ${PAIRS} pairs, pages of ${BATCH}`,
);

async function createTopic(prefix: string): Promise<string> {
  const topic = `${prefix}-${randomBytes(4).toString('hex')}`;
  const admin = new Admin({ clientId: 'bench-relay', bootstrapBrokers: [broker.brokers] });
  await admin.createTopics({ topics: [topic], partitions: PARTITIONS, replicas: 1 });
  await admin.close();
  return topic;
}

async function readTopic(topic: string): Promise<string[]> {
  const consumer = new Consumer({
    clientId: 'bench-relay',
    groupId: `bench-relay-${randomBytes(4).toString('hex')}`,
    bootstrapBrokers: [broker.brokers],
    deserializers: stringDeserializers,
  });
  // The end offset of every partition (latest), summed: how many messages the topic holds.
  const ends = await consumer.listOffsets({ topics: [topic] });
  const total = (ends.get(topic) ?? []).reduce((s, o) => s + Number(o), 0);
  const ids: string[] = [];
  if (total > 0) {
    const stream = await consumer.consume({
      topics: [topic],
      mode: 'earliest',
      autocommit: false,
      maxWaitTime: 200,
    });
    for await (const m of stream) {
      ids.push(JSON.parse(m.value as string).id as string);
      if (ids.length >= total) break;
    }
    await stream.close();
  }
  await consumer.close(true);
  return ids;
}

/** E4: the relay as a child process, killed `CRASHES` times, then to the end; the topic read back. */
async function crashRun() {
  const { client, keyspace } = await bench.throwawayKeyspace('bench_relay');
  const store = new CassandraGraphStore(client);
  const e4Topic = await createTopic('bench-relay-e4');
  const name = `bench-e4-${randomBytes(4).toString('hex')}`;
  const events = generateEvents({ count: N4, pairs: PAIRS, seed: SEED + 1 });
  const startChild = (): { child: ChildProcess; exit: Promise<{ code: number | null; out: string }> } => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'test/relay/relay-child.ts',
        `--contact-points=${bench.config.contactPoints.join(',')}`,
        `--dc=${bench.config.localDataCenter}`,
        `--keyspace=${keyspace}`,
        `--count=${N4}`,
        `--pairs=${PAIRS}`,
        `--seed=${SEED + 1}`,
        '--',
        `--brokers=${broker.brokers}`,
        `--topic=${e4Topic}`,
        `--name=${name}`,
        `--batch=${BATCH}`,
        '--until-idle',
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
    return { child, exit: new Promise((resolve) => child.on('exit', (code) => resolve({ code, out }))) };
  };
  const committedAtKills: number[] = [];
  const jitter = mulberry32(SEED);
  const t4 = performance.now();
  for (let k = 1; k <= CRASHES; k++) {
    // Evenly spaced, but always at least one page past the last kill, so each run makes progress.
    const target = Math.max(Math.floor((N4 * k) / (CRASHES + 1)), (committedAtKills.at(-1) ?? 0) + BATCH);
    const run = startChild();
    let done = false;
    void run.exit.then(() => {
      done = true;
    });
    for (;;) {
      const c = await store.getRelayCursor(name);
      if (c !== null && generatedOffset(c) >= target) break;
      if (done) throw new Error(`the relay exited before crash ${k}:\n${(await run.exit).out}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    // Past the target, a seeded random moment within the next ~page: anywhere in the loop
    // (reading, sending, acknowledged but not yet committed).
    await new Promise((r) => setTimeout(r, Math.floor(jitter() * 150)));
    run.child.kill('SIGKILL');
    await run.exit;
    const at = generatedOffset(await store.getRelayCursor(name));
    committedAtKills.push(at);
    log(`E4: crash ${k}/${CRASHES}: SIGKILL with the cursor committed at ${at}`);
  }
  const last = await startChild().exit;
  if (last.code !== 0) throw new Error(`the last relay run failed:\n${last.out}`);
  const relaySeconds = (performance.now() - t4) / 1000;
  const ids = await readTopic(e4Topic);
  const index = new Map(events.map((e, i) => [e.id, i]));
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  const lost = events.filter((e) => !counts.has(e.id)).length;
  const duplicated = [...counts].filter(([, n]) => n > 1);
  const extra = duplicated.reduce((s, [, n]) => s + n - 1, 0);
  const unexplained = duplicated.filter(([id]) => {
    const i = index.get(id) ?? -1;
    return !committedAtKills.some((c) => i >= c);
  }).length;
  const e4 = {
    events: N4,
    crashes: CRASHES,
    committedAtKills,
    messages: ids.length,
    lost,
    duplicatedEvents: duplicated.length,
    extraMessages: extra,
    unexplainedDuplicates: unexplained,
    relaySeconds,
    met: lost === 0 && unexplained === 0 && ids.length === N4 + extra,
  };
  log(
    `E4: ${N4} events, ${CRASHES} crashes: ${ids.length} messages, ${lost} lost, ${duplicated.length} events duplicated ` +
      `(${extra} extra messages; ${unexplained} not explained by a crash), relay ${relaySeconds.toFixed(1)} s: ${e4.met ? 'met' : 'NOT met'}`,
  );
  return e4;
}

try {
  // E3: throughput, after a warm-up run of up to 10,000 other events through the same producer
  // into the same topic (JIT of both processes, the producer id, the partitions' leaders).
  const e3Topic = await createTopic('bench-relay-e3');
  const e3Events = generateEvents({ count: N3, pairs: PAIRS, seed: SEED });
  const sink = kafkaSink({ brokers: [broker.brokers], topic: e3Topic });
  await runRelay({
    feed: generatedFeed(generateEvents({ count: Math.min(10_000, N3), pairs: PAIRS, seed: SEED + 2 })),
    cursors: new MemoryGraphStore(),
    sink,
    name: 'bench-warm',
    batch: BATCH,
    untilIdle: true,
  });
  const cpu0 = process.cpuUsage();
  const r3 = await runRelay({
    feed: generatedFeed(e3Events),
    cursors: new MemoryGraphStore(),
    sink,
    name: 'bench-e3',
    batch: BATCH,
    untilIdle: true,
  });
  await sink.close();
  const cpu = process.cpuUsage(cpu0);
  const rate = r3.events / (r3.elapsedMs / 1000);
  const e3 = {
    events: r3.events,
    seconds: r3.elapsedMs / 1000,
    eventsPerSecond: Math.round(rate),
    nodeCpuSeconds: (cpu.user + cpu.system) / 1e6,
    target: 20_000,
    met: rate >= 20_000,
  };
  log(
    `E3: ${e3.events} events in ${e3.seconds.toFixed(2)} s = ${e3.eventsPerSecond} events/s (target ≥ 20,000: ${e3.met ? 'met' : 'NOT met'}), Node CPU ${e3.nodeCpuSeconds.toFixed(2)} s`,
  );

  // E4: crashes (`--crash-events 0` skips it).
  const e4 = N4 > 0 ? await crashRun() : null;
  const md = `# bench:relay (seed ${SEED}, ${PAIRS} pairs, pages of ${BATCH})

E3: ${e3.events} events in ${e3.seconds.toFixed(2)} s = ${e3.eventsPerSecond} events/s (target ≥ 20,000: ${e3.met ? 'met' : 'not met'})
${e4 ? `\nE4: ${JSON.stringify(e4)}\n` : ''}`;
  const svg = barChartSvg(
    `relay into the local broker, pages of ${BATCH}`,
    ['events/s'],
    [
      { name: 'relay', values: [e3.eventsPerSecond] },
      { name: 'target', values: [20_000] },
    ],
    'events/s',
  );
  const file = await bench.writeResults('relay', { seed: SEED, pairs: PAIRS, batch: BATCH, e3, e4 }, svg, md);
  log(`results: ${file}`);
  if (e4 && !e4.met) process.exitCode = 1;
} finally {
  await bench.close();
  await broker.stop();
}
