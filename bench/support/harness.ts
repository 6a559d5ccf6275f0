/**
 * Shared by the celebrity benchmarks (`load`, `page`, `scan`, `probe`, `count`, `follow`): the
 * keyspace of one loaded size and the services wired over it, the A/B protocol's bookkeeping (load average, Node and JVM CPU, peak RSS) and the result
 * files (JSON, SVG, markdown) under the git-ignored `bench/results/`.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { GraphService } from '../../src/graph/graph-service.js';
import { BucketedListService } from '../../src/lists/list-service.js';
import type { CqlClient } from '../../src/store/cassandra/client.js';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { openMigratedKeyspace } from '../../src/store/cassandra/keyspace.js';

export const contactPoints = (process.env.CASSANDRA_CONTACT_POINTS ?? '127.0.0.1:9042').split(',');
const localDataCenter = process.env.CASSANDRA_LOCAL_DC ?? 'datacenter1';

/** The celebrity's id and the first follower id; follower i is `FIRST_FOLLOWER + i`. */
export const CELEBRITY = 7_000_000_000n;
export const FIRST_FOLLOWER = 8_000_000_000n;

/** One keyspace per loaded size, so 200k and 1M lists coexist and a rerun finds its own rows. */
export const keyspaceFor = (followers: number) => `bench_celeb_${followers}`;

export function openCelebrityKeyspace(followers: number, requestTimeoutMs = 30_000): Promise<CqlClient> {
  return openMigratedKeyspace({
    contactPoints,
    localDataCenter,
    keyspace: keyspaceFor(followers),
    replication: { class: 'SimpleStrategy', replication_factor: 1 },
    consistency: 'localQuorum',
    requestTimeoutMs,
  });
}

/**
 * The celebrity keyspace of `followers` with the service's store, list service and graph service
 * wired over it: the default thresholds, layouts cached for the whole run, no following cap in the way.
 */
export async function openCelebrityServices(followers: number, requestTimeoutMs?: number) {
  const client = await openCelebrityKeyspace(followers, requestTimeoutMs);
  const store = new CassandraGraphStore(client);
  const lists = new BucketedListService({
    store,
    cursorSecret: 'bench-celebrity-cursor-secret',
    bucketThresholds: DEFAULT_THRESHOLDS,
    layoutCacheTtlMs: 3_600_000,
  });
  const graph = new GraphService({ store, lists, maxFollowing: 10_000_000 });
  return { client, store, lists, graph };
}

export const loadAverage = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

/** The pid of the process listening on the first contact point (to read the JVM's CPU), or null. */
export function serverPid(): number | null {
  if (process.env.CASSANDRA_PID) return Number(process.env.CASSANDRA_PID);
  const [host, port] = (contactPoints[0] ?? '127.0.0.1:9042').split(':');
  const hex = (host ?? '')
    .split('.')
    .map((o) => Number(o).toString(16).padStart(2, '0').toUpperCase())
    .reverse()
    .join('');
  const local = `${hex}:${Number(port ?? 9042)
    .toString(16)
    .toUpperCase()
    .padStart(4, '0')}`;
  let inode: string | undefined;
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[1] === local && f[3] === '0A') inode = f[9];
  }
  if (!inode) return null;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // another user's process, or gone: not ours to read
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === `socket:[${inode}]`) return Number(pid);
      } catch {
        // the descriptor closed while we looked: the busy node opens and closes files all the time
      }
    }
  }
  return null;
}

const ticks = 100;
function jvmCpuSeconds(pid: number | null): number {
  if (pid === null) return Number.NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / ticks;
  } catch {
    return Number.NaN;
  }
}

/** CPU seconds of this process and of the server JVM over a span, and the span's wall time. */
export function cpuMeter(pid = serverPid()) {
  const node0 = process.cpuUsage();
  const jvm0 = jvmCpuSeconds(pid);
  const t0 = performance.now();
  return () => {
    const n = process.cpuUsage(node0);
    return {
      wallS: (performance.now() - t0) / 1000,
      nodeCpuS: (n.user + n.system) / 1e6,
      jvmCpuS: jvmCpuSeconds(pid) - jvm0,
    };
  };
}

/** Peak resident set size of this process so far (VmHWM), in MiB. */
export function peakRssMiB(): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

/** Nearest-rank percentile of an ascending array (the one helper every bench uses). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export const sortedCopy = (xs: readonly number[]) => [...xs].sort((a, b) => a - b);

/**
 * Runs `reps` repetitions of two arms, interleaved A B, then B A, and so on (so neither arm always
 * runs first, on a warmer node); `report` sees each repetition as it ends. Returns them in order.
 */
export async function interleaved<A extends string, R>(
  reps: number,
  [a, b]: readonly [A, A],
  run: (arm: A) => Promise<R>,
  report?: (rep: Record<A, R>, r: number) => void,
): Promise<Record<A, R>[]> {
  const out: Record<A, R>[] = [];
  for (let r = 0; r < reps; r++) {
    const rep = {} as Record<A, R>;
    for (const arm of r % 2 === 0 ? [a, b] : [b, a]) rep[arm] = await run(arm);
    out.push(rep);
    report?.(rep, r);
  }
  return out;
}

/** Median and spread (min–max) of per-repetition ratios. */
export function ratioSummary(ratios: readonly number[]) {
  const s = sortedCopy(ratios);
  return {
    median: +percentile(s, 50).toFixed(3),
    min: +s[0]!.toFixed(3),
    max: +s.at(-1)!.toFixed(3),
    reps: s.length,
  };
}

/** Writes `<name>-<time>.json`, `.svg` and `.md` under bench/results/; returns the base path. */
export async function writeResults(name: string, json: unknown, svg: string, md: string): Promise<string> {
  const dir = new URL('../results/', import.meta.url);
  await mkdir(dir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const base = `${name}-${stamp}`;
  const replacer = (_: string, v: unknown) => (typeof v === 'bigint' ? v.toString() : v);
  await writeFile(new URL(`${base}.json`, dir), `${JSON.stringify(json, replacer, 2)}\n`);
  await writeFile(new URL(`${base}.svg`, dir), svg);
  await writeFile(new URL(`${base}.md`, dir), md);
  return `bench/results/${base}.{json,svg,md}`;
}

/**
 * The newest `bench/results/<prefix>-*.json` (names carry an ISO stamp, so they sort by time),
 * parsed; throws with the command to run when there is none.
 */
export function latestResult<T>(prefix: string, produce: string): { file: string; json: T } {
  const dir = new URL('../results/', import.meta.url);
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    // no results directory yet
  }
  const file = names
    .filter((f) => f.startsWith(`${prefix}-`) && f.endsWith('.json'))
    .sort()
    .at(-1);
  if (!file) throw new Error(`no bench/results/${prefix}-*.json: run ${produce} first`);
  return { file: `bench/results/${file}`, json: JSON.parse(readFileSync(new URL(file, dir), 'utf8')) as T };
}

/** The list service as the app builds it, with the configured thresholds and a long layout cache. */
export const DEFAULT_THRESHOLDS = (
  process.env.GRAPH_BUCKET_THRESHOLDS ?? '250000,500000,1000000,2000000,4000000,8000000'
)
  .split(',')
  .map(Number);

/** A markdown summary: a heading, optional lines, and one table of flat rows (objects as JSON). */
export function markdownTable(
  title: string,
  rows: readonly Record<string, unknown>[],
  notes: string[] = [],
): string {
  const keys = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const cell = (v: unknown) =>
    v === undefined
      ? ''
      : typeof v === 'object' && v !== null
        ? JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? x.toString() : x))
        : String(v);
  return `# ${title}\n\n${notes.map((n) => `${n}\n`).join('')}${notes.length ? '\n' : ''}| ${keys.join(' | ')} |\n|${keys.map(() => '---').join('|')}|\n${rows
    .map((r) => `| ${keys.map((k) => cell(r[k])).join(' | ')} |`)
    .join('\n')}\n`;
}
