/**
 * Cursor size at the largest layout (issue #8): at N = 1024 a page cursor carrying 16 bits per
 * bucket reached ~2,600 characters and the query schema refused it, so a walk ended at page 2.
 * Here a list is forced into 1,024 buckets (memory store) and walked through HTTP to the end.
 */
import { describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { MAX_CURSOR_LENGTH } from '../../src/lists/cursor/cursor-codec.js';
import { BucketedListService } from '../../src/lists/list-service.js';
import { bucketCodeOf } from '../../src/model/buckets.js';
import type { ListEntry, ListKey } from '../../src/model/types.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { bearer, buildTestApp, call } from './support/app.js';

const OWNER = 1n;
const N = 1024;
const MEMBERS = 2500;
const P0 = 1_796_000_000_000_000n;

async function setup() {
  const store = new MemoryGraphStore();
  const list: ListKey = { userId: OWNER, relation: 'follows', direction: 'in' };
  await store.putUser({ id: OWNER, username: 'owner', private: false, state: 'active', hideLists: false });
  const rows: ListEntry[] = [];
  for (let i = 0; i < MEMBERS; i++) {
    const id = 1000n + BigInt(i);
    // Uneven gaps and every 7th pair tied on created_at, so ties are broken by id.
    const tick = i % 7 === 1 ? i - 1 : i;
    rows.push({ createdAt: P0 + BigInt(tick) * 1_003n + BigInt((i * 37) % 11), otherId: id });
    await store.putUser({ id, username: `u${id}`, private: false, state: 'active', hideLists: false });
  }
  await store.putLayout(list, { buckets: N, growingTo: null, copiedThrough: 0 });
  await store.writeEdges(
    [],
    rows.map((entry) => ({
      list,
      bucketCodes: [bucketCodeOf(N, entry.otherId)],
      entry,
      op: 'put' as const,
    })),
    P0,
  );
  const lists = new BucketedListService({
    store,
    cursorSecret: 'cursor-secret-0123456789abcdef',
    bucketThresholds: [1e9],
    maxBuckets: N,
  });
  const graph = new GraphService({ store, lists, maxFollowing: 10 });
  const { app } = buildTestApp({ graph, receipts: store });
  const expected = [...rows]
    .sort((a, b) =>
      a.createdAt !== b.createdAt ? (a.createdAt > b.createdAt ? -1 : 1) : a.otherId > b.otherId ? -1 : 1,
    )
    .map((r) => String(r.otherId));
  return { app, expected };
}

async function walk(app: Awaited<ReturnType<typeof setup>>['app'], limit: number) {
  const ids: string[] = [];
  const statuses = new Set<number>();
  let longest = 0;
  let cursor: string | null = null;
  do {
    const q: string = cursor === null ? '' : `&cursor=${cursor}`;
    const r = await call(app, 'GET', `/v1/users/${OWNER}/followers?limit=${limit}${q}`, {
      auth: bearer(OWNER),
    });
    statuses.add(r.status);
    if (r.status !== 200) break;
    const page = r.json as { items: { id: string }[]; next_cursor: string | null };
    ids.push(...page.items.map((i) => i.id));
    cursor = page.next_cursor;
    if (cursor !== null) longest = Math.max(longest, cursor.length);
  } while (cursor !== null);
  return { ids, statuses: [...statuses], cursorsFit: longest <= MAX_CURSOR_LENGTH };
}

describe('walks at N = 1024 buckets (issue #8)', () => {
  it.each([50, 5])('a walk at N = 1024 with limit %i returns every member once, in order', async (limit) => {
    const { app, expected } = await setup();
    expect(await walk(app, limit)).toEqual({ ids: expected, statuses: [200], cursorsFit: true });
  });
});
