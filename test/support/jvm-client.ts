/**
 * Client JVMs against a running Cassandra JVM: its JDK and classpath read from `/proc/<pid>`, its
 * JMX agent started on demand with `jcmd <pid> ManagementAgent.start` (the project's launcher
 * starts nodes without a JMX port), and short-lived client JVMs (nodetool, a source-file tool) on
 * that JDK and classpath, logging at WARN to stderr so stdout is the tool's output alone. Shared by
 * the benches' nodetool (the local node) and the cluster suite's (one node of three).
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { JVM17_TOOL_OPENS } from '../../src/local-cassandra/node.js';

/** A server JVM and the tools beside it. */
export interface JvmTools {
  pid: number;
  /** The JDK `bin/` the server runs from (java, jcmd, jfr). */
  bin: string;
  /** The server's classpath (Cassandra's `lib/*`). */
  classpath: string;
}

/** Where a JMX agent listens. */
export interface JmxAddress {
  host: string;
  port: number;
}

/**
 * The client JVM: short-lived, so the small collector and the quick compiler only (C1 alone:
 * ~0.75 s less CPU a call than with C2 warming up for a JVM that exits in seconds), with the JDK 17
 * module flags of Cassandra's `jvm17-clients.options`.
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

/** The JDK and classpath of the JVM `pid` (a Cassandra server: it must have a `-cp` and a JDK with jcmd). */
export function jvmOf(pid: number): JvmTools {
  const exe = readlinkSync(`/proc/${pid}/exe`);
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  const cp = argv.findIndex((a) => a === '-cp' || a === '-classpath');
  const classpath = cp >= 0 ? argv[cp + 1] : undefined;
  if (!classpath) throw new Error(`pid ${pid} (${exe}) has no -cp argument: not the Cassandra JVM?`);
  const bin = dirname(exe);
  if (!existsSync(join(bin, 'jcmd'))) throw new Error(`no jcmd beside ${exe}: the server runs on a JRE`);
  return { pid, bin, classpath };
}

/** `jcmd <pid> <args…>`; resolves its output. */
export function jcmdOn(t: JvmTools, args: string[], timeoutMs = 60_000): Promise<string> {
  return run(join(t.bin, 'jcmd'), [String(t.pid), ...args], timeoutMs);
}

/** Host and port of the JMX agent `ManagementAgent.status` reports as enabled, or null. */
function agentAddress(status: string): JmxAddress | null {
  if (!/Agent:\s*enabled/.test(status)) return null;
  const port = /jmxremote\.port\s*=\s*(\d+)/.exec(status)?.[1];
  const host = /jmxremote\.host\s*=\s*([^\s[]+)/.exec(status)?.[1];
  return port ? { host: host && host !== '0.0.0.0' ? host : '127.0.0.1', port: Number(port) } : null;
}

/**
 * The JVM's JMX agent: the one running (at its own port), or one started now on 127.0.0.1:`port`
 * (RMI registry and server on the one port, no auth, no SSL: local only).
 */
export async function startJmxAgent(t: JvmTools, port: number, timeoutMs = 60_000): Promise<JmxAddress> {
  const running = agentAddress(await jcmdOn(t, ['ManagementAgent.status'], timeoutMs));
  if (running) return running;
  const host = '127.0.0.1';
  const out = await jcmdOn(
    t,
    [
      'ManagementAgent.start',
      `jmxremote.host=${host}`,
      `jmxremote.port=${port}`,
      `jmxremote.rmi.port=${port}`,
      'jmxremote.authenticate=false',
      'jmxremote.ssl=false',
    ],
    timeoutMs,
  ).catch((e: unknown) => (e instanceof Error ? e.message : String(e)));
  // Another process may have started it between the status and the start.
  const now = agentAddress(await jcmdOn(t, ['ManagementAgent.status'], timeoutMs));
  if (!now)
    throw new Error(`could not start the JMX agent of pid ${t.pid} on ${host}:${port}: ${out.trim()}`);
  return now;
}

let logbackFile: string | undefined;

/**
 * A client JVM on the server's JDK and classpath (the quick-start flags, logging at WARN to
 * stderr): `main` is the class (or source file) and its arguments. Resolves its stdout.
 */
export async function clientJava(t: JvmTools, main: string[], timeoutMs = 600_000): Promise<string> {
  if (!logbackFile) {
    const file = join(tmpdir(), 'flocklist-nodetool-logback.xml');
    await writeFile(file, LOGBACK);
    logbackFile = file;
  }
  return run(
    join(t.bin, 'java'),
    [...CLIENT_JVM_FLAGS, `-Dlogback.configurationFile=${logbackFile}`, '-cp', t.classpath, ...main],
    timeoutMs,
  );
}

/** `nodetool <args…>` through the JMX agent at `jmx`, on the server's own `NodeTool`; its stdout. */
export function nodetoolAt(
  t: JvmTools,
  jmx: JmxAddress,
  args: string[],
  timeoutMs = 600_000,
): Promise<string> {
  return clientJava(
    t,
    ['org.apache.cassandra.tools.NodeTool', '-h', jmx.host, '-p', String(jmx.port), ...args],
    timeoutMs,
  );
}
