/**
 * `jobs migrate-counts (--all | --users 1,2) [--page N]`: recounts every list with counts into the
 * account tables and then sets the marker that moves counts reads onto them (`migrate-counts.ts`);
 * a line per page, re-run it to resume. `--users` recounts only those accounts' lists and leaves
 * the marker alone.
 */
import { parseArgs } from 'node:util';
import type { JobCommand } from '../job-command.js';
import { type OpenJobRuntime, parseUserIds } from '../runtime.js';

const MIGRATE_COUNTS_USAGE = 'usage: jobs migrate-counts (--all | --users 1,2) [--page N]';

export const migrateCountsCommand = {
  name: 'migrate-counts',
  help: 'recount every list with counts into the per-account count tables, resumably, then read counts from them (--all | --users 1,2) [--page N]',
  async run(argv: string[], openRuntime: OpenJobRuntime): Promise<void> {
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
    const m = await import('../migrate-counts.js');
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
  },
} satisfies JobCommand;
