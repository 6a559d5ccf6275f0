/**
 * Starts and stops one real Cassandra node from the Maven jars.
 *
 * Design note — no orphan JVMs. Node.js cannot ask the kernel to kill a child when the parent
 * dies, so the JVM runs under a tiny bash supervisor that (1) forwards SIGTERM/SIGINT to the JVM,
 * (2) reads its own stdin, a pipe held open by this process, and treats EOF — our death, even by
 * SIGKILL — as a stop request, and (3) escalates to SIGKILL when the JVM has not exited within the
 * grace period. The JVM's output goes to a file, never to a pipe we might stop draining.
 *
 * Reuse: if something already answers on the node's CQL port, `startLocalNode` returns a handle
 * that does not own the node (stopping it is a no-op). Two callers racing to start the same node
 * are serialised by an exclusive lock file; the loser waits for the winner's port.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, open, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { resolveCassandraJars } from './maven.js';
import { type NodeDirs, renderCassandraYaml, renderLogback } from './node-config.js';
import { defaultNodeOptions, type NodeOptions } from './node-options.js';
import { portAnswers, supervisorScript } from './supervisor.js';

export interface LocalNode {
  address: string;
  nativePort: number;
  /** False when an already-running node was reused. */
  owned: boolean;
  /** Milliseconds from spawn to CQL ready (0 when reused). */
  startupMs: number;
  /** Jar resolution time when Maven ran in this start, else 0. */
  resolveMs: number;
  pid: number | undefined;
  /** Stops the JVM if this handle owns it; resolves once the process has exited. */
  stop(): Promise<void>;
  /**
   * Crashes the node: SIGKILL to the JVM (no drain, no flush; what the OS page cache holds
   * survives, as after any process crash). Resolves once it has exited. No-op unless owned.
   */
  kill(): Promise<void>;
  /** Freezes (SIGSTOP) or thaws (SIGCONT) the JVM: a node that is unreachable but not gone. */
  pause(): void;
  resume(): void;
}

export interface StartOptions {
  fresh?: boolean;
  timeoutMs?: number;
  log?: (line: string) => void;
}

const STOP_GRACE_SECONDS = 45;

const SUPERVISOR = supervisorScript(STOP_GRACE_SECONDS);

/** Modules opened on JDK 17 both to the server and to its JMX tools (`nodetool`, used by the benches). */
export const JVM17_TOOL_OPENS = [
  'java.base/java.lang.module',
  'java.base/jdk.internal.loader',
  'java.base/jdk.internal.ref',
  'java.base/jdk.internal.reflect',
  'java.base/jdk.internal.math',
  'java.base/jdk.internal.module',
  'java.base/jdk.internal.util.jar',
  'jdk.management/com.sun.management.internal',
] as const;

const JVM17_FLAGS = [
  '-Djdk.attach.allowAttachSelf=true',
  '--add-exports',
  'java.base/jdk.internal.misc=ALL-UNNAMED',
  '--add-exports',
  'java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED',
  '--add-exports',
  'java.management/com.sun.jmx.remote.security=ALL-UNNAMED',
  '--add-exports',
  'java.rmi/sun.rmi.registry=ALL-UNNAMED',
  '--add-exports',
  'java.rmi/sun.rmi.server=ALL-UNNAMED',
  '--add-exports',
  'java.sql/java.sql=ALL-UNNAMED',
  '--add-exports',
  'java.base/java.lang.ref=ALL-UNNAMED',
  '--add-exports',
  'jdk.unsupported/sun.misc=ALL-UNNAMED',
  '--add-exports',
  'jdk.attach/sun.tools.attach=ALL-UNNAMED',
  '--add-exports',
  'jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED',
  '--add-opens',
  'jdk.compiler/com.sun.tools.javac=ALL-UNNAMED',
  ...[
    ...JVM17_TOOL_OPENS,
    'java.base/sun.nio.ch',
    'java.base/java.io',
    'java.base/java.lang.reflect',
    'java.base/java.lang',
    'java.base/java.util',
    'java.base/java.nio',
  ].flatMap((m) => ['--add-opens', `${m}=ALL-UNNAMED`]),
  '-Dio.netty.tryReflectionSetAccessible=true',
  '-Dio.netty.allocator.useCacheForAllThreads=true',
  '-Dio.netty.allocator.maxOrder=11',
];

function nodeDirs(root: string): NodeDirs {
  return {
    root,
    data: join(root, 'data'),
    commitlog: join(root, 'commitlog'),
    savedCaches: join(root, 'saved_caches'),
    hints: join(root, 'hints'),
    logs: join(root, 'logs'),
    conf: join(root, 'conf'),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitForPort(o: NodeOptions, deadline: number, alive: () => boolean, logFile: string) {
  while (Date.now() < deadline) {
    if (!alive()) {
      const tail = existsSync(logFile)
        ? (await readFile(logFile, 'utf8')).split('\n').slice(-30).join('\n')
        : '';
      throw new Error(`Cassandra exited during start-up; last log lines:\n${tail}`);
    }
    if (await portAnswers(o.address, o.nativePort)) return;
    await sleep(250);
  }
  throw new Error(`Cassandra did not answer on ${o.address}:${o.nativePort} in time (log: ${logFile})`);
}

function reused(o: NodeOptions): LocalNode {
  return {
    address: o.address,
    nativePort: o.nativePort,
    owned: false,
    startupMs: 0,
    resolveMs: 0,
    pid: undefined,
    stop: async () => {},
    kill: async () => {},
    pause: () => {},
    resume: () => {},
  };
}

/** Starts the node described by `o`, or reuses one already answering on its CQL port. */
export async function startLocalNode(o: NodeOptions, opts: StartOptions = {}): Promise<LocalNode> {
  const log = opts.log ?? (() => {});
  const timeoutMs = opts.timeoutMs ?? 180_000;
  const deadline = Date.now() + timeoutMs;
  if (!opts.fresh && (await portAnswers(o.address, o.nativePort))) {
    log(`reusing the Cassandra node already answering on ${o.address}:${o.nativePort}`);
    return reused(o);
  }

  const dirs = nodeDirs(o.nodeDir);
  await mkdir(o.nodeDir, { recursive: true });
  const lockPath = join(o.nodeDir, 'start.lock');
  const lock = await open(lockPath, 'wx').catch(async () => {
    const holder = Number.parseInt(await readFile(lockPath, 'utf8').catch(() => ''), 10);
    if (Number.isFinite(holder) && pidAlive(holder)) return undefined;
    await rm(lockPath, { force: true });
    return open(lockPath, 'wx');
  });
  if (!lock) {
    log(`another process is starting this node; waiting for ${o.address}:${o.nativePort}`);
    await waitForPort(o, deadline, () => true, join(dirs.logs, 'system.log'));
    return reused(o);
  }
  await lock.writeFile(String(process.pid));
  await lock.close();

  try {
    const t0 = Date.now();
    const jars = await resolveCassandraJars({ version: o.version, cacheDir: o.cacheDir, log });
    const resolveMs = jars.resolvedNow ? Date.now() - t0 : 0;

    if (opts.fresh) {
      for (const d of [dirs.data, dirs.commitlog, dirs.savedCaches, dirs.hints])
        await rm(d, { recursive: true, force: true });
    }
    for (const d of Object.values(dirs)) await mkdir(d, { recursive: true });
    const yamlPath = join(dirs.conf, 'cassandra.yaml');
    const logbackPath = join(dirs.conf, 'logback.xml');
    const systemLog = join(dirs.logs, 'system.log');
    await writeFile(yamlPath, renderCassandraYaml(o, dirs));
    await writeFile(logbackPath, renderLogback(systemLog));

    const args = [
      '-ea',
      '-da:net.openhft...',
      `-Xms${o.heap}`,
      `-Xmx${o.heap}`,
      '-Xss256k',
      '-XX:+UseG1GC',
      '-XX:+ParallelRefProcEnabled',
      '-XX:MaxTenuringThreshold=1',
      '-XX:+ExitOnOutOfMemoryError',
      '-XX:+PerfDisableSharedMem',
      '-XX:+UseThreadPriorities',
      ...JVM17_FLAGS,
      `-javaagent:${jars.jammJar}`,
      '-Djava.net.preferIPv4Stack=true',
      '-Dchronicle.analytics.disable=true',
      '-Dcassandra-foreground=yes',
      `-Dcassandra.config=file://${yamlPath}`,
      `-Dcassandra.storagedir=${o.nodeDir}`,
      `-Dcassandra.logdir=${dirs.logs}`,
      `-Dlogback.configurationFile=${logbackPath}`,
      '-Dcassandra.skip_wait_for_gossip_to_settle=0',
      `-Dcassandra.ring_delay_ms=${o.ringDelayMs}`,
      ...(o.flushSchemaChanges ? [] : ['-Dcassandra.test.flush_local_schema_changes=false']),
      `-Djava.io.tmpdir=${o.nodeDir}`,
      `-Djna.tmpdir=${o.nodeDir}`,
      '-cp',
      `${jars.libDir}/*`,
      'org.apache.cassandra.service.CassandraDaemon',
    ];
    const jvmPidFile = join(o.nodeDir, 'jvm.pid');
    await rm(jvmPidFile, { force: true });
    const spawnedAt = Date.now();
    const child: ChildProcess = spawn(
      'bash',
      ['-c', SUPERVISOR, 'cassandra-supervisor', join(dirs.logs, 'stdout.log'), jvmPidFile, ...args],
      {
        stdio: ['pipe', 'ignore', 'ignore'],
        env: { ...process.env, MALLOC_ARENA_MAX: '4' },
      },
    );
    let exited = false;
    const exitPromise = new Promise<void>((resolve) => {
      child.on('exit', () => {
        exited = true;
        resolve();
      });
    });
    await writeFile(join(o.nodeDir, 'supervisor.pid'), String(child.pid));
    log(`starting Cassandra ${o.version} on ${o.address}:${o.nativePort} (heap ${o.heap}, log ${systemLog})`);
    try {
      await waitForPort(o, deadline, () => !exited, join(dirs.logs, 'stdout.log'));
    } catch (err) {
      child.kill('SIGTERM');
      await exitPromise;
      throw err;
    }
    const startupMs = Date.now() - spawnedAt;
    const jvmPid = Number.parseInt(await readFile(jvmPidFile, 'utf8'), 10);
    let paused = false;
    const signalJvm = (signal: NodeJS.Signals) => {
      if (exited) return;
      try {
        process.kill(jvmPid, signal);
      } catch {
        // already gone: the supervisor's exit resolves the waiters
      }
    };
    const cleanUp = () =>
      Promise.all([jvmPidFile, join(o.nodeDir, 'supervisor.pid')].map((f) => rm(f, { force: true })));
    return {
      address: o.address,
      nativePort: o.nativePort,
      owned: true,
      startupMs,
      resolveMs,
      pid: child.pid,
      stop: async () => {
        if (exited) return;
        if (paused) signalJvm('SIGCONT');
        child.kill('SIGTERM');
        await exitPromise;
        await cleanUp();
      },
      kill: async () => {
        signalJvm('SIGKILL');
        await exitPromise;
        await cleanUp();
      },
      pause: () => {
        signalJvm('SIGSTOP');
        paused = true;
      },
      resume: () => {
        signalJvm('SIGCONT');
        paused = false;
      },
    };
  } finally {
    await rm(lockPath, { force: true });
  }
}

/**
 * The configured contact points, or — when none are configured — those of the local node,
 * started (or reused) with `heap`. `node` is set only in the second case; the caller stops it.
 */
export async function contactPointsOrLocalNode(
  configured: string[] | undefined,
  heap: string,
  log?: (line: string) => void,
): Promise<{ contactPoints: string[]; node: LocalNode | undefined }> {
  if (configured) return { contactPoints: configured, node: undefined };
  const node = await startLocalNode(defaultNodeOptions({ heap }), log ? { log } : {});
  return { contactPoints: [`${node.address}:${node.nativePort}`], node };
}
