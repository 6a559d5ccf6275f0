/**
 * `npm run migrate`, `npm run jobs -- reconcile --users 1,2` and `npm run jobs -- repair --users
 * 1,2`: the schema migration, the count reconciliation and the pair repair as commands, printing
 * progress as they go and a summary at the end. All are safe to re-run. `jobs relay` runs until
 * stopped (see `relay.ts`).
 */
import { parseArgs } from 'node:util';
import type { EventFeed } from '../graph/contracts.js';
import type { RelayCursorStore } from '../ports/store.js';
import { reconcileUsers } from './reconcile.js';
import { reconcileDirty } from './reconcile-dirty.js';
import { repairUsers } from './repair.js';
import { DRIFT_KINDS, repairSweep, type SweepProgressEvent } from './repair-sweep.js';
import { type OpenJobRuntime, parseUserIds } from './runtime.js';

export async function reconcileCommand(argv: string[], openRuntime: OpenJobRuntime): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { users: { type: 'string' } } });
  const users = parseUserIds(values.users, 'usage: jobs reconcile --users 1,2,3');
  const rt = await openRuntime();
  try {
    const results = await reconcileUsers(rt.store, users, {
      onProgress: (done, total, r) => {
        if (r.counted > 0 || r.drift !== 0)
          console.log(
            `[reconcile] ${done}/${total} ${r.list.userId} ${r.list.relation}/${r.list.direction}: counted ${r.counted}, drift ${r.drift}`,
          );
      },
    });
    const drifted = results.filter((r) => r.drift !== 0);
    const total = drifted.reduce((s, r) => s + Math.abs(r.drift), 0);
    console.log(
      `[reconcile] ${results.length} lists, ${drifted.length} drifted, total |drift| ${total}, now exact`,
    );
  } finally {
    await rt.close();
  }
}

export async function reconcileDirtyCommand(_argv: string[], openRuntime: OpenJobRuntime): Promise<void> {
  const rt = await openRuntime();
  try {
    const r = await reconcileDirty(rt.store, {
      onList: (l) =>
        console.log(
          `[reconcile-dirty] ${l.list.userId} ${l.list.relation}/${l.list.direction}: ${l.recounted.length} buckets recounted, count ${l.counted}, drift ${l.drift}`,
        ),
    });
    console.log(
      `[reconcile-dirty] ${r.lists} lists, ${r.buckets} buckets, ${r.rows} rows counted, total |drift| ${r.absDrift}, ${r.deferred} marks deferred`,
    );
  } finally {
    await rt.close();
  }
}

export async function repairCommand(argv: string[], openRuntime: OpenJobRuntime): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { users: { type: 'string' } } });
  const users = parseUserIds(values.users, 'usage: jobs repair --users 1,2,3');
  const rt = await openRuntime();
  try {
    const results = await repairUsers({ store: rt.store, lists: rt.lists }, users, {
      onProgress: (done, total) => {
        if (done % 100 === 0 || done === total) console.log(`[repair] ${done}/${total} pairs`);
      },
    });
    console.log(`[repair] ${results.length} pairs re-folded and rewritten`);
  } finally {
    await rt.close();
  }
}

export async function migrateCommand(_argv: string[], openRuntime: OpenJobRuntime): Promise<void> {
  const rt = await openRuntime();
  console.log('[schema] up to date');
  await rt.close();
}

/** A progress line: a bar on a TTY (rewritten in place), plain lines every few seconds otherwise. */
function progressPrinter(label: string, line: (e: SweepProgressEvent) => string) {
  const tty = process.stdout.isTTY;
  let lastPlain = 0;
  let done = false;
  return {
    update(e: SweepProgressEvent) {
      const pct = Math.min(1, e.fraction);
      const eta = pct > 0 ? ((e.elapsedMs / pct - e.elapsedMs) / 1000).toFixed(0) : '?';
      const text = `${(pct * 100).toFixed(1)}% ${line(e)} ETA ${eta}s`;
      if (tty) {
        const width = 24;
        const bar = '#'.repeat(Math.round(pct * width)).padEnd(width, '.');
        process.stdout.write(`\r[${label}] [${bar}] ${text}\u001b[K`);
      } else if (!done && (e.elapsedMs - lastPlain >= 2000 || pct >= 1)) {
        done = pct >= 1;
        lastPlain = e.elapsedMs;
        console.log(`[${label}] ${text}`);
      }
    },
    end() {
      if (tty) process.stdout.write('\n');
    },
  };
}

export async function repairSweepCommand(argv: string[], openRuntime: OpenJobRuntime): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'dry-run': { type: 'boolean', default: false },
      resume: { type: 'boolean', default: false },
      rate: { type: 'string' },
      ranges: { type: 'string' },
      'max-pages': { type: 'string' },
    },
  });
  const num = (v: string | undefined, name: string) => {
    if (v === undefined) return undefined;
    if (!/^[1-9]\d{0,9}$/.test(v)) {
      console.error(
        `usage: jobs repair-sweep [--dry-run] [--rate N] [--resume] (--${name} must be a positive integer)`,
      );
      process.exit(2);
    }
    return Number(v);
  };
  const rate = num(values.rate, 'rate');
  const ranges = num(values.ranges, 'ranges');
  const maxPages = num(values['max-pages'], 'max-pages');
  const rt = await openRuntime();
  const progress = progressPrinter('repair-sweep', (e) => {
    const f = e.totals.findings;
    return `rows ${e.totals.rows}, findings ${DRIFT_KINDS.map((k) => `${k} ${f[k]}`).join(' ')}`;
  });
  try {
    const r = await repairSweep(
      { store: rt.store, lists: rt.lists },
      {
        dryRun: values['dry-run'],
        resume: values.resume,
        rate,
        ranges,
        maxPages,
        onProgress: (e) => progress.update(e),
      },
    );
    progress.end();
    for (const s of r.samples.slice(0, 50)) console.log(`[repair-sweep] ${s.kind}: ${s.what}`);
    console.log(
      `[repair-sweep] ${r.complete ? 'complete' : 'stopped (resume with --resume)'}${r.dryRun ? ' (dry run)' : ''}: ` +
        `${r.rows} rows, ${r.pages} pages; ${DRIFT_KINDS.map((k) => `${k} ${r.findings[k]}`).join(', ')}; ` +
        `${r.repairedPairs} pairs repaired, ${r.markedDirty} list buckets marked dirty for the reconciler`,
    );
  } finally {
    await rt.close();
  }
}

export const MIGRATE_COUNTS_USAGE = 'usage: jobs migrate-counts (--all | --users 1,2) [--page N]';

/**
 * `jobs migrate-counts`: recounts every list with counts into the account tables and then sets
 * the marker that moves counts reads onto them (`migrate-counts.ts`); a line per page, re-run it
 * to resume. `--users` recounts only those accounts' lists and leaves the marker alone.
 */
export async function migrateCountsCommand(argv: string[], openRuntime: OpenJobRuntime): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      all: { type: 'boolean', default: false },
      users: { type: 'string' },
      page: { type: 'string' },
    },
  });
  const fail = (): never => {
    console.error(MIGRATE_COUNTS_USAGE);
    process.exit(2);
  };
  if (values.all === (values.users !== undefined)) fail();
  if (values.page !== undefined && !/^[1-9]\d{0,4}$/.test(values.page)) fail();
  const users = values.users === undefined ? null : parseUserIds(values.users, MIGRATE_COUNTS_USAGE);
  const m = await import('./migrate-counts.js');
  const rt = await openRuntime();
  const name = (l: { userId: bigint; relation: string; direction: string }) =>
    `${l.userId} ${l.relation}/${l.direction}`;
  try {
    if (users) {
      const r = await m.migrateCountsOfUsers(rt.store, users, {
        onList: (l, n) => console.log(`[migrate-counts] ${name(l)}: counted ${n}`),
      });
      console.log(`[migrate-counts] ${r.lists} lists recounted (${r.rows} rows); the marker is unchanged`);
      return;
    }
    const started = performance.now();
    const r = await m.migrateCounts(rt.store, {
      ...(values.page ? { pageSize: Number(values.page) } : {}),
      onPage: (p) => {
        const s = (performance.now() - started) / 1000;
        console.log(
          `[migrate-counts] ${p.table} up to token ${p.lastToken}: ${p.totals.lists} lists recounted, ${p.totals.skipped} skipped, ${p.totals.rows} rows (${Math.round(p.totals.rows / s)} rows/s)`,
        );
      },
    });
    console.log(
      r.alreadyDone
        ? '[migrate-counts] already finished: counts are read from the account tables'
        : `[migrate-counts] done: ${r.lists} lists recounted, ${r.skipped} skipped, ${r.rows} rows; counts are read from the account tables (each instance within 30 s)`,
    );
  } finally {
    await rt.close();
  }
}

export async function suggestCommand(argv: string[], openRuntime: OpenJobRuntime): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { top: { type: 'string', default: '100' }, 'limit-fanout': { type: 'string', default: '5000' } },
  });
  const ok = (v: string) => /^[1-9]\d{0,6}$/.test(v);
  if (!ok(values.top) || !ok(values['limit-fanout']) || Number(values.top) > 100) {
    console.error('usage: jobs suggest [--top 1..100] [--limit-fanout N]');
    process.exit(2);
  }
  const { runSuggestions } = await import('./suggest.js');
  const rt = await openRuntime();
  try {
    const r = await runSuggestions(rt.store, {
      top: Number(values.top),
      limitFanout: Number(values['limit-fanout']),
      log: (line) => console.log(`[suggest] ${line}`),
    });
    console.log(
      `[suggest] ${r.users} users, ${r.edges} follow edges, ${r.written} suggestion sets written, ${r.skippedHubs} hubs over the fan-out limit skipped; scan ${r.scanMs} ms, compute+write ${r.computeMs} ms`,
    );
  } finally {
    await rt.close();
  }
}

export const RELAY_USAGE =
  'usage: jobs relay --brokers HOST:PORT[,HOST:PORT] --topic NAME [--name relay] [--batch 1..1000] [--until-idle]';

/**
 * `jobs relay`: the settled change feed to a Kafka topic (`relay.ts`), until SIGTERM/SIGINT (or,
 * with `--until-idle`, until the feed has nothing more), with a progress line every 5 s.
 */
export async function relayCommand(argv: string[], openRuntime: OpenJobRuntime): Promise<void> {
  const args = parseRelayArgs(argv);
  const rt = await openRuntime();
  try {
    await relayWith(args, { feed: rt.feed, cursors: rt.store });
  } finally {
    await rt.close();
  }
}

/** `jobs relay`'s options, parsed. */
export interface RelayArgs {
  brokers: string[];
  topic: string;
  name: string;
  batch: number;
  untilIdle: boolean;
}

/** Parses `jobs relay`'s options; exits 2 with the usage line when they are missing or malformed. */
export function parseRelayArgs(argv: string[]): RelayArgs {
  const { values } = parseArgs({
    args: argv,
    options: {
      brokers: { type: 'string' },
      topic: { type: 'string' },
      name: { type: 'string', default: 'relay' },
      batch: { type: 'string', default: '500' },
      'until-idle': { type: 'boolean', default: false },
    },
  });
  const batch = Number(values.batch);
  if (
    !values.brokers ||
    !/^[^\s,:]+:\d+(,[^\s,:]+:\d+)*$/.test(values.brokers) ||
    !values.topic ||
    !/^[\w.-]{1,249}$/.test(values.topic) ||
    !/^[\w.-]{1,100}$/.test(values.name) ||
    !Number.isInteger(batch) ||
    batch < 1 ||
    batch > 1000
  ) {
    console.error(RELAY_USAGE);
    process.exit(2);
  }
  return {
    brokers: values.brokers.split(','),
    topic: values.topic,
    name: values.name,
    batch,
    untilIdle: values['until-idle'],
  };
}

/** The relay command on a given feed and cursor store (the CLI's, or a test's). */
export async function relayWith(
  args: RelayArgs,
  deps: { feed: EventFeed; cursors: Pick<RelayCursorStore, 'getRelayCursor' | 'putRelayCursor'> },
): Promise<{ events: number; cursor: string | null }> {
  const { kafkaSink, runRelay } = await import('./relay.js');
  const sink = kafkaSink({
    brokers: args.brokers,
    topic: args.topic,
    clientId: `flocklist-${args.name}`,
  });
  const abort = new AbortController();
  const stop = (signal: string) => {
    if (abort.signal.aborted) return;
    console.log(`[relay] ${signal}: stopping after the page in flight`);
    abort.abort();
  };
  const onTerm = () => stop('SIGTERM');
  const onInt = () => stop('SIGINT');
  process.on('SIGTERM', onTerm);
  process.on('SIGINT', onInt);
  console.log(
    `[relay] ${args.name}: feed → ${args.brokers.join(',')} topic ${args.topic}, from ${(await deps.cursors.getRelayCursor(args.name)) ?? 'the oldest retained event'}`,
  );
  try {
    const r = await runRelay({
      feed: deps.feed,
      cursors: deps.cursors,
      sink,
      name: args.name,
      batch: args.batch,
      signal: abort.signal,
      untilIdle: args.untilIdle,
      onProgress: (p) =>
        console.log(
          `[relay] ${args.name}: ${p.events} events, ${Math.round(p.rate)}/s, lag ${p.lagSeconds === null ? '-' : `${p.lagSeconds.toFixed(1)} s`}, cursor ${p.cursor ?? '-'}`,
        ),
    });
    console.log(
      `[relay] ${args.name}: stopped after ${r.events} events in ${(r.elapsedMs / 1000).toFixed(1)} s`,
    );
    return r;
  } finally {
    process.off('SIGTERM', onTerm);
    process.off('SIGINT', onInt);
    await sink.close();
  }
}
