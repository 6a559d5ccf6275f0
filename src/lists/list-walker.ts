/**
 * One resumable walk over a whole list, time bucket by time bucket, for jobs (repair, reconcile,
 * sweeps, export later): the only place that pages `listBucket` across a list's buckets.
 *
 * Design note. A walk visits the time buckets of the directory it finds at its start, newest
 * bucket first, each newest row first, and hands every page to `onPage` together with the cursor
 * *after* that page; the caller commits the cursor there (FlockDB's jobs commit theirs every page), so a
 * crashed job resumes where its last committed page ended. The cursor is `{ bucketCode, after }`:
 * plain data, not signed, because it never leaves the process or the job's own progress record.
 * A resume whose bucket is no longer in the directory (a split replaced it meanwhile) starts over
 * from the first bucket: the walk is at-least-once, never at-most-once, which is what idempotent
 * jobs need. Within a bucket the order is the list order.
 *
 * A time bucket is read within its range, as pages read it (`time-pages.ts`): from just below the
 * start of the next newer bucket. Between a split's flip and its tombstone the parent still holds
 * the rows it moved to its children (and a moved row since deleted from its child); reading the
 * whole partition counted them twice in a recount and walked a deleted member.
 */

import { bucketCodeOf } from '../model/buckets.js';
import { readCodes, upperOf } from '../model/time-buckets.js';
import type { ListEntry, ListKey } from '../model/types.js';
import type { ListStore } from '../ports/list-store.js';
import type { MemberFilter } from './contracts.js';
import { MIN_ID } from './page-keys.js';

/** What a walk reads: the list's layout and directory (its partitions), then their rows. */
export type WalkStore = Pick<ListStore, 'getLayout' | 'getDirectory' | 'listBucket'>;

/** The partitions holding `list`'s rows for readers now (`readCodes` in `model/time-buckets.ts`). */
export async function listReadCodes(store: Omit<WalkStore, 'listBucket'>, list: ListKey): Promise<number[]> {
  return readCodes(await store.getDirectory(list));
}

/** Where a walk stands: the next rows are those of `bucketCode` strictly after `after`. */
export interface WalkCursor {
  bucketCode: number;
  after: ListEntry | null;
}

export interface WalkOptions {
  /** Rows per `listBucket` read (default 1000). */
  pageSize?: number;
  /** Resume here (a cursor an earlier `onPage` was given); null or absent: from the start. */
  from?: WalkCursor | null;
  /** Walk only these bucket codes (default: every read bucket of the list's layout). */
  bucketCodes?: readonly number[];
}

/**
 * Walks every row of `list` (or of the chosen buckets), calling `onPage` after every non-empty
 * page with the rows, the bucket they came from and the cursor to resume after them (null once
 * the walk is complete). The next page is read only after `onPage` settles, so a cursor committed
 * there is never ahead of the work done. Returns the number of rows visited.
 *
 * @example
 * const rows = await walkList(store, { userId, relation: 'follows', direction: 'in' }, async (page, _code, next) => {
 *   for (const e of page) ids.add(e.otherId);
 *   await saveCursor(next);
 * }, { from: await loadCursor() });
 */
export async function walkList(
  store: WalkStore,
  list: ListKey,
  onPage: (rows: ListEntry[], bucketCode: number, next: WalkCursor | null) => void | Promise<void>,
  o: WalkOptions = {},
): Promise<number> {
  const pageSize = o.pageSize ?? 1000;
  const directory = await store.getDirectory(list);
  const codes = o.bucketCodes ? [...o.bucketCodes] : readCodes(directory);
  /** Where a fresh read of `code` starts: below its bucket's upper end. */
  const startOf = (code: number): ListEntry | null => {
    const upper = upperOf(
      directory,
      directory.buckets.findIndex((b) => b.id === code),
    );
    return upper === null ? null : { createdAt: upper, otherId: MIN_ID };
  };
  let index = o.from ? codes.indexOf(o.from.bucketCode) : 0;
  let after = index >= 0 ? (o.from?.after ?? null) : null;
  if (index < 0) index = 0;
  let visited = 0;
  for (; index < codes.length; index++, after = null) {
    const code = codes[index] as number;
    after ??= startOf(code);
    for (;;) {
      const page = await store.listBucket(list, code, after, pageSize);
      visited += page.length;
      const full = page.length === pageSize;
      after = page.at(-1) ?? after;
      const nextCode = codes[index + 1];
      const next: WalkCursor | null = full
        ? { bucketCode: code, after }
        : nextCode !== undefined
          ? { bucketCode: nextCode, after: null }
          : null;
      if (page.length > 0) await onPage(page, code, next);
      if (!full) break;
    }
  }
  return visited;
}

/**
 * Rows in one time bucket of `list` (paged, bounded memory), not counting members `exclude` names
 * (deactivated accounts: counts exclude them, see `account-state.ts`).
 */
export async function countBucket(
  store: WalkStore,
  list: ListKey,
  bucketCode: number,
  pageSize = 5000,
  exclude?: MemberFilter,
): Promise<number> {
  let hidden = 0;
  const rows = await walkList(
    store,
    list,
    async (page) => {
      if (exclude) hidden += (await exclude(page.map((e) => e.otherId))).size;
    },
    { bucketCodes: [bucketCode], pageSize },
  );
  return rows - hidden;
}

/**
 * Rows of `list` per code of its inverse-edge layout (the codes counts and dirty marks use), not
 * counting members `exclude` names. The list keeps no rows by those codes: it is walked once,
 * whole, and each row is counted by the code its member hashes to under the layout (for a
 * one-bucket layout, code 1 is the whole list).
 */
export async function countBuckets(
  store: WalkStore,
  list: ListKey,
  bucketCodes: readonly number[],
  pageSize = 5000,
  exclude?: MemberFilter,
): Promise<Map<number, number>> {
  const counts = new Map<number, number>(bucketCodes.map((c) => [c, 0]));
  const [layout, directory] = await Promise.all([store.getLayout(list), store.getDirectory(list)]);
  const count = async (page: ListEntry[]) => {
    const hidden = exclude ? await exclude(page.map((e) => e.otherId)) : null;
    for (const e of page) {
      const c = bucketCodeOf(layout.buckets, e.otherId);
      if (!hidden?.has(e.otherId) && counts.has(c)) counts.set(c, (counts.get(c) ?? 0) + 1);
    }
  };
  await walkList(store, list, count, {
    bucketCodes: readCodes(directory),
    pageSize,
  });
  return counts;
}
