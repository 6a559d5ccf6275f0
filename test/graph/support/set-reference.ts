/**
 * Set-query tests' shared half: random follow graphs written through `GraphService.follow`
 * (replayed at chosen positions so `created_at` ties happen), the reference answers computed from
 * the whole lists, and a walker that pages a set query to its end. Used by the memory-store unit
 * test and the real-node integration test alike.
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import type { GraphService } from '../../../src/graph/graph-service.js';
import type { SetPageStats } from '../../../src/graph/reads/set-queries.js';
import type { ListItem, TimeRange } from '../../../src/lists/contracts.js';
import type { SetQueryKind } from '../../../src/lists/cursor/set-cursor.js';
import type { UserId } from '../../../src/model/types.js';

export interface RandomGraph {
  users: number;
  /** [source index, target index, position tick] */
  edges: [number, number, number][];
}

/** Up to `maxUsers` users, each ordered pair followed with some probability, ticks 1..`ticks`. */
export const graphArb = (maxUsers: number, ticks: number) =>
  fc
    .record({ users: fc.integer({ min: 2, max: maxUsers }), density: fc.double({ min: 0.1, max: 0.9 }) })
    .chain(({ users, density }) =>
      fc
        .array(fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.integer({ min: 1, max: ticks })), {
          minLength: users * users,
          maxLength: users * users,
        })
        .map((cells) => {
          const edges: [number, number, number][] = [];
          cells.forEach(([p, tick], i) => {
            const s = Math.floor(i / users);
            const t = i % users;
            if (s !== t && p < density) edges.push([s, t, tick]);
          });
          return { users, edges } satisfies RandomGraph;
        }),
    );

/** Writes the graph: users `base + i`, each edge a follow replayed at `origin + tick × 1000` µs. */
export async function writeGraph(
  graph: GraphService,
  g: RandomGraph,
  base: bigint,
  origin: bigint,
  concurrency = 1,
): Promise<UserId[]> {
  const ids = Array.from({ length: g.users }, (_, i) => base + BigInt(i));
  for (const id of ids) await graph.putUser({ id, username: `u${id}` });
  let next = 0;
  const worker = async () => {
    while (next < g.edges.length) {
      const [s, t, tick] = g.edges[next++] as [number, number, number];
      await graph.follow(ids[s] as UserId, ids[t] as UserId, { position: origin + BigInt(tick) * 1000n });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return ids;
}

/** A whole follow list, newest first, by paging the list service. */
export async function wholeList(graph: GraphService, owner: UserId, direction: 'in' | 'out') {
  const out: ListItem[] = [];
  let cursor: string | null = null;
  do {
    const page = await graph.listPage({ userId: owner, relation: 'follows', direction }, 200, cursor);
    out.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return out;
}

/** The reference answer of a set query from the two whole lists, in the driving side's order. */
export async function reference(
  graph: GraphService,
  kind: SetQueryKind,
  owner: UserId,
  driving: 'in' | 'out',
): Promise<ListItem[]> {
  const [following, followers] = await Promise.all([
    wholeList(graph, owner, 'out'),
    wholeList(graph, owner, 'in'),
  ]);
  const followingIds = new Set(following.map((i) => i.id));
  const followerIds = new Set(followers.map((i) => i.id));
  if (kind === 'not_followed_back') return followers.filter((i) => !followingIds.has(i.id));
  return driving === 'out'
    ? following.filter((i) => followerIds.has(i.id))
    : followers.filter((i) => followingIds.has(i.id));
}

export interface WalkResult {
  pages: ListItem[][];
  stats: SetPageStats[];
}

/** Pages a set query from the start to its end (at most `maxPages`). */
export async function walkSet(
  graph: GraphService,
  kind: SetQueryKind,
  owner: UserId,
  limit: number,
  maxPages = 10_000,
  bounds: TimeRange = {},
): Promise<WalkResult> {
  const pages: ListItem[][] = [];
  const stats: SetPageStats[] = [];
  let cursor: string | null = null;
  do {
    const p = await graph.setPage(kind, owner, limit, cursor, bounds);
    pages.push(p.items);
    stats.push(p.stats);
    cursor = p.nextCursor;
  } while (cursor !== null && pages.length < maxPages);
  // A full page cannot know that no hit follows it without reading on, so the walk may end with
  // one empty page (the short last page the contract allows). It is dropped here, after checking
  // it follows a full page, so walks compare with `chunk(reference)`.
  if (pages.length > 1 && cursor === null && pages.at(-1)?.length === 0) {
    if (pages.at(-2)?.length !== limit) throw new Error('an empty last page after a short page');
    pages.pop();
  }
  return { pages, stats };
}

/**
 * Walks both set queries of every owner at every limit and expects the whole pages to equal
 * `chunk(reference, limit)`, the reference narrowed by `keep`; `onWalk` sees each walk first.
 */
export async function expectWalksMatch(
  graph: GraphService,
  owners: readonly UserId[],
  limits: readonly number[],
  o: {
    bounds?: TimeRange;
    keep?: (item: ListItem) => boolean;
    onWalk?: (kind: SetQueryKind, walk: WalkResult, ref: ListItem[]) => void;
  } = {},
): Promise<void> {
  for (const owner of owners) {
    for (const kind of ['mutuals', 'not_followed_back'] as const) {
      for (const limit of limits) {
        const walk = await walkSet(graph, kind, owner, limit, 10_000, o.bounds);
        const driving = walk.stats[0]?.driving ?? 'out';
        const ref = (await reference(graph, kind, owner, driving)).filter(o.keep ?? (() => true));
        o.onWalk?.(kind, walk, ref);
        expect([kind, String(owner), limit, walk.pages]).toEqual([
          kind,
          String(owner),
          limit,
          chunk(ref, limit),
        ]);
      }
    }
  }
}

/** `items` cut into pages of `limit` (one empty page for an empty set). */
export function chunk<T>(items: readonly T[], limit: number): T[][] {
  if (items.length === 0) return [[]];
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += limit) out.push(items.slice(i, i + limit));
  return out;
}

/** The seed of a property run: `SET_SEED` or a fresh one, printed. */
export function seedOf(label: string): number {
  const seed = process.env.SET_SEED ? Number(process.env.SET_SEED) : Date.now() % 2_147_483_647;
  console.log(`${label}: seed ${seed} (replay with SET_SEED=${seed})`);
  return seed;
}
