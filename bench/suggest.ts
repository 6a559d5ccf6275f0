/**
 * `npm run bench:suggest -- [--users 100000] [--edges 10000000] [--seed 42] [--top 100]
 * [--limit-fanout 5000]`: time and peak RSS of the suggestion *computation*.
 *
 * Loading 10M follow rows into the shared Cassandra node on this 2-core machine is not practical,
 * so the snapshot is a generated in-process stream of `(user, other)` follow rows in pages, fed to
 * the same `FollowSnapshotBuilder` the job's token-range scan feeds, then every user is scored by
 * the same `topCandidates` call the job makes (k = top + 16, the job's over-fetch). Left out: the
 * scan's reads, the per-user store exclusions (requests/blocks point reads) and the writes.
 *
 * Graph (seeded, power-law-ish): out-degree Pareto (α = 2, x_min = 50, capped at 7500), scaled so
 * the rows total exactly `--edges`; each target drawn by popularity rank `⌊n·U^2.5⌋` over a seeded
 * permutation (a few accounts are followed by a large share of everyone). Duplicate rows and self
 * follows are dropped by the builder, as the job's would be.
 */
import { FollowSnapshotBuilder, SuggestionScratch, topCandidates } from '../src/jobs/suggest.js';
import { mulberry32 } from '../test/support/random.js';
import { openBench } from './support/harness.js';

const bench = openBench({
  usage:
    'npm run bench:suggest -- [--users 100000] [--edges 10000000] [--seed 42] [--top 100] [--limit-fanout 5000]',
  options: {
    users: { type: 'string', default: '100000' },
    edges: { type: 'string', default: '10000000' },
    seed: { type: 'string', default: '42' },
    top: { type: 'string', default: '100' },
    'limit-fanout': { type: 'string', default: '5000' },
  },
});
const args = bench.args;
const n = Number(args.users);
const m = Number(args.edges);
const top = Number(args.top);
const limitFanout = Number(args['limit-fanout']);
const random = mulberry32(Number(args.seed));
console.log(
  `[bench:suggest] seed ${args.seed}, ${n} users, ${m} follow rows, top ${top}, limit-fanout ${limitFanout}`,
);

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;
const peakRss = () => process.resourceUsage().maxRSS * 1024;
const rssBefore = peakRss();

// Out-degrees: Pareto(α = 2, x_min = 50) capped at 7500, scaled to total exactly m.
const deg = new Float64Array(n);
let total = 0;
for (let u = 0; u < n; u++) {
  deg[u] = Math.min(7500, 50 / Math.sqrt(1 - random()));
  total += deg[u] as number;
}
const outDeg = new Int32Array(n);
let assigned = 0;
for (let u = 0; u < n; u++) {
  outDeg[u] = Math.max(1, Math.floor(((deg[u] as number) * m) / total));
  assigned += outDeg[u] as number;
}
for (let u = 0; assigned < m; u = (u + 1) % n, assigned++) outDeg[u] = (outDeg[u] as number) + 1;
for (let u = 0; assigned > m; u = (u + 1) % n) {
  if ((outDeg[u] as number) > 1) {
    outDeg[u] = (outDeg[u] as number) - 1;
    assigned--;
  }
}
// Popularity: a seeded permutation of the users; rank r is drawn as ⌊n·U^2.5⌋.
const byRank = new Int32Array(n).map((_, i) => i);
for (let i = n - 1; i > 0; i--) {
  const j = Math.floor(random() * (i + 1));
  [byRank[i], byRank[j]] = [byRank[j] as number, byRank[i] as number];
}
const idOf = (i: number) => 10_000_000_000n + BigInt(i) * 7n;

const t0 = performance.now();
const builder = new FollowSnapshotBuilder();
const PAGE = 5000;
let page: [bigint, bigint][] = [];
const flush = () => {
  for (const [a, b] of page) builder.add(a, b);
  page = [];
};
for (let u = 0; u < n; u++) {
  const uid = idOf(u);
  for (let k = 0; k < (outDeg[u] as number); k++) {
    page.push([uid, idOf(byRank[Math.floor(n * random() ** 2.5)] as number)]);
    if (page.length === PAGE) flush();
  }
}
flush();
const g = builder.build();
const buildMs = performance.now() - t0;
const rssAfterBuild = peakRss();
let maxDeg = 0;
let hubs = 0;
for (let u = 0; u < g.n; u++) {
  const d = (g.offsets[u + 1] as number) - (g.offsets[u] as number);
  if (d > maxDeg) maxDeg = d;
  if (d > limitFanout) hubs++;
}
console.log(
  `[bench:suggest] snapshot: ${g.n} users, ${g.m} distinct follows (max following ${maxDeg}, ${hubs} over the fan-out limit) built in ${(buildMs / 1000).toFixed(1)} s; peak RSS ${mb(rssAfterBuild)}`,
);

const excluded = new Uint8Array(g.n);
const scratch = new SuggestionScratch(g.n);
const t1 = performance.now();
let items = 0;
let checksum = 0;
for (let u = 0; u < g.n; u++) {
  if (g.offsets[u] === g.offsets[u + 1]) continue;
  const c = topCandidates(g, u, top + 16, limitFanout, excluded, scratch);
  items += Math.min(top, c.length);
  if (c[0]) checksum += c[0].score;
  if (u % 20000 === 0 && u > 0)
    console.log(
      `[bench:suggest] ${u}/${g.n} users scored, ${((performance.now() - t1) / 1000).toFixed(1)} s`,
    );
}
const computeMs = performance.now() - t1;
console.log(
  `[bench:suggest] computed ${items} suggestions for ${g.n} users in ${(computeMs / 1000).toFixed(1)} s ` +
    `(${((computeMs * 1000) / g.n).toFixed(0)} µs/user); checksum ${checksum.toFixed(3)}`,
);
console.log(
  `[bench:suggest] total ${((buildMs + computeMs) / 1000).toFixed(1)} s; peak RSS ${mb(peakRss())} (before the snapshot ${mb(rssBefore)})`,
);
