/**
 * What a fresh follow asks of the node (T8: ≤ 6 requests in sequence for a warm actor), counted by
 * the driver's request tracker on the real node (`request-counter.ts`: each attempt a request, a
 * batch one request whose statements are mutations). The follow's own protocol: the pair read, the
 * dirty marks (one unlogged batch, before the append), the append, the re-read, the view's logged
 * batch and the counter increments (one counter batch); and the two user rows: the actor's
 * through `WritePathDeps.users`, which a user-row cache answers, the other's always from the node.
 *
 * Before the batched marks a warm follow sent 12: the four marks and the two increments went one statement
 * each. Since the account count tables (`cql/023`) the marks batch carries each mark's mirror and
 * the counter batch both copies' increments: 6 more mutations, no more requests. Since search
 * (`cql/024`) the view's logged batch carries the two search rows and the members' indexed names:
 * 4 more mutations, no more requests. Since the feed's intents (`feed-intents.ts`) a new op also
 * puts its intent, sent beside the marks batch (at once, so no added round trip before the
 * append), and deletes it after its view batch, unawaited: 8 requests, 6 of them in sequence on
 * the path to the answer, and 2 more mutations. Since privacy is enforced on writes, the *other*
 * account's row is read fresh (uncached, beside the pair read; `WritePathDeps.users`), and the
 * intent rides in the marks' batch instead of a request of its own: still 8 requests for a warm
 * follow whose actor row is cached, 6 in sequence. Since a top op marks only the edges it can
 * change as its first read shows them (`listsOpMayChange`), a fresh follow marks its two follow
 * lists, not the request lists too: 4 mutations fewer.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { GraphService } from '../../../src/graph/graph-service.js';
import { UNGUARDED } from '../../../src/graph/pair/clock-guard.js';
import { FollowCap } from '../../../src/graph/pair/follow-cap.js';
import { DEFAULT_HISTORY_POLICY, eventWindowMicros } from '../../../src/graph/pair/pair-history.js';
import { PairMutations } from '../../../src/graph/pair/write-path.js';
import { BucketedListService } from '../../../src/lists/list-service.js';
import { nowPosition } from '../../../src/model/clock.js';
import type { UserId, UserRecord } from '../../../src/model/types.js';
import { type CqlClient, createCqlClient } from '../../../src/store/cassandra/client.js';
import { CassandraGraphStore } from '../../../src/store/cassandra/graph-store.js';
import {
  RequestCounter,
  type RequestTally,
  tallySince,
} from '../../../src/store/cassandra/request-counter.js';
import { type TestKeyspace, testKeyspace } from '../../support/cassandra.js';

let ks: TestKeyspace;
let tracked: CqlClient;
const requests = new RequestCounter();
let store: CassandraGraphStore;
let lists: BucketedListService;
let nextId = 500n;

beforeAll(async () => {
  ks = await testKeyspace('follow_requests');
  const { contactPoints, localDataCenter } = inject('cassandra');
  tracked = createCqlClient({
    contactPoints,
    localDataCenter,
    keyspace: ks.keyspace,
    consistency: 'localQuorum',
    requestTimeoutMs: 30_000,
    requestTracker: requests,
  });
  await tracked.connect();
  store = new CassandraGraphStore(tracked);
  lists = new BucketedListService({
    store,
    cursorSecret: 'follow-requests-cursor-secret',
    bucketThresholds: [1_000_000_000],
    layoutCacheTtlMs: 3_600_000,
  });
});

afterAll(async () => {
  await tracked?.shutdown();
  await ks?.drop();
});

async function accounts(n: number): Promise<UserId[]> {
  const ids = Array.from({ length: n }, () => nextId++);
  for (const id of ids)
    await store.putUser({ id, username: `u${id}`, private: false, state: 'active', hideLists: false });
  return ids;
}

/** The requests `run` sent, by kind. */
async function counted(run: () => Promise<unknown>): Promise<RequestTally> {
  const before = requests.snapshot();
  await run();
  // The intent's delete goes after the answer (off the latency path): wait until it is counted.
  await deletesSince(before, 1);
  return tallySince(before, requests.snapshot());
}

const INTENT_DELETE = 'DELETE feed_intents';

const VIEW_BATCH =
  'BATCH logged INSERT edges_out + INSERT edges_in + INSERT following + UPDATE following + INSERT followers + UPDATE followers + INSERT list_search + UPDATE pair_ops + INSERT graph_events';

/** A warm fresh follow's own requests: everything but the user reads (the intent rides in the marks' batch). */
const PROTOCOL = {
  'SELECT pair_ops': 2,
  'BATCH unlogged INSERT dirty_lists + UPDATE user_count_state + INSERT feed_intents': 1,
  [INTENT_DELETE]: 1,
  'INSERT pair_ops': 1,
  [VIEW_BATCH]: 1,
  'BATCH counter UPDATE list_counts + UPDATE user_counts': 1,
};

/**
 * Readies `actor` and `target` as warm: the actor followed someone in this process (its cap budget
 * is cached) and the target was followed (its list layout is cached).
 */
async function warm(follow: (a: UserId, b: UserId) => Promise<unknown>, actor: UserId, target: UserId) {
  const [other, another] = await accounts(2);
  const before = requests.snapshot();
  await follow(actor, other as UserId);
  await follow(another as UserId, target);
  // Their intents' deletes go after the answers: wait for both, so none is counted as the next follow's.
  await deletesSince(before, 2);
}

/** Waits (10 s at most) until `n` intent deletes have been counted since `before`. */
async function deletesSince(before: ReturnType<RequestCounter['snapshot']>, n: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (
    (tallySince(before, requests.snapshot()).requests.get(INTENT_DELETE) ?? 0) < n &&
    Date.now() < deadline
  )
    await new Promise((r) => setTimeout(r, 5));
}

describe('requests of a fresh follow on the real node', () => {
  it('a warm actor through the graph service: the protocol’s 8 requests and the 2 user reads, 22 mutations', async () => {
    const graph = new GraphService({ store, lists, maxFollowing: 7500, registry: false });
    const [actor, target] = (await accounts(2)) as [UserId, UserId];
    await warm((a, b) => graph.follow(a, b), actor, target);
    const t = await counted(() => graph.follow(actor, target));
    expect(Object.fromEntries(t.requests)).toEqual({ ...PROTOCOL, 'SELECT users': 2 });
    // 2 marks (the follow lists: no request stands to clear) and their 2 mirrors, the intent, the
    // append, the view batch's 11 (with the two search rows and the two indexed names of the search
    // issue), 2 increments and their 2 account-table copies, the intent's delete.
    expect(t.mutations).toBe(22);
    expect(t.errors).toBe(0);
  });

  it('a warm actor whose row comes from a cache: 8 requests (the other account read fresh), 6 of them in sequence', async () => {
    const users = new Map<UserId, UserRecord>();
    const cache = {
      getUsers: async (ids: readonly UserId[]) => {
        const out = new Map<UserId, UserRecord>();
        for (const id of ids) {
          let u = users.get(id);
          if (!u) {
            u = (await store.getUsers([id])).get(id);
            if (u) users.set(id, u);
          }
          if (u) out.set(id, u);
        }
        return out;
      },
    };
    const policy = DEFAULT_HISTORY_POLICY;
    const writes = new PairMutations({
      store,
      users: cache,
      lists,
      clock: nowPosition,
      monotonic: () => performance.now(),
      guard: UNGUARDED,
      policy,
      cap: new FollowCap(store, 7500),
      countLeaseMicros: 4_000_000n,
      eventsFrom: () => nowPosition() - eventWindowMicros(policy),
    });
    const [actor, target] = (await accounts(2)) as [UserId, UserId];
    await warm((a, b) => writes.follow(a, b), actor, target);
    const t = await counted(() => writes.follow(actor, target));
    expect(Object.fromEntries(t.requests)).toEqual({ ...PROTOCOL, 'SELECT users': 1 });
    expect([...t.requests.values()].reduce((a, b) => a + b, 0)).toBe(8);
    expect(t.mutations).toBe(22);
  });

  it('a cold actor reads its cap budget and its list size: three counts, then the warm path', async () => {
    const graph = new GraphService({ store, lists, maxFollowing: 7500, registry: false });
    const [actor, target, other] = (await accounts(3)) as [UserId, UserId, UserId];
    const before = requests.snapshot();
    await graph.follow(other, target);
    await deletesSince(before, 1);
    // The actor's own lists' layouts and directories are read once per process whatever the cap
    // does; read them now.
    for (const relation of ['follows', 'requests'] as const) {
      const list = { userId: actor, relation, direction: 'out' } as const;
      await lists.currentLayout(list);
      await lists.placement(list);
    }
    const t = await counted(() => graph.follow(actor, target));
    const {
      'SELECT list_counts': shards,
      'SELECT bucket_counts': syncs,
      ...rest
    } = Object.fromEntries(t.requests);
    // Two counts for the cap (following and requested), and the first size check of the actor's
    // following list in this process (`sizeCheckDue`): a count is its shards and its sync row.
    expect({ shards, syncs }).toEqual({ shards: 3, syncs: 3 });
    expect(rest).toEqual({ ...PROTOCOL, 'SELECT users': 2 });
  });
});
