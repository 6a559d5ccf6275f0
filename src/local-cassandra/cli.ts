/**
 * `npm run cassandra -- [--fresh] [--address 127.0.0.1] [--native-port 9042] [--storage-port 7000]
 *   [--seeds 127.0.0.1:7000] [--token 0] [--heap 1G] [--commitlog periodic|batch|group] [--dir PATH]
 *   [--unflushed-schema]`
 *
 * Runs one local node in the foreground until Ctrl-C (or SIGTERM), then stops it cleanly.
 * `--unflushed-schema` is for a throwaway test node (CI's): schema changes stay in memory until a
 * flush or a clean stop, several times faster, lost to a `kill -9` (`NodeOptions.flushSchemaChanges`).
 */
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startLocalNode } from './node.js';
import { defaultNodeOptions, type NodeOptions } from './node-options.js';
import { whenOrphaned } from './orphan-watch.js';

const { values } = parseArgs({
  options: {
    fresh: { type: 'boolean', default: false },
    address: { type: 'string' },
    'native-port': { type: 'string' },
    'storage-port': { type: 'string' },
    seeds: { type: 'string' },
    token: { type: 'string' },
    heap: { type: 'string' },
    commitlog: { type: 'string' },
    dir: { type: 'string' },
    'unflushed-schema': { type: 'boolean', default: false },
  },
});

const overrides: Partial<NodeOptions> = {};
if (values.address) overrides.address = values.address;
if (values['native-port']) overrides.nativePort = Number(values['native-port']);
if (values['storage-port']) overrides.storagePort = Number(values['storage-port']);
if (values.seeds) overrides.seeds = values.seeds.split(',');
if (values.token) overrides.initialToken = values.token;
if (values.heap) overrides.heap = values.heap;
if (values['unflushed-schema']) overrides.flushSchemaChanges = false;
// Absolute: Cassandra reads its yaml as a file: URL, which a relative path breaks.
if (values.dir) overrides.nodeDir = resolve(values.dir);
if (values.commitlog) {
  if (!['periodic', 'batch', 'group'].includes(values.commitlog)) {
    console.error('--commitlog must be periodic, batch or group');
    process.exit(2);
  }
  overrides.commitlogSync = values.commitlog as NodeOptions['commitlogSync'];
}
const options = defaultNodeOptions(overrides);
const log = (line: string) => console.log(`[cassandra] ${line}`);

const node = await startLocalNode(options, { fresh: values.fresh, log });
if (!node.owned) {
  log('a node is already running there; nothing to do');
  process.exit(0);
}
const rss = await readFile(`/proc/${node.pid}/status`, 'utf8').catch(() => '');
log(
  `ready on ${node.address}:${node.nativePort} in ${(node.startupMs / 1000).toFixed(1)} s` +
    (node.resolveMs ? ` (jar resolution ${(node.resolveMs / 1000).toFixed(1)} s)` : '') +
    ` — data in ${options.nodeDir}; Ctrl-C stops it`,
);
if (rss) log(`logs: ${join(options.nodeDir, 'logs', 'system.log')}`);

let stopping = false;
const stop = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  log(`${signal}: stopping`);
  await node.stop();
  log('stopped');
  process.exit(0);
};
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));
whenOrphaned(() => void stop('parent exited'));
