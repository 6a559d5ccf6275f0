/**
 * The pair protocol under the timing the review broke it with, on the real node (issue "Acknowledged
 * means kept"). Each scenario holds one statement of one service instance (`HeldStore`) or skews an
 * instance's clock, and then checks every projection against what was answered:
 * (a) an observer whose read is held between its start and its arrival at the node, while another
 *     writer announces a compaction, a fourth would commit it, and a third appends a replayed block:
 *     the block is in effect or refused, never answered 200 and lost (finding 1);
 * (b) two instances whose clocks are 1.5 s apart (inside the 2 s bound) toggle one pair while one of
 *     them blocks it with a slow append: the block holds in every projection (finding 2);
 * (c) an instance whose clock is 3 s off (outside the bound) answers writes 503 and writes nothing.
 * On the code before the issue, (a) and (b) ended with the block answered 200 and lost, and (c)
 * answered 200.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GraphService } from '../../../src/graph/graph-service.js';
import { ClockGuard } from '../../../src/graph/pair/clock-guard.js';
import { foldView } from '../../../src/graph/pair/pair-fold.js';
import type { HistoryPolicy } from '../../../src/graph/pair/pair-history.js';
import { reconcileDirty } from '../../../src/jobs/reconcile-dirty.js';
import { nowPosition } from '../../../src/model/clock.js';
import { PositionTooOldError, StoreUnavailableError } from '../../../src/model/errors.js';
import type { ListKey, Position, UserId } from '../../../src/model/types.js';
import { CassandraGraphStore } from '../../../src/store/cassandra/graph-store.js';
import { bearer, buildTestApp, call, problem } from '../../http/support/app.js';
import { type TestKeyspace, testKeyspace } from '../../support/cassandra.js';
import { HeldStore } from '../support/held-store.js';
import { SingleBucketLists } from '../support/single-bucket-lists.js';

let ks: TestKeyspace;
let store: CassandraGraphStore;
let nextId = 100n;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
const list = (userId: UserId, relation: ListKey['relation'], direction: ListKey['direction']): ListKey => ({
  userId,
  relation,
  direction,
});

function service(s: CassandraGraphStore, policy: Partial<HistoryPolicy>, clock?: () => Position) {
  return new GraphService({
    store: s,
    lists: new SingleBucketLists(s),
    maxFollowing: 7500,
    historyPolicy: policy,
    ...(clock ? { clock } : {}),
  });
}

/** Two fresh accounts. */
async function accounts(g: GraphService): Promise<[UserId, UserId]> {
  const ids: [UserId, UserId] = [nextId++, nextId++];
  for (const id of ids) await g.putUser({ id, username: `u${id}` });
  return ids;
}

/**
 * Every projection of the pair `a`/`b` for the block `b → a` and the follow `a → b`, counts
 * reconciled: passes run until both accounts' counts are exact (a write's marks are dated a lease,
 * twice the clock bound, ahead of its clock, so the first pass after it may leave them).
 */
async function projections(g: GraphService, a: UserId, b: UserId) {
  const deadline = Date.now() + 20_000;
  do {
    await reconcileDirty(store);
    if ((await g.counts(a)).exact && (await g.counts(b)).exact) break;
    await sleep(500);
  } while (Date.now() < deadline);
  const rows = async (l: ListKey) => (await store.listBucket(l, 1, null, 100)).map((e) => e.otherId);
  const history = await store.readPairHistory(a, b);
  const fold = foldView(history);
  const active = (s: UserId, relation: string, t: UserId) =>
    [...fold.edges.values()].some(
      (e) => e.sourceId === s && e.targetId === t && e.relation === relation && e.state === 'active',
    );
  const [counts, bCounts] = [await g.counts(a), await g.counts(b)];
  return {
    fold: { blocks: active(b, 'blocks', a), follows: active(a, 'follows', b) },
    relationship: await g.relationship(b, a),
    followStatus: await g.getFollowStatus(a, b),
    followersOfB: await rows(list(b, 'follows', 'in')),
    followingOfA: await rows(list(a, 'follows', 'out')),
    blocksOfB: await rows(list(b, 'blocks', 'out')),
    blockedByIn: await rows(list(a, 'blocks', 'in')),
    following: [counts.following, counts.exact],
    followers: [bCounts.followers, bCounts.exact],
  };
}

/** What every projection shows once `b` blocks `a` (the block removes the follow). */
const blocked = (a: UserId, b: UserId) => ({
  fold: { blocks: true, follows: false },
  relationship: { following: 'none', followedBy: false, blocking: true, muting: false, restricting: false },
  followStatus: { state: 'none' },
  followersOfB: [],
  followingOfA: [],
  blocksOfB: [a],
  blockedByIn: [b],
  following: [0, true],
  followers: [0, true],
});

beforeAll(async () => {
  ks = await testKeyspace('pair_bounds');
  store = new CassandraGraphStore(ks.client);
});

afterAll(async () => {
  await ks?.drop();
});

describe('the pair protocol under held reads, slow appends and skewed clocks', () => {
  it('(a) an observer read held 900 ms while a compaction is announced and due: a replayed block is in effect or refused, never acknowledged and lost', async () => {
    // Compaction after 4 ops, keeping 1; budget 1 s, clock bound 250 ms: settle B + 2S + 1 = 1.5 s,
    // the review's numbers (its old rule settled 1.5 s after the observer's read *started*).
    const policy = { compactAbove: 4, keep: 1, writeBudgetMs: 1000, clockSkewMs: 250 };
    const setup = service(store, policy);
    const [ada, bo] = await accounts(setup);
    for (const op of ['follow', 'unfollow', 'follow', 'mute'] as const) await setup[op](ada, bo);
    const oldest = (await store.readPairHistory(ada, bo)).ops[0]?.position ?? 0n;
    const held = { o: new HeldStore(ks.client), w: new HeldStore(ks.client) };
    const observer = service(held.o, policy);
    const blocker = service(held.w, policy);
    const announcer = service(new CassandraGraphStore(ks.client), policy);
    const committer = service(new CassandraGraphStore(ks.client), policy);
    held.o.holdNext('readPairHistory', 900);
    held.w.holdNext('appendPair', 900);
    const t0 = Date.now();
    const timeline: string[] = [];
    const at = <T>(ms: number, name: string, f: () => Promise<T>) =>
      sleep(ms - (Date.now() - t0))
        .then(f)
        .then(
          (v) => {
            timeline.push(`${name} ok @${Date.now() - t0}`);
            return { ok: true as const, v };
          },
          (e: unknown) => {
            timeline.push(`${name} ${(e as Error).name} @${Date.now() - t0}`);
            return { ok: false as const, e };
          },
        );
    const [, block] = await Promise.all([
      // The observer's read starts at 0 and reaches the node at ~900, after the announcement.
      at(0, 'observer unmute', () => observer.unmute(ada, bo)),
      // A replayed block older than every op: its read (at 700) sees no announcement; its append
      // reaches the node at ~1,600, inside its 1 s budget.
      at(700, 'replayed block', () => blocker.block(bo, ada, { position: oldest - 1000n })),
      // Five ops > 4: announces a horizon above the block's position.
      at(750, 'announcer unmute', () => announcer.unmute(ada, bo)),
      // The old rule commits here, from a read that does not hold the block yet.
      at(1550, 'committer mute', () => committer.mute(ada, bo)),
    ]);
    // Past the settle, a write commits the compaction (folding whatever is at or below it).
    await sleep(2000);
    await setup.unmute(ada, bo);
    await setup.mute(ada, bo);
    const history = await store.readPairHistory(ada, bo);
    console.log(
      `[pair-bounds a] ${timeline.join(', ')}; checkpoint horizon ${history.checkpoint?.horizon ?? 'none'} (block at ${oldest - 1000n})`,
    );
    if (block.ok) {
      expect(await projections(setup, ada, bo)).toEqual(blocked(ada, bo));
    } else if (block.e instanceof StoreUnavailableError) {
      // A loaded machine spent the block's 1 s budget before its append (a CI run's Node 20 lane,
      // beside the bench smoke): 503, outcome unknown — in effect everywhere, or nowhere.
      const p = await projections(setup, ada, bo);
      if (p.fold.blocks) expect(p).toEqual(blocked(ada, bo));
      else expect(p.fold).toEqual({ blocks: false, follows: true });
    } else {
      expect(block.e).toBeInstanceOf(PositionTooOldError);
      expect((await projections(setup, ada, bo)).fold).toEqual({ blocks: false, follows: true });
    }
    // Whichever it was, the compaction went through.
    expect(history.checkpoint?.horizon ?? 0n).toBeGreaterThan(oldest);
  });

  it('(b) two instances 1.5 s apart toggle a pair while one blocks it with a slow append: the block holds in every projection', async () => {
    // The default bounds (B 2 s, S 2 s), compaction every few ops so that commits happen.
    const policy = { compactAbove: 4, keep: 1 };
    const behind = service(new CassandraGraphStore(ks.client), policy, () => nowPosition() - 750_000n);
    const ahead = service(new CassandraGraphStore(ks.client), policy, () => nowPosition() + 750_000n);
    const [ada, bo] = await accounts(behind);
    // Three ops: the fifth op on the pair announces a compaction (compactAbove 4, keep 1).
    for (const op of ['follow', 'unfollow', 'follow'] as const) await behind[op](ada, bo);
    const blockerStore = new HeldStore(ks.client);
    const blocker = service(blockerStore, policy, () => nowPosition() - 750_000n);
    blockerStore.holdNext('appendPair', 900);
    const answers = { ok: 0, blocked: 0, other: [] as string[] };
    const toggle = async (g: GraphService, i: number) => {
      try {
        await (i % 2 === 0 ? g.unfollow(ada, bo) : g.follow(ada, bo));
        answers.ok++;
      } catch (e) {
        if ((e as Error).name === 'BlockedError') answers.blocked++;
        else answers.other.push((e as Error).name);
      }
    };
    const t0 = Date.now();
    // The block reads now (nothing announced) and its append reaches the node 900 ms later.
    const blockAnswer = blocker.block(bo, ada);
    await sleep(50);
    // Ahead: two ops above the block's position, the second announcing a horizon at the first.
    // Behind: observes the announcement. Ahead: its clock says 1.5 s have passed since that
    // observation, the old settle, so the old rule committed here, without the block.
    await toggle(ahead, 0);
    await toggle(ahead, 1);
    await toggle(behind, 2);
    await toggle(ahead, 3);
    // Then 8 s of toggles from both: past one settle (B + 2S = 6 s), so compactions commit.
    for (let i = 4; Date.now() - t0 < 8000; i++) {
      await toggle(i % 2 === 0 ? ahead : behind, i);
      await sleep(20);
    }
    // The last toggle is a follow: a lost block would leave it standing.
    await toggle(ahead, 1);
    expect(await blockAnswer).toMatchObject({ state: 'blocking', changed: true });
    const history = await store.readPairHistory(ada, bo);
    console.log(
      `[pair-bounds b] answers ${JSON.stringify(answers)}; ${history.checkpoint?.count ?? 0} ops folded, ${history.ops.length} above the horizon`,
    );
    expect(answers.other).toEqual([]);
    expect(history.checkpoint?.count ?? 0).toBeGreaterThan(0);
    expect(await projections(behind, ada, bo)).toEqual(blocked(ada, bo));
  });

  it('(c) an instance whose clock is 3 s off answers writes 503 and writes nothing', async () => {
    const off = () => nowPosition() + 3_000_000n;
    const guard = new ClockGuard({
      boundMs: 2000,
      databaseClockMs: () => store.databaseClockMs(),
      clock: off,
      monotonic: () => performance.now(),
    });
    await guard.check();
    const setup = service(store, {});
    const [ada, bo] = await accounts(setup);
    const skewed = new GraphService({
      store,
      lists: new SingleBucketLists(store),
      maxFollowing: 7500,
      clock: off,
      clockGuard: guard,
    });
    const { app } = buildTestApp({ graph: skewed });
    const distance = guard.distanceMs() ?? 0;
    expect(distance).toBeGreaterThan(2000);
    const put = await call(app, 'PUT', `/v1/users/${ada}/following/${bo}`, { auth: bearer(ada) });
    expect(put.status).toBe(503);
    expect(put.headers.get('retry-after')).toBe('10');
    const detail =
      /^writes and feed reads are refused: this instance's clock is 3\d{3} ms from the database's \(bound 2000 ms\)$/;
    expect(put.json).toEqual(problem(503, 'unavailable', expect.stringMatching(detail) as unknown as string));
    const admin = await call(app, 'PUT', `/v1/users/${ada}`, {
      auth: bearer(9, { admin: true }),
      body: { username: 'renamed', private: true },
    });
    expect(admin.status).toBe(503);
    // Nothing written: no op on the pair, no edge, the user row as it was; reads still answer.
    expect(await store.readPairHistory(ada, bo)).toEqual({
      checkpoint: null,
      pending: null,
      ops: [],
      snapshotThrough: null,
    });
    expect(await store.getPairEdges(ada, bo)).toEqual([]);
    expect(await store.getUser(ada)).toEqual({
      id: ada,
      username: `u${ada}`,
      private: false,
      state: 'active',
      hideLists: false,
    });
    const read = await call(app, 'GET', `/v1/users/${ada}/following`, { auth: bearer(ada) });
    expect(read.status).toBe(200);
    expect(read.json.items).toEqual([]);
  });
});
