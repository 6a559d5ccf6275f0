/**
 * `nodetool` against one node of the suite's cluster. The launcher starts the nodes without a JMX
 * port, so the first call for a node starts its JVM's JMX agent (`jcmd <pid> ManagementAgent.start`,
 * the pid from the node's `jvm.pid`): on 127.0.0.1, no auth, no SSL, local only, at a port of the
 * node's own — 7200 plus the last octet of its address (7221 for 127.0.0.21) — so neither a
 * developer's node (whose agent the benches start at 7199) nor another node of the cluster can
 * answer in its place. nodetool is then
 * Cassandra's own `NodeTool` on the server's classpath and JDK (both read from `/proc/<pid>`),
 * logging at WARN to stderr so stdout is the command's output alone. A client JVM costs a few
 * seconds of CPU: callers keep to a handful of commands.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { JVM17_TOOL_OPENS } from '../../../src/local-cassandra/node.js';

/** The quick-start client JVM (C1 only, serial GC) with the module flags nodetool needs on JDK 17. */
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

function run(file: string, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) {
        const detail = (stderr.trim() || stdout.trim()).split('\n').slice(-15).join('\n');
        reject(new Error(`${file.split('/').pop()} ${args.join(' ')} failed: ${err.message}\n${detail}`));
      } else resolve(stdout);
    });
  });
}

/** Agents started, by JVM pid: a restarted node is a new JVM and gets one again. */
const agents = new Map<number, number>();

/** `nodetool <args…>` against the node at `address` whose directory is `nodeDir`; its stdout. */
export async function nodetool(
  nodeDir: string,
  address: string,
  args: string[],
  timeoutMs = 60_000,
): Promise<string> {
  const pid = Number((await readFile(join(nodeDir, 'jvm.pid'), 'utf8')).trim());
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no JVM pid in ${nodeDir}`);
  const exe = readlinkSync(`/proc/${pid}/exe`);
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  const cp = argv.findIndex((a) => a === '-cp' || a === '-classpath');
  const classpath = cp >= 0 ? argv[cp + 1] : undefined;
  if (!classpath) throw new Error(`pid ${pid} (${exe}) has no -cp argument: not the Cassandra JVM?`);
  const bin = dirname(exe);
  if (!existsSync(join(bin, 'jcmd'))) throw new Error(`no jcmd beside ${exe}: the server runs on a JRE`);
  let port = agents.get(pid);
  if (port === undefined) {
    const octet = Number(address.split('.')[3]);
    port = 7200 + octet;
    const status = await run(join(bin, 'jcmd'), [String(pid), 'ManagementAgent.status'], timeoutMs);
    if (!/Agent:\s*enabled/.test(status)) {
      await run(
        join(bin, 'jcmd'),
        [
          String(pid),
          'ManagementAgent.start',
          'jmxremote.host=127.0.0.1',
          `jmxremote.port=${port}`,
          `jmxremote.rmi.port=${port}`,
          'jmxremote.authenticate=false',
          'jmxremote.ssl=false',
        ],
        timeoutMs,
      );
    } else {
      const running = /jmxremote\.port\s*=\s*(\d+)/.exec(status)?.[1];
      if (!running) throw new Error(`pid ${pid}: JMX agent enabled without a port:\n${status}`);
      port = Number(running);
    }
    agents.set(pid, port);
  }
  const logback = join(tmpdir(), 'flocklist-cluster-nodetool-logback.xml');
  if (!existsSync(logback)) await writeFile(logback, LOGBACK);
  return run(
    join(bin, 'java'),
    [
      ...CLIENT_JVM_FLAGS,
      `-Dlogback.configurationFile=${logback}`,
      '-cp',
      classpath,
      'org.apache.cassandra.tools.NodeTool',
      '-h',
      '127.0.0.1',
      '-p',
      String(port),
      ...args,
    ],
    timeoutMs,
  );
}
