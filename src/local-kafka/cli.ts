/**
 * `npm run kafka -- [--fresh] [--address 127.0.0.1] [--port 9092] [--controller-port 9093]
 *   [--heap 512M] [--partitions 8] [--dir PATH]`
 *
 * Runs one local KRaft broker in the foreground until Ctrl-C (or SIGTERM, or the parent's death),
 * then stops it cleanly.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { whenOrphaned } from '../local-cassandra/orphan-watch.js';
import { startLocalKafka } from './broker.js';
import { defaultKafkaOptions, type KafkaOptions } from './broker-config.js';

const { values } = parseArgs({
  options: {
    fresh: { type: 'boolean', default: false },
    address: { type: 'string' },
    port: { type: 'string' },
    'controller-port': { type: 'string' },
    heap: { type: 'string' },
    partitions: { type: 'string' },
    dir: { type: 'string' },
  },
});

const overrides: Partial<KafkaOptions> = {};
if (values.address) overrides.address = values.address;
if (values.port) overrides.port = Number(values.port);
if (values['controller-port']) overrides.controllerPort = Number(values['controller-port']);
if (values.heap) overrides.heap = values.heap;
if (values.partitions) overrides.partitions = Number(values.partitions);
if (values.dir) overrides.dir = resolve(values.dir);
const options = defaultKafkaOptions(overrides);
const log = (line: string) => console.log(`[kafka] ${line}`);

const broker = await startLocalKafka(options, { fresh: values.fresh, log });
if (!broker.owned) {
  log('a broker is already running there; nothing to do');
  process.exit(0);
}
log(
  `ready on ${broker.brokers} in ${(broker.startupMs / 1000).toFixed(1)} s` +
    (broker.resolveMs ? ` (jar resolution ${(broker.resolveMs / 1000).toFixed(1)} s)` : '') +
    ` — data in ${options.dir}, log ${broker.logFile}; Ctrl-C stops it`,
);

let stopping = false;
const stop = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  log(`${signal}: stopping`);
  await broker.stop();
  log('stopped');
  process.exit(0);
};
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));
whenOrphaned(() => void stop('parent exited'));
