/**
 * `npm run cassandra:cluster -- [--nodes 3] [--base-address 127.0.0.1] [--heap 768M] [--fresh]
 *   [--commitlog periodic|batch|group] [--phi 8]`
 *
 * Runs an N-node local cluster on consecutive loopback addresses from `--base-address` (same
 * ports, one address each; the first node is the seed), in the foreground until Ctrl-C. Point
 * the service or the tests at it with the `CASSANDRA_CONTACT_POINTS` line it prints and
 * `CASSANDRA_REPLICATION=simple:3` (or `datacenter1:3`).
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { clusterAddresses, type LocalCluster, startLocalCluster } from './cluster.js';
import { defaultHome, type NodeOptions } from './node-options.js';
import { whenOrphaned } from './orphan-watch.js';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '3' },
    'base-address': { type: 'string', default: '127.0.0.1' },
    heap: { type: 'string', default: '768M' },
    fresh: { type: 'boolean', default: false },
    commitlog: { type: 'string', default: 'periodic' },
    phi: { type: 'string', default: '8' },
  },
});
const count = Number(values.nodes);
if (!Number.isInteger(count) || count < 1 || count > 9) {
  console.error('--nodes must be 1 to 9');
  process.exit(2);
}
if (!['periodic', 'batch', 'group'].includes(values.commitlog)) {
  console.error('--commitlog must be periodic, batch or group');
  process.exit(2);
}
const phi = Number(values.phi);
if (!(phi >= 5 && phi <= 16)) {
  console.error('--phi must be between 5 and 16');
  process.exit(2);
}

const log = (line: string) => console.log(`[cluster] ${line}`);
let cluster: LocalCluster | undefined;
let stopping = false;
const stop = async (why: string) => {
  if (stopping) return;
  stopping = true;
  log(`${why}: stopping`);
  await cluster?.stop();
  log('stopped');
  process.exit(0);
};
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));
whenOrphaned(() => void stop('parent exited'));

cluster = await startLocalCluster({
  addresses: clusterAddresses(values['base-address'], count),
  dir: join(defaultHome(), 'cluster'),
  heap: values.heap,
  fresh: values.fresh,
  node: { commitlogSync: values.commitlog as NodeOptions['commitlogSync'], phiConvictThreshold: phi },
  log,
});
log(
  `${count} nodes up — CASSANDRA_CONTACT_POINTS=${cluster.contactPoints.join(',')} ` +
    `CASSANDRA_REPLICATION=simple:${Math.min(3, count)}; Ctrl-C stops them`,
);
