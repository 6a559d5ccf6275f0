/**
 * The relay as its own process, for the crash test: `jobs relay`'s code (`relayWith`) on the
 * generated feed (`generated-feed.ts`, rebuilt here from the same count/pairs/seed) and the
 * Cassandra cursor store of the test's keyspace.
 *
 *   node --import tsx test/relay/relay-child.ts --contact-points H:P --dc DC --keyspace K
 *     --count N --pairs P --seed S [--read-delay-ms MS] [--commit-delay-ms MS] -- <relay args>
 *
 * `--commit-delay-ms` holds each cursor write that long before it is sent: it widens the window
 * between the broker's acknowledgement and the commit, where a crash makes duplicates.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { relayWith } from '../../src/jobs/commands.js';
import { createCqlClient } from '../../src/store/cassandra/client.js';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { generatedFeed, generateEvents } from './generated-feed.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    'contact-points': { type: 'string' },
    dc: { type: 'string', default: 'datacenter1' },
    keyspace: { type: 'string' },
    count: { type: 'string' },
    pairs: { type: 'string' },
    seed: { type: 'string' },
    'read-delay-ms': { type: 'string', default: '0' },
    'commit-delay-ms': { type: 'string', default: '0' },
  },
});
const client = createCqlClient({
  contactPoints: (values['contact-points'] ?? '').split(','),
  localDataCenter: values.dc,
  keyspace: values.keyspace as string,
  consistency: 'localQuorum',
  requestTimeoutMs: 30_000,
});
const events = generateEvents({
  count: Number(values.count),
  pairs: Number(values.pairs),
  seed: Number(values.seed),
});
const store = new CassandraGraphStore(client);
const commitDelayMs = Number(values['commit-delay-ms']);
try {
  await relayWith(positionals, {
    feed: generatedFeed(events, { readDelayMs: Number(values['read-delay-ms']) }),
    cursors: {
      getRelayCursor: (name) => store.getRelayCursor(name),
      putRelayCursor: async (name, cursor) => {
        if (commitDelayMs) await sleep(commitDelayMs);
        await store.putRelayCursor(name, cursor);
      },
    },
  });
} finally {
  await client.shutdown();
}
