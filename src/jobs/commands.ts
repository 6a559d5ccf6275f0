/**
 * The `jobs migrate-lists` command, left here while the hash-to-time list migration is retired;
 * every other command has its own module under `commands/`.
 */
import type { OpenJobRuntime } from './runtime.js';

export const MIGRATE_LISTS_USAGE =
  'usage: jobs migrate-lists (--users 1,2 | --all) [--bucket-rows N] [--settle-ms N]';

/**
 * `jobs migrate-lists`: migrates hash-bucketed lists to time buckets (`migrate-lists.ts`), a line
 * per step; re-run it to resume. `--settle-ms` must cover the servers' layout cache TTL plus their
 * longest write (default: the list service's defaults); `--bucket-rows` is their `timeBucketRows`.
 */
export async function migrateListsCommand(argv: string[], openRuntime: OpenJobRuntime): Promise<void> {
  const m = await import('./migrate-lists.js');
  const { users, bucketRows, settleMs } = await m.listJobArgs(argv, MIGRATE_LISTS_USAGE);
  const rt = await openRuntime();
  const name = (l: { userId: bigint; relation: string; direction: string }) =>
    `${l.userId} ${l.relation}/${l.direction}`;
  try {
    const summary = await m.migrateLists(
      rt.store,
      m.listsToMigrate(rt.store, users ?? m.everyUser(rt.store)),
      {
        settleMs,
        bucketRows,
        onStep: (list, p) => {
          const what =
            p.step === 'planned'
              ? `planned ${p.buckets} time buckets for ${p.rows} rows (from ${p.from} hash buckets), writers now write both`
              : p.step === 'copied'
                ? `copied hash bucket ${p.bucket + 1}/${p.from} (${p.rows} rows)`
                : p.step === 'flipped'
                  ? 'flipped: readers read time buckets'
                  : p.step === 'finalized'
                    ? 'time: writers write time buckets only'
                    : `dropped ${p.from} hash partitions`;
          console.log(`[migrate-lists] ${name(list)}: ${what}`);
        },
        onList: (list, outcome, detail) => {
          if (outcome !== 'migrated')
            console.log(`[migrate-lists] ${name(list)}: ${outcome}${detail ? ` (${detail})` : ''}`);
        },
      },
    );
    console.log(
      `[migrate-lists] ${summary.migrated} migrated, ${summary['already-time']} already time-bucketed, ` +
        `${summary.blocked} blocked and ${summary.conflict} contested (re-run later to retry them)`,
    );
    if (summary.blocked + summary.conflict > 0) process.exitCode = 1;
  } finally {
    await rt.close();
  }
}
