/**
 * Shared by the list benchmarks and the list tests: synthetic follower rows and a concurrent bulk
 * loader that writes them through the store (`writeEdges` with list rows only).
 */
import { bucketCodeOf } from '../../src/model/buckets.js';
import { nowPosition } from '../../src/model/clock.js';
import { bucketFor, type Directory, planDirectory } from '../../src/model/time-buckets.js';
import type { ListEntry, ListKey, UserId, UserRecord } from '../../src/model/types.js';
import type { GraphStore } from '../../src/ports/graph-store.js';
import type { ListRowWrite } from '../../src/ports/records.js';

export const followersOf = (userId: bigint): ListKey => ({ userId, relation: 'follows', direction: 'in' });

/**
 * `count` followers, ids from `firstId`, newest last-written: created_at ascends by ~`gapUs` and
 * every `tieEvery`-th pair shares a created_at (ties are broken by id in list order).
 */
export function syntheticRows(
  count: number,
  o: { firstId?: bigint; gapUs?: number; tieEvery?: number } = {},
) {
  const firstId = o.firstId ?? 1_000_000n;
  const gap = BigInt(o.gapUs ?? 1000);
  const tieEvery = o.tieEvery ?? 10;
  const start = nowPosition() - BigInt(count + 10) * gap;
  const rows: ListEntry[] = [];
  for (let i = 0; i < count; i++) {
    const tick = tieEvery > 0 && i % tieEvery === 1 ? i - 1 : i;
    rows.push({ createdAt: start + BigInt(tick) * gap, otherId: firstId + BigInt(i) });
  }
  return rows;
}

/** Reference order of a list: created_at DESC, other_id DESC. */
export function newestFirst(rows: readonly ListEntry[]): ListEntry[] {
  return [...rows].sort((a, b) =>
    a.createdAt !== b.createdAt ? (a.createdAt > b.createdAt ? -1 : 1) : a.otherId > b.otherId ? -1 : 1,
  );
}

/**
 * Writes `rows` into `list` under every layout in `layouts` (bucket codes of different layouts
 * never collide, so one copy of the data serves several layouts), grouped per partition in
 * batches of `batch`, `concurrency` writes in flight, at write time `version`.
 */
export async function loadRows(
  store: GraphStore,
  list: ListKey,
  rows: readonly ListEntry[],
  layouts: readonly number[],
  o: { concurrency?: number; batch?: number; version?: bigint } = {},
): Promise<void> {
  await writeByPartition(
    store,
    list,
    layouts.flatMap((n) => rows.map((entry) => ({ code: bucketCodeOf(n, entry.otherId), entry }))),
    o,
  );
}

/** Writes a user row for each of `users` (public, lists shown; active unless `state` says), `concurrency` at a time. */
export async function putUsers(
  store: Pick<GraphStore, 'putUser'>,
  users: readonly { id: UserId; username: string; state?: UserRecord['state'] }[],
  concurrency = 16,
): Promise<void> {
  const queue = [...users];
  const put = async () => {
    for (let u = queue.shift(); u; u = queue.shift())
      await store.putUser({
        id: u.id,
        username: u.username,
        private: false,
        state: u.state ?? 'active',
        hideLists: false,
      });
  };
  await Promise.all(Array.from({ length: concurrency }, put));
}

/**
 * Writes `rows` into `list` as a time-bucketed list: a directory planned with `bucketRows` rows a
 * bucket (`planDirectory`, stored with mode `time`), every row in the bucket that holds its
 * created_at. Returns the directory.
 */
export async function loadTimeRows(
  store: GraphStore,
  list: ListKey,
  rows: readonly ListEntry[],
  bucketRows: number,
  o: { concurrency?: number; batch?: number; version?: bigint } = {},
): Promise<Directory> {
  const planned = planDirectory(
    [...rows].map((r) => r.createdAt).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
    bucketRows,
  );
  const before = await store.getDirectory(list);
  const added = planned.filter((b) => b.start !== null);
  if (!(await store.updateDirectory(list, before.version, { add: added, mode: 'time' }))) {
    throw new Error('directory changed while loading');
  }
  const directory = await store.getDirectory(list);
  await writeByPartition(
    store,
    list,
    rows.map((entry) => ({ code: bucketFor(directory, entry.createdAt).id, entry })),
    o,
  );
  return directory;
}

/**
 * Writes each row into its partition `code`, grouped per partition in batches of `o.batch` (100),
 * `o.concurrency` (64) writes in flight, at write time `o.version` (now).
 */
async function writeByPartition(
  store: GraphStore,
  list: ListKey,
  rows: readonly { code: number; entry: ListEntry }[],
  o: { concurrency?: number; batch?: number; version?: bigint },
): Promise<void> {
  const batch = o.batch ?? 100;
  const version = o.version ?? nowPosition();
  const byCode = new Map<number, ListRowWrite[]>();
  for (const { code, entry } of rows) {
    const part = byCode.get(code) ?? [];
    byCode.set(code, part);
    part.push({ list, bucketCodes: [code], entry, op: 'put' });
  }
  const chunks: ListRowWrite[][] = [];
  for (const part of byCode.values()) {
    for (let i = 0; i < part.length; i += batch) chunks.push(part.slice(i, i + batch));
  }
  let next = 0;
  const worker = async () => {
    while (next < chunks.length) await store.writeEdges([], chunks[next++]!, version);
  };
  await Promise.all(Array.from({ length: o.concurrency ?? 64 }, worker));
}
