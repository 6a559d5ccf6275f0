/**
 * The list benchmarks' own keyspace (`bench_lists`) and data: one 200,000-follower list whose
 * rows are written under layouts 1, 8, 16 and 64 at once (codes of different layouts never share
 * a partition), so every layout is measured on the same rows. Loaded once; later runs reuse it.
 */
import type { CqlClient } from '../../src/store/cassandra/client.js';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { openMigratedKeyspace } from '../../src/store/cassandra/keyspace.js';
import type { ListKey } from '../../src/store/types.js';
import { followersOf, loadRows, syntheticRows } from '../../test/support/list-fixtures.js';

export const BENCH_LAYOUTS = [1, 8, 16, 64] as const;
export const BENCH_ROWS = 200_000;
export const benchList: ListKey = followersOf(424_242n);
const marker: ListKey = followersOf(424_243n);

export interface BenchLists {
  client: CqlClient;
  store: CassandraGraphStore;
  close(): Promise<void>;
}

export async function openBenchLists(): Promise<BenchLists> {
  const contactPoints = (process.env.CASSANDRA_CONTACT_POINTS ?? '127.0.0.1:9042').split(',');
  const localDataCenter = process.env.CASSANDRA_LOCAL_DC ?? 'datacenter1';
  const client = await openMigratedKeyspace({
    contactPoints,
    localDataCenter,
    keyspace: 'bench_lists',
    replication: { class: 'SimpleStrategy', replication_factor: 1 },
    consistency: 'localQuorum',
    requestTimeoutMs: 30_000,
  });
  const store = new CassandraGraphStore(client);
  const loaded = await store.getLayout(marker);
  if (loaded.buckets !== BENCH_ROWS) {
    const started = performance.now();
    const rows = syntheticRows(BENCH_ROWS, { firstId: 100_000_000n });
    await loadRows(store, benchList, rows, BENCH_LAYOUTS);
    await store.putLayout(marker, { buckets: BENCH_ROWS, growingTo: null, copiedThrough: 0 });
    console.log(
      `loaded ${BENCH_ROWS} rows × ${BENCH_LAYOUTS.length} layouts in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  }
  return { client, store, close: () => client.shutdown() };
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** A plain SVG bar chart (no dependencies): one group per label, one bar per series. */
export function barChartSvg(
  title: string,
  labels: string[],
  series: { name: string; values: number[] }[],
  unit: string,
) {
  const w = 720;
  const h = 360;
  const pad = { l: 60, r: 20, t: 40, b: 60 };
  const max = Math.max(...series.flatMap((s) => s.values), 1e-9) * 1.1;
  const gw = (w - pad.l - pad.r) / labels.length;
  const bw = (gw * 0.8) / series.length;
  const colors = ['#4878d0', '#ee854a', '#6acc64', '#d65f5f'];
  const y = (v: number) => pad.t + (h - pad.t - pad.b) * (1 - v / max);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif" font-size="12">`,
    `<text x="${w / 2}" y="20" text-anchor="middle" font-size="14">${title}</text>`,
    `<line x1="${pad.l}" y1="${h - pad.b}" x2="${w - pad.r}" y2="${h - pad.b}" stroke="#333"/>`,
    `<text x="14" y="${pad.t - 10}">${unit}</text>`,
  ];
  for (let t = 0; t <= 4; t++) {
    const v = (max / 4) * t;
    parts.push(`<text x="${pad.l - 6}" y="${y(v) + 4}" text-anchor="end">${v.toFixed(2)}</text>`);
    parts.push(`<line x1="${pad.l}" y1="${y(v)}" x2="${w - pad.r}" y2="${y(v)}" stroke="#ddd"/>`);
  }
  labels.forEach((label, i) => {
    const gx = pad.l + i * gw + gw * 0.1;
    series.forEach((s, j) => {
      const v = s.values[i] ?? 0;
      parts.push(
        `<rect x="${gx + j * bw}" y="${y(v)}" width="${bw - 2}" height="${h - pad.b - y(v)}" fill="${colors[j % colors.length]}"/>`,
      );
    });
    parts.push(`<text x="${gx + gw * 0.4}" y="${h - pad.b + 18}" text-anchor="middle">${label}</text>`);
  });
  series.forEach((s, j) => {
    const lx = pad.l + j * 150;
    parts.push(`<rect x="${lx}" y="${h - 22}" width="12" height="12" fill="${colors[j % colors.length]}"/>`);
    parts.push(`<text x="${lx + 16}" y="${h - 12}">${s.name}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}
