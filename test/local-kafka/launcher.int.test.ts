/**
 * `npm run kafka`'s promises, on a broker of its own (port 19192, a temporary directory): it
 * formats once and answers producers; SIGTERM stops the JVM; a second start keeps the data (no new
 * format, the topic's records still there); a parent killed with SIGKILL takes the JVM with it.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Consumer, Producer, stringSerializers } from '@platformatic/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const PORT = 19192;
/** The broker's JVMs on C1 alone (`JAVA_TOOL_OPTIONS`): the launcher's promises are tested, not the broker's speed. */
const QUICK_JVM = '-XX:TieredStopAtLevel=1';
const BROKER = `127.0.0.1:${PORT}`;
let dir: string;

function jvmsFor(brokerDir: string): number[] {
  try {
    return execFileSync('pgrep', ['-f', `kafka.Kafka ${brokerDir}/`], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .filter(Boolean)
      .map(Number)
      .filter((pid) => {
        try {
          return (
            execFileSync('ps', ['-o', 'comm=', '-p', String(pid)], { encoding: 'utf8' }).trim() === 'java'
          );
        } catch {
          return false;
        }
      });
  } catch {
    return [];
  }
}

function startCli(): { child: ChildProcess; ready: Promise<string> } {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/local-kafka/cli.ts', '--port', String(PORT), '--dir', dir, '--partitions', '2'],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, JAVA_TOOL_OPTIONS: QUICK_JVM } },
  );
  let out = '';
  const ready = new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('ready on')) resolve(out);
    });
    child.stderr?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.on('exit', (code) => reject(new Error(`launcher exited (${code}) before ready:\n${out}`)));
  });
  return { child, ready };
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.on('exit', (code) => resolve(code));
  });

async function waitUntil(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return check();
}

/** The latest offset of each partition of `topic`, by partition. */
async function endOffsets(topic: string): Promise<bigint[]> {
  const consumer = new Consumer({
    clientId: 'launcher-test',
    groupId: `launcher-test-${process.pid}`,
    bootstrapBrokers: [BROKER],
  });
  try {
    return (await consumer.listOffsets({ topics: [topic] })).get(topic) ?? [];
  } finally {
    await consumer.close(true);
  }
}

describe('local Kafka launcher', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'flocklist-kafka-'));
  });
  afterAll(async () => {
    for (const pid of jvmsFor(dir)) process.kill(pid, 'SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  it('formats once and serves; SIGTERM stops the JVM; a restart keeps the data; SIGKILL of the parent takes the JVM along', async () => {
    const first = startCli();
    const log = await first.ready;
    expect(log).toMatch(/formatting .*\(KRaft cluster id [\w-]{22}\)/);
    expect(log).toMatch(/ready on 127\.0\.0\.1:19192 in [\d.]+ s/);
    expect(jvmsFor(dir)).toHaveLength(1);

    const producer = new Producer({
      clientId: 'launcher-test',
      bootstrapBrokers: [BROKER],
      serializers: stringSerializers,
      idempotent: true,
      acks: -1,
      autocreateTopics: true,
    });
    await producer.send({
      messages: [0, 1, 2].map((i) => ({ topic: 'probe', key: `k${i}`, value: 'kept', partition: i % 2 })),
    });
    await producer.close();
    expect(await endOffsets('probe')).toEqual([2n, 1n]);

    first.child.kill('SIGTERM');
    expect(await exited(first.child)).toBe(0);
    expect(jvmsFor(dir)).toEqual([]);

    const second = startCli();
    const again = await second.ready;
    expect(again).not.toMatch(/formatting/);
    expect(await endOffsets('probe')).toEqual([2n, 1n]);
    second.child.kill('SIGKILL');
    await exited(second.child);
    expect(await waitUntil(() => jvmsFor(dir).length === 0, 60_000)).toBe(true);
  }, 180_000);
});
