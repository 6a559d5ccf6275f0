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
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  clientJava,
  type JmxAddress,
  type JvmTools,
  jcmdOn,
  jvmOf,
  nodetoolAt,
  run,
  startJmxAgent,
} from '../../test/support/jvm-client.js';
import { serverPid } from './harness.js';

export { type JvmTools, run };

let tools: JvmTools | undefined;

/** The pid, JDK bin directory and classpath of the server JVM on the first contact point. */
export function jvmTools(): JvmTools {
  if (tools) return tools;
  // serverPid() gives up on a process whose fd closes while it reads them (a busy JVM): retry.
  let pid = serverPid();
  for (let k = 0; k < 10 && pid === null; k++) pid = serverPid();
  if (pid === null)
    throw new Error('no local process listens on the first contact point (set CASSANDRA_PID to the JVM)');
  tools = jvmOf(pid);
  return tools;
}

/** `jcmd <server pid> <args…>`; resolves its output. */
export function jcmd(args: string[], timeoutMs = 60_000): Promise<string> {
  return jcmdOn(jvmTools(), args, timeoutMs);
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

let jmx: Promise<JmxAddress> | undefined;

/** Starts the server's JMX agent on 127.0.0.1 once (or finds the one running); its host and port. */
export function ensureJmx(): Promise<JmxAddress> {
  jmx ??= startJmxAgent(jvmTools(), Number(process.env.CASSANDRA_JMX_PORT ?? 7199));
  jmx.catch(() => {
    jmx = undefined;
  });
  return jmx;
}

/**
 * Several nodetool commands in one client JVM (`NodeToolBatch.java`, Java's source-file mode):
 * each command's stdout and exit code, in order. A JVM start is seconds of CPU on a busy machine;
 * eleven of them were most of the partitions bench's smoke.
 */
export async function nodetoolBatch(
  commands: readonly (readonly string[])[],
  timeoutMs = 600_000,
): Promise<{ out: string; code: number }[]> {
  const { host, port } = await ensureJmx();
  const stdout = await clientJava(
    jvmTools(),
    [
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
  return nodetoolAt(jvmTools(), await ensureJmx(), args, timeoutMs);
}
