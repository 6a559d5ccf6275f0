/**
 * `nodetool` against one node of the suite's cluster (`test/support/jvm-client.ts` does the work).
 * The launcher starts the nodes without a JMX port, so the first call for a node starts its JVM's
 * JMX agent (the pid from the node's `jvm.pid`) at a port of the node's own — 7200 plus the last
 * octet of its address (7221 for 127.0.0.21) — so neither a developer's node (whose agent the
 * benches start at 7199) nor another node of the cluster can answer in its place. A client JVM
 * costs a few seconds of CPU: callers keep to a handful of commands.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type JmxAddress, jvmOf, nodetoolAt, startJmxAgent } from '../../support/jvm-client.js';

/** Agents started, by JVM pid: a restarted node is a new JVM and gets one again. */
const agents = new Map<number, JmxAddress>();

/** `nodetool <args…>` against the node at `address` whose directory is `nodeDir`; its stdout. */
export async function nodetool(
  nodeDir: string,
  address: string,
  args: string[],
  timeoutMs = 60_000,
): Promise<string> {
  const pid = Number((await readFile(join(nodeDir, 'jvm.pid'), 'utf8')).trim());
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no JVM pid in ${nodeDir}`);
  const jvm = jvmOf(pid);
  let jmx = agents.get(pid);
  if (jmx === undefined) {
    jmx = await startJmxAgent(jvm, 7200 + Number(address.split('.')[3]), timeoutMs);
    agents.set(pid, jmx);
  }
  return nodetoolAt(jvm, jmx, args, timeoutMs);
}
