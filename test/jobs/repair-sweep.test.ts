/**
 * The repair sweep on the in-memory store (its scan methods are the memory equivalents of the
 * Cassandra token-range scans): the ring split, and drift found by kind and repaired. The real-node
 * acceptance is `repair-sweep.int.test.ts`.
 */
import { describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { foldView } from '../../src/graph/pair/pair-fold.js';
import { reconcileDirty } from '../../src/jobs/reconcile-dirty.js';
import { repairSweep, splitRing } from '../../src/jobs/repair-sweep.js';
import { RELATIONS } from '../../src/model/types.js';
import { MAX_TOKEN, MIN_TOKEN } from '../../src/ports/records.js';
import { countName, edgeName, snapshot } from '../graph/support/graph-snapshot.js';
import { SingleBucketLists } from '../graph/support/single-bucket-lists.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';

describe('splitRing', () => {
  it('cuts (MIN_TOKEN, MAX_TOKEN] into contiguous slices', () => {
    for (const n of [1, 2, 3, 64]) {
      const r = splitRing(n);
      expect([r.length, r[0]?.start, r.at(-1)?.end]).toEqual([n, MIN_TOKEN, MAX_TOKEN]);
      for (let i = 1; i < n; i++) expect(r[i]?.start).toBe(r[i - 1]?.end);
      for (const x of r) expect(x.start < x.end).toBe(true);
    }
  });
});

describe('repair sweep (memory store)', () => {
  it('counts a list as its served count does: without deactivated members (no drift reported, none made)', async () => {
    const store = new MemoryGraphStore();
    const lists = new SingleBucketLists(store);
    const graph = new GraphService({ store, lists, maxFollowing: 100, countLeaseMs: 0 });
    const users = [1n, 2n, 3n, 4n, 5n];
    for (const id of users) await graph.putUser({ id, username: `u${id}` });
    for (const f of [2n, 3n, 4n, 5n]) await graph.follow(f, 1n);
    await graph.follow(1n, 3n);
    await graph.putUser({ id: 3n, state: 'deactivated' });
    await graph.settleAccountTasks();
    await reconcileDirty(store);
    expect((await graph.counts(1n)).followers).toBe(3);
    const dry = await repairSweep({ store, lists }, { dryRun: true, ranges: 2 });
    expect(dry.findings).toEqual({
      fold_mismatch: 0,
      missing_inverse: 0,
      missing_row: 0,
      ghost_row: 0,
      count_drift: 0,
      orphan_claim: 0,
    });
  });

  it('finds a ghost row, a half-written follow and a skewed counter; repairs them to the fold', async () => {
    const store = new MemoryGraphStore();
    const lists = new SingleBucketLists(store);
    const graph = new GraphService({ store, lists, maxFollowing: 100, countLeaseMs: 0 });
    const users = [1n, 2n, 3n, 4n];
    for (const id of users) await graph.putUser({ id, username: `u${id}` });
    const f12 = (await graph.follow(1n, 2n)).position;
    const f23 = (await graph.follow(2n, 3n)).position;
    await reconcileDirty(store);
    // Ghost: 3's following shows 4, at a position nobody's history knows.
    await store.writeEdges(
      [],
      [
        {
          list: { userId: 3n, relation: 'follows', direction: 'out' },
          bucketCodes: [1],
          entry: { createdAt: 5n, otherId: 4n },
          op: 'put',
        },
      ],
      5n,
    );
    // Half-written: 4 → 1 in the history only.
    const f = await store.readPairHistory(1n, 4n);
    await store.appendPair({
      pair: [1n, 4n],
      op: { sourceId: 4n, targetId: 1n, kind: 'follow', position: 99n, base: f.ops.length },
    });
    await store.incrementCount({ userId: 2n, relation: 'follows', direction: 'in' }, 0, 3);

    const dry = await repairSweep({ store, lists }, { dryRun: true, ranges: 2 });
    expect({
      findings: dry.findings,
      samples: [...dry.samples].sort((x, y) => (x.what < y.what ? -1 : 1)),
    }).toEqual({
      findings: {
        fold_mismatch: 1,
        missing_inverse: 0,
        missing_row: 0,
        ghost_row: 1,
        count_drift: 2,
        orphan_claim: 0,
      },
      samples: [
        { kind: 'fold_mismatch', what: '1|4' },
        { kind: 'count_drift', what: '2 follows in: counted 1, served 4' },
        { kind: 'ghost_row', what: '3 follows 4 @5 out' },
        { kind: 'count_drift', what: '3 follows out: counted 1, served 0' },
      ],
    });
    const fixed = await repairSweep({ store, lists }, { ranges: 2 });
    expect(fixed.findings).toEqual(dry.findings);
    await reconcileDirty(store);

    const names: string[] = [];
    for (const [i, a] of users.entries())
      for (const b of users.slice(i + 1))
        for (const e of foldView(await store.readPairHistory(a, b)).edges.values())
          if (e.state === 'active') names.push(edgeName(e.sourceId, e.relation, e.targetId, e.createdAt));
    names.sort();
    expect(names).toEqual([`1 follows 2 @${f12}`, `2 follows 3 @${f23}`, '4 follows 1 @99']);
    const counts = new Map<string, number>();
    for (const u of users)
      for (const r of RELATIONS)
        for (const d of ['out', 'in'] as const)
          counts.set(
            countName(u, r, d),
            names.filter((n) => {
              const [s, rel, t] = n.split(' ');
              return rel === r && (d === 'out' ? s : t) === `${u}`;
            }).length,
          );
    expect(await snapshot(store, users)).toEqual({
      forward: names,
      inverse: names,
      outLists: names,
      inLists: names,
      counts,
    });
    expect((await repairSweep({ store, lists }, { dryRun: true })).findings).toEqual({
      fold_mismatch: 0,
      missing_inverse: 0,
      missing_row: 0,
      ghost_row: 0,
      count_drift: 0,
      orphan_claim: 0,
    });
  });

  it('releases a username claim that no user row uses once it is a minute old; a younger one, and a used one, stay', async () => {
    /** Claims of names in `aged` read as claimed two minutes ago. */
    class Aged extends MemoryGraphStore {
      readonly aged = new Set<string>();
      override async getUsernameClaim(username: string) {
        const claim = await super.getUsernameClaim(username);
        return claim && this.aged.has(username)
          ? { ...claim, claimedAt: claim.claimedAt - 120_000_000n }
          : claim;
      }
    }
    const store = new Aged();
    const lists = new SingleBucketLists(store);
    const graph = new GraphService({ store, lists, maxFollowing: 100, countLeaseMs: 0 });
    await graph.putUser({ id: 1n, username: 'ada' });
    // A rename that lost to a concurrent one, and a PUT still landing: claims no row uses.
    await store.claimUsername('lost', 1n);
    await store.claimUsername('landing', 1n);
    store.aged.add('lost');
    store.aged.add('ada');
    const dry = await repairSweep({ store, lists }, { dryRun: true, ranges: 2 });
    expect({ findings: dry.findings.orphan_claim, samples: dry.samples }).toEqual({
      findings: 1,
      samples: [{ kind: 'orphan_claim', what: 'lost 1' }],
    });
    await expect(graph.putUser({ id: 2n, username: 'lost' })).rejects.toThrow(/taken/i);
    const run = await repairSweep({ store, lists }, { ranges: 2 });
    expect(run.findings.orphan_claim).toBe(1);
    expect((await graph.putUser({ id: 2n, username: 'lost' })).created).toBe(true);
    await expect(graph.putUser({ id: 3n, username: 'landing' })).rejects.toThrow(/taken/i);
    await expect(graph.putUser({ id: 3n, username: 'ada' })).rejects.toThrow(/taken/i);
    expect((await repairSweep({ store, lists }, { dryRun: true })).findings.orphan_claim).toBe(0);
  });
});
