/**
 * The rename fan-out: after an account's username changes, the list rows that name it (in every
 * counterpart's lists) are rewritten to the new name, by a resumable account task.
 *
 * Design note. List rows carry their member's username so a page reads no user row
 * (`page-members.ts`). An account X is the member of the rows *opposite* its own: X's `followers`
 * row for F is mirrored by F's `following` row for X at the same `created_at`, and likewise for
 * every relation and direction. So the task walks X's own lists (`walkList`, every relation, both
 * directions, each list's partitions), and for each row finds the opposite row's partitions
 * (`writeCodes` of the counterpart's layout and directory: its time bucket, or its hash buckets
 * while it migrates, both in between), reads that row's write time (`listBucketVersions`, one row
 * from just above the key) and writes the name at exactly that write time
 * (`ListStore.setListUsernames`), row by row, a bounded number of rows at once. Its cursor (list, walk cursor, rows done)
 * is committed after every page, so a crash resumes at the last page and memory stays one page
 * whatever the list's size.
 *
 * Races.
 * - An unfollow while the task runs: its delete carries a version at or above the row's, so the
 *   name written at the row's own write time stays deleted with it (at equal write times the
 *   delete wins). A name written at the task's clock would resurrect the row as a name-only row.
 * - A write that read the old name: a follow reads both users with its pair and writes its rows
 *   with those names within the write path's bound, B + V + T + 2S (`feedLagMicros`) of its reads.
 *   The task starts its walk no earlier than that bound after the rename (`notBefore` in its
 *   cursor), so every write that could carry the old name has landed before the walk passes its
 *   row, and is rewritten; a write that read the new name writes it one below its row (the put's
 *   rule), replaced by nothing older. The PUT writes the task row before its cells, and the cells
 *   may land late (a slow batch) while another instance already runs the task (its resume, or a
 *   PUT naming the same name): a fresh run therefore also waits until it has *seen* the new name
 *   stored (polling the row), and walks no earlier than the bound after that — a write that read
 *   the old name read it before the name landed, so it lands within the bound of the sighting. A
 *   name never seen within a minute (the PUT failed before its write, or a newer rename won) is
 *   not waited for.
 * - Two renames in a row: each writes a new task generation (the row's version is the rename's
 *   clock), and the run checks before every page that its generation is still the task's: an older
 *   run stops and the newest runs from the start, after its own bound. Each page writes the
 *   account's name as read then, tagged with the generation (`model/row-username.ts`), so the newer
 *   rename wins at the row's write time whatever the names' order. This relies on a page being
 *   written within the bound of its check (a page is one round of reads and writes, well under it).
 *
 * Search rows (`list_search`, follows rows only; `pair/view-writer.ts`). For each follows row it renames,
 * the page also writes the new name's search row (its name cell tagged like the list row's), the
 * member's indexed name in the pair's static cell (tagged, at the row's write time W), and a delete
 * of the old name's row (the name the list row held when read; skipped when only the case
 * changes, which is the same row). The search writes go at S = max(W, g × LENGTH_SLOTS), g the
 * rename's generation (µs), not at W: a write of the pair that re-puts its row with another name
 * deletes the old name's search row at its own version, and so does an earlier rename at its S; a
 * rename back to that name (A → B → A) must put above that tombstone, and every such tombstone
 * stands at or below the last rename's S (a pair write before g; an earlier generation). At W it
 * lost the tie, and the account vanished from search (the search property found it, seed
 * 930922898).
 *
 * The write-time rule: a rename task never brings back a member unfollowed at an earlier position.
 * Every delete of the row is a later write of the pair, at a version above W, and deletes its
 * search rows under the member's current name and its indexed name; at equal versions a delete
 * beats a put. A delete issued before the walk (any position, any name it read) has landed by the
 * time the walk starts, the write path's bound after g: the walk finds no row and writes nothing.
 * A delete that lands after the walk read the row was issued after g + L − B (L = `feedLagMicros`
 * = B + V + T + 2S), so its position is above g and its version above S when S is g's; when S is W
 * it is above W anyway. And it read the new name (or the new indexed name). What is left, a
 * delete that named neither landing between the read and the search write, the page's second look
 * covers: it reads each row again after its writes and, for a row gone by then, deletes the new
 * name's search row at S (a re-follow writes above S and wins). Residual: a pair write that read
 * the name before a first rename but whose clock ran past both that rename's and a second one's
 * (skew, up to 2S) leaves S = W for both, and the second, back to the old name, meets the first's
 * tombstone at W again: it needs two renames of one account within the clock-skew bound. A
 * rename shows in search when the walk reaches the row: the write path's bound plus the walk's
 * time (`docs/design/search.md`, "Renames").
 *
 * Generations and the task row follow `account-state.ts`: written before the user row at version
 * = generation, one higher per commit, deleted at the version the run last wrote or read, so a
 * newer rename's row survives the older run's delete.
 *
 * Cost: per row of the account's lists, one one-row read and one write (carrying a follows row's
 * search writes) and for a follows row a second one-row read: three requests per follower, plus
 * the counterparts' layouts and directories read for a whole page in multi-partition reads (two
 * requests per 100 rows), run a page at a time in parallel. Measured rates and the figure for a
 * 9M-follower account are in `docs/benchmarks.md`. Limits: a repair (`pair-repair.ts`) reads usernames
 * outside the write path's bound; one that read the old name and lands after the walk passed
 * leaves it until the pair's next write.
 */
import { type WalkCursor, walkList } from '../../lists/list-walker.js';
import { LENGTH_SLOTS, nowPosition } from '../../model/clock.js';
import { renamedUsername } from '../../model/row-username.js';
import { type SearchLayout, searchLayoutOf, searchWritePartitions } from '../../model/search.js';
import { writeCodes } from '../../model/time-buckets.js';
import {
  type Direction,
  type ListEntry,
  type ListKey,
  type Position,
  RELATIONS,
  type Relation,
  type UserId,
} from '../../model/types.js';
import type { AccountTaskStore } from '../../ports/account-task-store.js';
import type { ListStore } from '../../ports/list-store.js';
import type { AccountTask, SearchWrite, VersionedEntry } from '../../ports/records.js';
import type { SearchStore } from '../../ports/search-store.js';
import type { UserStore } from '../../ports/user-store.js';

export type RenameFanoutStore = Pick<UserStore, 'getUser'> &
  Pick<
    ListStore,
    'getLayout' | 'getDirectory' | 'getPlacements' | 'listBucket' | 'listBucketVersions' | 'setListUsernames'
  > &
  Pick<SearchStore, 'writeSearchRows'> &
  AccountTaskStore;

/** Where a rename's walk stands (`account_tasks.cursor`, plain data; never leaves the server). */
export interface RenameCursor {
  /** The rename's clock (µs): the task row's first version and the tag of the names it writes. */
  generation: Position;
  /** The name the rename set (the run writes the account's name as it reads it per page). */
  username: string;
  /** The walk starts no earlier (µs): the rename plus the write path's bound. */
  notBefore: Position;
  /** Which of the account's lists, and the walk cursor in it. */
  relation: Relation;
  direction: Direction;
  walk: WalkCursor | null;
  /** Rows of the account's lists visited so far (progress). */
  done: number;
}

/** The account's lists in walk order: every relation, `out` then `in`. */
const LISTS: readonly { relation: Relation; direction: Direction }[] = RELATIONS.flatMap((relation) =>
  (['out', 'in'] as const).map((direction) => ({ relation, direction })),
);

export function encodeRenameCursor(c: RenameCursor): string {
  const after = c.walk?.after;
  return JSON.stringify({
    g: c.generation.toString(),
    n: c.username,
    a: c.notBefore.toString(),
    r: c.relation,
    d: c.direction,
    b: c.walk?.bucketCode ?? null,
    t: after ? after.createdAt.toString() : null,
    o: after ? after.otherId.toString() : null,
    c: c.done,
  });
}

export function decodeRenameCursor(raw: string | null): RenameCursor {
  const j = JSON.parse(raw ?? '{}') as {
    g?: string;
    n?: string;
    a?: string;
    r?: Relation;
    d?: Direction;
    b?: number | null;
    t?: string | null;
    o?: string | null;
    c?: number;
  };
  const after: ListEntry | null =
    j.t != null && j.o != null ? { createdAt: BigInt(j.t), otherId: BigInt(j.o) } : null;
  return {
    generation: BigInt(j.g ?? '0'),
    username: j.n ?? '',
    notBefore: BigInt(j.a ?? '0'),
    relation: j.r ?? 'follows',
    direction: j.d ?? 'out',
    walk: j.b == null ? null : { bucketCode: j.b, after },
    done: j.c ?? 0,
  };
}

/**
 * The task row a rename writes before its user row: a new generation (the clock now) whose walk
 * starts `lagMicros` later (`feedLagMicros` of the write path's policy), from the first list.
 */
export function newRenameTask(
  owner: UserId,
  username: string,
  lagMicros: bigint,
  clock: () => Position = nowPosition,
): AccountTask {
  const generation = clock();
  const first = LISTS[0] as (typeof LISTS)[number];
  return {
    userId: owner,
    task: 'rename_fanout',
    cursor: encodeRenameCursor({
      generation,
      username,
      notBefore: generation + lagMicros,
      ...first,
      walk: null,
      done: 0,
    }),
    version: generation,
  };
}

/**
 * Writes `name`, tagged with `generation`, into the rows of `targets` (each a list and the key of
 * its row): in every partition the row's list writes to now (`writeCodes` of the list's layout and
 * directory: its time bucket, or its hash buckets while it migrates, parent and child during a
 * split), at the row's own write time, each row its own chain of requests, `RENAME_CONCURRENCY`
 * rows at once. A target without a row writes nothing. A follows row's search row moves too (see the note): the new name's row and the
 * member's indexed name at the row's write time W, the old name's row (as the list row held it)
 * deleted at W; then the list row is read again, and if it is gone by now the new name's row is
 * deleted at W. The fan-out's page step, and the list-level rename the list property tests apply.
 */
export async function renameRows(
  store: RenameRowsStore,
  targets: readonly { list: ListKey; entry: ListEntry }[],
  name: string,
  generation: Position,
): Promise<void> {
  // Every target's layout and directory first, in a few multi-partition reads rather than two
  // reads a row. A placement older than `PLACEMENT_AGE_MS` when its row starts is read again for
  // that row alone, so no row is placed from a read older than a writer's cached one may be.
  const readAt = performance.now();
  const placements = await store.getPlacements(targets.map((t) => t.list));
  let next = 0;
  const worker = async () => {
    while (next < targets.length) {
      const i = next++;
      const { list, entry } = targets[i] as { list: ListKey; entry: ListEntry };
      const { directory } =
        performance.now() - readAt <= PLACEMENT_AGE_MS
          ? (placements[i] as Placement)
          : ((await store.getPlacements([list]))[0] as Placement);
      const search = searchLayoutOf(directory);
      await renameRow(store, list, writeCodes(directory, entry), search, entry, name, generation);
    }
  };
  await Promise.all(Array.from({ length: Math.min(RENAME_CONCURRENCY, targets.length) }, worker));
}

/** What renaming one row reads and writes. */
type RenameRowsStore = Pick<ListStore, 'getPlacements' | 'listBucketVersions' | 'setListUsernames'> &
  Pick<SearchStore, 'writeSearchRows'>;

/**
 * Rows a page renames at once: each row is its own chain of round trips (at most two requests in
 * flight), so a page keeps the driver's connection well under its 2,048 requests in flight while
 * no row waits for the slowest of its page between steps.
 */
const RENAME_CONCURRENCY = 256;

/**
 * The oldest a page's placement read may be when a row starts (ms): half the list service's
 * layout cache age (2 s), which the migration and split settle periods already allow a writer.
 */
const PLACEMENT_AGE_MS = 1000;

type Placement = Awaited<ReturnType<ListStore['getPlacements']>>[number];

/** `renameRows` for one row (see there). */
async function renameRow(
  store: RenameRowsStore,
  list: ListKey,
  codes: readonly number[],
  searchLayout: SearchLayout,
  entry: ListEntry,
  name: string,
  generation: Position,
): Promise<void> {
  const found: { code: number; row: VersionedEntry }[] = [];
  for (const code of codes) {
    const row = await rowVersion(store, list, code, entry);
    if (row) found.push({ code, row });
  }
  const [first] = found;
  if (!first) return;
  const key = (r: VersionedEntry) => ({
    entry: { createdAt: r.entry.createdAt, otherId: r.entry.otherId },
    version: r.version,
  });
  if (list.relation !== 'follows') {
    await Promise.all(
      found.map(({ code, row }) => store.setListUsernames(list, code, [key(row)], name, generation)),
    );
    return;
  }
  // One search row per row, whichever partitions hold the list row; it rides with the first
  // partition's name write (one request).
  const { otherId, createdAt, username: old } = first.row.entry;
  const version = first.row.version;
  // Search rows move at S = max(W, the generation's first version), not at W (see the note).
  const floor = generation * LENGTH_SLOTS;
  // biome-ignore lint/complexity/useMathMinMax: bigints (Math.max takes numbers)
  const at = version > floor ? version : floor;
  const cell = renamedUsername(name, generation);
  const lower = name.toLowerCase();
  const partitions = searchWritePartitions(searchLayout, lower);
  const writes: SearchWrite[] = [
    { op: 'put', list, row: { lower, otherId, username: cell, createdAt }, version: at, partitions },
  ];
  if (old !== undefined && old.toLowerCase() !== lower) {
    const was = old.toLowerCase();
    const key = { lower: was, otherId };
    writes.push({
      op: 'delete',
      list,
      key,
      version: at,
      partitions: searchWritePartitions(searchLayout, was),
    });
  }
  const search = { writes, indexed: [{ member: otherId, other: list.userId, cell, version }] };
  await Promise.all(
    found.map(({ code, row }, i) =>
      store.setListUsernames(list, code, [key(row)], name, generation, i === 0 ? search : undefined),
    ),
  );
  // A row deleted after its version was read (at or above W): its delete may not have named the
  // new name, so the new name's row goes at S too (a later follow writes above S and wins).
  if (!(await rowVersion(store, list, first.code, first.row.entry)))
    await store.writeSearchRows([{ op: 'delete', list, key: { lower, otherId }, version: at, partitions }]);
}

/**
 * The write time of `entry`'s row in one partition (with the name the row holds), or null when
 * it has none. One one-row read.
 */
async function rowVersion(
  store: Pick<ListStore, 'listBucketVersions'>,
  list: ListKey,
  code: number,
  entry: ListEntry,
): Promise<VersionedEntry | null> {
  // Rows strictly after (createdAt, owner + 1) in list order begin with (createdAt, owner) when it exists.
  const [row] = await store.listBucketVersions(list, code, { ...entry, otherId: entry.otherId + 1n }, 1);
  return row && row.entry.createdAt === entry.createdAt && row.entry.otherId === entry.otherId
    ? {
        entry: {
          createdAt: entry.createdAt,
          otherId: entry.otherId,
          ...(row.entry.username === undefined ? {} : { username: row.entry.username }),
        },
        version: row.version,
      }
    : null;
}

class Superseded extends Error {}

/**
 * How long after its generation a fresh run waits for the rename's name to be stored (µs): by then
 * the PUT has landed or failed (its writes time out in seconds).
 */
const RENAME_NAME_SETTLE_MICROS = 60_000_000n;

/** How often a run that waits for its rename's name to be stored reads the account (ms). */
const NAME_POLL_MS = 200;

/**
 * When the account's name was first seen to be the rename's (µs), polling every `NAME_POLL_MS`;
 * null when it is not by `RENAME_NAME_SETTLE_MICROS` after the generation (the PUT failed before
 * its write, or a newer rename won: the walk then writes whatever name it reads).
 */
async function nameSeen(
  store: Pick<UserStore, 'getUser'>,
  owner: UserId,
  start: RenameCursor,
  clock: () => Position,
  sleep: (ms: number) => Promise<void>,
): Promise<Position | null> {
  for (;;) {
    const user = await store.getUser(owner);
    if (!user || user.username === start.username) return clock();
    if (clock() - start.generation > RENAME_NAME_SETTLE_MICROS) return null;
    await sleep(NAME_POLL_MS);
  }
}
/** The account is gone: its rows are deleted with it, nothing to rename. */
class Gone extends Error {}

export interface RenameFanoutOptions {
  /** Rows of the account's lists per page (default 1,000; renamed `RENAME_CONCURRENCY` at a time). */
  pageSize?: number;
  /** µs since the epoch (default `nowPosition`). */
  clock?: () => Position;
  /** Waits `ms` (default `setTimeout`). */
  sleep?: (ms: number) => Promise<void>;
  /** Told the rows done after every committed page. */
  onProgress?: (owner: UserId, done: number) => void;
}

/**
 * Runs (or resumes) the `rename_fanout` task of `owner` (see the note): waits for the task's
 * `notBefore`, then rewrites the username cell of every row that names `owner` in its
 * counterparts' lists, committing the cursor after every page at the task's version plus one. A
 * newer generation met before a page restarts the run with it; at the end it deletes its own
 * generation's row and looks again. An account that no longer exists ends its task. Returns the
 * rows visited by this call.
 */
export async function runRenameFanout(
  store: RenameFanoutStore,
  owner: UserId,
  o: RenameFanoutOptions = {},
): Promise<number> {
  const clock = o.clock ?? nowPosition;
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const pageSize = o.pageSize ?? 1000;
  let visited = 0;
  for (;;) {
    const task = await store.getAccountTask(owner, 'rename_fanout');
    if (!task) return visited;
    const start = decodeRenameCursor(task.cursor);
    const { generation } = start;
    let version = task.version;
    // A fresh walk starts the bound after its name was seen stored, and no earlier than notBefore
    // (see the note: the PUT's cells may land after its task row).
    const seenAt =
      start.walk === null && start.done === 0 ? await nameSeen(store, owner, start, clock, sleep) : null;
    const lag = start.notBefore - generation;
    const startAt = seenAt !== null && seenAt + lag > start.notBefore ? seenAt + lag : start.notBefore;
    const wait = startAt - clock();
    if (wait > 0n) await sleep(Number((wait + 999n) / 1000n));
    /** The account's name now, while the stored task is still this generation's. */
    const current = async (): Promise<string> => {
      const [now, user] = await Promise.all([
        store.getAccountTask(owner, 'rename_fanout'),
        store.getUser(owner),
      ]);
      if (!now || decodeRenameCursor(now.cursor).generation !== generation) throw new Superseded();
      if (now.version > version) version = now.version;
      if (!user) throw new Gone();
      return user.username;
    };
    let done = start.done;
    const commit = async (at: Omit<RenameCursor, 'generation' | 'username' | 'notBefore' | 'done'>) => {
      version += 1n;
      await store.putAccountTask({
        userId: owner,
        task: 'rename_fanout',
        cursor: encodeRenameCursor({ ...start, ...at, done }),
        version,
      });
      o.onProgress?.(owner, done);
    };
    try {
      let from = LISTS.findIndex((l) => l.relation === start.relation && l.direction === start.direction);
      if (from < 0) from = 0;
      for (let i = from; i < LISTS.length; i++) {
        const { relation, direction } = LISTS[i] as (typeof LISTS)[number];
        const opposite: Direction = direction === 'out' ? 'in' : 'out';
        await walkList(
          store,
          { userId: owner, relation, direction },
          async (rows, _code, next) => {
            const name = await current();
            await renameRows(
              store,
              rows.map((r) => ({
                list: { userId: r.otherId, relation, direction: opposite },
                entry: { createdAt: r.createdAt, otherId: owner },
              })),
              name,
              generation,
            );
            done += rows.length;
            visited += rows.length;
            if (next) await commit({ relation, direction, walk: next });
          },
          { pageSize, from: i === from ? start.walk : null },
        );
        const following = LISTS[i + 1];
        if (following) {
          await current();
          await commit({ ...following, walk: null });
        }
      }
      await current();
      // This generation's row only: a rename landing after the check writes a higher version.
      await store.deleteAccountTask(owner, 'rename_fanout', version);
    } catch (e) {
      if (e instanceof Superseded) continue;
      if (!(e instanceof Gone)) throw e;
      await store.deleteAccountTask(owner, 'rename_fanout', version);
      return visited;
    }
  }
}
