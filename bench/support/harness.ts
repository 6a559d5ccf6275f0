/**
 * The one entry of every benchmark: `openBench()` parses the command line (the shared options
 * below plus the bench's own), and hands back the connections (opened on first use, closed by
 * `close()`), a progress reporter and the results writer. Also shared: the celebrity keyspace of
 * one loaded size and the services wired over it, the A/B protocol's bookkeeping (load average,
 * Node and JVM CPU, peak RSS) and the result files (JSON, SVG, markdown).
 *
 * Shared options (every bench): `--contact-points` (default `CASSANDRA_CONTACT_POINTS`, else
 * 127.0.0.1:9042), `--local-dc` (`CASSANDRA_LOCAL_DC`, else datacenter1), `--results-dir`
 * (`BENCH_RESULTS_DIR`, else the git-ignored `bench/results/`; the smoke run points it at a
 * temporary directory so CI never writes there), `--keyspace` (every keyspace the bench would
 * open is this one instead, never dropped: the smoke run migrates one keyspace for all its benches,
 * a migration being most of a tiny bench's time), `--help`. This is the only place the benches
 * read the environment for them.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { GraphService } from '../../src/graph/graph-service.js';
import type { ListReadStats } from '../../src/lists/list-pages.js';
import { BucketedListService } from '../../src/lists/list-service.js';
import { type CqlClient, createCqlClient, SCHEMA_CHANGE } from '../../src/store/cassandra/client.js';
import {
  CassandraGraphStore,
  type CassandraGraphStoreOptions,
} from '../../src/store/cassandra/graph-store.js';
import { openMigratedKeyspace } from '../../src/store/cassandra/keyspace.js';
import { RequestCounter } from '../../src/store/cassandra/request-counter.js';

type OptionSpecs = NonNullable<ParseArgsConfig['options']>;

/** The options every bench accepts (see the module note). */
export const SHARED_OPTIONS = {
  'contact-points': { type: 'string' },
  'local-dc': { type: 'string' },
  'results-dir': { type: 'string' },
  keyspace: { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} as const satisfies OptionSpecs;

/** Where a bench run reaches Cassandra and writes its results. */
export interface BenchConfig {
  contactPoints: string[];
  localDataCenter: string;
  /** Absolute path of the results directory (created on first write). */
  resultsDir: string;
  /** `--keyspace`: the one keyspace every open goes to, or undefined (each bench's own). */
  keyspace: string | undefined;
}

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DEFAULT_RESULTS_DIR = fileURLToPath(new URL('../results/', import.meta.url));

function configFrom(values: {
  'contact-points'?: string;
  'local-dc'?: string;
  'results-dir'?: string;
  keyspace?: string;
}): BenchConfig {
  return {
    contactPoints: (
      values['contact-points'] ??
      process.env.CASSANDRA_CONTACT_POINTS ??
      '127.0.0.1:9042'
    ).split(','),
    localDataCenter: values['local-dc'] ?? process.env.CASSANDRA_LOCAL_DC ?? 'datacenter1',
    resultsDir: resolve(values['results-dir'] ?? process.env.BENCH_RESULTS_DIR ?? DEFAULT_RESULTS_DIR),
    keyspace: values.keyspace,
  };
}

/** The run's config: from the environment until `openBench` parses the command line. */
let current: BenchConfig = configFrom({});

/** The contact points of this run (the first one is the node whose JVM `serverPid` finds). */
export const benchConfig = (): BenchConfig => current;

/** A results path as printed: relative to the repository when inside it. */
const shown = (path: string) => (path.startsWith(REPO_ROOT) ? relative(REPO_ROOT, path) : path);

/** The services over one celebrity keyspace (see `Bench.celebrity`). */
export interface CelebrityServices {
  client: CqlClient;
  store: CassandraGraphStore;
  lists: BucketedListService;
  graph: GraphService;
  /**
   * Where the store's per-statement timings and the list engine's per-page costs go (none until a
   * bench sets them): `support/app-server.ts` points them at the app's `/metrics`, as `main.ts` does.
   */
  hooks: CelebrityHooks;
  /** Every request `client` sent, by kind, and the mutations (the driver's request tracker). */
  requests: RequestCounter;
}

/** Settable hooks of `CelebrityServices` (called for every statement and every list page). */
export interface CelebrityHooks {
  onQuery: ((name: string, seconds: number, ok: boolean) => void) | null;
  onPage: ((s: ListReadStats) => void) | null;
}

/** What `openBench` hands a bench: its parsed options, connections on demand, output. */
export interface Bench<V> {
  /** The bench's own options and the shared ones, parsed (defaults applied). */
  args: V;
  /** Positional arguments (only when the bench asked for them). */
  positionals: string[];
  config: BenchConfig;
  /**
   * The celebrity keyspace of `followers` (`bench:load` fills it), with the services over it;
   * `keyspace` names another keyspace (a second loaded list beside the `--keyspace` one).
   */
  celebrity(followers: number, requestTimeoutMs?: number, keyspace?: string): Promise<CelebrityServices>;
  /** A migrated keyspace of this name (created if missing), or the `--keyspace` one. */
  keyspace(name: string, requestTimeoutMs?: number): Promise<CqlClient>;
  /** A fresh migrated keyspace `<prefix>_<random>`, dropped by `close()` unless `keep` (or `--keyspace`). */
  throwawayKeyspace(
    prefix: string,
    o?: { requestTimeoutMs?: number; keep?: boolean },
  ): Promise<{ client: CqlClient; keyspace: string }>;
  /** A client with no keyspace (system tables), at LOCAL_ONE. */
  cql(requestTimeoutMs?: number): Promise<CqlClient>;
  /** A progress line: rewritten in place on a TTY, else printed at most every 5 s (and the last). */
  progress(line: string, final?: boolean): void;
  /** Writes `<base>-<time>.{json,svg,md}` under the results directory; returns the path shown. */
  writeResults(base: string, json: unknown, svg: string, md: string): Promise<string>;
  /** Writes one file under the results directory (no time stamp); returns the path shown. */
  writeResultFile(name: string, text: string): Promise<string>;
  /** The absolute path of `name` under the results directory (the directory is created). */
  resultPath(name: string): string;
  /** The newest result whose name starts with `<prefix>-` (see `latestResult`). */
  latestResult<T>(prefix: string, produce: string): { file: string; json: T };
  /** Shuts every client opened here down (dropping throwaway keyspaces first). */
  close(): Promise<void>;
}

/**
 * Parses the command line (`--help` prints `usage` and exits 0; an unknown option exits 2) and
 * returns the bench's handle. Connections open on first use.
 *
 * @example
 * const bench = openBench({
 *   usage: 'npm run bench:page -- [--followers 9000000] [--reps 3]',
 *   options: { followers: { type: 'string', default: '9000000' }, reps: { type: 'string', default: '3' } },
 * });
 * const { store, lists } = await bench.celebrity(Number(bench.args.followers));
 * console.log(`wrote ${await bench.writeResults('page', result, svg, md)}`);
 * await bench.close();
 */
export function openBench<const O extends OptionSpecs>(spec: {
  usage: string;
  options: O;
  /** The arguments to parse (default: `process.argv.slice(2)`). */
  argv?: string[];
  allowPositionals?: boolean;
}) {
  const options = { ...SHARED_OPTIONS, ...spec.options };
  let parsed: ReturnType<
    typeof parseArgs<{
      options: typeof SHARED_OPTIONS & O;
      allowPositionals: true;
    }>
  >;
  try {
    parsed = parseArgs({
      options: options as typeof SHARED_OPTIONS & O,
      args: spec.argv ?? process.argv.slice(2),
      allowPositionals: true,
      strict: true,
    });
  } catch (e) {
    console.error(`${e instanceof Error ? e.message : String(e)}\nusage: ${spec.usage}`);
    process.exit(2);
  }
  const values = parsed.values as Record<string, unknown>;
  if (values.help) {
    console.log(
      `usage: ${spec.usage}\nshared options: [--contact-points h:p,…] [--local-dc dc] [--results-dir path] [--keyspace name]`,
    );
    process.exit(0);
  }
  if (parsed.positionals.length > 0 && !spec.allowPositionals) {
    console.error(`unexpected argument ${parsed.positionals[0]}\nusage: ${spec.usage}`);
    process.exit(2);
  }
  const config = configFrom(values as Parameters<typeof configFrom>[0]);
  current = config;
  const clients: CqlClient[] = [];
  const dropAtClose: { client: CqlClient; keyspace: string }[] = [];
  const celebrities = new Map<string, Promise<CelebrityServices>>();
  const connection = (requestTimeoutMs: number) => ({
    contactPoints: config.contactPoints,
    localDataCenter: config.localDataCenter,
    consistency: 'localQuorum' as const,
    requestTimeoutMs,
  });
  const keyspace = async (
    name: string,
    requestTimeoutMs = 30_000,
    exact = false,
    requestTracker?: RequestCounter,
  ) => {
    const client = await openMigratedKeyspace({
      ...connection(requestTimeoutMs),
      ...(requestTracker ? { requestTracker } : {}),
      keyspace: exact ? name : (config.keyspace ?? name),
      replication: { class: 'SimpleStrategy', replication_factor: 1 },
    });
    clients.push(client);
    return client;
  };
  const tty = process.stdout.isTTY;
  let lastProgress = 0;
  const resultPath = (name: string) => {
    mkdirSync(config.resultsDir, { recursive: true });
    return join(config.resultsDir, name);
  };
  const bench: Bench<typeof parsed.values> = {
    args: parsed.values,
    positionals: parsed.positionals,
    config,
    celebrity(followers, requestTimeoutMs, named) {
      const key = named ?? String(followers);
      let opened = celebrities.get(key);
      if (!opened) {
        const requests = new RequestCounter();
        opened = keyspace(
          named ?? keyspaceFor(followers),
          requestTimeoutMs,
          named !== undefined,
          requests,
        ).then((client) => celebrityServices(client, requests));
        celebrities.set(key, opened);
      }
      return opened;
    },
    keyspace: (name, requestTimeoutMs) => keyspace(name, requestTimeoutMs),
    async throwawayKeyspace(prefix, o = {}) {
      const name = config.keyspace ?? `${prefix}_${randomBytes(4).toString('hex')}`;
      const client = await keyspace(name, o.requestTimeoutMs);
      if (!o.keep && !config.keyspace) dropAtClose.push({ client, keyspace: name });
      return { client, keyspace: name };
    },
    async cql(requestTimeoutMs = 30_000) {
      const client = createCqlClient({
        ...connection(requestTimeoutMs),
        consistency: 'localOne',
      });
      await client.connect();
      clients.push(client);
      return client;
    },
    progress(line, final = false) {
      if (tty) {
        process.stdout.write(`\r\x1b[K${line}${final ? '\n' : ''}`);
        return;
      }
      const now = performance.now();
      if (final || now - lastProgress >= 5000) {
        lastProgress = now;
        console.log(line);
      }
    },
    writeResults: (base, json, svg, md) => writeResults(base, json, svg, md),
    async writeResultFile(name, text) {
      const path = resultPath(name);
      await writeFile(path, text);
      return shown(path);
    },
    resultPath,
    latestResult: (prefix, produce) => latestResult(prefix, produce),
    async close() {
      for (const { client, keyspace } of dropAtClose.splice(0)) {
        await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`, [], SCHEMA_CHANGE);
      }
      await Promise.all(clients.splice(0).map((c) => c.shutdown()));
    },
  };
  return bench;
}

/** The celebrity's id and the first follower id; follower i is `FIRST_FOLLOWER + i`. */
export const CELEBRITY = 7_000_000_000n;
export const FIRST_FOLLOWER = 8_000_000_000n;

/** One keyspace per loaded size, so 200k and 1M lists coexist and a rerun finds its own rows. */
export const keyspaceFor = (followers: number) => `bench_celeb_${followers}`;

/**
 * The service's store, list service and graph service over a celebrity keyspace: the default
 * thresholds, layouts cached for the whole run, no following cap in the way.
 */
export function celebrityServices(
  client: CqlClient,
  requests: RequestCounter,
  storeOptions: Pick<CassandraGraphStoreOptions, 'searchIndex'> = {},
): CelebrityServices {
  const hooks: CelebrityHooks = { onQuery: null, onPage: null };
  const store = new CassandraGraphStore(client, {
    ...storeOptions,
    onQuery: (name, seconds, ok) => hooks.onQuery?.(name, seconds, ok),
  });
  const lists = new BucketedListService({
    store,
    cursorSecret: 'bench-celebrity-cursor-secret',
    bucketThresholds: DEFAULT_THRESHOLDS,
    layoutCacheTtlMs: 3_600_000,
    onPage: (s) => hooks.onPage?.(s),
  });
  const graph = new GraphService({ store, lists, maxFollowing: 10_000_000 });
  return { client, store, lists, graph, hooks, requests };
}

export const loadAverage = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

/** The pid of the process listening on the first contact point (to read the JVM's CPU), or null. */
export function serverPid(): number | null {
  if (process.env.CASSANDRA_PID) return Number(process.env.CASSANDRA_PID);
  const [host, port] = (current.contactPoints[0] ?? '127.0.0.1:9042').split(':');
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

/**
 * CPU seconds of process `pid` and every live descendant, plus the children it already reaped
 * (`cutime`, `cstime`): a Postgres server with its backends, a JVM. NaN when `pid` is gone.
 */
export function treeCpuSeconds(pid: number): number {
  const stats = new Map<number, string[]>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      stats.set(Number(d), stat.slice(stat.lastIndexOf(')') + 2).split(' '));
    } catch {
      // gone while we looked
    }
  }
  const root = stats.get(pid);
  if (!root) return Number.NaN;
  const children = new Map<number, number[]>();
  for (const [p, f] of stats) {
    const parent = Number(f[1]);
    children.set(parent, [...(children.get(parent) ?? []), p]);
  }
  let ticksSum = Number(root[11]) + Number(root[12]) + Number(root[13]) + Number(root[14]);
  const walk = [...(children.get(pid) ?? [])];
  while (walk.length > 0) {
    const p = walk.pop() as number;
    const f = stats.get(p);
    if (f) ticksSum += Number(f[11]) + Number(f[12]);
    walk.push(...(children.get(p) ?? []));
  }
  return ticksSum / ticks;
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

/**
 * Runs `work(i)` for every i in [0, n) from `callers` concurrent callers (each takes the next
 * index when its last call ends); `onDone(done)` after each call, with how many have ended.
 */
export async function forEachIndex(
  n: number,
  callers: number,
  work: (i: number) => Promise<void>,
  onDone?: (done: number) => void,
): Promise<void> {
  let next = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: Math.min(callers, n) }, async () => {
      while (next < n) {
        await work(next++);
        onDone?.(++done);
      }
    }),
  );
}

/** p50 and p99 (ms) of `n` sequential calls of `call`. */
export async function sequentialLatency(call: () => Promise<unknown>, n: number) {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await call();
    times.push(performance.now() - t);
  }
  const s = sortedCopy(times);
  return { p50: percentile(s, 50), p99: percentile(s, 99) };
}

/** `n` calls of `call` spread over `callers` concurrent callers: calls per second, wall time and CPU (`cpuMeter`). */
export async function concurrentCalls(call: () => Promise<unknown>, n: number, callers: number) {
  const m = cpuMeter();
  let left = n;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (left-- > 0) await call();
    }),
  );
  const c = m();
  return { perS: n / c.wallS, ...c };
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

/** Writes `<name>-<time>.json`, `.svg` and `.md` under the results directory; returns the base path. */
export async function writeResults(name: string, json: unknown, svg: string, md: string): Promise<string> {
  const dir = current.resultsDir;
  await mkdir(dir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const base = join(dir, `${name}-${stamp}`);
  const replacer = (_: string, v: unknown) => (typeof v === 'bigint' ? v.toString() : v);
  await writeFile(`${base}.json`, `${JSON.stringify(json, replacer, 2)}\n`);
  await writeFile(`${base}.svg`, svg);
  await writeFile(`${base}.md`, md);
  return `${shown(base)}.{json,svg,md}`;
}

/**
 * The newest `<results>/<prefix>-*.json` (names carry an ISO stamp, so they sort by time),
 * parsed; throws with the command to run when there is none.
 */
export function latestResult<T>(prefix: string, produce: string): { file: string; json: T } {
  const dir = current.resultsDir;
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
  if (!file) throw new Error(`no ${shown(join(dir, `${prefix}-*.json`))}: run ${produce} first`);
  return {
    file: shown(join(dir, file)),
    json: JSON.parse(readFileSync(join(dir, file), 'utf8')) as T,
  };
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
