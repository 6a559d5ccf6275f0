/**
 * `nodetool` and `jcmd` against the local Cassandra node the benches talk to, which runs without a
 * JMX port (`npm run cassandra` passes no `-Dcassandra.jmx.*`). The first call attaches to the
 * server JVM (`serverPid()`) with `jcmd <pid> ManagementAgent.start`, which opens the platform
 * MBean server, where Cassandra has registered its MBeans anyway, on 127.0.0.1:7199 (RMI registry
 * and server on the one port, no auth, no SSL; local only); an agent already started is reused at
 * its port. nodetool is then Cassandra's own `org.apache.cassandra.tools.NodeTool` run from the
 * server's classpath with the JDK the server runs on (both read from `/proc/<pid>`), the JDK 17
 * module flags of Cassandra's `jvm17-clients.options`, and logging at WARN to stderr so stdout is
 * the command's output alone.
 *
 *   const out = await nodetool(['tablestats', '-F', 'json', 'my_keyspace']);
 *
 * `CASSANDRA_PID` (read by `serverPid`) and `CASSANDRA_JMX_PORT` override the defaults.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readlinkSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { JVM17_TOOL_OPENS } from '../../src/local-cassandra/node.js';
import { serverPid } from './harness.js';

/** The server JVM and the tools beside it. */
export interface JvmTools {
  pid: number;
  /** The JDK `bin/` the server runs from (java, jcmd, jfr). */
  bin: string;
  /** The server's classpath (Cassandra's `lib/*`). */
  classpath: string;
}

/**
 * The nodetool client's JVM: short-lived, so the small collector and the quick compiler only
 * (C1 alone: ~0.75 s less CPU a call than with C2 warming up for a JVM that exits in seconds).
 */
const CLIENT_JVM_FLAGS = [
  '-XX:+UseSerialGC',
  '-XX:TieredStopAtLevel=1',
  '-Xmx256m',
  ...[
    'java.base/jdk.internal.ref',
    'java.base/sun.nio.ch',
    'java.management.rmi/com.sun.jmx.remote.internal.rmi',
    'java.rmi/sun.rmi.registry',
    'java.rmi/sun.rmi.server',
    'java.sql/java.sql',
  ].flatMap((m) => ['--add-exports', `${m}=ALL-UNNAMED`]),
  ...JVM17_TOOL_OPENS.flatMap((m) => ['--add-opens', `${m}=ALL-UNNAMED`]),
];

const LOGBACK = `<configuration>
  <appender name="ERR" class="ch.qos.logback.core.ConsoleAppender">
    <target>System.err</target>
    <encoder><pattern>%level %logger{0} %msg%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="ERR"/></root>
</configuration>
`;

/** Runs a command; resolves stdout, rejects with stderr (or stdout) in the message. */
export function run(file: string, args: string[], timeoutMs = 600_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { maxBuffer: 256 * 1024 * 1024, timeout: timeoutMs }, (err, stdout, stderr) => {
      if (err) {
        const detail = (stderr.trim() || stdout.trim()).split('\n').slice(-15).join('\n');
        reject(new Error(`${file.split('/').pop()} ${args.join(' ')} failed: ${err.message}\n${detail}`));
      } else resolve(stdout);
    });
  });
}

let tools: JvmTools | undefined;

/** The pid, JDK bin directory and classpath of the server JVM on the first contact point. */
export function jvmTools(): JvmTools {
  if (tools) return tools;
  // serverPid() gives up on a process whose fd closes while it reads them (a busy JVM): retry.
  let pid = serverPid();
  for (let k = 0; k < 10 && pid === null; k++) pid = serverPid();
  if (pid === null)
    throw new Error('no local process listens on the first contact point (set CASSANDRA_PID to the JVM)');
  const exe = readlinkSync(`/proc/${pid}/exe`);
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  const cp = argv.findIndex((a) => a === '-cp' || a === '-classpath');
  const classpath = cp >= 0 ? argv[cp + 1] : undefined;
  if (!classpath) throw new Error(`pid ${pid} (${exe}) has no -cp argument: not the Cassandra JVM?`);
  const bin = dirname(exe);
  if (!existsSync(join(bin, 'jcmd'))) throw new Error(`no jcmd beside ${exe}: the server runs on a JRE`);
  tools = { pid, bin, classpath };
  return tools;
}

/** `jcmd <server pid> <args…>`; resolves its output. */
export function jcmd(args: string[], timeoutMs = 60_000): Promise<string> {
  const t = jvmTools();
  return run(join(t.bin, 'jcmd'), [String(t.pid), ...args], timeoutMs);
}

/**
 * Starts a Java Flight Recorder recording (`settings=profile`) of the server into `file` (its
 * directory made), for `durationS` at most when given; resolves its stop, which writes the file
 * and prints the `bench:jvm-profile` command, or null (said why) when the JVM cannot record.
 */
export async function startJfr(file: string, durationS?: number): Promise<(() => Promise<void>) | null> {
  const name = `bench-${process.pid}-${Date.now()}`;
  mkdirSync(dirname(file), { recursive: true });
  try {
    await jcmd([
      'JFR.start',
      `name=${name}`,
      'settings=profile',
      ...(durationS === undefined ? [] : [`duration=${durationS}s`]),
      `filename=${file}`,
    ]);
  } catch (e) {
    console.log(`no JVM recording: ${String(e).split('\n')[0]}`);
    return null;
  }
  return async () => {
    await jcmd(['JFR.stop', `name=${name}`]).catch(() => undefined);
    console.log(`JVM recording ${file}: npm run bench:jvm-profile -- ${file}`);
  };
}

/** Host and port of the JMX agent `ManagementAgent.status` reports as enabled, or null. */
function agentAddress(status: string): { host: string; port: number } | null {
  if (!/Agent:\s*enabled/.test(status)) return null;
  const port = /jmxremote\.port\s*=\s*(\d+)/.exec(status)?.[1];
  const host = /jmxremote\.host\s*=\s*([^\s[]+)/.exec(status)?.[1];
  return port ? { host: host && host !== '0.0.0.0' ? host : '127.0.0.1', port: Number(port) } : null;
}

let jmx: Promise<{ host: string; port: number }> | undefined;

/** Starts the server's JMX agent on 127.0.0.1 once (or finds the one running); its host and port. */
export function ensureJmx(): Promise<{ host: string; port: number }> {
  jmx ??= (async () => {
    const running = agentAddress(await jcmd(['ManagementAgent.status']));
    if (running) return running;
    const host = '127.0.0.1';
    const port = Number(process.env.CASSANDRA_JMX_PORT ?? 7199);
    const out = await jcmd([
      'ManagementAgent.start',
      `jmxremote.host=${host}`,
      `jmxremote.port=${port}`,
      `jmxremote.rmi.port=${port}`,
      'jmxremote.authenticate=false',
      'jmxremote.ssl=false',
    ]).catch((e: unknown) => (e instanceof Error ? e.message : String(e)));
    // Another process may have started it between the status and the start.
    const now = agentAddress(await jcmd(['ManagementAgent.status']));
    if (!now) throw new Error(`could not start the JMX agent on ${host}:${port}: ${out.trim()}`);
    return now;
  })();
  jmx.catch(() => {
    jmx = undefined;
  });
  return jmx;
}

let logbackFile: string | undefined;

/**
 * Several nodetool commands in one client JVM (`NodeToolBatch.java`, Java's source-file mode):
 * each command's stdout and exit code, in order. A JVM start is seconds of CPU on a busy machine;
 * eleven of them were most of the partitions bench's smoke.
 */
export async function nodetoolBatch(
  commands: readonly (readonly string[])[],
  timeoutMs = 600_000,
): Promise<{ out: string; code: number }[]> {
  const stdout = await clientJava(
    (host, port) => [
      join(dirname(new URL(import.meta.url).pathname), 'NodeToolBatch.java'),
      host,
      String(port),
      ...commands.flatMap((c) => [...c, '--']),
    ],
    timeoutMs,
  );
  const results: { out: string; code: number }[] = [];
  let out: string[] = [];
  for (const line of stdout.split('\n')) {
    const m = /^@@nodetool-exit (-?\d+)$/.exec(line);
    if (!m) {
      out.push(line);
      continue;
    }
    results.push({ out: out.join('\n'), code: Number(m[1]) });
    out = [];
  }
  if (results.length !== commands.length) {
    throw new Error(`nodetool batch: ${results.length} of ${commands.length} commands reported\n${stdout}`);
  }
  return results;
}

/** `nodetool <args…>` against the local node; resolves its stdout. */
export async function nodetool(args: string[], timeoutMs = 600_000): Promise<string> {
  return clientJava(
    (host, port) => ['org.apache.cassandra.tools.NodeTool', '-h', host, '-p', String(port), ...args],
    timeoutMs,
  );
}

/**
 * A client JVM on the server's JDK and classpath (the quick-start flags, logging at WARN to
 * stderr), started once the JMX agent runs: `main` gives the class (or source file) and its
 * arguments for the agent's host and port. Resolves its stdout.
 */
async function clientJava(
  main: (host: string, port: number) => string[],
  timeoutMs: number,
): Promise<string> {
  const { host, port } = await ensureJmx();
  const t = jvmTools();
  if (!logbackFile) {
    logbackFile = join(tmpdir(), 'flocklist-nodetool-logback.xml');
    await writeFile(logbackFile, LOGBACK);
  }
  return run(
    join(t.bin, 'java'),
    [
      ...CLIENT_JVM_FLAGS,
      `-Dlogback.configurationFile=${logbackFile}`,
      '-cp',
      t.classpath,
      ...main(host, port),
    ],
    timeoutMs,
  );
}
