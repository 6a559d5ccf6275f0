/**
 * Search within follows lists (`GraphService.search`) held to a reference on any store: random
 * usernames mixing case, `.` and `_`, random follows, unfollows, removed followers, blocks and
 * renames (the rename fan-out run to its end), then every list's search for one-character and
 * longer prefixes walked page by page through the cursor with a random limit, compared whole with
 * the reference: the list's members (walked by `listPage`) whose current username, lowercased,
 * starts with `q` lowercased, ordered by (lowercased name, id), each with its current name.
 * Replay with `SEARCH_SEED=<seed>` (printed every run).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Direction, ListKey, UserId } from '../../../src/model/types.js';
import type { GraphStore } from '../../../src/ports/graph-store.js';
import {
  listMembers,
  nameAccount,
  type SuitePolicy,
  searchGraph,
  searchReference,
  walkSearch,
} from './search-reference.js';

export interface SearchSuiteFixture {
  store: GraphStore;
  teardown: () => Promise<void>;
}

const SEED = Number(process.env.SEARCH_SEED ?? Date.now() % 2_147_483_647);

/** A name of 1–4 characters from a small alphabet (so prefixes collide), mixing case, `.` and `_`. */
const nameArb = fc
  .array(fc.constantFrom('a', 'A', 'b', 'B', '.', '_', '1'), { minLength: 1, maxLength: 4 })
  .map((cs) => cs.join(''));

type Op =
  | { kind: 'follow' | 'unfollow' | 'remove' | 'block' | 'unblock'; a: number; b: number }
  | { kind: 'rename'; a: number; name: string };

const opArb = (users: number): fc.Arbitrary<Op> => {
  const who = fc.integer({ min: 0, max: users - 1 });
  return fc.oneof(
    { weight: 6, arbitrary: fc.record({ kind: fc.constant('follow' as const), a: who, b: who }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('unfollow' as const), a: who, b: who }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), a: who, b: who }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('block' as const), a: who, b: who }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('unblock' as const), a: who, b: who }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('rename' as const), a: who, name: nameArb }) },
  );
};

let nextBase = 10_000n;

export function describeSearchProperty(
  name: string,
  make: () => Promise<SearchSuiteFixture>,
  o: {
    runs: number;
    users: number;
    ops: number;
    policy: SuitePolicy;
    timeoutMs: number;
  },
) {
  describe(`search within follows lists: ${name}`, () => {
    it(
      'every list’s search, walked through its cursor, is the reference filter of its members, after random follows, unfollows, blocks and renames',
      async () => {
        console.log(`[search ${name}] seed=${SEED} (replay: SEARCH_SEED=${SEED})`);
        const fixture = await make();
        try {
          await fc.assert(
            fc.asyncProperty(
              fc.array(nameArb, { minLength: o.users, maxLength: o.users }),
              fc.array(opArb(o.users), { minLength: 1, maxLength: o.ops }),
              fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 8, maxLength: 8 }),
              async (names, ops, limits) => {
                const { store } = fixture;
                const graph = searchGraph(store, o.policy);
                const base = nextBase;
                nextBase += 1000n;
                const ids = names.map((_, i) => base + BigInt(i));
                const rename = (id: UserId, username: string) => nameAccount(graph, id, username);
                for (const [i, id] of ids.entries()) await rename(id, names[i] as string);
                for (const op of ops) {
                  const a = ids[op.a] as UserId;
                  if (op.kind === 'rename') {
                    await rename(a, op.name);
                    continue;
                  }
                  const b = ids[op.b] as UserId;
                  if (a === b) continue;
                  if (op.kind === 'follow') await graph.follow(a, b).catch(() => undefined);
                  if (op.kind === 'unfollow') await graph.unfollow(a, b);
                  if (op.kind === 'remove') await graph.removeFollower(a, b);
                  if (op.kind === 'block') await graph.block(a, b);
                  if (op.kind === 'unblock') await graph.unblock(a, b);
                }
                await graph.settleAccountTasks();
                const users = await store.getUsers(ids);
                const current = (id: UserId) => users.get(id)?.username as string;
                let walk = 0;
                for (const owner of ids) {
                  for (const direction of ['in', 'out'] as Direction[]) {
                    const list: ListKey = { userId: owner, relation: 'follows', direction };
                    const members = await listMembers(graph, list, 50);
                    const names = members.map((id) => current(id));
                    const queries = new Set<string>(['a', 'B', '.', '_', '1', 'zz']);
                    for (const n of names) {
                      queries.add(n.slice(0, 2));
                      queries.add(n.slice(0, 3).toUpperCase());
                    }
                    for (const q of queries) {
                      const expected = searchReference(
                        members.map((id) => ({ id, username: current(id) })),
                        q,
                      );
                      const got = await walkSearch(graph, list, q, limits[walk++ % limits.length] as number);
                      expect({ owner, direction, q, got }).toEqual({ owner, direction, q, got: expected });
                    }
                  }
                }
              },
            ),
            { seed: SEED, numRuns: o.runs, endOnFailure: true },
          );
        } finally {
          await fixture.teardown();
        }
      },
      o.timeoutMs,
    );
  });
}
