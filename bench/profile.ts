/**
 * Profiles one bench run on both sides of the wire: the bench script's Node process with V8's
 * sampling profiler (`node --import tsx --cpu-prof`) and, over the same window, the Cassandra JVM
 * (`serverPid()`) with Java Flight Recorder (`jcmd <pid> JFR.start settings=profile`). The recording
 * stops when the script exits or after `--seconds`, whichever comes first; the script itself always
 * runs to its end (V8 writes the profile at exit). Then it summarizes:
 *   - Node: the top 25 functions by self time and the top 15 by total (inclusive) time, with
 *     repo-relative file:line (`(idle)` is time waiting on I/O, i.e. on Cassandra);
 *   - JVM (`jfr print`): the top 25 top-of-stack methods of `jdk.ExecutionSample`, the top 15
 *     first `org.apache.cassandra` frames (Cassandra's own hot spots under JDK/library leaves), the
 *     busiest threads (digits folded), GC pauses (`jdk.GarbageCollection`) and `jdk.CPULoad`.
 * The JVM serves every client of the node: other load in the window (a data load, compactions)
 * is in its samples too, which the thread table helps to tell apart.
 *
 * Writes <results>/profile-<out>-<time>/ (node.cpuprofile for Chrome DevTools or speedscope,
 * jvm.jfr for JDK Mission Control, summary.md) and prints summary.md.
 *
 *   npm run bench:profile -- [--seconds 30] [--out name] [--settings profile] -- <bench script> [args…]
 *   npm run bench:profile -- --seconds 40 --out t7 -- bench/celebrity-count.ts --followers 30000 --reps 1
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { SourceMap, type SourceMapPayload } from 'node:module';
import { cpus } from 'node:os';
import { join, relative } from 'node:path';
import { cpuMeter, loadAverage, markdownTable, openBench, SHARED_OPTIONS } from './support/harness.js';
import { jcmd, jvmTools, run } from './support/nodetool.js';

// ---- arguments: own and shared options up to `--` (or the first non-option), then the script.
const USAGE =
  'npm run bench:profile -- [--seconds 30] [--out name] [--settings profile] -- <script.ts> [args…]';
const OWN = {
  seconds: { type: 'string', default: '30' },
  out: { type: 'string', default: 'run' },
  settings: { type: 'string', default: 'profile' },
} as const;
const argv = process.argv.slice(2);
const takesValue = new Set(
  Object.entries({ ...SHARED_OPTIONS, ...OWN })
    .filter(([, o]) => o.type === 'string')
    .map(([name]) => `--${name}`),
);
let end = 0;
while (end < argv.length && argv[end] !== '--' && argv[end]!.startsWith('-')) {
  end += takesValue.has(argv[end]!) ? 2 : 1;
}
const bench = openBench({ usage: USAGE, options: OWN, argv: argv.slice(0, end) });
const opts = bench.args;
const [script, ...scriptArgs] = argv.slice(argv[end] === '--' ? end + 1 : end);
if (!script) {
  console.error(`usage: ${USAGE}`);
  process.exit(2);
}
const SECONDS = Number(opts.seconds);
const ROOT = process.cwd();
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const dir = bench.resultPath(`profile-${opts.out}-${stamp}`);
await mkdir(dir, { recursive: true });
const jfrFile = join(dir, 'jvm.jfr');
const notes: string[] = [];
const errMsg = (e: unknown) => (e instanceof Error ? e.message : String(e)).split('\n')[0];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Preloaded into the script's process: tsx compiles each .ts file to one line with an inline source
 * map, so V8's profile has every repo function at line 1. At exit (before V8 writes the profile)
 * this dumps the source maps of the repo's loaded .ts files, which step 3 maps the frames through.
 */
const SOURCE_MAP_HOOK = `
import { findSourceMap } from 'node:module';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
process.on('exit', () => {
  const maps = {};
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.name.startsWith('.') || e.name === 'node_modules' || e.name === 'results') continue;
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\\.[cm]?ts$/.test(e.name)) {
        const url = pathToFileURL(p).href;
        const m = findSourceMap(url);
        if (m) maps[url] = { ...m.payload, sourcesContent: undefined };
      }
    }
  };
  try {
    walk(process.cwd());
    writeFileSync(process.env.FLOCKLIST_PROFILE_SOURCEMAPS, JSON.stringify(maps));
  } catch {}
});
`;

// ---- 1. JFR on the server JVM, then the script under --cpu-prof.
const recording = `flocklist-${opts.out}-${process.pid}`;
let jvm: ReturnType<typeof jvmTools> | undefined;
try {
  jvm = jvmTools();
  await jcmd([
    'JFR.start',
    `name=${recording}`,
    `settings=${opts.settings}`,
    `duration=${SECONDS}s`,
    `filename=${jfrFile}`,
  ]);
} catch (e) {
  jvm = undefined;
  notes.push(`**no JVM recording**: ${errMsg(e)}`);
}
const jfrStarted = performance.now();
const meter = cpuMeter(jvm?.pid ?? null);
const load0 = loadAverage();
console.log(
  `[bench:profile] ${script} ${scriptArgs.join(' ')}: Node --cpu-prof${jvm ? `, JFR (${opts.settings}, ≤ ${SECONDS} s) on JVM ${jvm.pid}` : ''} → ${shortUrl(dir)}/`,
);
const sourceMapsFile = join(dir, 'sourcemaps.json');
const child = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    '--import',
    `data:text/javascript,${encodeURIComponent(SOURCE_MAP_HOOK)}`,
    '--cpu-prof',
    '--cpu-prof-dir',
    dir,
    script,
    ...scriptArgs,
  ],
  {
    stdio: 'inherit',
    env: {
      ...process.env,
      FLOCKLIST_PROFILE_SOURCEMAPS: sourceMapsFile,
      // The profiled bench talks to the same node and writes its results beside ours.
      CASSANDRA_CONTACT_POINTS: bench.config.contactPoints.join(','),
      CASSANDRA_LOCAL_DC: bench.config.localDataCenter,
      BENCH_RESULTS_DIR: bench.config.resultsDir,
    },
  },
);
const exitCode = await new Promise<number>((res) =>
  child.on('exit', (code, signal) => res(code ?? (signal ? 1 : 0))),
);
const childS = (performance.now() - jfrStarted) / 1000;
const span = meter();

// ---- 2. Stop the recording if it is still running, and wait for the file.
let jvmWindowS = Math.min(childS, SECONDS);
if (jvm) {
  try {
    const check = await jcmd(['JFR.check', `name=${recording}`]).catch(() => '');
    if (/\(running\)/.test(check)) {
      await jcmd(['JFR.stop', `name=${recording}`, `filename=${jfrFile}`]);
    } else {
      for (let k = 0; k < 120 && !existsSync(jfrFile); k++) await sleep(500);
      jvmWindowS = SECONDS;
    }
    if (!existsSync(jfrFile)) throw new Error(`${jfrFile} was not written`);
  } catch (e) {
    notes.push(`**JFR recording lost**: ${errMsg(e)}`);
    jvm = undefined;
  }
}

// ---- 3. Node: the .cpuprofile (the largest if the script started workers).
interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface CpuProfile {
  nodes: { id: number; callFrame: CallFrame; children?: number[] }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}
const pct = (x: number, of: number) => (of > 0 ? +((100 * x) / of).toFixed(1) : 0);
const ms = (us: number) => +(us / 1000).toFixed(1);

function shortUrl(url: string): string {
  if (!url) return '';
  const path = url.startsWith('file://') ? decodeURIComponent(new URL(url).pathname) : url;
  return path.startsWith(`${ROOT}/`) ? relative(ROOT, path) : path;
}

/** `url:line` of a frame, through the script's source maps where it has one (repo .ts files). */
function locator(maps: Record<string, SourceMapPayload>) {
  const cache = new Map<string, SourceMap | null>();
  return (f: CallFrame): string => {
    if (!f.url) return '';
    let sm = cache.get(f.url);
    if (sm === undefined) {
      const payload = maps[f.url];
      sm = payload ? new SourceMap(payload) : null;
      cache.set(f.url, sm);
    }
    const e = sm?.findEntry(Math.max(0, f.lineNumber), Math.max(0, f.columnNumber));
    if (e && 'originalLine' in e) return `${shortUrl(e.originalSource)}:${e.originalLine + 1}`;
    return `${shortUrl(f.url)}:${f.lineNumber + 1}`;
  };
}

function summarizeCpuProfile(p: CpuProfile, where: (f: CallFrame) => string) {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  let t = p.startTime;
  const at = p.timeDeltas.map((d) => {
    t += d;
    return t;
  });
  p.samples.forEach((id, k) => {
    const dur = Math.max(0, (at[k + 1] ?? p.endTime) - at[k]!);
    self.set(id, (self.get(id) ?? 0) + dur);
  });
  const key = (f: CallFrame) => `${f.functionName || '(anonymous)'}\t${where(f)}`;
  const selfBy = new Map<string, number>();
  const totalBy = new Map<string, number>();
  for (const [id, us] of self) {
    selfBy.set(key(byId.get(id)!.callFrame), (selfBy.get(key(byId.get(id)!.callFrame)) ?? 0) + us);
    const seen = new Set<string>();
    for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
      const f = byId.get(n)!.callFrame;
      if (f.functionName !== '(root)') seen.add(key(f));
    }
    for (const k of seen) totalBy.set(k, (totalBy.get(k) ?? 0) + us);
  }
  const totalUs = p.endTime - p.startTime;
  const idleUs = [...selfBy].filter(([k]) => k.startsWith('(idle)\t')).reduce((s, [, v]) => s + v, 0);
  const busyUs = totalUs - idleUs;
  const split = (k: string) => {
    const [fn, loc] = k.split('\t');
    return { function: fn, location: loc };
  };
  const selfRows = [...selfBy]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 25)
    .map(([k, us]) => ({
      ...split(k),
      self_ms: ms(us),
      'self_%': pct(us, totalUs),
      '%_of_busy': k.startsWith('(idle)\t') ? '' : pct(us, busyUs),
    }));
  const totalRows = [...totalBy]
    .filter(([k]) => !k.startsWith('(idle)\t') && !k.startsWith('(program)\t'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, 15)
    .map(([k, us]) => ({
      ...split(k),
      total_ms: ms(us),
      'total_%': pct(us, totalUs),
      '%_of_busy': pct(us, busyUs),
    }));
  return { totalUs, idleUs, busyUs, samples: p.samples.length, selfRows, totalRows };
}

const profiles = (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile'));
let nodeMd = '## Node (bench script)\n\nno .cpuprofile written (was the script killed by a signal?)\n';
let nodeSummary: ReturnType<typeof summarizeCpuProfile> | undefined;
if (profiles.length > 0) {
  const sized = await Promise.all(profiles.map(async (f) => ({ f, size: (await stat(join(dir, f))).size })));
  // CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile: the main thread is thread 0.
  const mainThread = (f: string) => (/\.(\d+)\.\d+\.cpuprofile$/.exec(f)?.[1] === '0' ? 1 : 0);
  sized.sort((a, b) => mainThread(b.f) - mainThread(a.f) || b.size - a.size);
  const main = sized[0]!.f;
  await rename(join(dir, main), join(dir, 'node.cpuprofile'));
  const maps = existsSync(sourceMapsFile) ? JSON.parse(await readFile(sourceMapsFile, 'utf8')) : {};
  if (!existsSync(sourceMapsFile)) notes.push('no source maps from the script: repo .ts frames show line 1');
  nodeSummary = summarizeCpuProfile(
    JSON.parse(await readFile(join(dir, 'node.cpuprofile'), 'utf8')),
    locator(maps),
  );
  const s = nodeSummary;
  nodeMd = [
    markdownTable(`Node: top ${s.selfRows.length} functions by self time`, s.selfRows, [
      `${s.samples} samples over ${(s.totalUs / 1e6).toFixed(1)} s; busy (not idle) ${(s.busyUs / 1e6).toFixed(1)} s = ${pct(s.busyUs, s.totalUs)}%${sized.length > 1 ? `; ${sized.length - 1} other thread profile(s) (tsx's loader thread, workers) left beside it` : ''}`,
    ]).replace(/^# /, '## '),
    markdownTable(`Node: top ${s.totalRows.length} functions by total (inclusive) time`, s.totalRows).replace(
      /^# /,
      '## ',
    ),
  ].join('\n');
}

// ---- 4. JVM: jfr print of the samples, GC and CPU load events.
interface JfrEvent {
  type: string;
  fields: Record<string, string>;
  frames: string[];
}

function parseJfrPrint(text: string): JfrEvent[] {
  const events: JfrEvent[] = [];
  let ev: JfrEvent | undefined;
  let inStack = false;
  for (const line of text.split('\n')) {
    const head = /^(jdk\.\w+) \{$/.exec(line);
    if (head) {
      ev = { type: head[1]!, fields: {}, frames: [] };
      inStack = false;
      continue;
    }
    if (!ev) continue;
    if (line === '}') {
      events.push(ev);
      ev = undefined;
    } else if (inStack) {
      const f = line.trim();
      if (f === ']') inStack = false;
      else if (f !== '...') ev.frames.push(f.replace(/\s+line: \d+$/, ''));
    } else {
      const m = /^ {2}(\w+) = (.*)$/.exec(line);
      if (m?.[1] === 'stackTrace' && m[2] === '[') inStack = true;
      else if (m) ev.fields[m[1]!] = m[2]!;
    }
  }
  return events;
}

/** `Class.method(params)` → `Class.method` (overloads merged). */
const method = (frame: string) => frame.replace(/\(.*$/, '');

/** A JFR duration (`12.3 ms`, `1.05 s`, `812 us`, `45 ns`) in milliseconds. */
function durationMs(v: string | undefined): number {
  const m = /^([\d.,]+)\s*(ns|us|µs|ms|s|m|min|h)\b/.exec(v ?? '');
  if (!m) return 0;
  const x = Number(m[1]!.replace(/,/g, ''));
  const unit: Record<string, number> = {
    ns: 1e-6,
    us: 1e-3,
    µs: 1e-3,
    ms: 1,
    s: 1e3,
    m: 6e4,
    min: 6e4,
    h: 3.6e6,
  };
  return x * (unit[m[2]!] ?? 0);
}

function countTop(keys: (string | undefined)[], n: number, total: number, label: string) {
  const counts = new Map<string, number>();
  for (const k of keys) if (k !== undefined) counts.set(k, (counts.get(k) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, c]) => ({ [label]: k, samples: c, '%': pct(c, total) }));
}

let jvmMd = '## JVM (Cassandra)\n\nno recording\n';
if (jvm) {
  const jfr = join(jvm.bin, 'jfr');
  const events = parseJfrPrint(
    await run(jfr, [
      'print',
      '--events',
      'jdk.ExecutionSample,jdk.GarbageCollection,jdk.CPULoad',
      '--stack-depth',
      '128',
      jfrFile,
    ]),
  );
  const samples = events.filter((e) => e.type === 'jdk.ExecutionSample' && e.frames.length > 0);
  const n = samples.length;
  const topFrames = countTop(
    samples.map((s) => method(s.frames[0]!)),
    25,
    n,
    'method (top of stack)',
  );
  const cassandraFrames = samples.map((s) => s.frames.find((f) => f.startsWith('org.apache.cassandra.')));
  const withCassandra = cassandraFrames.filter((f) => f !== undefined).length;
  const firstCassandra = countTop(
    cassandraFrames.map((f) => (f ? method(f) : undefined)),
    15,
    n,
    'first org.apache.cassandra frame',
  );
  const threads = countTop(
    samples.map((s) => (/^"(.*)"/.exec(s.fields.sampledThread ?? '')?.[1] ?? '?').replace(/\d+/g, 'N')),
    10,
    n,
    'thread (digits folded)',
  );
  const gcs = new Map<string, { count: number; pauseMs: number; longestMs: number }>();
  for (const e of events.filter((x) => x.type === 'jdk.GarbageCollection')) {
    const name = (e.fields.name ?? '?').replace(/"/g, '');
    const g = gcs.get(name) ?? { count: 0, pauseMs: 0, longestMs: 0 };
    g.count++;
    g.pauseMs += durationMs(e.fields.sumOfPauses);
    g.longestMs = Math.max(g.longestMs, durationMs(e.fields.longestPause));
    gcs.set(name, g);
  }
  const gcRows = [...gcs].map(([collector, g]) => ({
    collector,
    collections: g.count,
    pause_total_ms: +g.pauseMs.toFixed(1),
    longest_pause_ms: +g.longestMs.toFixed(1),
  }));
  const cpu = events.filter((e) => e.type === 'jdk.CPULoad');
  const avg = (f: string) =>
    cpu.length
      ? (cpu.reduce((s, e) => s + Number.parseFloat(e.fields[f] ?? '0'), 0) / cpu.length).toFixed(1)
      : '?';
  jvmMd = [
    markdownTable(`JVM: top ${topFrames.length} methods on top of the stack`, topFrames, [
      `${n} jdk.ExecutionSample events (threads running Java code, sampled by JFR "${opts.settings}") over ${jvmWindowS.toFixed(1)} s; ${pct(withCassandra, n)}% have an org.apache.cassandra frame`,
      `jdk.CPULoad average (share of all ${cpus().length} cores): JVM user ${avg('jvmUser')}%, JVM system ${avg('jvmSystem')}%, whole machine ${avg('machineTotal')}% (${cpu.length} readings)`,
    ]),
    markdownTable(
      `JVM: top ${firstCassandra.length} first org.apache.cassandra frames (from the top of the stack)`,
      firstCassandra,
    ),
    markdownTable(`JVM: busiest threads by samples`, threads),
    gcRows.length
      ? markdownTable('JVM: garbage collections in the window', gcRows)
      : '# JVM: garbage collections in the window\n\nnone\n',
  ]
    .join('\n')
    .replace(/^# /gm, '## ');
}

// ---- 5. summary.md
const md = `# bench:profile ${opts.out}

\`${script} ${scriptArgs.join(' ')}\` exited ${exitCode} after ${childS.toFixed(1)} s; ${jvm ? `JVM ${jvm.pid} recorded for ${jvmWindowS.toFixed(1)} s (JFR ${opts.settings})` : 'no JVM recording'}
JVM CPU over the script's run ${Number.isFinite(span.jvmCpuS) ? `${span.jvmCpuS.toFixed(1)} s (${((100 * span.jvmCpuS) / span.wallS).toFixed(0)}% of one core)` : '?'}; load average ${load0} → ${loadAverage()}
${notes.map((x) => `${x}\n`).join('')}
${nodeMd}
${jvmMd}`;
await writeFile(join(dir, 'summary.md'), md);
console.log(`\n${md}`);
console.log(`wrote ${shortUrl(dir)}/{summary.md,node.cpuprofile${jvm ? ',jvm.jfr' : ''}}`);
process.exit(exitCode);
