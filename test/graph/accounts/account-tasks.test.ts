/**
 * Durable account tasks of going public, on the in-memory store with
 * injected faults and a test clock: the `accept_requests` task is written before the user row it
 * serves, a run deletes it only as the run of its generation (never a task whose go-public write
 * may still land), and every pending request is accepted, whoever is deactivated.
 */

import { beforeEach, describe, expect, it } from 'vitest';
import { ACCEPT_TASK_SETTLE_MICROS } from '../../../src/graph/accounts/accounts.js';
import { GraphService } from '../../../src/graph/graph-service.js';
import { reconcileDirty } from '../../../src/jobs/reconcile-dirty.js';
import { StoreUnavailableError } from '../../../src/model/errors.js';
import type { UserFields } from '../../../src/model/types.js';
import type { AccountTask } from '../../../src/ports/records.js';
import { MemoryGraphStore } from '../../support/memory/graph-store.js';
import { SingleBucketLists } from '../support/single-bucket-lists.js';

const OWNER = 1n;
const R = 2n;

/** A memory store whose next account-task write, or user write, can fail or run something first. */
class FaultyTasksStore extends MemoryGraphStore {
  failNextTaskWrite: AccountTask['task'] | null = null;
  beforeUserWrite: ((fields: UserFields) => Promise<void>) | null = null;

  override async putAccountTask(task: AccountTask) {
    if (this.failNextTaskWrite === task.task) {
      this.failNextTaskWrite = null;
      throw new StoreUnavailableError('task write timed out (not applied)');
    }
    return super.putAccountTask(task);
  }

  override async putUserFields(...a: Parameters<MemoryGraphStore['putUserFields']>) {
    const hook = this.beforeUserWrite;
    this.beforeUserWrite = null;
    await hook?.(a[1]);
    return super.putUserFields(...a);
  }
}

let store: FaultyTasksStore;
let t: bigint;
const service = () =>
  new GraphService({
    store,
    lists: new SingleBucketLists(store),
    maxFollowing: 7500,
    countLeaseMs: 0,
    clock: () => (t += 1000n),
  });
let graph: GraphService;

beforeEach(async () => {
  store = new FaultyTasksStore();
  t = 1_790_000_000_000_000n;
  graph = service();
  await graph.putUser({ id: OWNER, username: 'owner', private: true });
  await graph.putUser({ id: R, username: 'r' });
  expect((await graph.follow(R, OWNER)).state).toBe('requested');
});

/** Where R stands toward the owner, whether the owner is private, and the tasks left. */
async function outcome() {
  return {
    r: (await graph.getFollowStatus(R, OWNER)).state,
    private: (await store.getUser(OWNER))?.private,
    tasks: (await store.listAccountTasks()).map((x) => x.task),
  };
}

describe('accept_requests is written before the user row', () => {
  it('regression: when writing the task fails, the account stays private and the retry accepts the request', async () => {
    store.failNextTaskWrite = 'accept_requests';
    await expect(graph.putUser({ id: OWNER, private: false })).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await outcome()).toEqual({ r: 'requested', private: true, tasks: [] });
    const retry = await graph.putUser({ id: OWNER, private: false });
    expect(retry.user.private).toBe(false);
    expect(await outcome()).toEqual({ r: 'following', private: false, tasks: [] });
  });

  it('a run that meets the task before the go-public user write has landed keeps it', async () => {
    const other = service(); // another instance, or a resume at start-up
    store.beforeUserWrite = async (fields) => {
      expect(fields).toEqual({ private: false });
      expect(await other.runAcceptTask(OWNER)).toBe(0); // the account still reads private
    };
    await graph.putUser({ id: OWNER, private: false });
    expect(await outcome()).toEqual({ r: 'following', private: false, tasks: [] });
  });

  it('a task of an account that went private again is deleted once it is older than the settle time', async () => {
    await store.putAccountTask({ userId: OWNER, task: 'accept_requests', cursor: null, version: t });
    expect(await graph.runAcceptTask(OWNER)).toBe(0);
    expect(await outcome()).toEqual({ r: 'requested', private: true, tasks: ['accept_requests'] });
    t += ACCEPT_TASK_SETTLE_MICROS;
    expect(await graph.runAcceptTask(OWNER)).toBe(0);
    expect(await outcome()).toEqual({ r: 'requested', private: true, tasks: [] });
  });
});

describe('going public accepts every pending request, whoever is deactivated', () => {
  /** The owner's pending requests and the tasks left, once the tasks have run. */
  async function pendingAndTasks() {
    await graph.settleAccountTasks();
    const pending = await store.listBucket(
      { userId: OWNER, relation: 'requests', direction: 'in' },
      1,
      null,
      10,
    );
    return {
      pending: pending.map((e) => e.otherId),
      tasks: (await store.listAccountTasks()).map((x) => x.task),
    };
  }

  /** With everyone active again: `outcome()`, the pending requests and the owner's counts after a pass. */
  async function settled() {
    const left = await pendingAndTasks();
    await reconcileDirty(store, { now: () => t });
    const { asOf: _, ...counts } = await graph.counts(OWNER);
    return { ...(await outcome()), ...left, counts };
  }

  it('regression: a deactivated requester’s request is accepted; after reactivation it follows the public account', async () => {
    await graph.putUser({ id: R, state: 'deactivated' });
    await graph.putUser({ id: OWNER, private: false });
    expect(await pendingAndTasks()).toEqual({ pending: [], tasks: [] });
    await graph.putUser({ id: R, state: 'active' });
    expect(await settled()).toEqual({
      r: 'following',
      private: false,
      tasks: [],
      pending: [],
      counts: { followers: 1, following: 0, exact: true },
    });
  });

  it('regression: a deactivated owner going public accepts its requests; after reactivation the requester follows it', async () => {
    await graph.putUser({ id: OWNER, state: 'deactivated' });
    await graph.putUser({ id: OWNER, private: false });
    expect(await pendingAndTasks()).toEqual({ pending: [], tasks: [] });
    await graph.putUser({ id: OWNER, state: 'active' });
    expect(await settled()).toEqual({
      r: 'following',
      private: false,
      tasks: [],
      pending: [],
      counts: { followers: 1, following: 0, exact: true },
    });
  });
});
