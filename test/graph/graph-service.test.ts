import { beforeEach, describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import {
  BlockedError,
  FollowingCapError,
  HiddenError,
  InvalidInputError,
  NoPendingRequestError,
  NotVisibleError,
  PositionOutOfRangeError,
  SelfFollowError,
  UserNotFoundError,
  UsernameTakenError,
} from '../../src/model/errors.js';
import type { ListKey, Relation } from '../../src/model/types.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { SingleBucketLists } from './support/single-bucket-lists.js';

const [ada, bo, cy, dee] = [1n, 2n, 3n, 4n];

let store: MemoryGraphStore;
let lists: SingleBucketLists;
let graph: GraphService;
let now: bigint;

const out = (userId: bigint, relation: Relation = 'follows'): ListKey => ({
  userId,
  relation,
  direction: 'out',
});
const inn = (userId: bigint, relation: Relation = 'follows'): ListKey => ({
  userId,
  relation,
  direction: 'in',
});
/** A whole list as `[id, createdAt]` pairs, newest first. */
const rows = async (list: ListKey) =>
  (await store.listBucket(list, 1, null, 1000)).map((e) => [e.otherId, e.createdAt]);

beforeEach(async () => {
  store = new MemoryGraphStore();
  lists = new SingleBucketLists(store);
  now = 1_000_000n;
  graph = new GraphService({ store, lists, maxFollowing: 3, clock: () => (now += 1000n) });
  for (const [id, username] of [
    [ada, 'ada'],
    [bo, 'bo'],
    [cy, 'cy'],
    [dee, 'dee'],
  ] as const) {
    await graph.putUser({ id, username });
  }
});

describe('users', () => {
  it('creates, updates, enforces the username rules and uniqueness', async () => {
    expect(await graph.putUser({ id: 9n, username: 'new.user_9', private: true })).toEqual({
      created: true,
      user: { id: 9n, username: 'new.user_9', private: true, state: 'active', hideLists: false },
    });
    expect((await graph.putUser({ id: 9n, username: 'new.user_9' })).created).toBe(false);
    expect((await graph.getUser(9n)).private).toBe(true);
    await expect(graph.putUser({ id: 10n, username: 'bad name' })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(graph.putUser({ id: 10n, username: 'x'.repeat(31) })).rejects.toBeInstanceOf(
      InvalidInputError,
    );
    await expect(graph.putUser({ id: 10n, username: 'ADA' })).rejects.toBeInstanceOf(UsernameTakenError);
    await expect(graph.getUser(77n)).rejects.toBeInstanceOf(UserNotFoundError);
  });

  it('going public accepts the pending requests', async () => {
    await graph.putUser({ id: bo, username: 'bo', private: true });
    expect((await graph.follow(ada, bo)).state).toBe('requested');
    expect((await graph.follow(cy, bo)).state).toBe('requested');
    await graph.putUser({ id: bo, username: 'bo', private: false });
    expect(await graph.contains(bo, 'follows', 'in', [ada, cy, dee])).toEqual([ada, cy]);
    expect(await rows(inn(bo, 'requests'))).toEqual([]);
    expect(await graph.counts(bo)).toMatchObject({ followers: 2, following: 0 });
  });
});

describe('follow, unfollow and the lists', () => {
  it('follow writes both directions and both lists; a repeat changes nothing', async () => {
    const first = await graph.follow(ada, bo);
    expect(first).toEqual({ state: 'following', changed: true, position: first.position, duplicate: false });
    const again = await graph.follow(ada, bo);
    expect(again).toMatchObject({ state: 'following', changed: false, duplicate: false });
    expect(await graph.getFollowStatus(ada, bo)).toEqual({ state: 'following', since: first.position });
    expect(await rows(out(ada))).toEqual([[bo, first.position]]);
    expect(await rows(inn(bo))).toEqual([[ada, first.position]]);
    expect(await graph.counts(ada)).toMatchObject({ followers: 0, following: 1 });
    expect(await graph.counts(bo)).toMatchObject({ followers: 1, following: 0 });
    expect(await graph.relationship(bo, ada)).toEqual({
      following: 'none',
      followedBy: true,
      blocking: false,
      muting: false,
      restricting: false,
    });
  });

  it('unfollow removes both rows and counts; unfollowing nothing is accepted and changes nothing', async () => {
    await graph.follow(ada, bo);
    expect(await graph.unfollow(ada, bo)).toMatchObject({ state: 'none', changed: true });
    expect(await graph.unfollow(ada, bo)).toMatchObject({ state: 'none', changed: false });
    expect(await graph.unfollow(ada, cy)).toMatchObject({ state: 'none', changed: false });
    expect([await rows(out(ada)), await rows(inn(bo))]).toEqual([[], []]);
    expect(await graph.counts(bo)).toMatchObject({ followers: 0, following: 0 });
    expect(await graph.getFollowStatus(ada, bo)).toEqual({ state: 'none' });
  });

  it('refuses self, unknown users, blocks either way, and the cap', async () => {
    await expect(graph.follow(ada, ada)).rejects.toBeInstanceOf(SelfFollowError);
    await expect(graph.follow(ada, 99n)).rejects.toBeInstanceOf(UserNotFoundError);
    await expect(graph.follow(99n, ada)).rejects.toBeInstanceOf(UserNotFoundError);
    await graph.block(bo, ada);
    await expect(graph.follow(ada, bo)).rejects.toBeInstanceOf(BlockedError);
    await expect(graph.follow(bo, ada)).rejects.toBeInstanceOf(BlockedError);
    await graph.putUser({ id: 5n, username: 'eli' });
    for (const t of [cy, dee, ada]) await graph.follow(5n, t);
    await expect(graph.follow(5n, bo)).rejects.toBeInstanceOf(FollowingCapError);
    expect((await graph.follow(5n, cy)).changed).toBe(false);
  });

  it('removeFollower removes only the follower’s edge', async () => {
    await graph.follow(ada, bo);
    await graph.follow(bo, ada);
    expect(await graph.removeFollower(bo, ada)).toMatchObject({ state: 'none', changed: true });
    expect(await graph.contains(bo, 'follows', 'in', [ada])).toEqual([]);
    expect(await graph.contains(bo, 'follows', 'out', [ada])).toEqual([ada]);
  });

  it('contains answers in request order, once per id, from either side', async () => {
    await graph.follow(ada, dee);
    await graph.follow(cy, dee);
    expect(await graph.contains(dee, 'follows', 'in', [cy, bo, ada, cy])).toEqual([cy, ada]);
    expect(await graph.contains(ada, 'follows', 'out', [bo, dee])).toEqual([dee]);
    await expect(graph.contains(ada, 'follows', 'out', Array(1001).fill(bo))).rejects.toBeInstanceOf(
      InvalidInputError,
    );
  });
});

describe('requests', () => {
  beforeEach(async () => {
    await graph.putUser({ id: bo, username: 'bo', private: true });
  });

  it('a follow of a private account is a request; accept turns it into a follow at the accept position', async () => {
    const req = await graph.follow(ada, bo);
    expect(req).toMatchObject({ state: 'requested', changed: true });
    expect((await graph.follow(ada, bo)).changed).toBe(false);
    expect(await rows(inn(bo, 'requests'))).toEqual([[ada, req.position]]);
    expect(await graph.relationship(ada, bo)).toMatchObject({ following: 'requested' });
    const acc = await graph.acceptRequest(bo, ada);
    expect(acc).toMatchObject({ state: 'following', changed: true });
    expect((await graph.acceptRequest(bo, ada)).changed).toBe(false);
    expect(await rows(inn(bo))).toEqual([[ada, acc.position]]);
    expect(await rows(inn(bo, 'requests'))).toEqual([]);
    expect(await graph.counts(bo)).toMatchObject({ followers: 1, following: 0 });
  });

  it('accept without a request is NoPendingRequest; decline and cancel remove the request', async () => {
    await expect(graph.acceptRequest(bo, cy)).rejects.toBeInstanceOf(NoPendingRequestError);
    await graph.follow(ada, bo);
    expect(await graph.declineRequest(bo, ada)).toMatchObject({ state: 'none', changed: true });
    await graph.follow(cy, bo);
    expect(await graph.unfollow(cy, bo)).toMatchObject({ state: 'none', changed: true });
    expect(await rows(inn(bo, 'requests'))).toEqual([]);
    expect(await store.getCount(inn(bo, 'requests'))).toBe(0);
  });
});

describe('blocks, mutes, close friends', () => {
  it('a block removes follows and requests both ways, with counts; unblock does not restore', async () => {
    await graph.putUser({ id: ada, username: 'ada', private: true });
    await graph.follow(ada, bo);
    await graph.follow(bo, ada);
    const blk = await graph.block(ada, bo);
    expect(blk).toMatchObject({ state: 'blocking', changed: true });
    expect(await rows(out(ada, 'blocks'))).toEqual([[bo, blk.position]]);
    expect(await rows(inn(bo, 'blocks'))).toEqual([[ada, blk.position]]);
    for (const l of [out(ada), inn(ada), out(bo), inn(bo), inn(ada, 'requests')])
      expect(await rows(l)).toEqual([]);
    expect([await graph.counts(ada), await graph.counts(bo)]).toMatchObject([
      { followers: 0, following: 0 },
      { followers: 0, following: 0 },
    ]);
    expect(await graph.relationship(ada, bo)).toEqual({
      following: 'none',
      followedBy: false,
      blocking: true,
      muting: false,
      restricting: false,
    });
    expect(await graph.unblock(ada, bo)).toMatchObject({ state: 'none', changed: true });
    expect(await graph.contains(ada, 'follows', 'out', [bo])).toEqual([]);
  });

  it('mute and close friends are plain set/unset edges with their own lists', async () => {
    await graph.follow(ada, bo);
    expect(await graph.mute(ada, bo)).toMatchObject({ state: 'muting', changed: true });
    expect(await graph.mute(ada, bo)).toMatchObject({ state: 'muting', changed: false });
    expect(await graph.addCloseFriend(ada, cy)).toMatchObject({ state: 'close_friend', changed: true });
    expect(await graph.relationship(ada, bo)).toMatchObject({ following: 'following', muting: true });
    expect(await graph.contains(ada, 'mutes', 'out', [bo, cy])).toEqual([bo]);
    expect(await graph.contains(ada, 'close_friends', 'out', [bo, cy])).toEqual([cy]);
    expect(await graph.unmute(ada, bo)).toMatchObject({ state: 'none', changed: true });
    expect(await graph.removeCloseFriend(ada, cy)).toMatchObject({ state: 'none', changed: true });
    expect([await rows(out(ada, 'mutes')), await rows(out(ada, 'close_friends'))]).toEqual([[], []]);
    await expect(graph.mute(ada, ada)).rejects.toBeInstanceOf(SelfFollowError);
  });
});

describe('replay with explicit positions', () => {
  it('a duplicate is reported and changes nothing; an older op cannot override a newer one', async () => {
    const f = await graph.follow(ada, bo, { position: 100n });
    expect(f).toEqual({ state: 'following', changed: true, position: 100n, duplicate: false });
    await graph.unfollow(ada, bo, { position: 200n });
    expect(await graph.follow(ada, bo, { position: 100n })).toEqual({
      state: 'none',
      changed: false,
      position: 100n,
      duplicate: true,
    });
    expect(await rows(out(ada))).toEqual([]);
    expect(await graph.counts(ada)).toMatchObject({ followers: 0, following: 0 });
  });

  it('a follow replayed while a later block stands is recorded; the fold refuses it where the rules say', async () => {
    await graph.block(bo, ada, { position: 50n });
    await graph.unblock(bo, ada, { position: 80n });
    expect((await graph.follow(ada, bo, { position: 100n })).changed).toBe(true);
    await graph.block(bo, ada, { position: 90n });
    expect(await graph.contains(bo, 'follows', 'in', [ada])).toEqual([]);
    expect(await rows(inn(bo))).toEqual([]);
    expect(await graph.counts(bo)).toMatchObject({ followers: 0, following: 0 });
  });

  it('a live op is positioned after everything on the pair', async () => {
    const ahead = now + 4_000_000n;
    await graph.follow(ada, bo, { position: ahead });
    expect((await graph.unfollow(ada, bo)).position).toBe(ahead + 1n);
  });

  it('regression: a position past the clock plus the skew, or not positive, is refused (it broke every list with a 500)', async () => {
    for (const position of [9_000_000_000_000_000_000n, now + 6_000_000n, 0n, -5n]) {
      await expect(graph.follow(ada, bo, { position })).rejects.toBeInstanceOf(PositionOutOfRangeError);
    }
    expect((await store.readPairHistory(ada, bo)).ops).toEqual([]);
  });
});

describe('visibility', () => {
  it('public: everyone; private: owner and accepted followers; blocked viewers: hidden', async () => {
    await graph.assertCanViewLists(ada, bo);
    await graph.putUser({ id: bo, username: 'bo', private: true });
    await graph.assertCanViewLists(bo, bo);
    await expect(graph.assertCanViewLists(ada, bo)).rejects.toBeInstanceOf(NotVisibleError);
    await graph.follow(ada, bo);
    await expect(graph.assertCanViewLists(ada, bo)).rejects.toBeInstanceOf(NotVisibleError);
    await graph.acceptRequest(bo, ada);
    await graph.assertCanViewLists(ada, bo);
    await graph.assertCanViewProfile(cy, bo);
    await graph.block(bo, cy);
    await expect(graph.assertCanViewProfile(cy, bo)).rejects.toBeInstanceOf(HiddenError);
    await expect(graph.assertCanViewLists(cy, bo)).rejects.toBeInstanceOf(HiddenError);
    await graph.assertCanViewProfile(bo, cy);
    await expect(graph.assertCanViewProfile(ada, 99n)).rejects.toBeInstanceOf(UserNotFoundError);
  });

  it('graph:admin: every existing account lists, a deactivated account itself; the account gate otherwise', async () => {
    const admin = { sub: 99n, admin: true };
    const user = (sub: bigint) => ({ sub, admin: false });
    const outcome = (p: Promise<unknown>) =>
      p.then(
        () => 'ok',
        (e: unknown) => (e as Error).name,
      );
    await graph.putUser({ id: bo, username: 'bo', private: true, hideLists: true });
    await graph.block(bo, cy);
    expect([
      await outcome(graph.assertListsVisible(admin, bo)),
      await outcome(graph.assertListsVisible(user(ada), bo)),
      await outcome(graph.assertListsVisible(user(cy), bo)),
      await outcome(graph.assertListsVisible(admin, 77n)),
      await graph.listsVisible(admin, bo),
      await graph.listsVisible(user(ada), bo),
    ]).toEqual(['ok', 'NotVisibleError', 'HiddenError', 'UserNotFoundError', true, false]);
    await graph.putUser({ id: dee, username: 'dee', state: 'deactivated' });
    expect([
      await outcome(graph.assertAccountsActive(dee, admin, 'account')),
      await outcome(graph.assertAccountsActive(dee, admin, 'other')),
      await outcome(graph.assertAccountsActive(dee, user(ada), 'account')),
      await outcome(graph.assertAccountsActive(ada, user(dee), 'other')),
      await outcome(graph.assertAccountsActive(ada, user(cy), 'account')),
    ]).toEqual(['ok', 'HiddenError', 'HiddenError', 'UserNotFoundError', 'ok']);
  });

  it('listPage and scanPage delegate to the list service', async () => {
    const f1 = await graph.follow(ada, dee);
    const f2 = await graph.follow(cy, dee);
    const page = await graph.listPage(inn(dee), 1, null);
    expect(page.items).toEqual([{ id: cy, createdAt: f2.position, username: 'cy' }]);
    expect((await graph.listPage(inn(dee), 1, page.nextCursor)).items).toEqual([
      { id: ada, createdAt: f1.position, username: 'ada' },
    ]);
    expect(await graph.scanPage(inn(dee), 0, 1, 10, null)).toEqual({ ids: [cy, ada], nextCursor: null });
    expect(lists.noted.at(-1)).toEqual({ list: inn(dee), size: 2 });
  });
});

describe('regression: a live no-op must be recorded so an older replay cannot win over it', () => {
  it('repeats report changed: false, keep the first followed_at, and are in the history', async () => {
    const first = await graph.follow(ada, bo);
    for (let i = 0; i < 5; i++) {
      expect(await graph.follow(ada, bo)).toMatchObject({
        state: 'following',
        changed: false,
        duplicate: false,
      });
    }
    const none = await graph.unfollow(ada, cy);
    expect(none).toMatchObject({ state: 'none', changed: false, duplicate: false });
    const history = await store.readPairHistory(ada, bo);
    expect(history.ops.map((o) => o.kind)).toEqual(Array(6).fill('follow'));
    expect((await store.readPairHistory(ada, cy)).ops.map(({ slot: _, ...o }) => o)).toEqual([
      { sourceId: ada, targetId: cy, kind: 'unfollow', position: none.position, base: 0 },
    ]);
    expect(await rows(inn(bo))).toEqual([[ada, first.position]]);
    expect(await store.getCount(inn(bo))).toBe(1);
  });
});

describe('followedBy', () => {
  it('samples the accounts the viewer follows that follow id, in the viewer’s following order, with the total', async () => {
    await graph.putUser({ id: 5n, username: 'eli' });
    graph = new GraphService({ store, lists, maxFollowing: 10, clock: () => (now += 1000n) });
    for (const x of [bo, cy, dee, 5n]) await graph.follow(ada, x);
    for (const x of [bo, dee, 5n]) await graph.follow(x, cy);
    const ids = (r: { sample: { id: bigint; username: string }[]; total: number }) => ({
      sample: r.sample.map((m) => [m.id, m.username]),
      total: r.total,
    });
    expect(ids(await graph.followedBy(ada, cy, 2))).toEqual({
      sample: [
        [5n, 'eli'],
        [dee, 'dee'],
      ],
      total: 3,
    });
    expect(ids(await graph.followedBy(ada, cy, 10))).toEqual({
      sample: [
        [5n, 'eli'],
        [dee, 'dee'],
        [bo, 'bo'],
      ],
      total: 3,
    });
    expect(await graph.followedBy(bo, cy, 3)).toEqual({ sample: [], total: 0 });
  });
});

describe('counts under racing ops (two sent at once: a double click, a retry sent as a new op)', () => {
  it('count one transition between them, and mark the raced lists dirty for the reconciler', async () => {
    graph = new GraphService({ store, lists, maxFollowing: 10, clock: () => (now += 1000n) });
    await graph.follow(ada, cy);
    await graph.follow(bo, cy);
    await Promise.all([graph.unfollow(ada, cy), graph.unfollow(ada, cy)]);
    await Promise.all([graph.follow(bo, ada), graph.follow(bo, ada)]);
    const counts = async (id: bigint) => {
      const c = await graph.counts(id);
      return [c.followers, c.following];
    };
    expect([await counts(ada), await counts(bo), await counts(cy)]).toEqual([
      [1, 0],
      [0, 2],
      [1, 0],
    ]);
    expect([await rows(inn(cy)), await rows(inn(ada)), await rows(out(ada))]).toEqual([
      [[bo, expect.any(BigInt)]],
      [[bo, expect.any(BigInt)]],
      [],
    ]);
    // The op that found its racer's transition already there counted nothing, but the lists it saw
    // change are marked (as are those it counted).
    for (const l of [inn(cy), out(ada), inn(ada), out(bo)]) expect(await store.hasDirty(l)).toBe(true);
  });
});
