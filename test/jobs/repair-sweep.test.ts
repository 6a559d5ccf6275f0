/**
 * The repair sweep on the in-memory store (its scan methods are the memory equivalents of the
 * Cassandra token-range scans): the ring split, and drift found by kind and repaired. The real-node
 * acceptance is `repair-sweep.int.test.ts`.
 */
import { describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { foldView } from '../../src/graph/pair/pair-fold.js';
import { reconcileDirty } from '../../src/jobs/reconcile-dirty.js';
import { DRIFT_KINDS, repairSweep, splitRing } from '../../src/jobs/repair-sweep.js';
import { nowPosition } from '../../src/model/clock.js';
import { UsernameTakenError } from '../../src/model/errors.js';
import { RELATIONS, type UserId } from '../../src/model/types.js';
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
      missing_claim: 0,
      name_conflict: 0,
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
        missing_claim: 0,
        name_conflict: 0,
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
      missing_claim: 0,
      name_conflict: 0,
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

/** Whole findings: zero but for `some`. */
const findings = (some: Partial<Record<(typeof DRIFT_KINDS)[number], number>> = {}) => ({
  ...Object.fromEntries(DRIFT_KINDS.map((k) => [k, 0])),
  ...some,
});

/** A memory store whose claims can be dated two minutes back, as a sweep would see old ones. */
class ClaimStore extends MemoryGraphStore {
  ageClaim(name: string) {
    this.claimedAt.set(name, (this.claimedAt.get(name) ?? 0n) - 120_000_000n);
  }
  /** A user row whose name was written two minutes ago (settled), claimed or not. */
  async oldUser(id: UserId, username: string, o: { claim: boolean }) {
    await this.putUserFields(id, { username }, nowPosition() - 120_000_000n);
    if (o.claim) await this.claimUsername(username, id);
  }
  /** Who holds each name's claim (null: nobody). */
  async holders(names: readonly string[]) {
    return Promise.all(names.map(async (n) => (await this.getUsernameClaim(n))?.userId ?? null));
  }
}

describe('repair sweep: the claims of stored usernames (memory store)', () => {
  it('a user whose claim row is missing (a rename racing a rename back released it): reported, claimed, then nothing', async () => {
    const store = new ClaimStore();
    const lists = new SingleBucketLists(store);
    await store.oldUser(1n, 'ada', { claim: true });
    await store.oldUser(2n, 'Bo', { claim: false });
    const dry = await repairSweep({ store, lists }, { dryRun: true, ranges: 2 });
    expect({ ...dry, runId: 'x' }).toEqual({
      dryRun: true,
      complete: true,
      runId: 'x',
      partitions: {
        pair_ops: 0,
        edges_out: 0,
        following: 0,
        followers: 0,
        relation_lists: 0,
        usernames: 1,
        users: 2,
      },
      // ada's claim (too young for its holder to be read); each user's row and its name's claim
      rows: 5,
      findings: findings({ missing_claim: 1 }),
      repairedPairs: 0,
      markedDirty: 0,
      countsPending: 0,
      // 7 tables × 2 ranges
      pages: 14,
      samples: [{ kind: 'missing_claim', what: 'bo 2' }],
    });
    expect(await store.holders(['ada', 'bo'])).toEqual([1n, null]);

    const run = await repairSweep({ store, lists }, { ranges: 2 });
    expect({ findings: run.findings, samples: run.samples }).toEqual({
      findings: findings({ missing_claim: 1 }),
      samples: [{ kind: 'missing_claim', what: 'bo 2' }],
    });
    expect(await store.holders(['ada', 'bo'])).toEqual([1n, 2n]);
    const graph = new GraphService({ store, lists, maxFollowing: 100, countLeaseMs: 0 });
    await expect(graph.putUser({ id: 3n, username: 'BO' })).rejects.toBeInstanceOf(UsernameTakenError);

    const again = await repairSweep({ store, lists }, { ranges: 2 });
    expect({ findings: again.findings, samples: again.samples }).toEqual({
      findings: findings(),
      samples: [],
    });
  });

  it('a name two users hold: name_conflict reported, by a dry run and a real one, and nothing changed', async () => {
    const store = new ClaimStore();
    const lists = new SingleBucketLists(store);
    await store.oldUser(1n, 'cy', { claim: true });
    await store.oldUser(2n, 'CY', { claim: false });
    for (const dryRun of [true, false]) {
      const r = await repairSweep({ store, lists }, { dryRun, ranges: 2 });
      expect({ findings: r.findings, samples: r.samples }).toEqual({
        findings: findings({ name_conflict: 1 }),
        samples: [{ kind: 'name_conflict', what: '1 and 2 both named cy' }],
      });
      expect({
        holders: await store.holders(['cy']),
        users: [...(await store.getUsers([1n, 2n])).values()].map((u) => u.username),
      }).toEqual({ holders: [1n], users: ['cy', 'CY'] });
    }
  });

  it('a user whose claim is its own, or whose name is under a minute old: nothing', async () => {
    const store = new ClaimStore();
    const lists = new SingleBucketLists(store);
    await store.oldUser(1n, 'Dee', { claim: true });
    store.ageClaim('dee');
    // Written now without its claim: a PUT may be landing.
    await store.putUserFields(2n, { username: 'eve' }, nowPosition());
    for (const dryRun of [true, false]) {
      const r = await repairSweep({ store, lists }, { dryRun, ranges: 2 });
      expect({ findings: r.findings, samples: r.samples, partitions: r.partitions.users }).toEqual({
        findings: findings(),
        samples: [],
        partitions: 2,
      });
    }
    expect(await store.holders(['dee', 'eve'])).toEqual([1n, null]);
  });

  it("a name whose claim is an old orphan of another account: the orphan released, then the user's claim made", async () => {
    const store = new ClaimStore();
    const lists = new SingleBucketLists(store);
    await store.oldUser(1n, 'fay', { claim: false });
    await store.oldUser(2n, 'gus', { claim: true });
    await store.claimUsername('fay', 2n);
    store.ageClaim('fay');
    store.ageClaim('gus');
    const dry = await repairSweep({ store, lists }, { dryRun: true, ranges: 2 });
    const expected = {
      findings: findings({ orphan_claim: 1, missing_claim: 1 }),
      samples: [
        { kind: 'orphan_claim', what: 'fay 2' },
        { kind: 'missing_claim', what: 'fay 1' },
      ],
    };
    expect({ findings: dry.findings, samples: dry.samples }).toEqual(expected);
    expect(await store.holders(['fay', 'gus'])).toEqual([2n, 2n]);
    const run = await repairSweep({ store, lists }, { ranges: 2 });
    expect({ findings: run.findings, samples: run.samples }).toEqual(expected);
    expect(await store.holders(['fay', 'gus'])).toEqual([1n, 2n]);
    expect((await repairSweep({ store, lists }, { dryRun: true, ranges: 2 })).findings).toEqual(findings());
  });
});
