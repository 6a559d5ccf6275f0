/**
 * M1 and M2 from two `bench:mixed` results: ours (`mixed-*.json`) and the Postgres peer's
 * (`mixed-peer-*.json`), run with the same clients, mix and sizes. M1 is throughput ours ÷ the
 * peer's; M2 per operation p99 ours ÷ the peer's (and p50 beside it); also database requests and
 * CPU milliseconds per op of each party. Writes `mixed-compare-<time>.{json,svg,md}` (the chart:
 * the p99 ratio per op against the target line of 2).
 *
 *   npm run bench:mixed-compare -- <ours.json> <peer.json>
 *   npm run bench:mixed-compare -- latest     # the newest of each under the results directory
 *   npm run bench:mixed-compare -- latest --against-ours   # the bench smoke: our newest on both sides
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { barChartSvg } from './support/charts.js';
import { markdownTable, openBench } from './support/harness.js';

const USAGE = 'npm run bench:mixed-compare -- <ours.json> <peer.json> | latest [--against-ours]';
const bench = openBench({
  usage: USAGE,
  options: { 'against-ours': { type: 'boolean', default: false } },
  allowPositionals: true,
});
interface MixedResult {
  when: string;
  seed: number;
  params: { clients: number; instances: number | null; system?: string; users: number; celebrity: number };
  opsPerSecond: number;
  rows: { op: string; count: number; p50_ms: number; p99_ms: number }[];
  dbRequests: { perOp: number | null };
  cpu?: Record<string, { msPerOp: number; coresBusy: number } | null>;
}
const [oursArg, peerArg] = bench.positionals;
let ours: { file: string; json: MixedResult };
let peer: { file: string; json: MixedResult };
const read = (file: string) => ({ file, json: JSON.parse(readFileSync(file, 'utf8')) as MixedResult });
/** The newest result whose file name matches `re`, or exit 2 naming the command to run. */
const latest = (re: RegExp, produce: string) => {
  const dir = bench.config.resultsDir;
  const name = readdirSync(dir)
    .filter((f) => re.test(f))
    .sort()
    .at(-1);
  if (!name) {
    console.error(`no result like ${re} in ${dir}: run ${produce} first`);
    process.exit(2);
  }
  return read(join(dir, name));
};
if (oursArg === 'latest') {
  ours = latest(/^mixed-\d{4}-.*\.json$/, 'npm run bench:mixed');
  // --against-ours (the smoke, where no peer runs): our newest result on both sides, ratios of 1.
  peer = bench.args['against-ours']
    ? ours
    : latest(/^mixed-peer-\d{4}-.*\.json$/, 'npm run bench:mixed -- --peer');
} else if (oursArg && peerArg) {
  ours = read(oursArg);
  peer = read(peerArg);
} else {
  console.error(`usage: ${USAGE}`);
  process.exit(2);
}
const a = ours.json;
const b = peer.json;
if (
  a.params.clients !== b.params.clients ||
  a.params.users !== b.params.users ||
  a.params.celebrity !== b.params.celebrity
)
  console.log(
    'warning: the two runs differ in clients, users or celebrity size; the ratios compare unlike runs',
  );
const r3 = (x: number) => +x.toFixed(3);
const m1 = r3(a.opsPerSecond / b.opsPerSecond);
const rows = a.rows
  .map((x) => {
    const y = b.rows.find((z) => z.op === x.op);
    return y
      ? {
          op: x.op,
          ours_p99_ms: x.p99_ms,
          peer_p99_ms: y.p99_ms,
          p99_ratio: r3(x.p99_ms / y.p99_ms),
          p50_ratio: r3(x.p50_ms / y.p50_ms),
          ours_count: x.count,
          peer_count: y.count,
        }
      : null;
  })
  .filter((x) => x !== null);
const cpu = (r: MixedResult) =>
  Object.entries(r.cpu ?? {})
    .map(([k, v]) => `${k} ${v ? `${v.msPerOp} ms/op (${v.coresBusy} cores)` : 'n/a'}`)
    .join(', ');
const result = {
  when: new Date().toISOString(),
  ours: ours.file,
  peer: peer.file,
  clients: a.params.clients,
  m1,
  opsPerSecond: { ours: a.opsPerSecond, peer: b.opsPerSecond },
  dbRequestsPerOp: { ours: a.dbRequests.perOp, peer: b.dbRequests.perOp },
  rows,
  missesM2: rows.filter((r) => r.p99_ratio > 2).map((r) => r.op),
};
const md = markdownTable(`M1/M2: bench:mixed ours ÷ the Postgres peer (${a.params.clients} clients)`, rows, [
  `ours ${ours.file} (${a.when}, seed ${a.seed}); peer ${peer.file} (${b.when}, seed ${b.seed})`,
  `**M1 ${m1}** (${a.opsPerSecond} ÷ ${b.opsPerSecond} ops/s); database requests per op ${a.dbRequests.perOp} ÷ ${b.dbRequests.perOp}`,
  `CPU per op — ours: ${cpu(a)}; peer: ${cpu(b)}`,
  `M2 (p99 ÷ peer ≤ 2) missed by: ${result.missesM2.join(', ') || 'none'}`,
]);
console.log(md);
console.log(
  `wrote ${await bench.writeResults(
    'mixed-compare',
    result,
    barChartSvg(
      `M2: p99 per op, Flocklist ÷ Postgres peer (${a.params.clients} clients; target ≤ 2); M1 ${m1}`,
      rows.map((r) => r.op),
      [
        { name: 'p99 ÷ peer', values: rows.map((r) => r.p99_ratio) },
        { name: 'p50 ÷ peer', values: rows.map((r) => r.p50_ratio) },
      ],
      '×',
    ),
    md,
  )}`,
);
