/**
 * Page work budgets, shared by the memory and the real-node tests: a store
 * wrapper that counts the reads a request makes, a loader for lists with a run of deactivated
 * members, and an HTTP walk that records every page with the reads it cost.
 */
import { GraphService } from '../../../src/graph/graph-service.js';
import { BucketedListService } from '../../../src/lists/list-service.js';
import type { ListEntry, ListKey, UserId } from '../../../src/model/types.js';
import type { GraphStore } from '../../../src/ports/graph-store.js';
import { loadRows, putUsers } from '../../support/list-fixtures.js';
import { bearer, buildTestApp, call } from './app.js';

/** Reads made through a `countingStore` since the last `reset`. */
export class ReadCounter {
  /** `listBucket` / `listBucketNewer` calls. */
  bucketReads = 0;
  /** Rows those calls returned. */
  rowsRead = 0;
  /** User rows asked for (`getUser` calls plus the ids of `getUsers` calls). */
  userReads = 0;

  constructor(
    /** Bucket reads after which the wrapped store throws (keeps an unbounded page from running for minutes). */
    readonly cap = 5_000,
  ) {}

  reset(): void {
    this.bucketReads = 0;
    this.rowsRead = 0;
    this.userReads = 0;
  }

  snapshot() {
    return { bucketReads: this.bucketReads, rowsRead: this.rowsRead, userReads: this.userReads };
  }
}

/** `store` with its list-bucket and user reads counted in `counter`; every other method as is. */
export function countingStore<S extends GraphStore>(store: S, counter: ReadCounter): S {
  return new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      const fn = value as (...args: unknown[]) => Promise<unknown>;
      if (prop === 'listBucket' || prop === 'listBucketNewer') {
        return async (...args: unknown[]) => {
          if (++counter.bucketReads > counter.cap) throw new Error(`more than ${counter.cap} bucket reads`);
          const rows = (await fn.apply(target, args)) as ListEntry[];
          counter.rowsRead += rows.length;
          return rows;
        };
      }
      if (prop === 'getUsers') {
        return (ids: readonly UserId[]) => {
          counter.userReads += ids.length;
          return fn.call(target, ids);
        };
      }
      if (prop === 'getUser') {
        return (id: UserId) => {
          counter.userReads++;
          return fn.call(target, id);
        };
      }
      return fn.bind(target);
    },
  });
}

export const OWNER = 1n;
/** List positions: member `i` of a list at `P0 + i` µs (larger i: newer). */
export const P0 = 1_790_000_000_000_000n;

/** One member of a seeded list, oldest first. */
export interface Member {
  id: UserId;
  hidden: boolean;
}

/**
 * `members` (oldest first) in `list` of `OWNER` under `buckets` buckets, each a user (hidden ones
 * deactivated), at positions `P0 + i`. Writes list rows only, as the list loaders do.
 */
export async function seedList(
  store: GraphStore,
  list: ListKey,
  members: readonly Member[],
  buckets = 1,
): Promise<void> {
  if ((await store.getUser(OWNER)) === null)
    await store.putUser({ id: OWNER, username: 'owner', private: false, state: 'active', hideLists: false });
  await putUsers(
    store,
    members.map((m) => ({ id: m.id, username: `u${m.id}`, state: m.hidden ? 'deactivated' : 'active' })),
  );
  const rows = members.map((m, i) => ({ createdAt: P0 + BigInt(i), otherId: m.id }));
  await store.putLayout(list, { buckets, growingTo: null, copiedThrough: 0 });
  await loadRows(store, list, rows, [buckets], { concurrency: 16 });
}

/** `hidden` deactivated members between `older` and `newer` active ones (ids from `firstId`). */
export function membersWithHiddenRun(
  older: number,
  hidden: number,
  newer: number,
  firstId = 10_000n,
): Member[] {
  const out: Member[] = [];
  const add = (n: number, h: boolean) => {
    for (let i = 0; i < n; i++) out.push({ id: firstId + BigInt(out.length), hidden: h });
  };
  add(older, false);
  add(hidden, true);
  add(newer, false);
  return out;
}

/** The service as `main.ts` wires it, on `store` (wrapped by the caller to count its reads). */
function budgetGraph(store: GraphStore): GraphService {
  const lists = new BucketedListService({
    store,
    cursorSecret: 'page-budget-secret-0123456789',
    bucketThresholds: [1e9],
    layoutCacheTtlMs: 0,
  });
  return new GraphService({ store, lists, maxFollowing: 10 });
}

/** The app as `main.ts` wires it, on `store` (wrapped by the caller to count its reads). */
export function budgetApp(store: GraphStore) {
  return buildTestApp({ graph: budgetGraph(store), receipts: store }).app;
}

/**
 * `budgetApp` once its service's deactivated registry has loaded and its feed tail has polled, so
 * the registry's background load (a read of every registered account) is not counted in a page.
 */
export async function readyBudgetApp(store: GraphStore) {
  const graph = budgetGraph(store);
  await graph.registry?.filter([0n]);
  while (!graph.registry?.fresh()) await new Promise((r) => setTimeout(r, 20));
  return buildTestApp({ graph, receipts: store }).app;
}

export interface WalkedPage {
  ids: string[];
  next: boolean;
  prev: boolean;
  reads: ReturnType<ReadCounter['snapshot']>;
}

/**
 * Pages of `path` (owner's token, `limit`), following `next_cursor` (or `prev_cursor` with
 * `direction=newer`) from `cursor` until it is null; each page with the reads it cost.
 */
export async function walkPages(
  app: ReturnType<typeof budgetApp>,
  counter: ReadCounter,
  path: string,
  o: { limit: number; direction?: 'older' | 'newer'; cursor?: string | null; maxPages?: number },
): Promise<{ pages: WalkedPage[]; last: { next: string | null; prev: string | null } }> {
  const pages: WalkedPage[] = [];
  let cursor = o.cursor ?? null;
  const newer = o.direction === 'newer';
  let last = { next: null as string | null, prev: null as string | null };
  do {
    counter.reset();
    const q = `limit=${o.limit}${newer ? '&direction=newer' : ''}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await call(app, 'GET', `${path}?${q}`, { auth: bearer(OWNER) });
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${res.text}`);
    const body = res.json as {
      items: { id: string }[];
      next_cursor: string | null;
      prev_cursor: string | null;
    };
    last = { next: body.next_cursor, prev: body.prev_cursor };
    pages.push({
      ids: body.items.map((i) => i.id),
      next: body.next_cursor !== null,
      prev: body.prev_cursor !== null,
      reads: counter.snapshot(),
    });
    cursor = newer ? body.prev_cursor : body.next_cursor;
    if (pages.length > (o.maxPages ?? 1000))
      throw new Error(`${path}: more than ${o.maxPages ?? 1000} pages`);
  } while (cursor !== null);
  return { pages, last };
}
