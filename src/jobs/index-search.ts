/**
 * `jobs index-search`: writes the search rows (`list_search`, `cql/024`) of follows lists written
 * before search existed. Walks each user's followers and following lists (`walkList`), and for
 * every row writes the member's search row and indexed name at the row's own write time, so a
 * delete of the row (an unfollow, at a version at or above it) wins whether it lands before or
 * after, and a row the write path or a rename's fan-out wrote since (at the same write time, with
 * the same or a tagged name) is left as it is. A row without a username takes its member's name
 * from the user row (one batched read per page); a member without a user row is skipped.
 *
 * Resumable: the cursor (user, list, walk position) is committed after every page in the job's
 * sweep-progress row, so a crashed or stopped run resumes at its last page with its totals;
 * `--restart` starts over. Idempotent: re-running writes the same cells at the same write times.
 */
import { type WalkCursor, walkList } from '../lists/list-walker.js';
import { keyAbove } from '../lists/page-keys.js';
import { searchLayoutOf, searchWritePartitions } from '../model/search.js';
import type { Direction, ListEntry, ListKey, UserId } from '../model/types.js';
import type { ListStore } from '../ports/list-store.js';
import { type IndexedNameWrite, MAX_TOKEN, MIN_TOKEN, type SearchWrite } from '../ports/records.js';
import type { ScanStore } from '../ports/scan-store.js';
import type { SearchStore } from '../ports/search-store.js';
import type { UserStore } from '../ports/user-store.js';
import { openSweepRun } from './sweep-run.js';

export type IndexSearchStore = Pick<
  ListStore,
  'getLayout' | 'getDirectory' | 'listBucket' | 'listBucketVersions'
> &
  Pick<SearchStore, 'writeSearchRows'> &
  Pick<UserStore, 'getUsers'> &
  Pick<ScanStore, 'scanPartitions' | 'getSweepProgress' | 'putSweepProgress'>;

/** The job's row in `sweep_progress`. */
export const INDEX_SEARCH_JOB = 'index-search';

const DIRECTIONS: readonly Direction[] = ['in', 'out'];

/** Where a run stands (the progress row's `totals`, plain JSON). */
interface IndexCursor {
  /** The user whose lists are being indexed (null: the next one from `lastToken` or the list). */
  user: string | null;
  direction: Direction;
  walk: { b: number; t: string | null; o: string | null } | null;
  users: number;
  rows: number;
}

export interface IndexSearchProgress {
  users: number;
  rows: number;
  user: UserId;
  direction: Direction;
}

export interface IndexSearchOptions {
  /** Only these users (in this order); absent: every user, in token order. */
  users?: readonly UserId[];
  /** Ignore a saved run and start over. */
  restart?: boolean;
  /** Rows per page (default 1000). */
  pageSize?: number;
  /** Told after every committed page. */
  onProgress?: (p: IndexSearchProgress) => void;
}

const toWalk = (w: IndexCursor['walk']): WalkCursor | null =>
  w === null
    ? null
    : {
        bucketCode: w.b,
        after: w.t !== null && w.o !== null ? { createdAt: BigInt(w.t), otherId: BigInt(w.o) } : null,
      };

const fromWalk = (w: WalkCursor | null): IndexCursor['walk'] =>
  w === null
    ? null
    : { b: w.bucketCode, t: w.after?.createdAt.toString() ?? null, o: w.after?.otherId.toString() ?? null };

/** The users to index after `token` (every user by token order), each with its token. */
async function* usersAfter(
  store: Pick<ScanStore, 'scanPartitions'>,
  token: bigint | null,
): AsyncGenerator<{ id: UserId; token: bigint | null }> {
  const range = { start: MIN_TOKEN, end: MAX_TOKEN };
  let after = token;
  for (;;) {
    const page = await store.scanPartitions('users', range, after, 500);
    for (const p of page) if (p.key.table === 'users') yield { id: p.key.userId, token: p.token };
    const last = page.at(-1);
    if (page.length < 500 || !last) return;
    after = last.token;
  }
}

/** Indexes the follows lists of the users (see the note); returns the run's totals. */
export async function indexSearch(
  store: IndexSearchStore,
  o: IndexSearchOptions = {},
): Promise<{ users: number; rows: number }> {
  const run = await openSweepRun<IndexCursor>(store, INDEX_SEARCH_JOB, {
    resume: !o.restart,
    fresh: () => ({ user: null, direction: 'in', walk: null, users: 0, rows: 0 }),
  });
  const at = run.totals;
  let lastToken = run.resumed?.lastToken ?? null;
  const commit = (done: boolean) => run.save({ table: 'users', lastToken }, done);
  const listed = o.users;
  const source = listed
    ? (async function* () {
        // In order: the users done are the first `at.users`; the one in progress is named.
        const from =
          at.user === null
            ? at.users
            : Math.max(
                0,
                listed.findIndex((u) => u.toString() === at.user),
              );
        for (const id of listed.slice(from)) yield { id, token: null as bigint | null };
      })()
    : usersAfter(store, lastToken);
  for await (const { id, token } of source) {
    const resuming = at.user === id.toString();
    const first = resuming ? DIRECTIONS.indexOf(at.direction) : 0;
    for (let d = Math.max(0, first); d < DIRECTIONS.length; d++) {
      const direction = DIRECTIONS[d] as Direction;
      const list: ListKey = { userId: id, relation: 'follows', direction };
      const from = resuming && d === first ? toWalk(at.walk) : null;
      at.user = id.toString();
      at.direction = direction;
      await walkList(
        store,
        list,
        async (rows, code, next) => {
          at.rows += await indexPage(store, list, code, rows);
          at.walk = fromWalk(next);
          await commit(false);
          o.onProgress?.({ users: at.users, rows: at.rows, user: id, direction });
        },
        { pageSize: o.pageSize ?? 1000, from },
      );
      at.walk = null;
    }
    at.users++;
    at.user = null;
    at.direction = 'in';
    if (token !== null) lastToken = token;
    await commit(false);
  }
  await commit(true);
  return { users: at.users, rows: at.rows };
}

/** Writes the search rows of one page of `list` at each row's write time; returns the rows written. */
async function indexPage(
  store: IndexSearchStore,
  list: ListKey,
  code: number,
  rows: readonly ListEntry[],
): Promise<number> {
  const first = rows[0];
  if (!first) return 0;
  // Where the rows go now (read for each page: a split of the list's search partitions may run).
  const layout = searchLayoutOf(await store.getDirectory(list));
  // The page again with each row's write time (one read; rows deleted since are not in it).
  const versioned = await store.listBucketVersions(list, code, keyAbove(first), rows.length);
  const unnamed = versioned.filter((r) => r.entry.username === undefined).map((r) => r.entry.otherId);
  const users = unnamed.length > 0 ? await store.getUsers(unnamed) : new Map();
  const writes: SearchWrite[] = [];
  const indexed: IndexedNameWrite[] = [];
  for (const { entry, version } of versioned) {
    const username = entry.username ?? users.get(entry.otherId)?.username;
    if (username === undefined) continue;
    const row = {
      lower: username.toLowerCase(),
      otherId: entry.otherId,
      username,
      createdAt: entry.createdAt,
    };
    writes.push({ op: 'put', list, row, version, partitions: searchWritePartitions(layout, row.lower) });
    indexed.push({ member: entry.otherId, other: list.userId, cell: username, version });
  }
  if (writes.length > 0) await store.writeSearchRows(writes, indexed);
  return writes.length;
}
