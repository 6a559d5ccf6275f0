/**
 * Acceptance walk (at 9M run once by hand; CI walks the smoke's 200 followers): the whole loaded
 * celebrity list (`npm run bench:load` first) through
 * `GET /v1/users/{celebrity}/followers?limit=200`, following `next_cursor` (sent back as
 * `cursor=`) until it is null, with real HTTP requests over loopback to the app served in this
 * process (`support/app-server.ts`), one at a time. Every item is checked with bounded memory:
 * it must be a loaded follower (`FIRST_FOLLOWER + i`, i < F, with the username `bench:load` gave it,
 * `usernameFor(id)`, which a page takes from the list row) not seen before (a
 * bitmap of F bits: 1.1 MB at 9M), strictly after the previous item in the list's order
 * (`followed_at` descending, then id descending), so F items and no mismatch prove every follower
 * exactly once, in order — also after `bench:count` has moved 1% of them to the top by refollowing.
 *
 * Prints progress every 5 s; reports wall time, pages, items, page latency p50/p99/max (request to
 * parsed JSON, one slot per page in a Float64Array sized to the expected page count), peak RSS,
 * Node CPU (client and server: one process) and JVM CPU, and a chart of page latency against depth
 * (~200 bins, p50 and p99 of each). A 503 or a failed connection is retried (up to 5 times, 1 s
 * apart, counted); any other status ends the walk. Exit code 0 only for F items in order.
 *
 * W: the walk at limit 200 over the 9M list, wall time (target ≤ 300 s).
 *
 * Q (`--count-queries`; run it at `--limit 50`): after every page the walk reads
 * `GET /metrics` and takes the difference of `flocklist_db_query_duration_seconds_count` per
 * statement name (`op`): every database request the page made, each a single-partition read
 * (list buckets and directory, user rows, the visibility checks' rows). Statements the app issues
 * on its own (the change feed's tail poll, `readEvents`, which the deactivation registry follows;
 * any op seen while no request runs, in a 2 s idle window before the walk) are reported apart and
 * not counted against the page. Reports per page p50 / p99 / max of the total, the per-op mean and
 * max, and the pages of the worst count. The scrape is outside the timed request, so page latency
 * is unchanged, but the walk takes longer.
 *
 *   npm run bench:walk -- [--followers 9000000] [--limit 200] [--count-queries]
 */
import { startCelebrityApp } from './support/app-server.js';
import { lineChartSvg } from './support/charts.js';
import {
  CELEBRITY,
  cpuMeter,
  FIRST_FOLLOWER,
  loadAverage,
  markdownTable,
  openBench,
  peakRssMiB,
  percentile,
  sortedCopy,
} from './support/harness.js';
import { usernameFor } from './support/usernames.js';

const bench = openBench({
  usage: 'npm run bench:walk -- [--followers 9000000] [--limit 200] [--count-queries]',
  options: {
    followers: { type: 'string', default: '9000000' },
    limit: { type: 'string', default: '200' },
    'count-queries': { type: 'boolean', default: false },
  },
});
const args = bench.args;
const F = Number(args.followers);
const LIMIT = Number(args.limit);
const COUNT_QUERIES = Boolean(args['count-queries']);
const EXPECTED_PAGES = Math.max(1, Math.ceil(F / LIMIT));
/** One empty last page is allowed; far beyond that the cursor chain is broken (a cycle): stop. */
const MAX_PAGES = EXPECTED_PAGES * 2 + 10;
const MAX_RETRIES = 5;
const SHOWN_MISMATCHES = 5;

interface WirePage {
  items: { id: string; username: string; followed_at: string }[];
  next_cursor: string | null;
}

const loadAtStart = loadAverage();
const app = await startCelebrityApp(bench, F);
const viewer = FIRST_FOLLOWER;
const headers = { authorization: `Bearer ${app.token(viewer)}` };
const base = `${app.url}/v1/users/${CELEBRITY}/followers?limit=${LIMIT}`;

/** Statement counts per op from `/metrics` (`flocklist_db_query_duration_seconds_count`, outcomes summed). */
async function queryCounts(): Promise<Map<string, number>> {
  const text = await (await fetch(`${app.url}/metrics`)).text();
  const counts = new Map<string, number>();
  for (const m of text.matchAll(/^flocklist_db_query_duration_seconds_count\{([^}]*)\} (\d+)/gm)) {
    const op = /op="([^"]*)"/.exec(m[1]!)?.[1] ?? '?';
    counts.set(op, (counts.get(op) ?? 0) + Number(m[2]));
  }
  return counts;
}
const diff = (after: Map<string, number>, before: Map<string, number>) =>
  new Map([...after].map(([op, n]) => [op, n - (before.get(op) ?? 0)] as const).filter(([, n]) => n > 0));
/** Ops the app issues by itself (see the module note), found in an idle window. */
const background = new Set<string>(['readEvents']);
let lastCounts = new Map<string, number>();
if (COUNT_QUERIES) {
  // One page first, so the deactivation registry has loaded and the feed's tail runs.
  await fetch(`${base.replace(`limit=${LIMIT}`, 'limit=1')}`, { headers }).then((r) => r.text());
  const before = await queryCounts();
  await new Promise((r) => setTimeout(r, 2000));
  lastCounts = await queryCounts();
  for (const op of diff(lastCounts, before).keys()) background.add(op);
  console.log(`Q: background ops (not counted per page): ${[...background].join(', ')}`);
}
/** Per page: statements counted against it (Q); per op: total and max over pages. */
const pageQueries = new Uint16Array(COUNT_QUERIES ? EXPECTED_PAGES + 1 : 0);
const opTotals = new Map<string, { total: number; max: number }>();
const backgroundTotals = new Map<string, number>();

const latencies = new Float64Array(EXPECTED_PAGES + 1);
let pages = 0;
let items = 0;
let mismatches = 0;
let retries = 0;
const firstMismatches: string[] = [];
const seen = new Uint8Array(Math.ceil(F / 8));
let prev: { at: string; id: bigint } | null = null;
let failure: string | null = null;

/** One page: the parsed body and its latency, retrying 503s and connection failures. */
async function getPage(url: string): Promise<{ body: WirePage; ms: number }> {
  for (let attempt = 0; ; attempt++) {
    const t = performance.now();
    try {
      const res = await fetch(url, { headers });
      if (res.status === 200) {
        const body = (await res.json()) as WirePage;
        return { body, ms: performance.now() - t };
      }
      const text = await res.text();
      if (res.status !== 503 || attempt >= MAX_RETRIES)
        throw new Error(`HTTP ${res.status}: ${text.slice(0, 300)}`);
      console.warn(`HTTP 503 at page ${pages + 1}; retrying`);
    } catch (e) {
      if ((e as Error).message.startsWith('HTTP ') || attempt >= MAX_RETRIES) throw e;
      console.warn(`request failed at page ${pages + 1} (${(e as Error).message}); retrying`);
    }
    retries++;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

const fmtS = (s: number) =>
  s >= 3600
    ? `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`
    : s >= 60
      ? `${Math.floor(s / 60)}m${String(Math.round(s % 60)).padStart(2, '0')}s`
      : `${s.toFixed(0)}s`;
const rssMiB = () => (process.memoryUsage.rss() / 2 ** 20).toFixed(0);

console.log(
  `walking ${F} followers of ${CELEBRITY} at limit ${LIMIT} (expect ${EXPECTED_PAGES} pages) via ${app.url}; load average ${loadAtStart}`,
);
const meter = cpuMeter();
const t0 = performance.now();
let lastProgress = t0;
try {
  let cursor: string | null = null;
  do {
    if (pages >= MAX_PAGES) throw new Error(`more than ${MAX_PAGES} pages: the cursor chain does not end`);
    const url = cursor === null ? base : `${base}&cursor=${encodeURIComponent(cursor)}`;
    const { body, ms } = await getPage(url);
    if (pages < latencies.length) latencies[pages] = ms;
    pages++;
    for (const item of body.items) {
      const id = BigInt(item.id);
      const i = Number(id - FIRST_FOLLOWER);
      const inRange = i >= 0 && i < F;
      const dup = inRange && (seen[i >>> 3]! & (1 << (i & 7))) !== 0;
      // Newest first: followed_at descending (RFC 3339, six fraction digits, Z: compares as text),
      // ties by id descending.
      const ordered =
        prev === null || item.followed_at < prev.at || (item.followed_at === prev.at && id < prev.id);
      if (!inRange || dup || !ordered || item.username !== usernameFor(id)) {
        mismatches++;
        if (firstMismatches.length < SHOWN_MISMATCHES) {
          const why = !inRange
            ? 'not a loaded follower'
            : dup
              ? 'seen before'
              : !ordered
                ? 'out of order'
                : 'username';
          const m = `item ${items} (page ${pages}): ${item.id} ${item.username} ${item.followed_at}: ${why}`;
          firstMismatches.push(m);
          console.warn(`MISMATCH ${m}`);
        }
      }
      if (inRange) seen[i >>> 3]! |= 1 << (i & 7);
      prev = { at: item.followed_at, id };
      items++;
    }
    if (COUNT_QUERIES) {
      const counts = await queryCounts();
      let total = 0;
      for (const [op, n] of diff(counts, lastCounts)) {
        if (background.has(op)) {
          backgroundTotals.set(op, (backgroundTotals.get(op) ?? 0) + n);
          continue;
        }
        total += n;
        const t = opTotals.get(op) ?? { total: 0, max: 0 };
        t.total += n;
        t.max = Math.max(t.max, n);
        opTotals.set(op, t);
      }
      if (pages - 1 < pageQueries.length) pageQueries[pages - 1] = Math.min(total, 65_535);
      lastCounts = counts;
    }
    cursor = body.next_cursor;
    const now = performance.now();
    if (now - lastProgress >= 5000) {
      lastProgress = now;
      const rate = items / ((now - t0) / 1000);
      console.log(
        `${pages} pages, ${items} items, ${rate.toFixed(0)} items/s, ETA ${fmtS(Math.max(0, F - items) / rate)}, RSS ${rssMiB()} MiB` +
          (mismatches ? `, ${mismatches} mismatches` : ''),
      );
    }
  } while (cursor !== null);
} catch (e) {
  failure = (e as Error).message;
}
const wallS = (performance.now() - t0) / 1000;
const cpu = meter();
await app.close();

const recorded = latencies.subarray(0, Math.min(pages, latencies.length));
const sorted = sortedCopy(Array.from(recorded));
const ms = (p: number) => +percentile(sorted, p).toFixed(3);
const latency = {
  pages: recorded.length,
  p50: ms(50),
  p99: ms(99),
  max: ms(100),
  mean: +(recorded.reduce((s, x) => s + x, 0) / Math.max(1, recorded.length)).toFixed(3),
};
const BINS = Math.min(200, recorded.length);
const p50ByDepth: [number, number][] = [];
const p99ByDepth: [number, number][] = [];
for (let b = 0; b < BINS; b++) {
  const from = Math.floor((b * recorded.length) / BINS);
  const to = Math.floor(((b + 1) * recorded.length) / BINS);
  const bin = sortedCopy(Array.from(recorded.subarray(from, to)));
  p50ByDepth.push([from * LIMIT, +percentile(bin, 50).toFixed(3)]);
  p99ByDepth.push([from * LIMIT, +percentile(bin, 99).toFixed(3)]);
}

const qPages = pageQueries.subarray(0, Math.min(pages, pageQueries.length));
const qSorted = sortedCopy(Array.from(qPages));
const queries = COUNT_QUERIES
  ? {
      pages: qPages.length,
      p50: percentile(qSorted, 50),
      p99: percentile(qSorted, 99),
      max: percentile(qSorted, 100),
      mean: +(qSorted.reduce((a, x) => a + x, 0) / Math.max(1, qSorted.length)).toFixed(3),
      /** The first pages (1-based) with the largest count. */
      worstPages: Array.from(qPages.entries())
        .filter(([, n]) => n === percentile(qSorted, 100))
        .slice(0, 5)
        .map(([k]) => k + 1),
      byOp: Object.fromEntries(
        [...opTotals].map(([op, t]) => [
          op,
          {
            perPageMean: +(t.total / Math.max(1, qPages.length)).toFixed(3),
            max: t.max,
            total: t.total,
          },
        ]),
      ),
      background: Object.fromEntries(backgroundTotals),
    }
  : null;
if (queries) {
  console.log(
    `Q: statements per page p50 ${queries.p50} p99 ${queries.p99} max ${queries.max} (mean ${queries.mean}) over ${queries.pages} pages; by op ${JSON.stringify(queries.byOp)}; background ${JSON.stringify(queries.background)}`,
  );
}
const ok = failure === null && items === F && mismatches === 0;
const verdict = ok
  ? `WALK OK: ${F} followers in order in ${wallS.toFixed(1)} s`
  : `WALK FAILED: ${failure ?? `${items} items of ${F}, ${mismatches} mismatches`} after ${pages} pages in ${wallS.toFixed(1)} s`;
const results = {
  when: new Date().toISOString(),
  node: process.version,
  params: {
    followers: F,
    limit: LIMIT,
    viewer,
    contactPoints: bench.config.contactPoints,
    expectedPages: EXPECTED_PAGES,
  },
  ok,
  verdict,
  failure,
  wallS: +wallS.toFixed(3),
  pages,
  items,
  itemsPerS: +(items / wallS).toFixed(1),
  mismatches,
  firstMismatches,
  retries,
  latencyMs: latency,
  queries,
  peakRssMiB: +peakRssMiB().toFixed(1),
  cpu: { nodeCpuS: +cpu.nodeCpuS.toFixed(3), jvmCpuS: +cpu.jvmCpuS.toFixed(3) },
  loadAverage: { start: loadAtStart, end: loadAverage() },
  latencyByDepth: {
    binPages: recorded.length / Math.max(1, BINS),
    p50: p50ByDepth,
    p99: p99ByDepth,
  },
};
const svg = lineChartSvg(
  `Walk of ${F} followers at limit ${LIMIT}: page latency by depth (${BINS} bins)`,
  [
    { name: 'p50 of bin', points: p50ByDepth },
    { name: 'p99 of bin', points: p99ByDepth },
  ],
  { x: 'depth (item offset)', y: 'page latency (ms)' },
);
const md = markdownTable(
  `bench:walk — ${F} followers through GET /v1/users/{id}/followers?limit=${LIMIT}`,
  [
    {
      result: ok ? 'OK' : 'FAILED',
      'wall s': results.wallS,
      pages,
      items,
      'items/s': results.itemsPerS,
      mismatches,
      retries,
      'p50 ms': latency.p50,
      'p99 ms': latency.p99,
      'max ms': latency.max,
      ...(queries
        ? {
            'Q statements/page p50': queries.p50,
            'Q p99': queries.p99,
            'Q max': queries.max,
          }
        : {}),
      'peak RSS MiB': results.peakRssMiB,
      'Node CPU s': results.cpu.nodeCpuS,
      'JVM CPU s': results.cpu.jvmCpuS,
    },
  ],
  [
    `${results.when}, Node ${results.node}; load average ${loadAtStart} at start, ${results.loadAverage.end} at end.`,
    `Real HTTP over loopback, one request at a time, viewer ${viewer}; each item checked: a loaded follower (${FIRST_FOLLOWER} + i, i < ${F}), not seen before (bitmap), after the previous item in (followed_at, id) descending order, username usernameFor(id) (bench/support/usernames.ts).`,
    ...(queries
      ? [
          `Q: database statements per page from /metrics (flocklist_db_query_duration_seconds_count by op, background ops ${Object.keys(queries.background).join(', ') || 'none'} excluded): p50 ${queries.p50}, p99 ${queries.p99}, max ${queries.max} (first worst pages ${queries.worstPages.join(', ')}); by op ${JSON.stringify(queries.byOp)}`,
        ]
      : []),
    'Page latency: request sent to JSON parsed. Node CPU covers client and server (one process).',
    verdict,
    ...firstMismatches.map((m) => `- ${m}`),
  ],
);
console.log(
  `${pages} pages, ${items} items, ${mismatches} mismatches, ${retries} retries in ${wallS.toFixed(1)} s; page p50 ${latency.p50} ms p99 ${latency.p99} ms max ${latency.max} ms; peak RSS ${results.peakRssMiB} MiB; CPU node ${results.cpu.nodeCpuS} s JVM ${results.cpu.jvmCpuS} s`,
);
console.log(
  `results: ${await bench.writeResults(`walk-${F}${COUNT_QUERIES ? '-queries' : ''}`, results, svg, md)}`,
);
console.log(verdict);
process.exitCode = ok ? 0 : 1;
