/**
 * Starts and stops one real Kafka broker (KRaft: broker and controller in one JVM) from the Maven
 * jars, as `local-cassandra/` does for Cassandra.
 *
 * Design note. Jars come from `resolveMavenArtifact` (`kafka_2.13` plus a log4j SLF4J binding, so
 * the broker's own log says when it is up). The storage is formatted once with a fresh KRaft
 * cluster id (`kafka.tools.StorageTool format`); a later start finds `meta.properties` and keeps
 * the data, `fresh` wipes it. Ready means the broker logged "Kafka Server started" and its client
 * port answers — a port alone answers before the broker has registered with its controller.
 * No orphan JVMs: the JVM runs under the same kind of bash supervisor as the Cassandra node's
 * (SIGTERM forwarded; EOF on a stdin pipe we hold — our death, even by SIGKILL — is a stop
 * request; SIGKILL after a grace period). Reuse: when something already answers on the port and
 * `fresh` is not set, the handle does not own the broker and `stop` is a no-op.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { resolveMavenArtifact } from '../local-cassandra/maven.js';
import { portAnswers, supervisorScript } from '../local-cassandra/supervisor.js';
import {
  KAFKA_LOG_BINDING,
  type KafkaOptions,
  newClusterId,
  renderLog4j2,
  renderServerProperties,
} from './broker-config.js';

export interface LocalKafka {
  /** `host:port` of the client listener. */
  brokers: string;
  /** False when an already-running broker was reused. */
  owned: boolean;
  /** Milliseconds from spawn to ready (0 when reused). */
  startupMs: number;
  /** Jar resolution time when Maven ran in this start, else 0. */
  resolveMs: number;
  /** The supervisor's pid (undefined when reused). */
  pid: number | undefined;
  /** The broker's log file. */
  logFile: string;
  /** Stops the broker cleanly if this handle owns it; resolves once the JVM has exited. */
  stop(): Promise<void>;
}

export interface StartKafkaOptions {
  /** Wipe the data and format anew. */
  fresh?: boolean;
  timeoutMs?: number;
  log?: (line: string) => void;
}

const STOP_GRACE_SECONDS = 30;

const SUPERVISOR = supervisorScript(STOP_GRACE_SECONDS);

const READY_LINE = 'Kafka Server started';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function tail(file: string, lines = 30): Promise<string> {
  if (!existsSync(file)) return '';
  return (await readFile(file, 'utf8')).split('\n').slice(-lines).join('\n');
}

function java(args: string[], stdout: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('java', args, { maxBuffer: 4 << 20 }, (err, out, errOut) => {
      if (err) reject(new Error(`${args.at(-1) ?? 'java'} failed: ${err.message}\n${out}${errOut}`));
      else void writeFile(stdout, `${out}${errOut}`).then(resolve, reject);
    });
  });
}

/** Starts the broker described by `o`, or reuses one already answering on its port. */
export async function startLocalKafka(o: KafkaOptions, opts: StartKafkaOptions = {}): Promise<LocalKafka> {
  const log = opts.log ?? (() => {});
  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  const brokers = `${o.address}:${o.port}`;
  const logsDir = join(o.dir, 'logs');
  const logFile = join(logsDir, 'server.log');
  if (!opts.fresh && (await portAnswers(o.address, o.port))) {
    log(`reusing the broker already answering on ${brokers}`);
    return {
      brokers,
      owned: false,
      startupMs: 0,
      resolveMs: 0,
      pid: undefined,
      logFile,
      stop: async () => {},
    };
  }

  const t0 = Date.now();
  const jars = await resolveMavenArtifact({
    artifact: { groupId: 'org.apache.kafka', artifactId: 'kafka_2.13', version: o.version },
    extra: [KAFKA_LOG_BINDING],
    cacheDir: o.cacheDir,
    log,
  });
  const resolveMs = jars.resolvedNow ? Date.now() - t0 : 0;

  const dataDir = join(o.dir, 'data');
  const confDir = join(o.dir, 'conf');
  if (opts.fresh) await rm(dataDir, { recursive: true, force: true });
  for (const d of [dataDir, confDir, logsDir]) await mkdir(d, { recursive: true });
  const props = join(confDir, 'server.properties');
  const log4j = join(confDir, 'log4j2.xml');
  await writeFile(props, renderServerProperties(o, dataDir));
  await writeFile(log4j, renderLog4j2(logFile));
  const classpath = ['-cp', `${jars.libDir}/*`];
  const logConfig = `-Dlog4j2.configurationFile=${log4j}`;

  if (!existsSync(join(dataDir, 'meta.properties'))) {
    const clusterId = newClusterId();
    log(`formatting ${dataDir} (KRaft cluster id ${clusterId})`);
    await java(
      [
        '-Xmx256M',
        logConfig,
        ...classpath,
        'kafka.tools.StorageTool',
        'format',
        '--ignore-formatted',
        '-t',
        clusterId,
        '-c',
        props,
      ],
      join(logsDir, 'format.log'),
    );
  }

  const stdoutLog = join(logsDir, 'stdout.log');
  const args = [
    `-Xms${o.heap}`,
    `-Xmx${o.heap}`,
    '-XX:+UseG1GC',
    '-XX:MaxGCPauseMillis=20',
    '-XX:+ExitOnOutOfMemoryError',
    '-XX:+PerfDisableSharedMem',
    '-Djava.awt.headless=true',
    '-Djava.net.preferIPv4Stack=true',
    logConfig,
    `-Dkafka.logs.dir=${logsDir}`,
    `-Djava.io.tmpdir=${o.dir}`,
    ...classpath,
    'kafka.Kafka',
    props,
  ];
  const logStart = existsSync(logFile) ? (await readFile(logFile, 'utf8')).length : 0;
  const spawnedAt = Date.now();
  const child: ChildProcess = spawn(
    'bash',
    ['-c', SUPERVISOR, 'kafka-supervisor', stdoutLog, join(logsDir, 'broker.pid'), ...args],
    {
      stdio: ['pipe', 'ignore', 'ignore'],
      env: { ...process.env, MALLOC_ARENA_MAX: '2' },
    },
  );
  let exited = false;
  const exitPromise = new Promise<void>((resolve) => {
    child.on('exit', () => {
      exited = true;
      resolve();
    });
  });
  log(`starting Kafka ${o.version} on ${brokers} (heap ${o.heap}, log ${logFile})`);

  const ready = async (): Promise<boolean> => {
    if (!existsSync(logFile)) return false;
    const text = await readFile(logFile, 'utf8');
    return text.slice(logStart).includes(READY_LINE) && (await portAnswers(o.address, o.port));
  };
  try {
    for (;;) {
      if (exited)
        throw new Error(
          `Kafka exited during start-up; last lines:\n${await tail(logFile)}\n${await tail(stdoutLog)}`,
        );
      if (await ready()) break;
      if (Date.now() > deadline)
        throw new Error(`Kafka did not become ready on ${brokers} in time (log: ${logFile})`);
      await sleep(200);
    }
  } catch (err) {
    child.kill('SIGTERM');
    await exitPromise;
    throw err;
  }
  return {
    brokers,
    owned: true,
    startupMs: Date.now() - spawnedAt,
    resolveMs,
    pid: child.pid,
    logFile,
    stop: async () => {
      if (exited) return;
      child.kill('SIGTERM');
      await exitPromise;
    },
  };
}
