/**
 * ACCEPTANCE 2 — the seeds' replay on the real node: six accounts (Ada and Dee follow Bo and Cy,
 * Eli and Fay follow Cy), a follow interrupted between its writes, its retry, an unfollow, a
 * delayed retry of the old follow, an unfollow of an absent edge. Forward and inverse views must
 * agree once the write path has settled (retry or repair).
 *
 * Idempotency-Key receipts live in the HTTP layer; the domain-level equivalent exercised here is
 * a retry carrying the same position, which the service reports as `duplicate: true`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GraphService } from '../../../src/graph/graph-service.js';
import { reconcileUsers } from '../../../src/jobs/reconcile.js';
import { repairUsers } from '../../../src/jobs/repair.js';
import { type TestKeyspace, testKeyspace } from '../../support/cassandra.js';
import { FaultyStore, InjectedFault } from '../support/faulty-store.js';
import { snapshot } from '../support/graph-snapshot.js';
import { SingleBucketLists } from '../support/single-bucket-lists.js';

const [ada, bo, cy, dee, eli, fay] = [1n, 2n, 3n, 4n, 5n, 6n];
const names = new Map([
  [ada, 'Ada'],
  [bo, 'Bo'],
  [cy, 'Cy'],
  [dee, 'Dee'],
  [eli, 'Eli'],
  [fay, 'Fay'],
]);
const everyone = [...names.keys()];

let ks: TestKeyspace;
let store: FaultyStore;
let graph: GraphService;

/** Follow pairs (`Ada→Bo`) seen by each of the four views, createdAt dropped. */
async function followViews() {
  const s = await snapshot(store, everyone);
  const pairs = (xs: string[]) =>
    xs
      .filter((x) => x.split(' ')[1] === 'follows')
      .map((x) => {
        const [src, , tgt] = x.split(' ');
        return `${names.get(BigInt(src as string))}→${names.get(BigInt(tgt as string))}`;
      })
      .sort();
  return {
    forward: pairs(s.forward),
    inverse: pairs(s.inverse),
    following: pairs(s.outLists),
    followers: pairs(s.inLists),
  };
}

const all = (pairs: string[]) => {
  const sorted = [...pairs].sort();
  return { forward: sorted, inverse: sorted, following: sorted, followers: sorted };
};

const seeds = ['Ada→Bo', 'Ada→Cy', 'Dee→Bo', 'Dee→Cy', 'Eli→Cy', 'Fay→Cy'];

beforeAll(async () => {
  ks = await testKeyspace('interrupted_follow');
  store = new FaultyStore(ks.client);
  graph = new GraphService({ store, lists: new SingleBucketLists(store), maxFollowing: 7500 });
  for (const [id, username] of names) await graph.putUser({ id, username });
  for (const [s, t] of [
    [ada, bo],
    [ada, cy],
    [dee, bo],
    [dee, cy],
    [eli, cy],
    [fay, cy],
  ] as const)
    await graph.follow(s, t);
});

afterAll(async () => {
  await ks?.drop();
});

describe('the seeds’ replay', () => {
  let interrupted: bigint;

  it('starts from the seeds, every view agreeing', async () => {
    expect(await followViews()).toEqual(all(seeds));
  });

  it('a follow interrupted before its edge write leaves neither direction; its retry commits once', async () => {
    store.failNextWrite('throw');
    await expect(graph.follow(eli, bo)).rejects.toBeInstanceOf(InjectedFault);
    const history = (await store.readPairHistory(eli, bo)).ops;
    expect(history.map((o) => o.kind)).toEqual(['follow']);
    interrupted = (history[0] as { position: bigint }).position;
    expect(await followViews()).toEqual(all(seeds));

    const retry = await graph.follow(eli, bo, { position: interrupted });
    expect(retry).toEqual({ state: 'following', changed: false, position: interrupted, duplicate: true });
    expect((await store.readPairHistory(eli, bo)).ops).toHaveLength(1);
    expect(await graph.getFollowStatus(eli, bo)).toEqual({ state: 'following', since: interrupted });
    expect(await followViews()).toEqual(all([...seeds, 'Eli→Bo']));
  });

  it('a follow whose list rows were lost is healed by repair; both edge directions were never split', async () => {
    store.failNextWrite('drop-rows');
    const f = await graph.follow(fay, bo);
    expect(f).toMatchObject({ state: 'following', changed: true, duplicate: false });
    const half = await followViews();
    expect(half.forward).toEqual(half.inverse);
    expect(half.forward).toContain('Fay→Bo');
    expect(half.following).not.toContain('Fay→Bo');

    const repaired = await repairUsers({ store, lists: new SingleBucketLists(store) }, [fay, bo]);
    expect(repaired.map((r) => [names.get(r.a), names.get(r.b)])).toContainEqual(['Bo', 'Fay']);
    expect(await followViews()).toEqual(all([...seeds, 'Eli→Bo', 'Fay→Bo']));
    expect(await repairUsers({ store, lists: new SingleBucketLists(store) }, [fay, bo])).toEqual(repaired);
    expect(await followViews()).toEqual(all([...seeds, 'Eli→Bo', 'Fay→Bo']));
  });

  it('an unfollow, then a delayed retry of the old follow: a duplicate that does not restore the edge', async () => {
    expect(await graph.unfollow(eli, bo)).toMatchObject({ state: 'none', changed: true, duplicate: false });
    const late = await graph.follow(eli, bo, { position: interrupted });
    // The answer is the pair's state after the op, as the fold says: the unfollow stands.
    expect(late).toEqual({ state: 'none', changed: false, position: interrupted, duplicate: true });
    expect(await graph.getFollowStatus(eli, bo)).toEqual({ state: 'none' });
    expect(await followViews()).toEqual(all([...seeds, 'Fay→Bo']));
  });

  it('an unfollow of an absent edge is accepted and changes nothing', async () => {
    const before = await snapshot(store, everyone);
    expect(await graph.unfollow(fay, ada)).toMatchObject({ state: 'none', changed: false, duplicate: false });
    const after = await snapshot(store, everyone);
    expect(after).toEqual(before);
  });

  it('ends with forward and inverse pair sets equal, and exact counts that reconcile confirms', async () => {
    const expected = [...seeds, 'Fay→Bo'];
    expect(await followViews()).toEqual(all(expected));
    const counts = async () =>
      Object.fromEntries(
        await Promise.all(everyone.map(async (u) => [names.get(u), await graph.counts(u)] as const)),
      );
    const want = {
      Ada: { followers: 0, following: 2 },
      Bo: { followers: 3, following: 0 },
      Cy: { followers: 4, following: 0 },
      Dee: { followers: 0, following: 2 },
      Eli: { followers: 0, following: 1 },
      Fay: { followers: 0, following: 2 },
    };
    expect(await counts()).toMatchObject(want);
    const results = await reconcileUsers(store, everyone, { relations: ['follows'] });
    const drifted = results.filter((r) => r.drift !== 0);
    console.log(
      `[interrupted-follow] drift found by reconcile: ${
        drifted.map((r) => `${names.get(r.list.userId)} ${r.list.direction} ${r.drift}`).join(', ') || 'none'
      }`,
    );
    expect(drifted).toEqual([]);
    expect(await counts()).toMatchObject(want);
  });
});
