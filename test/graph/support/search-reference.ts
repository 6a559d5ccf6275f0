/**
 * The search suites' reference and walks (`search-suite.ts`, `test/lists/reshape/search-split-suite.ts`): a
 * list's members read page by page, a search walked through its cursor, and what it must return.
 */
import { GraphService } from '../../../src/graph/graph-service.js';
import type { HistoryPolicy } from '../../../src/graph/pair/pair-history.js';
import { BucketedListService } from '../../../src/lists/list-service.js';
import { UsernameTakenError } from '../../../src/model/errors.js';
import type { ListKey, UserId } from '../../../src/model/types.js';
import type { GraphStore } from '../../../src/ports/graph-store.js';

/** The write path's budgets a suite runs with. */
export type SuitePolicy = Pick<
  HistoryPolicy,
  'writeBudgetMs' | 'viewBudgetMs' | 'batchTimeoutMs' | 'clockSkewMs'
>;

/** The service the search suites drive: no caches or events, directories read fresh (no TTL). */
export function searchGraph(store: GraphStore, policy: SuitePolicy): GraphService {
  return new GraphService({
    store,
    lists: new BucketedListService({
      store,
      cursorSecret: 'search-suite-secret-0123456789',
      bucketThresholds: [1_000_000_000],
      layoutCacheTtlMs: 0,
    }),
    maxFollowing: 10_000,
    countLeaseMs: 0,
    historyPolicy: policy,
    events: false,
    caches: false,
  });
}

/** Names (or renames) `id` as `username`, or as `username` + id when another account holds it. */
export async function nameAccount(graph: GraphService, id: UserId, username: string): Promise<void> {
  try {
    await graph.putUser({ id, username });
  } catch (e) {
    if (!(e instanceof UsernameTakenError)) throw e;
    await graph.putUser({ id, username: `${username}${id}` });
  }
}

export interface Named {
  id: UserId;
  username: string | undefined;
}

/** Every member of `list`, walked by `listPage` (`limit` a page). */
export async function listMembers(graph: GraphService, list: ListKey, limit: number): Promise<UserId[]> {
  const members: UserId[] = [];
  let cursor: string | null = null;
  do {
    const p = await graph.listPage(list, limit, cursor);
    members.push(...p.items.map((i) => i.id));
    cursor = p.nextCursor;
  } while (cursor !== null);
  return members;
}

/** Every page of `list`'s search for `q` (`limit` a page; stops after `maxPages`), items as (id, name). */
export async function walkSearch(
  graph: GraphService,
  list: ListKey,
  q: string,
  limit: number,
  maxPages = 1000,
): Promise<Named[]> {
  const got: Named[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const p = await graph.search(list, q, limit, cursor);
    got.push(...p.items.map((i) => ({ id: i.id, username: i.username })));
    cursor = p.nextCursor;
  } while (cursor !== null && ++pages < maxPages);
  return got;
}

/** The reference: the members whose name, lowercased, starts with `q` lowercased, by (lowercased name, id). */
export function searchReference(members: readonly { id: UserId; username: string }[], q: string): Named[] {
  const lowered = q.toLowerCase();
  return members
    .map((m) => ({ ...m, lower: m.username.toLowerCase() }))
    .filter((m) => m.lower.startsWith(lowered))
    .sort((a, b) =>
      a.lower !== b.lower ? (a.lower < b.lower ? -1 : 1) : a.id < b.id ? -1 : a.id > b.id ? 1 : 0,
    )
    .map(({ id, username }) => ({ id, username }));
}
