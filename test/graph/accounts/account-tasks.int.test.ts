/**
 * Durable account tasks on the real node: two service instances on one
 * keyspace. Instance A deactivates O; a reconcile pass counts the deactivation; instance B
 * reactivates O while A's run is between its generation check and its delete. The delete is
 * written at A's generation's version, so B's task row (a newer generation) survives, B's walk
 * marks O's counterparts, and their counts include O again — before the fix A's delete removed
 * B's task and C kept following 0 with `exact: true`.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { GraphService } from '../../../src/graph/graph-service.js';
import { reconcileDirty } from '../../../src/jobs/reconcile-dirty.js';
import type { UserId } from '../../../src/model/types.js';
import type { AccountTask } from '../../../src/ports/records.js';
import { CassandraGraphStore } from '../../../src/store/cassandra/graph-store.js';
import { type TestKeyspace, testKeyspace } from '../../support/cassandra.js';
import { SingleBucketLists } from '../support/single-bucket-lists.js';

const O = 1n;
const FOLLOWERS = [11n, 12n, 13n];
const FOLLOWEE = 21n;

/**
 * Instance A's store: its first `mark_counterparts` delete runs `beforeDelete` first, and
 * `deleted` resolves once that delete has landed.
 */
class RacingStore extends CassandraGraphStore {
  beforeDelete: (() => Promise<void>) | null = null;
  #landed!: () => void;
  readonly deleted = new Promise<void>((r) => {
    this.#landed = r;
  });
  override async deleteAccountTask(userId: UserId, task: AccountTask['task'], version: bigint) {
    const hook = task === 'mark_counterparts' ? this.beforeDelete : null;
    this.beforeDelete = null;
    await hook?.();
    const done = await super.deleteAccountTask(userId, task, version);
    if (hook) this.#landed();
    return done;
  }
}

/**
 * Instance B's store: its `mark_counterparts` reads (its background run's, never its PUT's) wait
 * until A's delete has landed, so B's run starts after it, whatever the machine's load — the
 * order the regression needs, by a gate and not by a delay.
 */
class GatedTaskReads extends CassandraGraphStore {
  constructor(
    client: ConstructorParameters<typeof CassandraGraphStore>[0],
    private readonly gate: Promise<void>,
  ) {
    super(client);
  }
  override async getAccountTask(userId: UserId, task: AccountTask['task']) {
    if (task === 'mark_counterparts') await this.gate;
    return super.getAccountTask(userId, task);
  }
}

let ks: TestKeyspace;
let store: CassandraGraphStore;
let graph: GraphService;

const service = (s: CassandraGraphStore) =>
  new GraphService({ store: s, lists: new SingleBucketLists(s), maxFollowing: 7500, countLeaseMs: 0 });

beforeAll(async () => {
  ks = await testKeyspace('account_tasks');
  store = new CassandraGraphStore(ks.client);
  // Counts read exactly as stored: a counts cache may answer within its bound (1 s) what it read
  // inside the race, before the reconcile below.
  graph = new GraphService({
    store,
    lists: new SingleBucketLists(store),
    maxFollowing: 7500,
    countLeaseMs: 0,
    caches: false,
  });
  for (const id of [O, ...FOLLOWERS, FOLLOWEE]) await graph.putUser({ id, username: `u${id}` });
  for (const f of FOLLOWERS) await graph.follow(f, O);
  await graph.follow(O, FOLLOWEE);
  await reconcileDirty(store);
});

afterAll(async () => {
  await ks?.drop();
});

const counts = async (id: bigint) => {
  const { asOf: _, ...c } = await graph.counts(id);
  return c;
};

it('regression: a reactivation on another instance between a run’s check and its delete keeps its task; counterparts count O again', async () => {
  const racing = new RacingStore(ks.client);
  const a = service(racing);
  const b = service(new GatedTaskReads(ks.client, racing.deleted));
  let raced = false;
  racing.beforeDelete = async () => {
    raced = true;
    await reconcileDirty(store);
    expect(await counts(FOLLOWERS[0] as bigint)).toEqual({ followers: 0, following: 0, exact: true });
    await b.putUser({ id: O, state: 'active' });
  };
  await a.putUser({ id: O, state: 'deactivated' });
  await a.settleAccountTasks();
  await b.settleAccountTasks();
  expect(raced).toBe(true);
  await reconcileDirty(store);
  expect({
    follower: await counts(FOLLOWERS[0] as bigint),
    followee: await counts(FOLLOWEE),
    o: await counts(O),
  }).toEqual({
    follower: { followers: 0, following: 1, exact: true },
    followee: { followers: 1, following: 0, exact: true },
    o: { followers: 3, following: 1, exact: true },
  });
  expect(await store.listAccountTasks()).toEqual([]);
});
