/**
 * `npm run cassandra:cluster -- [--nodes 3] [--heap 768M] [--fresh]`
 *
 * Runs an N-node local cluster on loopback aliases 127.0.0.1…N (same ports, one address each),
 * with evenly spaced single tokens and 127.0.0.1 as the seed, in the foreground until Ctrl-C.
 * Point the service or the tests at it with
 * `CASSANDRA_CONTACT_POINTS=127.0.0.1:9042,127.0.0.2:9042,127.0.0.3:9042 CASSANDRA_REPLICATION=simple:3`.
 * Nodes start one after another (a joining node must see the ring); stop order is the reverse.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type LocalNode, startLocalNode } from './node.js';
import { defaultHome, defaultNodeOptions } from './node-options.js';
import { whenOrphaned } from './orphan-watch.js';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '3' },
    heap: { type: 'string', default: '768M' },
    fresh: { type: 'boolean', default: false },
  },
});
const count = Number(values.nodes);
if (!Number.isInteger(count) || count < 1 || count > 9) {
  console.error('--nodes must be 1 to 9');
  process.exit(2);
}

/** Single tokens spread evenly over the Murmur3 ring. */
function tokens(n: number): string[] {
  const span = 2n ** 64n / BigInt(n);
  return Array.from({ length: n }, (_, i) => (-(2n ** 63n) + span * BigInt(i)).toString());
}

const log = (line: string) => console.log(`[cluster] ${line}`);
const started: LocalNode[] = [];
let stopping = false;
const stop = async (why: string) => {
  if (stopping) return;
  stopping = true;
  log(`${why}: stopping ${started.length} node(s)`);
  for (const node of [...started].reverse()) await node.stop();
  log('stopped');
  process.exit(0);
};
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));
whenOrphaned(() => void stop('parent exited'));

const ring = tokens(count);
for (let i = 0; i < count; i++) {
  const address = `127.0.0.${i + 1}`;
  const node = await startLocalNode(
    defaultNodeOptions({
      address,
      seeds: ['127.0.0.1:7000'],
      initialToken: ring[i] as string,
      clusterName: 'flocklist-cluster',
      heap: values.heap,
      nodeDir: join(defaultHome(), 'cluster', address),
    }),
    { fresh: values.fresh, log: (line) => log(`${address}: ${line}`) },
  );
  started.push(node);
  log(`${address} ready in ${(node.startupMs / 1000).toFixed(1)} s${node.owned ? '' : ' (reused)'}`);
}
log(
  `${count} nodes up — CASSANDRA_CONTACT_POINTS=${started.map((n) => `${n.address}:${n.nativePort}`).join(',')} ` +
    `CASSANDRA_REPLICATION=simple:${Math.min(3, count)}; Ctrl-C stops them`,
);
