/**
 * What the list jobs (`split-buckets`, `split-search`) share: the lists of a set of users, every
 * user by a token-order walk, and their command-line arguments.
 */
import { parseArgs } from 'node:util';
import { type ListKey, RELATIONS, type UserId } from '../model/types.js';
import { MAX_TOKEN, MIN_TOKEN } from '../ports/records.js';
import type { ScanStore } from '../ports/scan-store.js';
import { parseUserIds } from './runtime.js';

/**
 * Layout cache TTL (2,000 ms) plus the longest write in flight (5,000 ms), the list service's
 * defaults (`ListServiceOptions.layoutCacheTtlMs`, `writeGraceMs`): the settle of a deployment
 * that keeps them.
 */
export const DEFAULT_LIST_JOB_SETTLE_MS = 7_000;

/** Every list of `users`: each relation, both directions. */
export async function* listsOf(users: AsyncIterable<UserId> | Iterable<UserId>): AsyncGenerator<ListKey> {
  for await (const userId of users) {
    for (const relation of RELATIONS) {
      for (const direction of ['out', 'in'] as const) yield { userId, relation, direction };
    }
  }
}

/**
 * The arguments the list jobs share: `(--users 1,2 | --all) [--bucket-rows N] [--settle-ms N]`;
 * prints `usage` and exits 2 otherwise. Defaults: the list service's `DEFAULT_TIME_BUCKET_ROWS`
 * and `DEFAULT_LIST_JOB_SETTLE_MS`.
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
  const { DEFAULT_TIME_BUCKET_ROWS } = await import('../lists/list-service.js');
  return {
    users: values.users === undefined ? null : parseUserIds(values.users, usage),
    bucketRows: num(values['bucket-rows'], DEFAULT_TIME_BUCKET_ROWS),
    settleMs: num(values['settle-ms'], DEFAULT_LIST_JOB_SETTLE_MS),
  };
}

/** One page of the token-order walk of the `users` table (`userPages`). */
export interface UserPage {
  users: UserId[];
  /** Partitions the page read. */
  partitions: number;
  /** The token of the page's last partition (where the next page starts). */
  lastToken: bigint | null;
  /** False on the last page. */
  more: boolean;
}

/**
 * The `users` table in token order, `pageSize` partitions a page, from after the token `after`
 * (null: from the start); resumable from any page's `lastToken`.
 */
export async function* userPages(
  store: Pick<ScanStore, 'scanPartitions'>,
  after: bigint | null = null,
  pageSize = 500,
): AsyncGenerator<UserPage> {
  const range = { start: MIN_TOKEN, end: MAX_TOKEN };
  let from = after;
  for (;;) {
    const page = await store.scanPartitions('users', range, from, pageSize);
    from = page.at(-1)?.token ?? from;
    const more = page.length >= pageSize;
    const users = page.flatMap((p) => (p.key.table === 'users' ? [p.key.userId] : []));
    yield { users, partitions: page.length, lastToken: from, more };
    if (!more) return;
  }
}

/** Every user id, by a token-order walk of the `users` table, `pageSize` partitions at a time. */
export async function* everyUser(
  store: Pick<ScanStore, 'scanPartitions'>,
  pageSize = 500,
): AsyncGenerator<UserId> {
  for await (const page of userPages(store, null, pageSize)) yield* page.users;
}
