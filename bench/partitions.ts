/**
 * T10 partition size: the largest partition of every table of a loaded celebrity keyspace
 * (`npm run bench:load` first) against the 64 MiB target.
 *
 * Flushes the keyspace's memtables first (`nodetool flush`, through the JMX agent
 * `support/nodetool.ts` starts in the server JVM), so the sstable statistics cover every row, then
 * reads per table:
 *   - `nodetool tablestats -F json`: compacted partition maximum and mean bytes, the partition
 *     estimate, live space, sstable count;
 *   - `nodetool tablehistograms` of the big tables (followers, the celebrity's list in time
 *     buckets; edges_in, hash-bucketed; list_directory, the buckets' directory; following,
 *     relation_lists, edges_out, pair_ops, users, graph_events): partition size and cell count
 *     percentiles (p99 and max);
 *   - `system_views.max_partition_size` (whole MiB, rounded up) and `system.size_estimates`
 *     (mean partition size and partitions over the token ranges, refreshed every few minutes).
 * Without JMX (no jcmd, another user's JVM) it falls back to the two CQL tables, unflushed, and
 * says so. Partition sizes from sstable statistics are upper edges of histogram buckets (~20%
 * apart) and per sstable: a partition spread over k sstables not yet compacted together can be up
 * to k fragments in size; `--compact` runs a major compaction of the keyspace first (heavy: only
 * after the load is done) so each partition is one fragment.
 *
 * T10 asks for every table with the 9M list loaded: the tables `REQUIRED` names must be
 * in the keyspace and measured, or the verdict fails. Beside the sizes, the celebrity's own time
 * buckets from its directory (rows per bucket from the buckets' bases, the largest bucket's rows
 * and the bytes per row that makes the followers maximum), so a bucket size can be read against
 * its partition size.
 *
 *   npm run bench:partitions -- [--followers 9000000] [--keyspace bench_celeb_9000000] [--compact]
 */
import { barChartSvg } from './support/charts.js';
import { CELEBRITY, keyspaceFor, markdownTable, openBench } from './support/harness.js';
import { nodetool, nodetoolBatch } from './support/nodetool.js';

const bench = openBench({
  usage: 'npm run bench:partitions -- [--followers 9000000] [--keyspace bench_celeb_9000000] [--compact]',
  options: {
    followers: { type: 'string', default: '9000000' },
    compact: { type: 'boolean', default: false },
  },
});
const args = bench.args;
const F = Number(args.followers);
const KS = args.keyspace ?? keyspaceFor(F);
const LIMIT_BYTES = 64 * 1024 * 1024;
const MiB = 1024 * 1024;
const BIG_TABLES = [
  'followers',
  'edges_in',
  'list_directory',
  'following',
  'relation_lists',
  'edges_out',
  'pair_ops',
  'users',
  'graph_events',
];
/** Tables T10 must see measured (the time-bucketed list, its directory, the probe index). */
const REQUIRED = ['followers', 'list_directory', 'edges_in', 'users'];
const notes: string[] = [];
const errMsg = (e: unknown) => (e instanceof Error ? e.message : String(e)).split('\n')[0];

console.log(`[bench:partitions] keyspace ${KS} on ${bench.config.contactPoints[0]}`);

const client = await bench.cql();
const tables = (
  await client.execute('SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?', [KS], {
    prepare: true,
  })
).rows.map((r) => String(r.table_name));
if (tables.length === 0) {
  console.error(`keyspace ${KS} has no tables (load it with npm run bench:load -- --followers ${F})`);
  await bench.close();
  process.exit(1);
}

// 1. Flush (and optionally compact) so the sstable statistics see every row; 2. nodetool tablestats
// (JSON) and tablehistograms of the big tables — all in one client JVM (`nodetoolBatch`).
interface Stats {
  maxBytes: number;
  meanBytes: number;
  partitions: number;
  liveBytes: number;
  sstables: number;
}
const stats = new Map<string, Stats>();
interface Histogram {
  p50: number;
  p99: number;
  max: number;
  cellsP99: number;
  cellsMax: number;
}
const histograms = new Map<string, Histogram>();

/** `nodetool tablehistograms` rows `50% … Max`: the partition size and cell count columns. */
function parseHistograms(text: string): Histogram | null {
  const rows = new Map<string, number[]>();
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length === 6 && /^(\d+%|Min|Max)$/.test(f[0]!)) rows.set(f[0]!, f.slice(1).map(Number));
  }
  const at = (p: string, col: number) => rows.get(p)?.[col] ?? Number.NaN;
  if (!rows.has('Max')) return null;
  return {
    p50: at('50%', 3),
    p99: at('99%', 3),
    max: at('Max', 3),
    cellsP99: at('99%', 4),
    cellsMax: at('Max', 4),
  };
}

let jmx = true;
const t0 = performance.now();
const histogramTables = BIG_TABLES.filter((t) => tables.includes(t));
try {
  if (args.compact) {
    await nodetool(['flush', KS]);
    const t1 = performance.now();
    await nodetool(['compact', KS], 6 * 3_600_000);
    notes.push(`major compaction of ${KS} in ${((performance.now() - t1) / 1000).toFixed(1)} s`);
  }
  const [flushed, tablestats, ...histogramOuts] = await nodetoolBatch([
    ['flush', KS],
    ['tablestats', '-F', 'json', KS],
    ...histogramTables.map((table) => ['tablehistograms', KS, table]),
  ]);
  if (flushed?.code !== 0) throw new Error(`nodetool flush exited ${flushed?.code}: ${flushed?.out.trim()}`);
  notes.push(
    `flushed ${KS}, read its statistics in ${((performance.now() - t0) / 1000).toFixed(1)} s (one nodetool JVM)`,
  );
  try {
    const json = JSON.parse(tablestats?.out ?? '') as Record<
      string,
      { tables?: Record<string, Record<string, unknown>> }
    >;
    for (const [table, s] of Object.entries(json[KS]?.tables ?? {})) {
      stats.set(table, {
        maxBytes: Number(s.compacted_partition_maximum_bytes),
        meanBytes: Number(s.compacted_partition_mean_bytes),
        partitions: Number(s.number_of_partitions_estimate),
        liveBytes: Number(s.space_used_live),
        sstables: Number(s.sstable_count),
      });
    }
  } catch (e) {
    notes.push(`nodetool tablestats failed: ${errMsg(e)}`);
  }
  // A table with no sstable has no histogram.
  histogramTables.forEach((table, i) => {
    if (stats.get(table)?.sstables === 0) return;
    const h = histogramOuts[i]?.code === 0 ? parseHistograms(histogramOuts[i]?.out ?? '') : null;
    if (h) histograms.set(table, h);
    else
      notes.push(
        `nodetool tablehistograms ${table}: no histogram (${histogramOuts[i]?.out.trim().split('\n')[0]})`,
      );
  });
} catch (e) {
  jmx = false;
  notes.push(
    `**no flush** (JMX unavailable: ${errMsg(e)}): rows still in memtables are not counted; CQL tables only`,
  );
}
console.log(notes.join('\n'));

// 3. The CQL views: max partition MiB (rounded up) and size estimates.
const vtMiB = new Map<string, number>();
for (const r of (
  await client.execute(
    'SELECT table_name, mebibytes FROM system_views.max_partition_size WHERE keyspace_name = ?',
    [KS],
    { prepare: true },
  )
).rows) {
  vtMiB.set(String(r.table_name), Number(r.mebibytes));
}
const estimates = new Map<string, { partitions: number; bytes: number }>();
for (const r of (
  await client.execute(
    'SELECT table_name, mean_partition_size, partitions_count FROM system.size_estimates WHERE keyspace_name = ?',
    [KS],
    { prepare: true },
  )
).rows) {
  const e = estimates.get(String(r.table_name)) ?? { partitions: 0, bytes: 0 };
  const n = Number(r.partitions_count);
  e.partitions += n;
  e.bytes += n * Number(r.mean_partition_size);
  estimates.set(String(r.table_name), e);
}
// The celebrity's time buckets (rows per bucket from the directory's bases; the newest holds the rest).
const celebrity = await bench.celebrity(F, undefined, KS);
const directory = await celebrity.store.getDirectory({
  userId: CELEBRITY,
  relation: 'follows',
  direction: 'in',
});
const bucketRows = directory.buckets.map((b, k) => ({
  id: b.id,
  start: b.start === null ? null : String(b.start),
  rows: (k === 0 ? F : directory.buckets[k - 1]!.base) - b.base,
}));
const largestBucket = Math.max(...bucketRows.map((b) => b.rows));
celebrity.graph.registry?.close();
await bench.close();

// 4. One row per table, the largest first.
const fmtMiB = (b: number) => (Number.isFinite(b) ? +(b / MiB).toFixed(b >= MiB ? 2 : 4) : '');
const rows = tables
  .map((table) => {
    const s = stats.get(table);
    const h = histograms.get(table);
    const vt = vtMiB.get(table);
    const est = estimates.get(table);
    // With JMX the sstable maximum; without, the view's MiB rounded up (an upper bound).
    // (An empty table's histogram has no Max: NaN, not a size.)
    const hMax = h && Number.isFinite(h.max) ? h.max : 0;
    const maxBytes = s ? Math.max(s.maxBytes, hMax) : (vt ?? Number.NaN) * MiB;
    return {
      table,
      maxPartitionBytes: maxBytes,
      maxPartitionMiB: fmtMiB(maxBytes),
      meanPartitionBytes: s?.meanBytes ?? (est?.partitions ? Math.round(est.bytes / est.partitions) : ''),
      p99PartitionBytes: h?.p99 ?? '',
      maxCells: h?.cellsMax ?? '',
      partitions: s?.partitions ?? est?.partitions ?? '',
      liveMiB: s ? fmtMiB(s.liveBytes) : '',
      sstables: s?.sstables ?? '',
      viewMiB: vt ?? '',
      estimatesMeanBytes: est?.partitions ? Math.round(est.bytes / est.partitions) : '',
      pass: Number.isFinite(maxBytes) ? (maxBytes <= LIMIT_BYTES ? 'PASS' : 'FAIL') : '?',
    };
  })
  .sort((a, b) => (b.maxPartitionBytes || 0) - (a.maxPartitionBytes || 0) || a.table.localeCompare(b.table));

const top = rows[0]!;
const unmeasured = REQUIRED.filter(
  (t) => !rows.some((r) => r.table === t && Number.isFinite(r.maxPartitionBytes)),
);
const empty = REQUIRED.filter((t) => rows.some((r) => r.table === t && r.maxPartitionBytes === 0));
const followersRow = rows.find((r) => r.table === 'followers');
const bytesPerRow =
  followersRow && Number.isFinite(followersRow.maxPartitionBytes) && largestBucket > 0
    ? followersRow.maxPartitionBytes / largestBucket
    : Number.NaN;
notes.push(
  `celebrity followers list: ${directory.buckets.length} time buckets (mode ${directory.mode ?? 'unset'}), largest ${largestBucket} rows; ` +
    `followers maximum ÷ largest bucket = ${Number.isFinite(bytesPerRow) ? bytesPerRow.toFixed(1) : '?'} bytes per row ` +
    '(an upper bound when another list holds the largest partition); rows per bucket: ' +
    bucketRows.map((b) => b.rows).join(', '),
);
const verdict = `T10 largest partition ${top.table} ${fmtMiB(top.maxPartitionBytes)} MiB ≤ 64 MiB: ${
  rows.some((r) => r.pass === 'FAIL') || unmeasured.length > 0 ? 'FAIL' : 'PASS'
}${unmeasured.length > 0 ? ` (not measured: ${unmeasured.join(', ')})` : ''}${
  empty.length > 0 ? `; empty here: ${empty.join(', ')} (a --only-list load writes no edges_in rows)` : ''
}`;
notes.push(
  jmx
    ? 'maxPartitionBytes: the larger of tablestats "Compacted partition maximum bytes" and the tablehistograms Max ' +
        '(upper edge of a histogram bucket, per sstable); meanPartitionBytes, partitions, live space: tablestats; ' +
        'viewMiB: system_views.max_partition_size (MiB, rounded up); estimates: system.size_estimates. ' +
        'Per sstable: a partition written across several sstables counts as its largest fragment until ' +
        'compaction merges them (`--compact` for a major compaction first)'
    : 'maxPartitionBytes: system_views.max_partition_size × 1 MiB (rounded up); mean and partitions: system.size_estimates',
  verdict,
);
const md = markdownTable(`bench:partitions ${KS} (T10: largest partition ≤ 64 MiB)`, rows, notes);
const big = rows.filter((r) => Number.isFinite(r.maxPartitionBytes) && r.maxPartitionBytes > 0).slice(0, 8);
const svg = barChartSvg(
  `largest partition, top ${big.length} tables of ${KS} (T10 limit 64 MiB)`,
  big.map((r) => r.table),
  [
    {
      name: 'max partition MiB',
      values: big.map((r) => r.maxPartitionBytes / MiB),
    },
  ],
  'MiB',
);
console.log(md);
console.log(verdict);
const result = {
  at: new Date().toISOString(),
  keyspace: KS,
  followers: F,
  flushed: jmx,
  verdict,
  celebrityBuckets: {
    mode: directory.mode,
    buckets: bucketRows,
    largestBucket,
    bytesPerRow,
  },
  rows,
  notes,
};
console.log(
  `wrote ${await bench.writeResults(args.keyspace ? `partitions-${KS}` : `partitions-${F}`, result, svg, md)}`,
);
process.exit(0);
