/**
 * F3: the feed under a sustained write rate, followed by another instance's tail and read by a
 * settled reader. Synthetic writers send each row through the statements a follow sends for its
 * feed row — the intent (`putIntent`), the batch carrying the row (`writeEdges` with the row
 * alone), the intent's delete after the batch is acknowledged — at `--rate` rows a second (paced
 * to a schedule, `--writers` at once) for `--seconds`. Each row is its own pair, so every row is
 * one `follow.created` event.
 *
 * A second `GraphService` on the same keyspace plays another instance: its feed's tail
 * (`subscribe`) hears the rows as they land, and a settled reader pages `feed.read` every 200 ms.
 * Reported: the rate the writers held; rows the tail never passed on and events the settled
 * reader never read (target 0 each); the tail's lag, from a row's acknowledgement to the tail
 * passing it on (p50/p99; target p99 ≤ 1 s); rows the tail read per event it passed on (its
 * fresh reads and its sweep; target ≤ 2); the settled reader's delay past the watermark L; and
 * the intents' tombstones per read (`nodetool tablestats` of `feed_intents` after the run: the
 * tombstones each slice scanned, mean and max over the last five minutes) beside the intent reads
 * the reader sent.
 *
 * The tail first watches `--warm` seconds of the idle feed (35 by default): until it has watched
 * 30 s it reads back the widest (2 s + 2S), as a service just started does.
 *
 *   npm run bench:feed-tail -- [--rate 5000] [--seconds 30] [--writers 64] [--warm 35]
 */
import { GraphService } from '../src/graph/graph-service.js';
import { DEFAULT_HISTORY_POLICY, feedLagMicros } from '../src/graph/pair/pair-history.js';
import { BucketedListService } from '../src/lists/list-service.js';
import { nowPosition } from '../src/model/clock.js';
import { type EventKey, type EventRow, eventShard } from '../src/model/events.js';
import { CassandraGraphStore } from '../src/store/cassandra/graph-store.js';
import { barChartSvg } from './support/charts.js';
import { loadAverage, markdownTable, openBench, percentile, sortedCopy } from './support/harness.js';
import { nodetoolBatch } from './support/nodetool.js';

const bench = openBench({
  usage: 'npm run bench:feed-tail -- [--rate 5000] [--seconds 30] [--writers 64] [--warm 35]',
  options: {
    rate: { type: 'string', default: '5000' },
    seconds: { type: 'string', default: '30' },
    writers: { type: 'string', default: '64' },
    warm: { type: 'string', default: '35' },
  },
});
const RATE = Number(bench.args.rate);
const SECONDS = Number(bench.args.seconds);
const WRITERS = Number(bench.args.writers);
const WARM_S = Number(bench.args.warm);
const LAG_MS = Number(feedLagMicros(DEFAULT_HISTORY_POLICY) / 1000n);
const SKEW_MS = DEFAULT_HISTORY_POLICY.clockSkewMs;
const ROWS = RATE * SECONDS;

const { client, keyspace } = await bench.throwawayKeyspace('bench_feed_tail');
const statements = new Map<string, number>();
const store = new CassandraGraphStore(client, {
  onQuery: (name) => statements.set(name, (statements.get(name) ?? 0) + 1),
});
const lists = new BucketedListService({
  store,
  cursorSecret: 'bench-feed-tail-cursor-secret',
  bucketThresholds: [250_000],
});
// Another instance: no writes of its own, so everything its tail passes on it read.
const reader = new GraphService({ store, lists, maxFollowing: 10, registry: false });

const pairOf = (i: number): [bigint, bigint] => [1_000_000n + BigInt(i), 9_000_000_000n + BigInt(i)];
const pairKey = (source: bigint, target: bigint) => `${source}>${target}`;

const acked = new Map<string, number>();
const tailHeard = new Map<string, number>();
const settledRead = new Map<string, number>();
const stopTail = reader.feed.subscribe((e) => {
  if (e.type === 'follow.created') tailHeard.set(pairKey(e.source, e.target), performance.now());
});

// The settled reader: from the watermark now, a page every 200 ms (more at once while behind).
let cursor = (await reader.feed.read(null, 1)).next;
for (;;) {
  const page = await reader.feed.read(cursor, 1000);
  cursor = page.next;
  if (page.items.length === 0) break;
}
let reading = true;
const intentReadsBefore = statements.get('readIntents') ?? 0;
const feedReadsBefore = statements.get('readEvents') ?? 0;
const settled = (async () => {
  while (reading) {
    const page = await reader.feed.read(cursor, 1000).catch(() => null);
    if (!page) {
      await new Promise((r) => setTimeout(r, 200));
      continue;
    }
    cursor = page.next;
    const now = performance.now();
    for (const e of page.items)
      if (e.type === 'follow.created') settledRead.set(pairKey(e.source, e.target), now);
    if (page.items.length < 1000) await new Promise((r) => setTimeout(r, 200));
  }
})();

for (let s = 0; s < WARM_S; s++) {
  bench.progress(`F3: the tail watches the idle feed, ${s}/${WARM_S} s`);
  await new Promise((r) => setTimeout(r, 1000));
}
const tailBefore = reader.feed.tailStats();
const startedMs = performance.now();
let next = 0;
let failed = 0;
async function writer(): Promise<void> {
  for (;;) {
    const i = next++;
    if (i >= ROWS) return;
    const due = startedMs + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const [source, target] = pairOf(i);
    const slot = nowPosition();
    const key: EventKey = {
      slot,
      shard: eventShard(source, target),
      low: source,
      high: target,
      opPosition: slot,
      opSource: source,
      opKind: 'follow',
    };
    const row: EventRow = {
      key,
      transitions: [{ sourceId: source, relation: 'follows', targetId: target, on: true }],
    };
    try {
      await store.putIntent(key, DEFAULT_HISTORY_POLICY.writeBudgetMs);
      await store.writeEdges([], [], slot, [row]);
      acked.set(pairKey(source, target), performance.now());
      await store.deleteIntent(key);
    } catch {
      // A row not acknowledged is not owed to anyone; its intent, if it stood, the settled reader waits on.
      failed++;
    }
    if (i % 500 === 0)
      bench.progress(`F3: ${acked.size}/${i + 1} rows acknowledged, ${tailHeard.size} heard by the tail`);
  }
}
await Promise.all(Array.from({ length: WRITERS }, () => writer()));
const wroteMs = performance.now() - startedMs;
bench.progress(
  `F3: ${acked.size} rows acknowledged in ${(wroteMs / 1000).toFixed(1)} s, ${failed} failed`,
  true,
);

// Past the tail's sweep (2 s + 2S + 1 s) and the watermark: every row had its chance with both.
const deadline = performance.now() + LAG_MS + 2000 + 2 * SKEW_MS + 5000;
const owed = () => [...acked.keys()].filter((k) => !tailHeard.has(k) || !settledRead.has(k)).length;
while (owed() > 0 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 250));
reading = false;
await settled;
stopTail();
const tail = reader.feed.tailStats();

const tailLags = sortedCopy(
  [...acked].flatMap(([k, t]) => (tailHeard.has(k) ? [(tailHeard.get(k) as number) - t] : [])),
);
const settledLags = sortedCopy(
  [...acked].flatMap(([k, t]) => (settledRead.has(k) ? [(settledRead.get(k) as number) - t - LAG_MS] : [])),
);
const tailMissing = [...acked.keys()].filter((k) => !tailHeard.has(k)).length;
const settledMissing = [...acked.keys()].filter((k) => !settledRead.has(k)).length;
const rowsRead = tail.rowsRead - tailBefore.rowsRead;
const passed = tail.eventsPassed - tailBefore.eventsPassed;

let tombstones: { mean: number; max: number } | null = null;
try {
  const [reply] = await nodetoolBatch([['tablestats', '-F', 'json', `${keyspace}.feed_intents`]]);
  if (reply?.code !== 0) throw new Error(`nodetool exited ${reply?.code}`);
  const stats = JSON.parse(reply.out) as Record<string, { tables?: Record<string, Record<string, unknown>> }>;
  const t = stats[keyspace]?.tables?.feed_intents;
  tombstones = {
    mean: Number(t?.average_tombstones_per_slice_last_five_minutes),
    max: Number(t?.maximum_tombstones_per_slice_last_five_minutes),
  };
} catch (e) {
  console.warn(`tablestats of feed_intents not read: ${(e as Error).message}`);
}

const r2 = (x: number) => Math.round(x * 100) / 100;
const result = {
  at: new Date().toISOString(),
  targetRate: RATE,
  seconds: SECONDS,
  writers: WRITERS,
  rowsAcknowledged: acked.size,
  failed,
  heldRate: Math.round(acked.size / (wroteMs / 1000)),
  tail: {
    missing: tailMissing,
    lag_p50_ms: Math.round(percentile(tailLags, 50)),
    lag_p99_ms: Math.round(percentile(tailLags, 99)),
    lag_max_ms: Math.round(tailLags.at(-1) ?? Number.NaN),
    rowsRead,
    eventsPassed: passed,
    rowsReadPerEvent: r2(rowsRead / Math.max(1, passed)),
    eventsLate: tail.eventsLate - tailBefore.eventsLate,
  },
  settled: {
    missing: settledMissing,
    pastWatermark_p50_ms: Math.round(percentile(settledLags, 50)),
    pastWatermark_p99_ms: Math.round(percentile(settledLags, 99)),
    intentReads: (statements.get('readIntents') ?? 0) - intentReadsBefore,
    feedReads: (statements.get('readEvents') ?? 0) - feedReadsBefore,
  },
  intentTombstonesPerSlice: tombstones,
  loadAverageEnd: loadAverage(),
};
const md = markdownTable(
  `bench:feed-tail (F3: ${RATE} rows/s asked for ${SECONDS} s, ${WRITERS} writers)`,
  [
    {
      reader: 'tail (from the acknowledgement)',
      missing: tailMissing,
      'lag p50 ms': result.tail.lag_p50_ms,
      'lag p99 ms': result.tail.lag_p99_ms,
      'lag max ms': result.tail.lag_max_ms,
      'rows read per event': result.tail.rowsReadPerEvent,
    },
    {
      reader: `settled (past the watermark, ${LAG_MS} ms)`,
      missing: settledMissing,
      'lag p50 ms': result.settled.pastWatermark_p50_ms,
      'lag p99 ms': result.settled.pastWatermark_p99_ms,
    },
  ],
  [
    `${acked.size} rows acknowledged (${failed} failed) at **${result.heldRate} rows/s** held; load average at end ${result.loadAverageEnd}`,
    `Tail: ${rowsRead} rows read for ${passed} events passed on, ${result.tail.eventsLate} only by its sweep (targets: 0 missing, lag p99 ≤ 1,000 ms, ≤ 2 rows read per event).`,
    `Settled reader: ${result.settled.feedReads} feed reads, ${result.settled.intentReads} intent reads; intents' tombstones per slice ${tombstones ? `mean ${tombstones.mean}, max ${tombstones.max}` : 'not read'} (last five minutes).`,
  ],
);
const svg = barChartSvg(
  'F3: the feed tail under a sustained write rate',
  ['tail lag p50 ms', 'tail lag p99 ms', 'settled past L p99 ms'],
  [
    {
      name: `${result.heldRate} rows/s`,
      values: [result.tail.lag_p50_ms, result.tail.lag_p99_ms, result.settled.pastWatermark_p99_ms],
    },
  ],
  'ms',
);
console.log(md);
console.log(`wrote ${await bench.writeResults('feed-tail', result, svg, md)}`);
reader.feed.close();
await bench.close();
if (tailMissing > 0 || settledMissing > 0) {
  console.error(`${tailMissing} rows never passed on by the tail, ${settledMissing} never read settled`);
  process.exit(1);
}
