/**
 * Where the Cassandra JVM's CPU went during a bench: reads a Java Flight Recorder file (the JDK's
 * `jfr` tool prints its execution samples) and sorts every sample into one category by the first
 * of the patterns below found anywhere in its stack (the order is the priority: a memtable insert
 * under a batch counts as a memtable insert), with the share of samples per category and per
 * thread pool. How the T6 and T8 misses in `docs/benchmarks.md` were profiled:
 *
 *   jcmd <cassandra pid> JFR.start name=p settings=profile filename=/tmp/p.jfr
 *   npm run bench:follow -- …            # or any bench
 *   jcmd <cassandra pid> JFR.stop name=p
 *   npm run bench:jvm-profile -- /tmp/p.jfr
 *
 * Start the node with `JAVA_TOOL_OPTIONS=-XX:FlightRecorderOptions=stackdepth=512` so stacks are
 * not cut at JFR's default 64 frames (a cut stack lands in "other").
 */
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';

const { positionals } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== '--'),
  allowPositionals: true,
});
const file = positionals[0];
if (!file) {
  console.error('usage: npm run bench:jvm-profile -- <recording.jfr>');
  process.exit(2);
}

/** Categories in priority order: the first whose pattern matches any frame of a sample wins. */
const CATEGORIES: readonly [string, RegExp][] = [
  ['batchlog (a logged batch stored, then removed)', /batchlog/],
  ['commit log append', /commitlog\//],
  ['memtable insert', /memtable|db\/tries\/|BTreePartitionUpdater|ColumnFamilyStore\.apply/],
  ['metrics (latency histograms)', /codahale|cassandra\/metrics\//],
  [
    'reads (select, partitions, sstables)',
    /SelectStatement|SinglePartitionReadCommand|io\/sstable|ReadCommand|ReadExecution/,
  ],
  [
    'CQL statements (bind, build and serialize mutations)',
    /BatchStatement|ModificationStatement|UpdateParameters|QueryProcessor/,
  ],
  ['counter writes', /Counter/],
  ['native protocol (decode, dispatch, encode)', /cassandra\/transport\/|io\/netty\//],
  ['messaging and stages', /cassandra\/net\/|cassandra\/concurrent\//],
];

interface Frame {
  method: { type: { name: string }; name: string };
}
interface Sample {
  values: { stackTrace: { frames: Frame[] } | null; sampledThread?: { javaName?: string; osName?: string } };
}

const json = execFileSync(
  'jfr',
  ['print', '--json', '--stack-depth', '512', '--events', 'jdk.ExecutionSample', file],
  {
    maxBuffer: 2 ** 31 - 1,
  },
).toString();
const events = (JSON.parse(json) as { recording: { events: Sample[] } }).recording.events;
const byCategory = new Map<string, number>();
const byThread = new Map<string, number>();
const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
for (const e of events) {
  const frames = e.values.stackTrace?.frames ?? [];
  const names = frames.map((f) => `${f.method.type.name}.${f.method.name}`);
  const hit = CATEGORIES.find(([, pattern]) => names.some((n) => pattern.test(n)));
  bump(byCategory, hit ? hit[0] : 'other');
  const thread = e.values.sampledThread?.javaName ?? e.values.sampledThread?.osName ?? '?';
  bump(byThread, thread.replace(/[-:#]?\d+$/, ''));
}
const table = (m: Map<string, number>) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `| ${k} | ${((n / events.length) * 100).toFixed(1)}% |`)
    .join('\n');
console.log(`${events.length} execution samples in ${file}\n`);
console.log(`| category | samples |\n|---|---|\n${table(byCategory)}\n`);
console.log(`| thread pool | samples |\n|---|---|\n${table(byThread)}`);
