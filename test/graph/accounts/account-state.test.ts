/**
 * The `mark_counterparts` task of a deactivation (`src/graph/accounts/account-state.ts`) on the in-memory
 * store: it marks exactly the counterpart list buckets, resumes from its committed cursor after a
 * crash, starts over when a newer flip supersedes it, and the reconciler then excludes the
 * deactivated member from the counts.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import {
  decodeMarkCursor,
  encodeMarkCursor,
  newMarkTask,
  runMarkCounterparts,
} from '../../../src/graph/accounts/account-state.js';
import { GraphService } from '../../../src/graph/graph-service.js';
import { reconcileDirty } from '../../../src/jobs/reconcile-dirty.js';
import { bucketCodeOf } from '../../../src/model/buckets.js';
import { DIRTY_SHARDS } from '../../../src/ports/count-store.js';
import type { DirtyMark } from '../../../src/ports/records.js';
import { MemoryGraphStore } from '../../support/memory/graph-store.js';
import { SingleBucketLists } from '../support/single-bucket-lists.js';

const D = 1n;
const FOLLOWERS = Array.from({ length: 23 }, (_, i) => 100n + BigInt(i)); // follow D
const FOLLOWEES = Array.from({ length: 7 }, (_, i) => 200n + BigInt(i)); // D follows them
let store: MemoryGraphStore;
let graph: GraphService;

async function allMarks(): Promise<string[]> {
  const out: DirtyMark[] = [];
  for (let s = 0; s < DIRTY_SHARDS; s++) out.push(...(await store.listDirty(s, 10_000)));
  return out.map((m) => `${m.list.userId}/${m.list.direction}`).sort();
}

/** The marks a complete walk must leave: each follower's `following`, each followee's `followers`. */
const expected = () => [...FOLLOWERS.map((id) => `${id}/out`), ...FOLLOWEES.map((id) => `${id}/in`)].sort();

beforeEach(async () => {
  store = new MemoryGraphStore();
  // Other instances (and the reconcile passes) change what this one reads right before it reads:
  // without the read caches, which would serve it up to their staleness bound.
  graph = new GraphService({
    store,
    lists: new SingleBucketLists(store),
    maxFollowing: 7500,
    countLeaseMs: 0,
    caches: false,
  });
  for (const id of [D, ...FOLLOWERS, ...FOLLOWEES]) await graph.putUser({ id, username: `u${id}` });
  for (const f of FOLLOWERS) await graph.follow(f, D);
  for (const t of FOLLOWEES) await graph.follow(D, t);
  await reconcileDirty(store); // start from no marks, exact counts
  expect(await allMarks()).toEqual([]);
});

describe('mark_counterparts', () => {
  it('marks exactly the counterpart lists, then deletes its task', async () => {
    await store.putAccountTask(newMarkTask(D));
    expect(await runMarkCounterparts(store, D, { pageSize: 5 })).toBe(30);
    expect(await allMarks()).toEqual(expected());
    expect(await store.getAccountTask(D, 'mark_counterparts')).toBeNull();
  });

  it('a run that dies after some pages resumes from its committed cursor and still marks everything', async () => {
    await store.putAccountTask(newMarkTask(D));
    let marks = 0;
    const dying = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === 'markDirty')
          return async (...args: Parameters<MemoryGraphStore['markDirty']>) => {
            if (++marks > 12) throw new Error('process died');
            return target.markDirty(...args);
          };
        return Reflect.get(target, prop, receiver);
      },
    });
    await expect(runMarkCounterparts(dying, D, { pageSize: 5 })).rejects.toThrow('process died');
    const task = await store.getAccountTask(D, 'mark_counterparts');
    const at = decodeMarkCursor(task?.cursor ?? null);
    expect([at.direction, at.walk?.after !== null]).toEqual(['in', true]); // committed mid-list
    // The resumed run starts at the committed page: it marks the rest, not all 30 again.
    const resumed = await runMarkCounterparts(store, D, { pageSize: 5 });
    expect(resumed).toBeLessThan(30);
    expect(resumed).toBeGreaterThanOrEqual(30 - 12);
    expect(await allMarks()).toEqual(expected());
    expect(await store.getAccountTask(D, 'mark_counterparts')).toBeNull();
  });

  it('a newer flip during a run makes it start over (every mark of the last flip is written after it)', async () => {
    await store.putAccountTask(newMarkTask(D));
    let flipped = false;
    let marksAfterFlip = 0;
    const racing = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === 'markDirty')
          return async (...args: Parameters<MemoryGraphStore['markDirty']>) => {
            if (flipped) marksAfterFlip++;
            return target.markDirty(...args);
          };
        if (prop === 'putAccountTask')
          return async (...args: Parameters<MemoryGraphStore['putAccountTask']>) => {
            await target.putAccountTask(...args);
            if (!flipped) {
              flipped = true; // a second flip lands right after the first committed page
              await new Promise((r) => setTimeout(r, 2));
              await target.putAccountTask(newMarkTask(D));
            }
          };
        return Reflect.get(target, prop, receiver);
      },
    });
    await runMarkCounterparts(racing, D, { pageSize: 5 });
    expect(marksAfterFlip).toBeGreaterThanOrEqual(30);
    expect(await allMarks()).toEqual(expected());
    expect(await store.getAccountTask(D, 'mark_counterparts')).toBeNull();
  });

  it("a flip of a mutual marks only the right buckets: the walk's layout cache is keyed by list, not by account", async () => {
    // C follows D back, and C's followers list has grown to 4 buckets while its following list
    // is still one: the 'in' walk meets C first (C's following list, 1 bucket), so a cache keyed
    // by account answered 1 for C's followers list in the 'out' walk and marked code 1, which the
    // reconciler maps onto every bucket of the list (a full recount of a celebrity's list).
    const C = FOLLOWEES[0]!;
    await graph.follow(C, D);
    await reconcileDirty(store);
    await store.putLayout(
      { userId: C, relation: 'follows', direction: 'in' },
      { buckets: 4, growingTo: null, copiedThrough: 0 },
    );
    await store.putAccountTask(newMarkTask(D));
    expect(await runMarkCounterparts(store, D, { pageSize: 5 })).toBe(31);
    const marks: DirtyMark[] = [];
    for (let s = 0; s < DIRTY_SHARDS; s++) marks.push(...(await store.listDirty(s, 10_000)));
    expect(marks.map((m) => `${m.list.userId}/${m.list.direction}/${m.bucketCode}`).sort()).toEqual(
      [
        ...[...FOLLOWERS, C].map((id) => `${id}/out/1`),
        ...FOLLOWEES.map((id) => `${id}/in/${id === C ? bucketCodeOf(4, D) : 1}`),
      ].sort(),
    );
  });

  it('the cursor codec round-trips a position in either list', () => {
    const c = {
      generation: '1796000000000000',
      direction: 'out' as const,
      walk: {
        bucketCode: 3,
        after: { createdAt: 1796000000000123n, otherId: 42n },
      },
    };
    expect(decodeMarkCursor(encodeMarkCursor(c))).toEqual(c);
    expect(decodeMarkCursor(null)).toEqual({
      generation: '',
      direction: 'in',
      walk: null,
    });
  });
});

describe('deactivation through the service', () => {
  it("counterparts' counts exclude the account after one reconcile pass, and include it again after reactivation", async () => {
    const counts = async () =>
      Promise.all([graph.counts(FOLLOWERS[0]!), graph.counts(FOLLOWEES[0]!)]).then(([a, b]) => [
        a.following,
        b.followers,
      ]);
    expect(await counts()).toEqual([1, 1]);
    await graph.putUser({ id: D, state: 'deactivated' });
    await graph.settleAccountTasks();
    await reconcileDirty(store);
    expect(await counts()).toEqual([0, 0]);
    await graph.putUser({ id: D, state: 'active' });
    await graph.settleAccountTasks();
    await reconcileDirty(store);
    expect(await counts()).toEqual([1, 1]);
  });
});

describe('generations of the mark_counterparts task', () => {
  it('regression: a reactivation on another instance landing between a run’s check and its delete keeps its task; the counterparts count the account again', async () => {
    const follower = FOLLOWERS[0] as bigint;
    const followee = FOLLOWEES[0] as bigint;
    // Instance B reads its tasks a little late (its run starts after A's delete has landed).
    const slowReads = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === 'getAccountTask')
          return async (...args: Parameters<MemoryGraphStore['getAccountTask']>) => {
            await new Promise((r) => setTimeout(r, 5));
            return target.getAccountTask(...args);
          };
        return Reflect.get(target, prop, receiver);
      },
    });
    const b = new GraphService({
      store: slowReads,
      lists: new SingleBucketLists(store),
      maxFollowing: 7500,
      countLeaseMs: 0,
    });
    // Instance A: its run's final delete waits until a pass has counted the deactivation and B
    // has reactivated D (task row, then user row).
    let raced = false;
    const racing = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === 'deleteAccountTask')
          return async (...args: Parameters<MemoryGraphStore['deleteAccountTask']>) => {
            if (!raced && args[1] === 'mark_counterparts') {
              raced = true;
              await reconcileDirty(store);
              expect((await graph.counts(follower)).following).toBe(0);
              await b.putUser({ id: D, state: 'active' });
            }
            return target.deleteAccountTask(...args);
          };
        return Reflect.get(target, prop, receiver);
      },
    });
    const a = new GraphService({
      store: racing,
      lists: new SingleBucketLists(store),
      maxFollowing: 7500,
      countLeaseMs: 0,
    });
    await a.putUser({ id: D, state: 'deactivated' });
    await a.settleAccountTasks();
    await b.settleAccountTasks();
    expect(raced).toBe(true);
    await reconcileDirty(store);
    const counts = async (id: bigint) => {
      const { asOf: _, ...c } = await graph.counts(id);
      return c;
    };
    expect({ follower: await counts(follower), followee: await counts(followee) }).toEqual({
      follower: { followers: 0, following: 1, exact: true },
      followee: { followers: 1, following: 0, exact: true },
    });
    expect(await store.listAccountTasks()).toEqual([]);
  });
});
