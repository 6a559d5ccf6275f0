/**
 * The floor plan, checked on every import of `src/`: `model ← ports ← store, lists ← graph ←
 * http, jobs ← app, services ← main, cli` (the server's and the jobs' entry points, on the top
 * floor). A module may import from its own room and from rooms on lower floors only;
 * rooms on one floor (store and lists, http and jobs) do not import each other. Every form of
 * import counts: `import … from`, `import type`, `export … from`, side-effect `import '…'` and
 * `import('…')`. Packages with a room of their own: the Cassandra driver only in
 * `store/cassandra/`, Hono only in `http/`. The dev launcher (`local-cassandra/`) is imported only
 * by entry points. Nothing in `src/` imports from outside it (the in-memory store and other test
 * support live in `test/`, which the build does not compile). The checker is a pure function over (file, specifier) pairs, so a planted
 * back-arrow is shown to fail it below, beside the check of the real tree.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../', import.meta.url).pathname;

/** Floor of each room (a folder under `src/`, or a top-level file). */
const FLOORS: Record<string, number> = {
  model: 0,
  'config.ts': 0,
  ports: 1,
  store: 2,
  lists: 2,
  graph: 3,
  http: 4,
  jobs: 4,
  'app.ts': 5,
  'services.ts': 5,
  'main.ts': 6,
  'worker.ts': 6,
  'cli.ts': 6,
  'local-cassandra': 6,
  'local-kafka': 6,
};

/**
 * Floors inside a room that has rooms of its own (a folder or a file directly under it), checked
 * the same way: `graph/`'s facade on top, over the builder of its parts, then its reads, its
 * accounts, the pair protocol, then the feed, the relays' lag and the caches (which do not import
 * each other), over the feed's rows, and at the bottom the contracts, the cursors and the tail's
 * reach. So the pair protocol never reaches up into accounts, reads or the facade.
 */
const INNER_FLOORS: Record<string, Record<string, number>> = {
  graph: {
    'contracts.ts': 0,
    'feed-cursor.ts': 0,
    'feed-tail.ts': 0,
    'lease.ts': 0,
    'feed-rows.ts': 1,
    'feed.ts': 2,
    'relay-lag.ts': 2,
    'traced-graph.ts': 2,
    caches: 2,
    pair: 3,
    'feed-intents.ts': 4,
    accounts: 4,
    reads: 5,
    'graph-parts.ts': 6,
    'graph-service.ts': 7,
  },
};

/** The dev launchers: imported only by entry points (and the Kafka one shares Cassandra's tools). */
const LAUNCHERS = new Set(['local-cassandra', 'local-kafka']);

/** Launcher modules another launcher may import: one Maven resolver, one orphan watch, one JVM supervisor. */
const SHARED_LAUNCHER_MODULES = new Set([
  'src/local-cassandra/maven.ts',
  'src/local-cassandra/orphan-watch.ts',
  'src/local-cassandra/supervisor.ts',
]);

/** Entry points: processes start here; they may import any room, the dev launcher included. */
const ENTRY_POINTS = new Set([
  'src/main.ts',
  'src/worker.ts',
  'src/cli.ts',
  'src/local-cassandra/cli.ts',
  'src/local-cassandra/cluster-cli.ts',
  'src/local-kafka/cli.ts',
]);

/** Packages confined to one room (path prefix under `src/`). */
const CONFINED: Record<string, string[]> = {
  'cassandra-driver': ['src/store/cassandra/'],
  hono: ['src/http/', 'src/app.ts'],
  '@hono/node-server': ['src/http/', 'src/main.ts'],
  '@opentelemetry/api': ['src/http/'],
  '@opentelemetry/sdk-trace-node': ['src/http/'],
  '@opentelemetry/exporter-trace-otlp-http': ['src/http/'],
  '@opentelemetry/resources': ['src/http/'],
  '@hono/zod-openapi': ['src/http/', 'src/app.ts'],
  '@hono/swagger-ui': ['src/http/', 'src/app.ts'],
};

const IMPORT =
  /(?:^|[\n;])\s*(?:import|export)\b(?:[^;'"`]*?\bfrom\s*)?\s*'([^']+)'|\bimport\(\s*'([^']+)'\s*\)/g;

function specifiers(source: string): string[] {
  return [...source.matchAll(IMPORT)].map((m) => (m[1] ?? m[2]) as string);
}

function room(file: string): string {
  const rel = relative('src', file).replace(/\.js$/, '.ts');
  return rel.includes('/') ? (rel.split('/')[0] as string) : rel;
}

/** The room inside `room(file)` (its folder or file one level down), e.g. `pair` for `src/graph/pair/x.ts`. */
function innerRoom(file: string): string {
  return relative('src', file).replace(/\.js$/, '.ts').split('/')[1] ?? '';
}

/** Every import of `file` (a path like `src/graph/x.ts`) that breaks the floor plan, as a sentence. */
function violations(file: string, specs: readonly string[]): string[] {
  const out: string[] = [];
  const from = room(file);
  const floor = FLOORS[from];
  if (floor === undefined) return [`${file}: room ${from} has no floor (add it to FLOORS)`];
  for (const spec of specs) {
    if (spec.startsWith('.')) {
      const target = normalize(join(dirname(file), spec));
      if (!target.startsWith('src/')) {
        out.push(`${file} → ${spec}: src/ imports outside src/`);
        continue;
      }
      const to = room(target);
      const inner = INNER_FLOORS[from];
      if (to === from && inner) {
        const [a, b] = [innerRoom(file), innerRoom(target)];
        if (a === b) continue;
        const [fa, fb] = [inner[a], inner[b]];
        if (fa === undefined || fb === undefined) {
          out.push(`${file} → ${spec}: room ${from}/${fa === undefined ? a : b} has no floor`);
        } else if (fb >= fa) {
          out.push(`${file} → ${spec}: ${from}/${a} (floor ${fa}) imports ${from}/${b} (floor ${fb})`);
        }
        continue;
      }
      if (to === from) continue;
      if (LAUNCHERS.has(from) && SHARED_LAUNCHER_MODULES.has(target.replace(/\.js$/, '.ts'))) continue;
      const toFloor = FLOORS[to];
      if (toFloor === undefined) {
        out.push(`${file} → ${spec}: room ${to} has no floor`);
      } else if (LAUNCHERS.has(to) && !ENTRY_POINTS.has(file)) {
        out.push(`${file} → ${spec}: the dev launcher is for entry points only`);
      } else if (toFloor >= floor && !ENTRY_POINTS.has(file)) {
        out.push(`${file} → ${spec}: ${from} (floor ${floor}) imports ${to} (floor ${toFloor})`);
      }
    } else {
      const pkg = spec.startsWith('@')
        ? spec.split('/').slice(0, 2).join('/')
        : (spec.split('/')[0] as string);
      const allowed = CONFINED[pkg];
      if (allowed && !allowed.some((p) => file.startsWith(p)))
        out.push(`${file} → ${spec}: ${pkg} outside its room`);
    }
  }
  return out;
}

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

describe('the floor plan: model ← ports ← store, lists ← graph ← http, jobs ← main, cli', () => {
  it('every import of src/ runs down the floors, and each confined package stays in its room', () => {
    const files = sources('src');
    expect(files.length).toBeGreaterThan(50);
    const found = files.flatMap((f) => violations(f, specifiers(readFileSync(join(ROOT, f), 'utf8'))));
    expect(found).toEqual([]);
  });

  it('reads every form of import', () => {
    const source = [
      "import { a } from './a.js';",
      "import type { B } from '../b.js';",
      "import {\n  c,\n  type D,\n} from '../c/d.js';",
      "export { e } from './e.js';",
      "export type { F } from './f.js';",
      "export * from './g.js';",
      "import './h.js';",
      "const i = await import('./i.js');",
      "import cassandra from 'cassandra-driver';",
      "const s = 'from \\'./not-an-import.js\\'';",
    ].join('\n');
    expect(specifiers(source)).toEqual([
      './a.js',
      '../b.js',
      '../c/d.js',
      './e.js',
      './f.js',
      './g.js',
      './h.js',
      './i.js',
      'cassandra-driver',
    ]);
  });

  it('fails on planted back-arrows of every kind', () => {
    expect(violations('src/model/types.ts', ['../graph/pair/pair-fold.js'])).toEqual([
      'src/model/types.ts → ../graph/pair/pair-fold.js: model (floor 0) imports graph (floor 3)',
    ]);
    expect(violations('src/ports/graph-store.ts', ['../store/cassandra/graph-store.js'])).toEqual([
      'src/ports/graph-store.ts → ../store/cassandra/graph-store.js: ports (floor 1) imports store (floor 2)',
    ]);
    expect(
      violations('src/store/cassandra/graph-store.ts', [
        '../../../test/support/memory/graph-store.js',
        '../../../bench/harness.js',
      ]),
    ).toEqual([
      'src/store/cassandra/graph-store.ts → ../../../test/support/memory/graph-store.js: src/ imports outside src/',
      'src/store/cassandra/graph-store.ts → ../../../bench/harness.js: src/ imports outside src/',
    ]);
    expect(violations('src/lists/list-service.ts', ['../store/cassandra/graph-store.js'])).toEqual([
      'src/lists/list-service.ts → ../store/cassandra/graph-store.js: lists (floor 2) imports store (floor 2)',
    ]);
    expect(violations('src/graph/pair/x.ts', ['../../http/errors.js', '../../jobs/repair.js'])).toEqual([
      'src/graph/pair/x.ts → ../../http/errors.js: graph (floor 3) imports http (floor 4)',
      'src/graph/pair/x.ts → ../../jobs/repair.js: graph (floor 3) imports jobs (floor 4)',
    ]);
    expect(
      violations('src/graph/pair/write-path.ts', [
        '../reads/edge-reads.js',
        '../accounts/accounts.js',
        '../graph-service.js',
        '../nowhere/x.js',
      ]),
    ).toEqual([
      'src/graph/pair/write-path.ts → ../reads/edge-reads.js: graph/pair (floor 3) imports graph/reads (floor 5)',
      'src/graph/pair/write-path.ts → ../accounts/accounts.js: graph/pair (floor 3) imports graph/accounts (floor 4)',
      'src/graph/pair/write-path.ts → ../graph-service.js: graph/pair (floor 3) imports graph/graph-service.ts (floor 7)',
      'src/graph/pair/write-path.ts → ../nowhere/x.js: room graph/nowhere has no floor',
    ]);
    expect(violations('src/graph/caches/graph-caches.ts', ['../feed.js'])).toEqual([
      'src/graph/caches/graph-caches.ts → ../feed.js: graph/caches (floor 2) imports graph/feed.ts (floor 2)',
    ]);
    expect(violations('src/graph/accounts/accounts.ts', ['../reads/reads.js'])).toEqual([
      'src/graph/accounts/accounts.ts → ../reads/reads.js: graph/accounts (floor 4) imports graph/reads (floor 5)',
    ]);
    expect(violations('src/jobs/repair.ts', ['../http/auth.js', '../local-cassandra/node.js'])).toEqual([
      'src/jobs/repair.ts → ../http/auth.js: jobs (floor 4) imports http (floor 4)',
      'src/jobs/repair.ts → ../local-cassandra/node.js: the dev launcher is for entry points only',
    ]);
    expect(
      violations('src/jobs/commands/relay.ts', ['../../services.js', '../../cli.js', '../../main.js']),
    ).toEqual([
      'src/jobs/commands/relay.ts → ../../services.js: jobs (floor 4) imports services.ts (floor 5)',
      'src/jobs/commands/relay.ts → ../../cli.js: jobs (floor 4) imports cli.ts (floor 6)',
      'src/jobs/commands/relay.ts → ../../main.js: jobs (floor 4) imports main.ts (floor 6)',
    ]);
    expect(violations('src/jobs/relay.ts', ['../local-kafka/broker.js'])).toEqual([
      'src/jobs/relay.ts → ../local-kafka/broker.js: the dev launcher is for entry points only',
    ]);
    expect(violations('src/local-kafka/broker.ts', ['../local-cassandra/node.js'])).toEqual([
      'src/local-kafka/broker.ts → ../local-cassandra/node.js: the dev launcher is for entry points only',
    ]);
    expect(
      violations('src/local-kafka/broker.ts', [
        '../local-cassandra/maven.js',
        '../local-cassandra/orphan-watch.js',
      ]),
    ).toEqual([]);
    expect(violations('src/graph/x.ts', ['cassandra-driver', 'hono/http-exception'])).toEqual([
      'src/graph/x.ts → cassandra-driver: cassandra-driver outside its room',
      'src/graph/x.ts → hono/http-exception: hono outside its room',
    ]);
    // Down the floors, within a room, and entry points: no violation.
    expect(
      violations('src/graph/reads/x.ts', [
        './edge-reads.js',
        '../accounts/account-state.js',
        '../pair/pair-fold.js',
        '../caches/graph-caches.js',
        '../contracts.js',
        '../../lists/contracts.js',
        '../../ports/graph-store.js',
        '../../model/types.js',
      ]),
    ).toEqual([]);
    expect(violations('src/main.ts', ['./local-cassandra/node.js', './jobs/reconcile.js', 'hono'])).toEqual([
      'src/main.ts → hono: hono outside its room',
    ]);
    expect(
      violations('src/cli.ts', ['./services.js', './local-cassandra/node.js', './jobs/commands/repair.js']),
    ).toEqual([]);
  });
});
