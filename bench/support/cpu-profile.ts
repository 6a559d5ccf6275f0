/**
 * What a server process's CPU was made of, from V8's sampling profiles (`node --cpu-prof`, one
 * `.cpuprofile` per process): self time by origin — a package (`npm:pg`, `npm:cassandra-driver`,
 * `npm:hono`), a room of ours (`src/graph`, `bench/peer`), Node's own modules (`node:…`), the
 * garbage collector, `(program)` (V8 and native code outside JavaScript) — and the top functions by
 * self time. Idle time (waiting on I/O) is reported apart and left out of the shares.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface CpuProfile {
  nodes: { id: number; callFrame: CallFrame }[];
  samples: number[];
  timeDeltas: number[];
}

const REPO = fileURLToPath(new URL('../../', import.meta.url));

/** The origin a frame's self time is charged to. */
export function originOf(f: CallFrame): string {
  if (!f.url) {
    if (f.functionName === '(garbage collector)') return '(garbage collector)';
    if (f.functionName === '(idle)') return '(idle)';
    return f.functionName.startsWith('(') ? f.functionName : '(native)';
  }
  const nm = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(f.url);
  if (nm) return `npm:${nm[1]}`;
  if (f.url.startsWith('node:')) return `node:${f.url.slice(5).split('/').slice(0, 2).join('/')}`;
  if (f.url.startsWith('file://')) {
    const rel = relative(REPO, fileURLToPath(f.url));
    const parts = rel.split('/');
    return parts.length > 2 ? `${parts[0]}/${parts[1]}` : (parts[0] ?? rel);
  }
  return f.url;
}

export interface ProfileSummary {
  processes: number;
  /** Sampled time that was not idle (ms), summed over the processes. */
  busyMs: number;
  idleMs: number;
  byOrigin: { origin: string; ms: number; pct: number }[];
  topFunctions: { fn: string; ms: number; pct: number }[];
}

/** Sums every `.cpuprofile` under `dir`. */
export async function summarizeProfiles(dir: string, top = 15): Promise<ProfileSummary> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile'));
  const byOrigin = new Map<string, number>();
  const byFn = new Map<string, number>();
  let idle = 0;
  let busy = 0;
  for (const file of files) {
    const p = JSON.parse(await readFile(join(dir, file), 'utf8')) as CpuProfile;
    const frames = new Map(p.nodes.map((n) => [n.id, n.callFrame]));
    for (let i = 0; i < p.samples.length; i++) {
      const f = frames.get(p.samples[i] as number);
      const us = p.timeDeltas[i] ?? 0;
      if (!f || us <= 0) continue;
      const origin = originOf(f);
      if (origin === '(idle)') {
        idle += us;
        continue;
      }
      busy += us;
      byOrigin.set(origin, (byOrigin.get(origin) ?? 0) + us);
      const where = f.url
        ? `${f.url.replace(/^file:\/\/.*?\/(src|bench|node_modules)\//, '$1/')}:${f.lineNumber + 1}`
        : '';
      const fn = `${f.functionName || '(anonymous)'} ${where}`.trim();
      byFn.set(fn, (byFn.get(fn) ?? 0) + us);
    }
  }
  const rows = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, us]) => ({
        k,
        ms: Math.round(us / 1000),
        pct: +((100 * us) / Math.max(busy, 1)).toFixed(1),
      }));
  return {
    processes: files.length,
    busyMs: Math.round(busy / 1000),
    idleMs: Math.round(idle / 1000),
    byOrigin: rows(byOrigin).map(({ k, ms, pct }) => ({ origin: k, ms, pct })),
    topFunctions: rows(byFn).map(({ k, ms, pct }) => ({ fn: k, ms, pct })),
  };
}

/** One report line: what `label`'s CPU was made of (the first `origins` origins and `functions` functions). */
export function describeProfile(
  p: ProfileSummary,
  label: string,
  o: { origins?: number; functions?: number } = {},
) {
  const origins = p.byOrigin
    .slice(0, o.origins ?? 12)
    .map((x) => `${x.origin} ${x.pct} %`)
    .join(', ');
  const functions = p.topFunctions
    .slice(0, o.functions ?? 12)
    .map((f) => `${f.fn} ${f.pct} %`)
    .join('; ');
  return `${label} CPU profile (${p.processes} process(es), ${p.busyMs} ms busy, ${p.idleMs} ms idle), self time by origin: ${origins}; top functions by self time: ${functions}`;
}
