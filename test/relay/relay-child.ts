/**
 * The relay as its own process, for the crash test and `bench:relay`: `jobs relay`'s code
 * (`relayWith`) with its cursor in the Cassandra store of a keyspace, on one of two feeds:
 * - `--feed cassandra`: the real feed over that keyspace's events (`src/graph/feed.ts`, the
 *   server's default bounds);
 * - `--feed generated`: the generated feed (`generated-feed.ts`), rebuilt here from the same
 *   `--count`/`--pairs`/`--seed` as the parent's.
 *
 *   node --import tsx test/relay/relay-child.ts --contact-points H:P --dc DC --keyspace K
 *     --feed cassandra|generated [--count N --pairs P --seed S] [--read-delay-ms MS]
 *     [--commit-delay-ms MS] -- <relay args>
 *
 * `--commit-delay-ms` holds each cursor write that long before it is sent: it widens the window
 * between the broker's acknowledgement and the commit, where a crash makes duplicates.
 * `--read-delay-ms` slows every generated-feed read that returns events.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import type { EventFeed } from '../../src/graph/contracts.js';
import { Feed } from '../../src/graph/feed.js';
import { DEFAULT_HISTORY_POLICY, feedLagMicros } from '../../src/graph/pair/pair-history.js';
import { relayWith } from '../../src/jobs/commands/relay.js';
import { parseRelayArgs } from '../../src/jobs/relay-args.js';
import { nowPosition } from '../../src/model/clock.js';
import { DEFAULT_EVENT_RETENTION_SECONDS } from '../../src/model/events.js';
import { createCqlClient } from '../../src/store/cassandra/client.js';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { generatedFeed, generateEvents } from './generated-feed.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    'contact-points': { type: 'string' },
    dc: { type: 'string', default: 'datacenter1' },
    keyspace: { type: 'string' },
    feed: { type: 'string', default: 'generated' },
    count: { type: 'string', default: '0' },
    pairs: { type: 'string', default: '1' },
    seed: { type: 'string', default: '1' },
    'read-delay-ms': { type: 'string', default: '0' },
    'commit-delay-ms': { type: 'string', default: '0' },
    'cursor-secret': { type: 'string' },
  },
});
const client = createCqlClient({
  contactPoints: (values['contact-points'] ?? '').split(','),
  localDataCenter: values.dc,
  keyspace: values.keyspace as string,
  consistency: 'localQuorum',
  requestTimeoutMs: 30_000,
});
const store = new CassandraGraphStore(client);
const feed: EventFeed =
  values.feed === 'cassandra'
    ? new Feed({
        store,
        clock: nowPosition,
        lagMicros: feedLagMicros(DEFAULT_HISTORY_POLICY),
        skewMicros: BigInt(DEFAULT_HISTORY_POLICY.clockSkewMs) * 1000n,
        ...(values['cursor-secret'] ? { cursorSecrets: [values['cursor-secret']] } : {}),
        retentionSeconds: DEFAULT_EVENT_RETENTION_SECONDS,
      })
    : generatedFeed(
        generateEvents({
          count: Number(values.count),
          pairs: Number(values.pairs),
          seed: Number(values.seed),
        }),
        { readDelayMs: Number(values['read-delay-ms']) },
      );
const commitDelayMs = Number(values['commit-delay-ms']);
try {
  await relayWith(parseRelayArgs(positionals), {
    feed,
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
