/**
 * F4: waiting feed reads through the API. The app is served on loopback over a fresh keyspace
 * (`support/app-server.ts`), the feed idle, and clients wait on it over HTTP:
 *
 *   one        1 long-poll (`GET /v1/events?wait=30`);
 *   mixed      `--long-polls` long-polls and `--streams` SSE streams (`GET /v1/events/stream`),
 *              200 and 200 by default;
 *   over-cap   `--over` × the instance's cap (`--cap`, 500) long-polls at once. The service's
 *              default cap (`GRAPH_FEED_MAX_WAITERS`) is 1,000, but 10 × 1,000 requests with both
 *              ends in this process need 20,000 sockets, this machine's whole descriptor limit.
 *
 * First the feed is read to its watermark, its lag waited out and read again (a shared keyspace's
 * earlier events settle meanwhile), so the feed is idle. Each arm opens its waiters, waits until
 * the cap's worth wait and the rest were refused, lets them settle (2 s), then counts for `--seconds` the feed reads
 * the store sends (its `listEventPeriods` and `readEvents` statements: on an idle feed one read is
 * one `listEventPeriods`) — the database polls per second — and, for over-cap, the statuses the requests got. Target: the polls per second
 * independent of the waiters (mixed ÷ one ≤ 1.5: one watcher polls for all of them; before it,
 * every waiter polled on its own every 200 ms, 2,000/s for 400 waiters); beyond the cap a 503 with
 * `Retry-After`, the cap's worth held. Every waiter is then aborted.
 *
 *   npm run bench:feed-waiters -- [--long-polls 200] [--streams 200] [--cap 500] [--over 10] [--seconds 10]
 */
import { Registry } from 'prom-client';
import { GraphService } from '../src/graph/graph-service.js';
import { DEFAULT_HISTORY_POLICY, feedLagMicros } from '../src/graph/pair/pair-history.js';
import { createHttpMetrics } from '../src/http/metrics.js';
import { BucketedListService } from '../src/lists/list-service.js';
import { CassandraGraphStore } from '../src/store/cassandra/graph-store.js';
import { serveApp } from './support/app-server.js';
import { barChartSvg } from './support/charts.js';
import { feedWatermark } from './support/feed-client.js';
import { markdownTable, openBench } from './support/harness.js';

const bench = openBench({
  usage:
    'npm run bench:feed-waiters -- [--long-polls 200] [--streams 200] [--cap 500] [--over 10] [--seconds 10]',
  options: {
    'long-polls': { type: 'string', default: '200' },
    streams: { type: 'string', default: '200' },
    cap: { type: 'string', default: '500' },
    over: { type: 'string', default: '10' },
    seconds: { type: 'string', default: '10' },
  },
});
const LONG_POLLS = Number(bench.args['long-polls']);
const STREAMS = Number(bench.args.streams);
const CAP = Number(bench.args.cap);
const OVER = Number(bench.args.over);
const SECONDS = Number(bench.args.seconds);

/** The statements a feed read sends: the index of minutes that hold rows, then each shard's rows. */
const FEED_STATEMENTS = new Set(['listEventPeriods', 'readEvents']);
const { client } = await bench.throwawayKeyspace('bench_feed_waiters');
let feedReads = 0;
const registry = new Registry();
const metrics = createHttpMetrics(registry);
const store = new CassandraGraphStore(client, {
  onQuery: (name, seconds, ok) => {
    if (FEED_STATEMENTS.has(name)) feedReads++;
    metrics.recorder.observeQuery(name, seconds, ok);
  },
});
const lists = new BucketedListService({
  store,
  cursorSecret: 'bench-feed-waiters-cursor-secret',
  bucketThresholds: [250_000],
});
const graph = new GraphService({ store, lists, maxFollowing: 7500, feedMaxWaiters: CAP });
const app = await serveApp({ graph, receipts: store, ready: async () => true, registry, metrics });
const auth = { Authorization: `Bearer ${app.token(1n, true)}` };
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

const watermark = (after: string | null) => feedWatermark(app.url, auth, after);
// The feed must be idle for the count to be the waiters' polls alone: on a shared keyspace (the
// smoke's) earlier benches' events are still settling, so read to the watermark, wait out the
// feed's lag, and read to the watermark again. Every waiter waits after that cursor.
const LAG_MS = Number(feedLagMicros(DEFAULT_HISTORY_POLICY) / 1000n);
const first = await watermark(null);
bench.progress(`waiting ${LAG_MS + 1000} ms for the feed to settle`);
await wait(LAG_MS + 1000);
const start = await watermark(first);

interface Arm {
  arm: string;
  waiters: number;
  pollsPerSecond: number;
  statuses: Record<string, number>;
}

async function arm(name: string, longPolls: number, streams: number): Promise<Arm> {
  const ac = new AbortController();
  const statuses: Record<string, number> = {};
  const count = (s: string) => {
    statuses[s] = (statuses[s] ?? 0) + 1;
  };
  const q = `after=${encodeURIComponent(start)}`;
  const pending: Promise<void>[] = [];
  for (let i = 0; i < longPolls; i++)
    pending.push(
      fetch(`${app.url}/v1/events?${q}&wait=30`, { headers: auth, signal: ac.signal })
        .then(async (r) => {
          count(`${r.status}${r.headers.get('retry-after') ? ' retry-after' : ''}`);
          await r.arrayBuffer();
        })
        .catch((e: Error) => count(e.name === 'AbortError' ? 'held' : `error ${e.name}`)),
    );
  for (let i = 0; i < streams; i++)
    pending.push(
      fetch(`${app.url}/v1/events/stream?${q}`, { headers: auth, signal: ac.signal })
        .then(async (r) => {
          count(`stream ${r.status}`);
          const reader = (r.body as ReadableStream<Uint8Array>).getReader();
          for (;;) if ((await reader.read()).done) break;
        })
        .catch((e: Error) => count(e.name === 'AbortError' ? 'stream held' : `stream error ${e.name}`)),
    );
  // Counting starts once every waiter the cap admits waits and every one beyond it was answered
  // (15 s at most: a long-poll waits 30 s), then 2 s more for their first reads: on a busy machine
  // opening 400 streams outlasts a fixed settle, and their first reads were counted as polls.
  const admitted = Math.min(longPolls + streams, CAP);
  const refused = longPolls + streams - admitted;
  const answered = () => Object.entries(statuses).reduce((n, [s, k]) => n + (s.startsWith('503') ? k : 0), 0);
  for (let i = 0; i < 150 && (graph.feed.waitingReads() < admitted || answered() < refused); i++)
    await wait(100);
  await wait(2000);
  const before = feedReads;
  const t0 = performance.now();
  bench.progress(`${name}: ${longPolls} long-polls, ${streams} streams; counting for ${SECONDS} s`);
  await wait(SECONDS * 1000);
  const pollsPerSecond = ((feedReads - before) * 1000) / (performance.now() - t0);
  ac.abort();
  await Promise.all(pending);
  // The server lets a waiter go when it sees its client gone, which can come after the client's
  // abort: the next arm starts only once every slot is free (an over-cap arm once counted 9 held
  // for a cap of 10, one slot still taken by an aborted stream of the arm before it).
  for (let i = 0; graph.feed.waitingReads() > 0; i++) {
    if (i === 100)
      throw new Error(`${graph.feed.waitingReads()} feed reads still waiting 10 s after their clients left`);
    await wait(100);
  }
  const result = {
    arm: name,
    waiters: longPolls + streams,
    pollsPerSecond: +pollsPerSecond.toFixed(2),
    statuses,
  };
  console.log(JSON.stringify(result));
  return result;
}

const arms = [
  await arm('one', 1, 0),
  await arm('mixed', LONG_POLLS, STREAMS),
  await arm('over-cap', CAP * OVER, 0),
];
const [one, mixed, over] = arms as [Arm, Arm, Arm];
const ratio = +(mixed.pollsPerSecond / Math.max(one.pollsPerSecond, 1e-9)).toFixed(2);
const held = over.statuses.held ?? 0;
const refused = over.statuses['503 retry-after'] ?? 0;
const verdict = {
  pollsRatio: ratio,
  pollsIndependent: ratio <= 1.5,
  overCapHeld: held,
  overCapRefused503: refused,
  capHonoured: held === CAP && refused === CAP * OVER - CAP,
};
console.log(JSON.stringify(verdict));
const result = { at: new Date().toISOString(), cap: CAP, seconds: SECONDS, arms, verdict };
const md = markdownTable(
  `bench:feed-waiters (cap ${CAP}, ${SECONDS} s per arm)`,
  arms.map((a) => ({
    arm: a.arm,
    waiters: a.waiters,
    'feed statements/s': a.pollsPerSecond,
    statuses: JSON.stringify(a.statuses),
  })),
  [
    `mixed ÷ one: ${ratio} (target ≤ 1.5)`,
    `over the cap: ${held} held, ${refused} answered 503 with Retry-After (cap ${CAP})`,
  ],
);
const svg = barChartSvg(
  `feed statements per second by waiting clients (cap ${CAP})`,
  arms.map((a) => `${a.arm} (${a.waiters})`),
  [{ name: 'feed statements/s', values: arms.map((a) => a.pollsPerSecond) }],
  'reads/s',
);
console.log(`wrote ${await bench.writeResults(`feed-waiters-${CAP}`, result, svg, md)}`);
await app.close();
await bench.close();
process.exit(verdict.pollsIndependent && verdict.capHonoured ? 0 : 1);
