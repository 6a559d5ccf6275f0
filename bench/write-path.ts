/**
 * Write-path benchmark: follow latency (p50/p99) and sustained follows/s through `GraphService`
 * on the real node, with 1 and 32 concurrent callers, and the cost of the dual write: the edge
 * batch (forward row, inverse row, both list rows) as a LOGGED vs an UNLOGGED batch, measured side
 * by side in one run.
 *
 * Fairness on a shared node: each (callers, mode) cell is measured in short segments in repeated
 * ABBA order (logged, unlogged, unlogged, logged; `--rounds` times), so drift in background load
 * hits both modes alike; the load average is recorded with the results. Every
 * follow is a fresh pair, so each one is a real transition (history read, append, re-read, edge
 * batch, two counter increments, a size read for the list service).
 *
 *   npm run bench:write -- [--follows 2000] [--users 300] [--callers 1,32] [--rounds 4]
 *
 * Writes `<results>/write-path-<time>.{json,svg,md}`. Uses its own keyspace (dropped at the end
 * unless `--keep`); `--contact-points` or `CASSANDRA_CONTACT_POINTS` picks the node.
 */
import { loadavg } from 'node:os';
import { GraphService } from '../src/graph/graph-service.js';
import { BucketedListService } from '../src/lists/list-service.js';
import { CassandraGraphStore } from '../src/store/cassandra/graph-store.js';
import { markdownTable, openBench } from './support/harness.js';

type Mode = 'logged' | 'unlogged';

interface Cell {
  callers: number;
  mode: Mode;
  follows: number;
  seconds: number;
  followsPerSecond: number;
  followMs: { p50: number; p99: number; mean: number };
  batchMs: { p50: number; p99: number };
}

const bench = openBench({
  usage: 'npm run bench:write -- [--follows 2000] [--users 300] [--callers 1,32] [--rounds 4]',
  options: {
    follows: { type: 'string', default: '2000' },
    users: { type: 'string', default: '300' },
    callers: { type: 'string', default: '1,32' },
    rounds: { type: 'string', default: '4' },
    keep: { type: 'boolean', default: false },
  },
});
const args = bench.args;
const FOLLOWS = Number(args.follows);
const USERS = Number(args.users);
const CALLERS = (args.callers ?? '1,32').split(',').map(Number);
const ROUNDS = Number(args.rounds);

const { contactPoints } = bench.config;
const progress = (line: string) => bench.progress(line);

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] as number;
}

async function main() {
  const { client, keyspace } = await bench.throwawayKeyspace('bench_write', { keep: args.keep });
  const loadStart = loadavg();
  console.log(
    `keyspace ${keyspace} on ${contactPoints.join(',')}; load average ${loadStart.map((x) => x.toFixed(2)).join(' ')}`,
  );

  const batchTimes: Record<Mode, number[]> = { logged: [], unlogged: [] };
  const services = {} as Record<Mode, GraphService>;
  for (const mode of ['logged', 'unlogged'] as const) {
    const store = new CassandraGraphStore(client, {
      batchMode: mode,
      onQuery: (name, seconds) => {
        if (name === 'writeEdges') batchTimes[mode].push(seconds * 1000);
      },
    });
    const lists = new BucketedListService({
      store,
      cursorSecret: 'bench-write-path-secret',
      bucketThresholds: [50_000, 200_000, 400_000],
    });
    services[mode] = new GraphService({ store, lists, maxFollowing: 10_000_000 });
  }

  const users = Array.from({ length: USERS }, (_, i) => BigInt(i + 1));
  let made = 0;
  await Promise.all(
    Array.from({ length: 16 }, async (_, w) => {
      for (let i = w; i < users.length; i += 16) {
        await services.logged.putUser({ id: users[i] as bigint, username: `bench${i}` });
        if (++made % 25 === 0 || made === users.length) progress(`loading users ${made}/${users.length}`);
      }
    }),
  );
  process.stdout.write('\n');

  // Every follow a fresh ordered pair: actor i follows target i + k (mod USERS) for growing k.
  let nextPair = 0;
  const takePair = (): [bigint, bigint] => {
    const n = nextPair++;
    const actor = n % USERS;
    const k = 1 + Math.floor(n / USERS);
    if (k >= USERS) throw new Error('out of fresh pairs: raise --users');
    return [users[actor] as bigint, users[(actor + k) % USERS] as bigint];
  };

  const warm = Math.min(200, FOLLOWS);
  for (let i = 0; i < warm; i++) {
    const [a, b] = takePair();
    await services[i % 2 ? 'unlogged' : 'logged'].follow(a, b);
  }
  batchTimes.logged.length = 0;
  batchTimes.unlogged.length = 0;

  const cells: Cell[] = [];
  for (const callers of CALLERS) {
    const acc: Record<Mode, { lat: number[]; batch: number[]; seconds: number; follows: number }> = {
      logged: { lat: [], batch: [], seconds: 0, follows: 0 },
      unlogged: { lat: [], batch: [], seconds: 0, follows: 0 },
    };
    const order = Array.from(
      { length: ROUNDS },
      () => ['logged', 'unlogged', 'unlogged', 'logged'] as const,
    ).flat();
    for (const [seg, mode] of order.entries()) {
      const graph = services[mode];
      const quota = Math.ceil(FOLLOWS / (2 * ROUNDS));
      batchTimes[mode].length = 0;
      let done = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: callers }, async () => {
          while (done < quota) {
            done++;
            const [a, b] = takePair();
            const t0 = performance.now();
            await graph.follow(a, b);
            acc[mode].lat.push(performance.now() - t0);
            if (acc[mode].lat.length % 50 === 0)
              progress(`callers=${callers} segment ${seg + 1}/${order.length} (${mode}) ${done}/${quota}`);
          }
        }),
      );
      acc[mode].seconds += (performance.now() - started) / 1000;
      acc[mode].follows += done;
      acc[mode].batch.push(...batchTimes[mode]);
    }
    for (const mode of ['logged', 'unlogged'] as const) {
      const lat = [...acc[mode].lat].sort((x, y) => x - y);
      const batch = [...acc[mode].batch].sort((x, y) => x - y);
      cells.push({
        callers,
        mode,
        follows: acc[mode].follows,
        seconds: acc[mode].seconds,
        followsPerSecond: acc[mode].follows / acc[mode].seconds,
        followMs: {
          p50: percentile(lat, 0.5),
          p99: percentile(lat, 0.99),
          mean: lat.reduce((s, x) => s + x, 0) / lat.length,
        },
        batchMs: { p50: percentile(batch, 0.5), p99: percentile(batch, 0.99) },
      });
    }
  }
  process.stdout.write('\n');

  const table = [
    [
      'callers',
      'batch',
      'follows',
      'follow p50 ms',
      'follow p99 ms',
      'follows/s',
      'batch p50 ms',
      'batch p99 ms',
    ],
    ...cells.map((c) => [
      String(c.callers),
      c.mode,
      String(c.follows),
      c.followMs.p50.toFixed(2),
      c.followMs.p99.toFixed(2),
      c.followsPerSecond.toFixed(0),
      c.batchMs.p50.toFixed(2),
      c.batchMs.p99.toFixed(2),
    ]),
  ];
  const widths = table[0]?.map((_, i) => Math.max(...table.map((r) => (r[i] ?? '').length))) ?? [];
  for (const row of table) console.log(row.map((v, i) => v.padStart(widths[i] ?? 0)).join('  '));
  console.log(
    `load average now ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')} (shared node: compare modes within a run)`,
  );
  for (const callers of CALLERS) {
    const l = cells.find((c) => c.callers === callers && c.mode === 'logged');
    const u = cells.find((c) => c.callers === callers && c.mode === 'unlogged');
    if (l && u)
      console.log(
        `callers=${callers}: LOGGED costs ${(l.followMs.p50 - u.followMs.p50).toFixed(2)} ms at p50 per follow ` +
          `(batch p50 ${l.batchMs.p50.toFixed(2)} vs ${u.batchMs.p50.toFixed(2)} ms), ` +
          `throughput ${((l.followsPerSecond / u.followsPerSecond - 1) * 100).toFixed(1)}%`,
      );
  }

  const meta = {
    keyspace,
    contactPoints,
    users: USERS,
    followsPerCell: FOLLOWS,
    callers: CALLERS,
    at: new Date(),
  };
  const written = await bench.writeResults(
    'write-path',
    { meta, cells },
    chart(cells),
    markdownTable(
      `bench:write (${FOLLOWS} follows per cell, ${USERS} users)`,
      cells.map((c) => ({ ...c })),
      [
        `at ${meta.at.toISOString()}, load average ${loadavg()
          .map((x) => x.toFixed(2))
          .join(' ')}`,
      ],
    ),
  );
  console.log(`wrote ${written}`);
  await bench.close();
}

/** Two panels of grouped bars: follow latency (p50, p99 per callers) and follows/s per callers. */
function chart(cells: readonly Cell[]): string {
  const colors: Record<Mode, string> = { logged: '#3366cc', unlogged: '#ff9933' };
  const W = 420;
  const H = 260;
  const pad = { l: 50, r: 10, t: 30, b: 40 };
  const panel = (
    x0: number,
    title: string,
    groups: { label: string; values: Record<Mode, number> }[],
    unit: string,
  ): string => {
    const max = Math.max(...groups.flatMap((g) => [g.values.logged, g.values.unlogged]), 1) * 1.15;
    const iw = W - pad.l - pad.r;
    const ih = H - pad.t - pad.b;
    const gw = iw / groups.length;
    const bw = gw / 3;
    const y = (v: number) => pad.t + ih - (v / max) * ih;
    let out = `<g transform="translate(${x0},0)"><text x="${W / 2}" y="18" text-anchor="middle" font-weight="bold">${title}</text>`;
    out += `<line x1="${pad.l}" y1="${pad.t + ih}" x2="${W - pad.r}" y2="${pad.t + ih}" stroke="#333"/>`;
    out += `<line x1="${pad.l}" y1="${pad.t}" x2="${pad.l}" y2="${pad.t + ih}" stroke="#333"/>`;
    for (let i = 0; i <= 4; i++) {
      const v = (max / 4) * i;
      out += `<text x="${pad.l - 4}" y="${y(v) + 4}" text-anchor="end" font-size="10">${v.toFixed(v < 10 ? 1 : 0)}</text>`;
    }
    out += `<text x="12" y="${pad.t + ih / 2}" font-size="10" transform="rotate(-90 12 ${pad.t + ih / 2})" text-anchor="middle">${unit}</text>`;
    groups.forEach((g, i) => {
      const gx = pad.l + i * gw + bw / 2;
      (['logged', 'unlogged'] as const).forEach((m, j) => {
        const v = g.values[m];
        out += `<rect x="${gx + j * bw}" y="${y(v)}" width="${bw - 2}" height="${pad.t + ih - y(v)}" fill="${colors[m]}"><title>${m}: ${v.toFixed(2)} ${unit}</title></rect>`;
        out += `<text x="${gx + j * bw + bw / 2}" y="${y(v) - 3}" font-size="9" text-anchor="middle">${v.toFixed(v < 10 ? 2 : 0)}</text>`;
      });
      out += `<text x="${gx + bw}" y="${pad.t + ih + 14}" font-size="10" text-anchor="middle">${g.label}</text>`;
    });
    return `${out}</g>`;
  };
  const by = (callers: number, f: (c: Cell) => number) => {
    const pick = (m: Mode) => {
      const c = cells.find((x) => x.callers === callers && x.mode === m);
      return c ? f(c) : 0;
    };
    return { logged: pick('logged'), unlogged: pick('unlogged') };
  };
  const callers = [...new Set(cells.map((c) => c.callers))];
  const latency = callers.flatMap((n) => [
    { label: `p50 ×${n}`, values: by(n, (c) => c.followMs.p50) },
    { label: `p99 ×${n}`, values: by(n, (c) => c.followMs.p99) },
  ]);
  const throughput = callers.map((n) => ({
    label: `${n} caller${n > 1 ? 's' : ''}`,
    values: by(n, (c) => c.followsPerSecond),
  }));
  const legend = (['logged', 'unlogged'] as const)
    .map(
      (m, i) =>
        `<rect x="${20 + i * 130}" y="${H + 6}" width="12" height="12" fill="${colors[m]}"/><text x="${36 + i * 130}" y="${H + 16}" font-size="11">${m.toUpperCase()} batch</text>`,
    )
    .join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W * 2}" height="${H + 26}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
${panel(0, 'follow latency (ms)', latency, 'ms')}
${panel(W, 'sustained follows/s', throughput, 'follows/s')}
${legend}
</svg>
`;
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
