/**
 * ACCEPTANCE (repair sweep) on the real node: a graph built through the service, then
 * drift injected with raw CQL — inverse rows deleted, ghost list rows, skewed counters, half-written
 * ops (an op in the pair history whose edge and list writes never happened). The dry run reports
 * exactly that drift by kind; the sweep plus one reconciler pass restore exact agreement with the
 * fold of every pair's history; a second sweep finds nothing; a repair racing a newer unfollow does
 * not resurrect the edge; a sweep stopped part-way and resumed ends where a whole one does; a
 * user without its name's claim is reported and claimed, and a name two users hold is reported and
 * left.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { foldView } from '../../src/graph/pair/pair-fold.js';
import { reconcileDirty } from '../../src/jobs/reconcile-dirty.js';
import { repairSweep, type SweepReport } from '../../src/jobs/repair-sweep.js';
import { nowPosition } from '../../src/model/clock.js';
import { RELATIONS } from '../../src/model/types.js';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { countName, edgeName, snapshot } from '../graph/support/graph-snapshot.js';
import { SingleBucketLists } from '../graph/support/single-bucket-lists.js';
import { type TestKeyspace, testKeyspace } from '../support/cassandra.js';

const USERS = [1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n];

/**
 * A store whose next edge write loses its inverse rows (`edges_in`), as a replica that never got
 * them would. A raw CQL `DELETE` cannot model that: its tombstone carries the wall clock, far below
 * the rows' versions (≈ position × 1024), so it deletes nothing; a tombstone at or above a row's
 * version would shadow every later write at that version too — the very property that keeps a
 * repair from overriding a newer user action — so no repair could bring the row back.
 */
class LossyStore extends CassandraGraphStore {
  loseNextInverse = false;
  override async writeEdges(...[edges, rows, version]: Parameters<CassandraGraphStore['writeEdges']>) {
    if (this.loseNextInverse && edges.length > 0) {
      this.loseNextInverse = false;
      return super.writeEdges(
        edges.map((e) => ({ ...e, inBucketCodes: [] })),
        rows,
        version,
      );
    }
    return super.writeEdges(edges, rows, version);
  }
}
let ks: TestKeyspace;
let store: CassandraGraphStore;
let lists: SingleBucketLists;
let graph: GraphService;
let lossy: LossyStore;
let lossyGraph: GraphService;

/** A follow whose inverse rows are lost (everything else written). */
async function followLosingInverse(s: bigint, t: bigint) {
  lossy.loseNextInverse = true;
  await lossyGraph.follow(s, t);
  expect(lossy.loseNextInverse).toBe(false);
}

const sweep = (o: Parameters<typeof repairSweep>[1] = {}) =>
  repairSweep({ store, lists }, { ranges: 4, ...o });
const cql = (q: string, params: unknown[] = []) => ks.client.execute(q, params, { prepare: true });

/** What every view must show: the fold of each pair's history (active edges), and list sizes. */
async function reference() {
  const names: string[] = [];
  for (const [i, a] of USERS.entries()) {
    for (const b of USERS.slice(i + 1)) {
      const fold = foldView(await store.readPairHistory(a, b));
      for (const e of fold.edges.values())
        if (e.state === 'active') names.push(edgeName(e.sourceId, e.relation, e.targetId, e.createdAt));
    }
  }
  names.sort();
  const counts = new Map<string, number>();
  for (const u of USERS) {
    for (const r of RELATIONS) {
      counts.set(countName(u, r, 'out'), names.filter((n) => n.startsWith(`${u} ${r} `)).length);
      counts.set(
        countName(u, r, 'in'),
        names.filter((n) => n.split(' ')[1] === r && n.split(' ')[2] === `${u}`).length,
      );
    }
  }
  return { forward: names, inverse: names, outLists: names, inLists: names, counts };
}

async function createdAt(s: bigint, t: bigint, relation: 'follows' | 'mutes' = 'follows') {
  return (await store.getEdgesOut(s, relation, [t])).get(t)?.createdAt as bigint;
}

/** Appends an op to the pair history only, as a writer that died right after its append would. */
async function halfWritten(source: bigint, target: bigint, kind: string) {
  const [lo, hi] = source < target ? [source, target] : [target, source];
  const history = await store.readPairHistory(lo, hi);
  await cql(
    'INSERT INTO pair_ops (low_id, high_id, position, source_id, kind, base) VALUES (?, ?, ?, ?, ?, ?)',
    [lo, hi, nowPosition(), source, kind, BigInt(history.checkpoint?.count ?? 0)],
  );
}

const NOTHING = {
  fold_mismatch: 0,
  missing_inverse: 0,
  missing_row: 0,
  ghost_row: 0,
  count_drift: 0,
  orphan_claim: 0,
  missing_claim: 0,
  name_conflict: 0,
};
const sortedSamples = (r: SweepReport) => [...r.samples].sort((x, y) => (x.what < y.what ? -1 : 1));

beforeAll(async () => {
  ks = await testKeyspace('repair_sweep');
  store = new CassandraGraphStore(ks.client);
  lists = new SingleBucketLists(store);
  graph = new GraphService({ store, lists, maxFollowing: 7500, countLeaseMs: 0 });
  lossy = new LossyStore(ks.client);
  lossyGraph = new GraphService({
    store: lossy,
    lists: new SingleBucketLists(lossy),
    maxFollowing: 7500,
    countLeaseMs: 0,
  });
  for (const id of USERS) await graph.putUser({ id, username: `u${id}` });
  for (const [s, t] of [
    [1n, 2n],
    [1n, 3n],
    [2n, 3n],
    [3n, 1n],
    [4n, 1n],
    [4n, 2n],
    [5n, 1n],
    [6n, 5n],
  ] as const)
    await graph.follow(s, t);
  await graph.mute(2n, 4n);
  await graph.block(7n, 8n);
  await reconcileDirty(store);
});

afterAll(async () => {
  await ks?.drop();
});

describe('repair sweep', () => {
  it('starts clean: the views equal the reference and a sweep finds nothing', async () => {
    expect(await snapshot(store, USERS)).toEqual(await reference());
    const r = await sweep({ dryRun: true });
    expect({ findings: r.findings, complete: r.complete, samples: r.samples }).toEqual({
      findings: NOTHING,
      complete: true,
      samples: [],
    });
  });

  it('a dry run reports exactly the injected drift by kind, and writes nothing', async () => {
    await followLosingInverse(6n, 3n);
    const c63 = await createdAt(6n, 3n);
    // The follow marked its lists dirty (its counts are right): settle them before injecting the
    // rest, so the count drift found is exactly the injected one.
    await reconcileDirty(store);
    await cql(
      'INSERT INTO following (user_id, bucket, created_at, other_id, position) VALUES (6, 1, 111, 4, 111)',
    );
    await cql(
      "INSERT INTO relation_lists (user_id, relation, direction, bucket, created_at, other_id, position) VALUES (3, 'mutes', 'in', 1, 222, 5, 222)",
    );
    await cql(
      "UPDATE list_counts SET n = n + 5 WHERE user_id = 2 AND relation = 'follows' AND direction = 'in' AND shard = 0",
    );
    await halfWritten(5n, 7n, 'follow');
    await halfWritten(4n, 2n, 'unfollow');
    const before = await snapshot(store, USERS);

    const r = await sweep({ dryRun: true });
    expect({ ...r, runId: 'x', samples: sortedSamples(r) }).toEqual({
      dryRun: true,
      complete: true,
      runId: 'x',
      // pair_ops: the 10 pairs with history (1|2 1|3 1|4 1|5 2|3 2|4 3|6 5|6 7|8, and 5|7 with its
      // op only); edges_out: 1..7 (8 holds no edge row); following: 1..6 (6 with its ghost);
      // followers: 1, 2, 3, 5; relation_lists: 2's mutes out, 4's mutes in, 7's blocks out, 8's
      // blocks in, 3's ghost mutes in; usernames and users: the 8 users' names and rows.
      partitions: {
        pair_ops: 10,
        edges_out: 7,
        following: 6,
        followers: 4,
        relation_lists: 5,
        usernames: 8,
        users: 8,
      },
      // ops and stored edges of the pairs, edge rows of the sources, list rows (ghosts included),
      // one claim read per name, one read per user row (each name under a minute old: its claim
      // is not read)
      rows: 75,
      findings: {
        fold_mismatch: 2,
        missing_inverse: 1,
        missing_row: 0,
        ghost_row: 2,
        count_drift: 3,
        orphan_claim: 0,
        missing_claim: 0,
        name_conflict: 0,
      },
      repairedPairs: 0,
      markedDirty: 0,
      countsPending: 0,
      pages: 28,
      samples: [
        { kind: 'missing_inverse', what: `6 follows 3 @${c63}` },
        { kind: 'count_drift', what: '2 follows in: counted 2, served 7' },
        { kind: 'fold_mismatch', what: '2|4' },
        { kind: 'count_drift', what: '3 mutes in: counted 1, served 0' },
        { kind: 'fold_mismatch', what: '5|7' },
        { kind: 'ghost_row', what: '5 mutes 3 @222 in' },
        { kind: 'count_drift', what: '6 follows out: counted 3, served 2' },
        { kind: 'ghost_row', what: '6 follows 4 @111 out' },
      ].sort((x, y) => (x.what < y.what ? -1 : 1)),
    });
    expect(await snapshot(store, USERS)).toEqual(before);
  });

  it('the sweep and one reconciler pass restore exact agreement; a second sweep finds nothing', async () => {
    const r = await sweep();
    expect({ findings: r.findings, complete: r.complete, repaired: r.repairedPairs }).toEqual({
      findings: {
        fold_mismatch: 2,
        missing_inverse: 1,
        missing_row: 0,
        ghost_row: 2,
        count_drift: 3,
        orphan_claim: 0,
        missing_claim: 0,
        name_conflict: 0,
      },
      complete: true,
      // 2|4 and 5|7 (fold), 3|6 (inverse), 4|6 and 3|5 (ghosts)
      repaired: 5,
    });
    await reconcileDirty(store);
    const ref = await reference();
    expect(ref.forward).toContain(`5 follows 7 @${(await store.readPairHistory(5n, 7n)).ops[0]?.position}`);
    expect(ref.forward.some((n) => n.startsWith('4 follows 2 '))).toBe(false);
    expect(await snapshot(store, USERS)).toEqual(ref);
    const again = await sweep();
    expect({ findings: again.findings, repaired: again.repairedPairs }).toEqual({
      findings: NOTHING,
      repaired: 0,
    });
  });

  it('a repair racing a newer unfollow does not resurrect the edge', async () => {
    await halfWritten(6n, 8n, 'follow');
    const raced: string[] = [];
    const r = await sweep({
      afterRepairRead: async (a, b) => {
        if (a === 6n && b === 8n) {
          raced.push(`${a}|${b}`);
          expect(await graph.unfollow(6n, 8n)).toMatchObject({ state: 'none', changed: true });
        }
      },
    });
    expect({ raced, findings: r.findings }).toEqual({
      raced: ['6|8'],
      findings: { ...NOTHING, fold_mismatch: 1 },
    });
    expect(await graph.getFollowStatus(6n, 8n)).toEqual({ state: 'none' });
    await reconcileDirty(store);
    const ref = await reference();
    expect(ref.forward.some((n) => n.startsWith('6 follows 8 '))).toBe(false);
    expect(await snapshot(store, USERS)).toEqual(ref);
    expect((await sweep({ dryRun: true })).findings).toEqual(NOTHING);
  });

  it('a sweep stopped part-way and resumed finishes with the same result as a whole one', async () => {
    await followLosingInverse(8n, 1n);
    await reconcileDirty(store);
    await cql(
      'INSERT INTO followers (user_id, bucket, created_at, other_id, position) VALUES (8, 1, 333, 2, 333)',
    );
    await cql(
      "UPDATE list_counts SET n = n - 2 WHERE user_id = 5 AND relation = 'follows' AND direction = 'out' AND shard = 3",
    );
    await halfWritten(8n, 3n, 'follow');
    const whole = await sweep({ dryRun: true });
    expect(whole.findings).toEqual({
      fold_mismatch: 1,
      missing_inverse: 1,
      missing_row: 0,
      ghost_row: 1,
      count_drift: 2,
      orphan_claim: 0,
      missing_claim: 0,
      name_conflict: 0,
    });

    const part = await sweep({ job: 'resume-test', maxPages: 7 });
    expect({ complete: part.complete, pages: part.pages }).toEqual({ complete: false, pages: 7 });
    const rest = await sweep({ job: 'resume-test', resume: true });
    expect({
      complete: rest.complete,
      pages: rest.pages,
      findings: rest.findings,
      partitions: rest.partitions,
    }).toEqual({
      complete: true,
      pages: whole.pages,
      findings: whole.findings,
      partitions: whole.partitions,
    });
    expect((await store.getSweepProgress('resume-test'))?.done).toBe(true);
    await reconcileDirty(store);
    expect(await snapshot(store, USERS)).toEqual(await reference());
    expect((await sweep({ dryRun: true })).findings).toEqual(NOTHING);
  });

  it('a user without its claim: a dry run reports it and writes nothing, a sweep claims it, a second finds nothing; a name two users hold is reported and left', async () => {
    const before = await sweep({ dryRun: true });
    expect(before.findings).toEqual(NOTHING);
    // Names written two minutes ago (settled): 20's claim was released by a racing rename of its
    // own; 22's name is the one 21 holds; 23's claim is its own.
    const old = nowPosition() - 120_000_000n;
    await store.putUserFields(20n, { username: 'Bo' }, old);
    await store.putUserFields(21n, { username: 'cy' }, old);
    await store.claimUsername('cy', 21n);
    await store.putUserFields(22n, { username: 'CY' }, old);
    await store.putUserFields(23n, { username: 'dee' }, old);
    await store.claimUsername('dee', 23n);
    const state = async () => ({
      holders: await Promise.all(
        ['bo', 'cy', 'dee'].map(async (n) => (await store.getUsernameClaim(n))?.userId ?? null),
      ),
      names: [...(await store.getUsers([20n, 21n, 22n, 23n])).values()].map((u) => u.username),
    });
    const injected = await state();
    expect(injected).toEqual({ holders: [null, 21n, 23n], names: ['Bo', 'cy', 'CY', 'dee'] });
    const found = {
      findings: { ...NOTHING, missing_claim: 1, name_conflict: 1 },
      samples: [
        { kind: 'name_conflict', what: '21 and 22 both named cy' },
        { kind: 'missing_claim', what: 'bo 20' },
      ],
    };

    const dry = await sweep({ dryRun: true });
    // Whole but for the rows read, which depend on whether the fixture users' names have settled.
    expect({ ...dry, runId: 'x', rows: 0, samples: sortedSamples(dry) }).toEqual({
      ...before,
      runId: 'x',
      rows: 0,
      partitions: {
        ...before.partitions,
        usernames: before.partitions.usernames + 2,
        users: before.partitions.users + 4,
      },
      ...found,
    });
    expect(await state()).toEqual(injected);

    const r = await sweep();
    expect({ findings: r.findings, samples: sortedSamples(r) }).toEqual(found);
    expect(await state()).toEqual({ ...injected, holders: [20n, 21n, 23n] });
    await expect(graph.putUser({ id: 24n, username: 'BO' })).rejects.toThrow(/taken/i);

    const again = await sweep();
    expect({ findings: again.findings, samples: again.samples }).toEqual({
      findings: { ...NOTHING, name_conflict: 1 },
      samples: [{ kind: 'name_conflict', what: '21 and 22 both named cy' }],
    });
    expect(await state()).toEqual({ ...injected, holders: [20n, 21n, 23n] });
    // The operator's fix: one of the two renamed through a PUT.
    await graph.putUser({ id: 22n, username: 'cyd' });
    await graph.settleAccountTasks();
    expect((await sweep({ dryRun: true })).findings).toEqual(NOTHING);
  });
});
