/**
 * C4: the process's RSS and heap with the user cache holding `--users` rows (default
 * 1,000,000), the edge cache `--edges` states (default 0) and the following cache `--following`
 * ids (default 0; lists of 7,500 ids, the cap), filled through the caches' reader (the following
 * lists through their read-through) from an in-memory stand-in of the store (no database), with
 * a TTL long enough not to expire while filling. What a service process pays for its caches at
 * that size.
 *
 *   npx tsx bench/cache-memory.ts -- [--users 1000000] [--edges 0] [--following 0]
 */
import { parseArgs } from 'node:util';
import { GraphCaches } from '../src/graph/caches/graph-caches.js';
import type { EdgeRecord, UserId, UserRecord } from '../src/model/types.js';

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== '--'),
  options: {
    users: { type: 'string', default: '1000000' },
    edges: { type: 'string', default: '0' },
    following: { type: 'string', default: '0' },
    // Taken for the shared bench arguments (`bench:smoke` passes one to every bench); no database here.
    keyspace: { type: 'string' },
  },
});
const USERS = Number(values.users);
const EDGES = Number(values.edges);
const FOLLOWING = Number(values.following);
const LIST = 7500;
const mb = (n: number) => Math.round(n / 2 ** 20);
const gc = (globalThis as { gc?: () => void }).gc;
gc?.();
const before = process.memoryUsage();
const user = (id: UserId): UserRecord => ({
  id,
  username: `user_${id.toString(36)}_${(Number(id) % 997).toString(16)}`,
  private: Number(id) % 10 === 0,
  state: 'active',
  hideLists: false,
});
const caches = new GraphCaches({
  store: {
    getUser: async (id) => user(id),
    getUsers: async (ids) => new Map(ids.map((id) => [id, user(id)])),
    getEdgesOut: async (source, relation, targets) =>
      new Map(
        targets.map((t): [UserId, EdgeRecord] => [
          t,
          { sourceId: source, targetId: t, relation, state: 'active', position: 1n, createdAt: 1n },
        ]),
      ),
    getEdgesOutOf: async () => [],
    getEdgesIn: async () => new Map(),
    getPairEdges: async () => [],
  },
  options: { ttlMs: 2000, users: USERS, edges: EDGES, following: FOLLOWING },
});
const start = performance.now();
for (let i = 0; i < USERS; i += 1000)
  await caches.reader.getUsers(
    Array.from({ length: Math.min(1000, USERS - i) }, (_, j) => BigInt(i + j + 1)),
  );
for (let i = 0; i < EDGES; i += 1000)
  await caches.reader.getEdgesOut(
    7n,
    'follows',
    Array.from({ length: Math.min(1000, EDGES - i) }, (_, j) => BigInt(i + j + 1)),
  );
for (let owner = 1; owner * LIST <= FOLLOWING; owner++)
  await caches.following.through(BigInt(owner), async () => ({
    ids: BigInt64Array.from({ length: LIST }, (_, k) => BigInt(owner * LIST + k)),
    createdAt: BigInt64Array.from({ length: LIST }, (_, k) => 1_800_000_000_000_000n - BigInt(k)),
  }));
const fillMs = performance.now() - start;
gc?.();
const after = process.memoryUsage();
const s = caches.stats();
console.log(
  JSON.stringify({
    users: s.users.size,
    edges: s.edges.size,
    followingLists: s.following.size,
    fillMs: Math.round(fillMs),
    rssMb: mb(after.rss),
    heapUsedMb: mb(after.heapUsed),
    heapDeltaMb: mb(after.heapUsed - before.heapUsed),
    rssBeforeMb: mb(before.rss),
  }),
);
