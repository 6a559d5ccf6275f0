/**
 * `jobs migrate-lists`: finds the lists still laid out in hash buckets (or with a migration under
 * way) and migrates them to time buckets one by one (`lists/list-migration.ts`), reporting every
 * step. Resumable by construction: each list's migration resumes from its own stored mode and
 * progress, and a re-run finds exactly the lists that still need work, so a crashed or stopped
 * run is finished by running the command again. A list that cannot migrate now (its layout is
 * growing) or that another runner is migrating is reported and skipped; the next run retries it.
 *
 * Run it only once every instance runs a version that writes by the directory (the rolling-deploy
 * rule in `list-migration.ts`).
 */
import { parseArgs } from 'node:util';
import {
  MigrationBlockedError,
  MigrationConflictError,
  type MigrationOptions,
  type MigrationStep,
  migrateList,
} from '../lists/list-migration.js';
import { rowMode } from '../model/time-buckets.js';
import { type ListKey, RELATIONS, type UserId } from '../model/types.js';
import type { ListStore } from '../ports/list-store.js';
import { MAX_TOKEN, MIN_TOKEN } from '../ports/records.js';
import type { ScanStore } from '../ports/scan-store.js';
import { parseUserIds } from './runtime.js';

export type ListOutcome = 'migrated' | 'already-time' | 'blocked' | 'conflict';

export interface MigrateListsOptions extends Omit<MigrationOptions, 'onProgress'> {
  /** Told after each step of each list's migration (a log line per bucket). */
  onStep?: (list: ListKey, step: MigrationStep) => void;
  /** Told once per list with its outcome (`detail`: why it was skipped). */
  onList?: (list: ListKey, outcome: ListOutcome, detail?: string) => void;
}

export type MigrateListsSummary = Record<ListOutcome, number>;

/** Migrates each list of `lists` in turn; never throws for a blocked or contested list. */
export async function migrateLists(
  store: ListStore,
  lists: AsyncIterable<ListKey> | Iterable<ListKey>,
  o: MigrateListsOptions,
): Promise<MigrateListsSummary> {
  const summary: MigrateListsSummary = { migrated: 0, 'already-time': 0, blocked: 0, conflict: 0 };
  const { onStep, onList, ...options } = o;
  for await (const list of lists) {
    let outcome: ListOutcome;
    let detail: string | undefined;
    try {
      const r = await migrateList(store, list, {
        ...options,
        ...(onStep ? { onProgress: (p: MigrationStep) => onStep(list, p) } : {}),
      });
      outcome = r.outcome;
    } catch (e) {
      if (e instanceof MigrationBlockedError) outcome = 'blocked';
      else if (e instanceof MigrationConflictError) outcome = 'conflict';
      else throw e;
      detail = e.message;
    }
    summary[outcome]++;
    onList?.(list, outcome, detail);
  }
  return summary;
}

/**
 * The lists of `users` (every relation, both directions) that still need a migration: in hash
 * buckets, between modes, or with hash partitions not yet dropped.
 */
export async function* listsToMigrate(
  store: Pick<ListStore, 'getLayout' | 'getDirectory' | 'getListMigration'>,
  users: AsyncIterable<UserId> | Iterable<UserId>,
): AsyncGenerator<ListKey> {
  for await (const list of listsOf(users)) {
    const [layout, directory] = await Promise.all([store.getLayout(list), store.getDirectory(list)]);
    if (rowMode(directory, layout) !== 'time' || (await store.getListMigration(list))) yield list;
  }
}

/** Every list of `users`: each relation, both directions. */
export async function* listsOf(users: AsyncIterable<UserId> | Iterable<UserId>): AsyncGenerator<ListKey> {
  for await (const userId of users) {
    for (const relation of RELATIONS) {
      for (const direction of ['out', 'in'] as const) yield { userId, relation, direction };
    }
  }
}

/**
 * The arguments the list jobs (`migrate-lists`, `split-buckets`) share:
 * `(--users 1,2 | --all) [--bucket-rows N] [--settle-ms N]`; prints `usage` and exits 2 otherwise.
 * Defaults: the list service's `DEFAULT_TIME_BUCKET_ROWS` and `DEFAULT_MIGRATION_SETTLE_MS`.
 */
export async function listJobArgs(
  argv: string[],
  usage: string,
): Promise<{ users: UserId[] | null; bucketRows: number; settleMs: number }> {
  const fail = (): never => {
    console.error(usage);
    process.exit(2);
  };
  const { values } = parseArgs({
    args: argv,
    options: {
      users: { type: 'string' },
      all: { type: 'boolean', default: false },
      'bucket-rows': { type: 'string' },
      'settle-ms': { type: 'string' },
    },
  });
  const num = (v: string | undefined, fallback: number) => {
    if (v === undefined) return fallback;
    if (!/^\d{1,9}$/.test(v) || Number(v) < 1) fail();
    return Number(v);
  };
  if (values.all === (values.users !== undefined)) fail();
  const [{ DEFAULT_MIGRATION_SETTLE_MS }, { DEFAULT_TIME_BUCKET_ROWS }] = await Promise.all([
    import('../lists/list-migration.js'),
    import('../lists/list-service.js'),
  ]);
  return {
    users: values.users === undefined ? null : parseUserIds(values.users, usage),
    bucketRows: num(values['bucket-rows'], DEFAULT_TIME_BUCKET_ROWS),
    settleMs: num(values['settle-ms'], DEFAULT_MIGRATION_SETTLE_MS),
  };
}

/** Every user id, by a token-order walk of the `users` table, `pageSize` partitions at a time. */
export async function* everyUser(
  store: Pick<ScanStore, 'scanPartitions'>,
  pageSize = 500,
): AsyncGenerator<UserId> {
  const range = { start: MIN_TOKEN, end: MAX_TOKEN };
  let after: bigint | null = null;
  for (;;) {
    const page = await store.scanPartitions('users', range, after, pageSize);
    for (const p of page) if (p.key.table === 'users') yield p.key.userId;
    if (page.length < pageSize) return;
    after = page.at(-1)!.token;
  }
}
