/**
 * Regression tests for the defects an attacker/new-user review found in the write path (issue
 * "Hardening the core"), on the in-memory store. Each test is named after what it protects; the
 * real-node twins (long toggling, batch size) are in `hardening.int.test.ts`.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { GraphService, type GraphServiceOptions } from '../../../src/graph/graph-service.js';
import { opEventKey } from '../../../src/graph/pair/pair-events.js';
import { FollowingCapError, PairBusyError, PositionTooOldError } from '../../../src/model/errors.js';
import type { ListKey } from '../../../src/model/types.js';
import { MemoryGraphStore } from '../../support/memory/graph-store.js';
import { SingleBucketLists } from '../support/single-bucket-lists.js';

const [ada, bo] = [1n, 2n];
let store: MemoryGraphStore;
let now: bigint;

const followers = (userId: bigint): ListKey => ({ userId, relation: 'follows', direction: 'in' });
const following = (userId: bigint): ListKey => ({ userId, relation: 'follows', direction: 'out' });
const rows = async (list: ListKey) =>
  (await store.listBucket(list, 1, null, 10_000)).map((e) => [e.otherId, e.createdAt]);

function service(o: Partial<GraphServiceOptions> = {}) {
  return new GraphService({
    store,
    lists: new SingleBucketLists(store),
    maxFollowing: 7500,
    clock: () => (now += 1000n),
    // The write budget is measured on this clock: stopped, so no write here runs out of it.
    monotonic: () => 0,
    ...o,
  });
}

/** A policy whose settle (B + 2S + 1 ms, on the test clock that moves 1 ms per reading) is `ms`. */
const settle = (ms: number) => ({ writeBudgetMs: ms - 1, clockSkewMs: 0 });

beforeEach(async () => {
  store = new MemoryGraphStore();
  now = 1_700_000_000_000_000n;
  const g = service();
  for (let id = 1n; id <= 8n; id++) await g.putUser({ id, username: `u${id}` });
});

describe('a live no-op is an accepted op: an older replay cannot win over it', () => {
  it('a live unfollow of nobody, then a follow replayed 60 s older: the unfollow stands', async () => {
    const g = service();
    const unfollow = await g.unfollow(ada, bo);
    expect(unfollow).toMatchObject({ state: 'none', changed: false });
    const replay = await g.follow(ada, bo, { position: unfollow.position - 60_000_000n });
    expect(replay).toMatchObject({ state: 'none', changed: false, duplicate: false });
    expect(await g.getFollowStatus(ada, bo)).toEqual({ state: 'none' });
    expect(await rows(followers(bo))).toEqual([]);
  });

  it('a live unblock of nobody, then a block replayed older: the unblock stands', async () => {
    const g = service();
    const unblock = await g.unblock(ada, bo);
    const replay = await g.block(ada, bo, { position: unblock.position - 60_000_000n });
    expect(replay.state).toBe('none');
    expect(await g.relationship(ada, bo)).toMatchObject({ blocking: false });
    expect(await g.follow(ada, bo)).toMatchObject({ state: 'following' });
  });
});

describe('a replay answers the state the fold says, not the state it asked for', () => {
  it('a follow replayed after a standing block answers none', async () => {
    const g = service();
    const block = await g.block(bo, ada);
    expect(await g.follow(ada, bo, { position: block.position + 10n })).toMatchObject({ state: 'none' });
    expect(await g.getFollowStatus(ada, bo)).toEqual({ state: 'none' });
  });
});

describe('versions cannot tie on a long history', () => {
  it('block@P1, follow@P3 and a replayed unblock@P2 after 1,040 other ops: the stored state is the fold', async () => {
    const g = service({ historyPolicy: { ...settle(50), compactAbove: 64, keep: 16 } });
    const p1 = now + 1_000n;
    await g.block(bo, ada, { position: p1 });
    await g.follow(ada, bo, { position: p1 + 200n });
    for (let i = 0; i < 1040; i++) {
      if (i % 2 === 0) await g.mute(ada, bo);
      else await g.unmute(ada, bo);
    }
    const unblock = await g.unblock(bo, ada, { position: p1 + 100n }).catch((e: unknown) => e);
    // The history has been compacted past P2 meanwhile: the replay is refused, never misapplied.
    expect(unblock).toBeInstanceOf(PositionTooOldError);
    expect(await g.getFollowStatus(ada, bo)).toEqual({ state: 'none' });
    expect(await g.relationship(bo, ada)).toMatchObject({ blocking: true });
  });

  it('1,040 ops faster than a compaction settles: past maxOps the pair waits (503), nothing is misapplied', async () => {
    const g = service({ historyPolicy: { ...settle(60_000), maxOps: 1000 } });
    const p1 = now + 1_000n;
    await g.block(bo, ada, { position: p1 });
    await g.follow(ada, bo, { position: p1 + 200n });
    const busy: unknown[] = [];
    for (let i = 0; i < 1040; i++) {
      await g.mute(ada, bo, { position: p1 + 300n + BigInt(i) }).catch((e: unknown) => busy.push(e));
    }
    // Past `maxOps` ops above the horizon while the compaction settles, writes wait.
    expect(busy.length).toBe(1040 - 998);
    expect(busy.every((e) => e instanceof PairBusyError)).toBe(true);
    // The announced compaction already covers P2: refused, not misapplied.
    const unblock = await g.unblock(bo, ada, { position: p1 + 100n }).catch((e: unknown) => e);
    expect(unblock).toBeInstanceOf(PositionTooOldError);
    expect(await g.relationship(bo, ada)).toMatchObject({ blocking: true });
    expect(await g.getFollowStatus(ada, bo)).toEqual({ state: 'none' });
  });

  it('a replayed unblock below the newest op, on a pair with a checkpoint: stored edges equal the fold', async () => {
    const g = service({ historyPolicy: { ...settle(5), compactAbove: 8, keep: 4 } });
    const base = now + 1_000n;
    await g.block(bo, ada, { position: base });
    for (let i = 1; i <= 200; i++) await g.mute(ada, bo, { position: base + 1000n * BigInt(i) });
    const history = await store.readPairHistory(ada, bo);
    expect(history.checkpoint?.count).toBeGreaterThan(150);
    const committed = history.checkpoint?.horizon ?? 0n;
    const announced = history.pending?.horizon ?? 0n;
    const horizon = committed > announced ? committed : announced;
    const follow = await g.follow(ada, bo, { position: horizon + 10n });
    expect(follow.state).toBe('none');
    const unblock = await g.unblock(bo, ada, { position: horizon + 5n });
    expect(unblock.state).toBe('none');
    expect(await g.getFollowStatus(ada, bo)).toEqual({ state: 'following', since: horizon + 10n });
    expect(await rows(followers(bo))).toEqual([[ada, horizon + 10n]]);
    expect(await rows(following(ada))).toEqual([[bo, horizon + 10n]]);
  });
});

describe('the following cap counts requests and is checked on accept', () => {
  it('with a cap of 2, requests to four private accounts end in at most two follows', async () => {
    const g = service({ maxFollowing: 2 });
    for (const id of [3n, 4n, 5n, 6n]) await g.putUser({ id, username: `p${id}`, private: true });
    const answers: string[] = [];
    for (const id of [3n, 4n, 5n, 6n]) {
      answers.push(
        await g.follow(ada, id).then(
          (r) => r.state,
          (e: unknown) => (e instanceof FollowingCapError ? 'cap' : 'error'),
        ),
      );
    }
    expect(answers).toEqual(['requested', 'requested', 'cap', 'cap']);
    for (const id of [3n, 4n]) await g.acceptRequest(id, ada);
    expect(await g.counts(ada)).toMatchObject({ followers: 0, following: 2 });
  });

  it('accepting a request from an account already at the cap is refused', async () => {
    const g = service({ maxFollowing: 2 });
    await g.putUser({ id: 3n, username: 'p3', private: true });
    await g.follow(ada, 3n);
    const loose = service({ maxFollowing: 10 });
    await loose.follow(ada, 4n);
    await loose.follow(ada, 5n);
    await expect(g.acceptRequest(3n, ada)).rejects.toBeInstanceOf(FollowingCapError);
    expect(await g.getFollowStatus(ada, 3n)).toEqual({ state: 'requested', since: expect.any(BigInt) });
  });
});

describe('a pair history stays bounded however often it is toggled', () => {
  it('2,000 live toggles: a bounded number of ops above the horizon, and a block then holds', async () => {
    const g = service({ historyPolicy: settle(20) });
    let most = 0;
    for (let i = 0; i < 2000; i++) {
      if (i % 2 === 0) await g.follow(ada, bo);
      else await g.unfollow(ada, bo);
      most = Math.max(most, (await store.readPairHistory(ada, bo)).ops.length);
    }
    console.log(`[hardening] most ops above the horizon during 2,000 toggles: ${most}`);
    expect(most).toBeLessThanOrEqual(768);
    expect((await store.readPairHistory(ada, bo)).checkpoint?.count).toBeGreaterThan(1900);
    await g.follow(ada, bo);
    expect(await g.block(bo, ada)).toMatchObject({ state: 'blocking', changed: true });
    expect(await g.getFollowStatus(ada, bo)).toEqual({ state: 'none' });
    expect(await rows(followers(bo))).toEqual([]);
    expect(await g.follow(ada, bo).catch((e: unknown) => (e as Error).name)).toBe('BlockedError');
  });
});

describe('going public accepts pending requests durably', () => {
  const requesters = Array.from({ length: 250 }, (_, i) => 1000n + BigInt(i));
  const owner = 7n;

  async function privateOwnerWithRequests(g: GraphService) {
    await g.putUser({ id: owner, username: 'owner', private: true });
    for (const r of requesters) {
      await g.putUser({ id: r, username: `r${r}` });
      expect((await g.follow(r, owner)).state).toBe('requested');
    }
  }

  /** A store whose edge writes start failing after `n` more calls (a process dying mid-task). */
  function failingAfter(n: number) {
    let left = n;
    const write = store.writeEdges.bind(store);
    store.writeEdges = async (...args) => {
      if (left-- <= 0) throw new Error('process died');
      return write(...args);
    };
    return () => {
      store.writeEdges = write;
    };
  }

  const followerIds = async () =>
    (await store.listBucket(followers(owner), 1, null, 10_000)).map((e) => e.otherId).sort();

  it('a task that died mid-way is reported, kept, and resumed by a new process at start', async () => {
    const g = service();
    await privateOwnerWithRequests(g);
    const failures: unknown[] = [];
    const heal = failingAfter(220);
    const dying = service({ onTaskError: (_, e) => failures.push(e) });
    await dying.putUser({ id: owner, username: 'owner', private: false });
    await dying.runAcceptTask(owner).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 50));
    heal();
    expect(failures.length).toBeGreaterThan(0);
    const task = await store.getAccountTask(owner, 'accept_requests');
    expect(task?.cursor).not.toBeNull();
    expect((await followerIds()).length).toBeLessThan(250);

    const restarted = service();
    // The accept task, and the fan-out of the owner's rename from "u7" to "owner" (still waiting).
    expect(await restarted.resumeAccountTasks()).toBe(2);
    for (let i = 0; i < 100 && (await store.getAccountTask(owner, 'accept_requests')); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(await store.getAccountTask(owner, 'accept_requests')).toBeNull();
    expect(await followerIds()).toEqual([...requesters].sort());
    const left = await store.listBucket(
      { userId: owner, relation: 'requests', direction: 'in' },
      1,
      null,
      10,
    );
    expect(left).toEqual([]);
  });

  it('a second PUT of the public account restarts an unfinished task', async () => {
    const g = service();
    await privateOwnerWithRequests(g);
    const heal = failingAfter(40);
    await g.putUser({ id: owner, username: 'owner', private: false });
    await new Promise((r) => setTimeout(r, 50));
    heal();
    expect(await store.getAccountTask(owner, 'accept_requests')).not.toBeNull();
    await g.putUser({ id: owner, username: 'owner' });
    for (let i = 0; i < 100 && (await store.getAccountTask(owner, 'accept_requests')); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(await followerIds()).toEqual([...requesters].sort());
  });

  it('600 stale request rows at the head of the list do not stall the task (it walks with a cursor)', async () => {
    const g = service();
    await g.putUser({ id: owner, username: 'owner', private: true });
    const real = requesters.slice(0, 50);
    for (const r of real) {
      await g.putUser({ id: r, username: `r${r}` });
      await g.follow(r, owner);
    }
    const requestsIn = { userId: owner, relation: 'requests' as const, direction: 'in' as const };
    const stale = Array.from({ length: 600 }, (_, i) => ({
      list: requestsIn,
      bucketCodes: [1],
      entry: { createdAt: now + 10_000_000n + BigInt(i), otherId: 5000n + BigInt(i) },
      op: 'put' as const,
    }));
    await store.writeEdges([], stale, 1n);
    await g.putUser({ id: owner, username: 'owner', private: false });
    for (let i = 0; i < 200 && (await store.getAccountTask(owner, 'accept_requests')); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(await store.getAccountTask(owner, 'accept_requests')).toBeNull();
    expect(await followerIds()).toEqual([...real].sort());
  });
});

describe('a second delivery of an op whose first delivery the recovery fenced', () => {
  it('takes the claimed slot, finds its append shadowed by the fence, answers position_too_old saying so, and changes nothing', async () => {
    const g = service();
    const position = now + 1_000n;
    const op = { sourceId: ada, targetId: bo, kind: 'follow' as const, position };
    // The first delivery claimed slot `first` for the op; the recovery then found it absent and fenced it.
    const first = position + 7n;
    await store.claimOpSlot(opEventKey(op, first));
    await store.fenceOp(op, first);
    const again = await g.follow(ada, bo, { position }).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(PositionTooOldError);
    expect(again).toMatchObject({
      position,
      fenced: true,
      message: `position ${position} is closed: an earlier delivery of this op was found absent and fenced, so it can never take effect`,
    });
    expect(await g.getFollowStatus(ada, bo)).toEqual({ state: 'none' });
    expect(await rows(followers(bo))).toEqual([]);
    // A delivery at a fresh position is a new op: it takes effect.
    expect(await g.follow(ada, bo)).toMatchObject({ state: 'following' });
  });
});
