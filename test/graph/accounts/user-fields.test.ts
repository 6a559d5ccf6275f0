/**
 * Account writes per field (the API contract, Part 4, "Account writes"): a PUT writes only the
 * fields it names, above the version it read, so two PUTs of different fields both hold, on any
 * instances, and a PUT sent after another was acknowledged supersedes it whatever the clocks.
 * `user.updated` names the fields; a PUT that changes nothing writes nothing. Usernames: a
 * case-only rename is no conflict with itself, two concurrent renames to one free name give one
 * 409, and a rename lost to a concurrent one leaves no name claimed. On the memory store (the
 * store contract holds the cells' rule on both stores).
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { GraphService } from '../../../src/graph/graph-service.js';
import { InvalidInputError, StoreUnavailableError, UsernameTakenError } from '../../../src/model/errors.js';
import { plainUsername } from '../../../src/model/row-username.js';
import { MemoryGraphStore } from '../../support/memory/graph-store.js';
import { SingleBucketLists } from '../support/single-bucket-lists.js';

const ADA = 1n;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let store: MemoryGraphStore;

/** An instance of the service on the shared store, its clock `offsetMicros` off the real one. */
function instance(offsetMicros = 0n): GraphService {
  let last = 0n;
  const clock = () => {
    const t = BigInt(Date.now()) * 1000n + offsetMicros;
    last = t > last ? t : last + 1n;
    return last;
  };
  return new GraphService({
    store,
    lists: new SingleBucketLists(store),
    maxFollowing: 1000,
    registry: false,
    clock,
    // A short write path's bound, so a rename's fan-out starts its walk after 0.8 s, not 10 s.
    historyPolicy: { writeBudgetMs: 400, viewBudgetMs: 100, batchTimeoutMs: 100, clockSkewMs: 100 },
  });
}

/** The `user.updated` rows of the feed in feed order, as the fields each names. */
async function updates(): Promise<unknown[]> {
  const far = BigInt(Date.now()) * 1000n + 3_600_000_000n;
  const rows = await store.readEventRows(null, far, 1000);
  return rows.filter((r) => r.user).map((r) => r.fields);
}

beforeEach(async () => {
  store = new MemoryGraphStore();
  await instance().putUser({ id: ADA, username: 'ada' });
});

describe('a PUT writes the fields it names', () => {
  it('four concurrent PUTs of different fields through two instances: all four hold, and each answer shows its own', async () => {
    const [a, b] = [instance(), instance()];
    const answers = await Promise.all([
      a.putUser({ id: ADA, private: true }),
      b.putUser({ id: ADA, state: 'deactivated' }),
      a.putUser({ id: ADA, hideLists: true }),
      b.putUser({ id: ADA, username: 'Ada.L' }),
    ]);
    expect(answers.map((x) => x.created)).toEqual([false, false, false, false]);
    expect([
      answers[0]?.user.private,
      answers[1]?.user.state,
      answers[2]?.user.hideLists,
      answers[3]?.user.username,
    ]).toEqual([true, 'deactivated', true, 'Ada.L']);
    expect(await store.getUser(ADA)).toEqual({
      id: ADA,
      username: 'Ada.L',
      private: true,
      state: 'deactivated',
      hideLists: true,
    });
    expect(await store.listDeactivated(10)).toEqual([ADA]);
    await Promise.all([a.settleAccountTasks(), b.settleAccountTasks()]);
  });

  it('a PUT sent after another was acknowledged supersedes it, whatever the clocks', async () => {
    const fast = instance(20_000_000n);
    const slow = instance(-20_000_000n);
    await fast.putUser({ id: ADA, private: true, state: 'deactivated' });
    expect((await slow.putUser({ id: ADA, private: false })).user.private).toBe(false);
    expect((await slow.putUser({ id: ADA, state: 'active' })).user.state).toBe('active');
    await fast.putUser({ id: ADA, private: true });
    expect(await store.getUser(ADA)).toMatchObject({ private: true, state: 'active' });
    expect(await store.listDeactivated(10)).toEqual([]);
    await Promise.all([fast.settleAccountTasks(), slow.settleAccountTasks()]);
  });

  it('user.updated names the fields a PUT changed; a PUT that changes nothing writes nothing and answers the row', async () => {
    const g = instance();
    const before = await store.getUserVersioned(ADA);
    expect(await g.putUser({ id: ADA })).toEqual({ user: before.user, created: false });
    expect(await g.putUser({ id: ADA, username: 'ada', private: false })).toEqual({
      user: before.user,
      created: false,
    });
    expect(await store.getUserVersioned(ADA)).toEqual(before);
    await g.putUser({ id: ADA, private: true, username: 'ada' });
    await g.putUser({ id: ADA, username: 'Ada', hideLists: true, state: 'active' });
    expect(await updates()).toEqual([['private'], ['username', 'hideLists']]);
    await g.settleAccountTasks();
  });

  it('two PUTs at one version (clocks behind the cells both read): each keeps its own user.updated, with its fields', async () => {
    // A fast clock's write leaves the cells ahead of two slow instances, which then both take the
    // version just above them.
    await instance(20_000_000n).putUser({ id: ADA, hideLists: true });
    const [a, b] = [instance(-20_000_000n), instance(-20_000_000n)];
    await Promise.all([a.putUser({ id: ADA, private: true }), b.putUser({ id: ADA, state: 'deactivated' })]);
    const versions = (await store.getUserVersioned(ADA)).versions;
    expect(versions.private).toBe(versions.state);
    expect(await updates()).toEqual([['hideLists'], expect.anything(), expect.anything()]);
    expect((await updates()).slice(1).sort()).toEqual([['private'], ['state']]);
    await Promise.all([a.settleAccountTasks(), b.settleAccountTasks()]);
  });

  it('a create writes the fields it names (the rest read as defaults); without a username it is refused', async () => {
    const g = instance();
    await expect(g.putUser({ id: 2n, private: true })).rejects.toBeInstanceOf(InvalidInputError);
    expect(await store.getUserVersioned(2n)).toEqual({ user: null, version: -1n, versions: {} });
    expect(await g.putUser({ id: 2n, username: 'bo', private: true })).toEqual({
      user: { id: 2n, username: 'bo', private: true, state: 'active', hideLists: false },
      created: true,
    });
    // A creation is not an event.
    expect(await updates()).toEqual([]);
  });
});

describe('usernames under per-field PUTs', () => {
  it('a case-only rename is no conflict with itself, and keeps the claim', async () => {
    const g = instance();
    expect((await g.putUser({ id: ADA, username: 'ADA' })).user.username).toBe('ADA');
    await expect(g.putUser({ id: 2n, username: 'Ada' })).rejects.toBeInstanceOf(UsernameTakenError);
    await g.settleAccountTasks();
  });

  it('two concurrent renames of two accounts to one free name: exactly one 409', async () => {
    const [a, b] = [instance(), instance()];
    await a.putUser({ id: 2n, username: 'bo' });
    const outcomes = await Promise.allSettled([
      a.putUser({ id: ADA, username: 'free' }),
      b.putUser({ id: 2n, username: 'FREE' }),
    ]);
    const refused = outcomes.filter((o) => o.status === 'rejected');
    expect(refused.map((o) => (o as PromiseRejectedResult).reason instanceof UsernameTakenError)).toEqual([
      true,
    ]);
    const holders = [...(await store.getUsers([ADA, 2n])).values()].filter(
      (u) => u.username.toLowerCase() === 'free',
    );
    expect(holders.length).toBe(1);
    await Promise.all([a.settleAccountTasks(), b.settleAccountTasks()]);
  });

  it('of two concurrent renames of one account, the one that lost leaves its name free, and the old name is freed', async () => {
    const [a, b] = [instance(), instance(1n)];
    await Promise.all([a.putUser({ id: ADA, username: 'left' }), b.putUser({ id: ADA, username: 'right' })]);
    const name = (await store.getUser(ADA))?.username as string;
    expect(['left', 'right']).toContain(name);
    const loser = name === 'left' ? 'right' : 'left';
    const c = instance();
    // The loser's name and the old one are free; the winner's is held.
    expect((await c.putUser({ id: 3n, username: loser })).created).toBe(true);
    expect((await c.putUser({ id: 4n, username: 'ada' })).created).toBe(true);
    await expect(c.putUser({ id: 5n, username: name })).rejects.toBeInstanceOf(UsernameTakenError);
    await Promise.all([a.settleAccountTasks(), b.settleAccountTasks()]);
  });
});

/** A promise and the function that resolves it. */
function latch(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => {
    open = r;
  });
  return { promise, open };
}

/**
 * A store that holds the cells of a PUT naming `ADA` until `held` opens (telling `arrived`), and
 * runs `beforeRelease` before each release of a name.
 */
class RacedStore extends MemoryGraphStore {
  held = latch();
  arrived = latch();
  beforeRelease: () => Promise<unknown> = async () => undefined;
  override async putUserFields(...a: Parameters<MemoryGraphStore['putUserFields']>) {
    if (a[1].username === 'ADA') {
      this.arrived.open();
      await this.held.promise;
    }
    return super.putUserFields(...a);
  }
  override async releaseUsername(username: string, id: bigint) {
    await this.beforeRelease();
    return super.releaseUsername(username, id);
  }
}

describe('a rename racing a case-only change of one account, whose cells win (the race the simulation found)', () => {
  /**
   * B changes `ada` to `ADA` (a case-only change keeps the claim) and its cells are held; A renames
   * to `max`, reads `max` back and releases `ada`; B's cells (the higher version) land after A's
   * read. `releaseAfterB`: A's release waits until B has answered, else B's cells wait until A has.
   * Returns who holds `ada` once A has answered.
   */
  async function race(releaseAfterB: boolean) {
    const raced = new RacedStore();
    store = raced;
    await instance().putUser({ id: ADA, username: 'ada' });
    const [a, b] = [instance(), instance(1_000_000n)];
    const putB = b.putUser({ id: ADA, username: 'ADA' });
    await raced.arrived.promise;
    if (releaseAfterB)
      raced.beforeRelease = async () => {
        raced.held.open();
        await putB;
      };
    await a.putUser({ id: ADA, username: 'max' });
    const afterA = (await raced.getUsernameClaim('ada'))?.userId ?? null;
    raced.held.open();
    await putB;
    const c = instance();
    const taken = await c.putUser({ id: 2n, username: 'Ada' }).catch((e: unknown) => e);
    expect({
      name: (await raced.getUser(ADA))?.username,
      holders: await Promise.all(['ada', 'max'].map(async (n) => (await raced.getUsernameClaim(n))?.userId)),
      taken: taken instanceof UsernameTakenError,
    }).toEqual({ name: 'ADA', holders: [ADA, ADA], taken: true });
    await Promise.all([a.settleAccountTasks(), b.settleAccountTasks(), c.settleAccountTasks()]);
    return afterA;
  }

  it('the name stays claimed: the PUT whose cells win checks its claim after they land', async () => {
    expect(await race(false)).toBe(null);
  });

  it('the name stays claimed: the PUT that released it reads its row again after the release', async () => {
    expect(await race(true)).toBe(ADA);
  });
});

describe('a rename whose cells land late', () => {
  it('another instance running its task waits to see the name, so a follow that read the old name is renamed too', async () => {
    class Gated extends MemoryGraphStore {
      gate: Promise<void> | null = null;
      override async putUserFields(...a: Parameters<MemoryGraphStore['putUserFields']>) {
        if (this.gate && a[1].username !== undefined) await this.gate;
        return super.putUserFields(...a);
      }
    }
    const gated = new Gated();
    store = gated;
    const [a, b] = [instance(), instance()];
    await a.putUser({ id: ADA, username: 'ada' });
    await a.putUser({ id: 3n, username: 'fan' });
    let open!: () => void;
    gated.gate = new Promise<void>((r) => {
      open = r;
    });
    const put = a.putUser({ id: ADA, username: 'ada2' });
    await sleep(50);
    // B starts the task (a resume, or any PUT naming the field) while the cells are held.
    expect(await b.resumeAccountTasks()).toBe(1);
    // Past the write path's bound (0.8 s here) after the task row: a run that only waited that long
    // has walked and ended by now.
    await sleep(1200);
    // A follow reads the account's name, still the old one, and writes its rows with it.
    await b.follow(3n, ADA);
    open();
    // Held past its budget, the PUT is not acknowledged (503); its write stands.
    await expect(put).rejects.toBeInstanceOf(StoreUnavailableError);
    expect((await gated.getUser(ADA))?.username).toBe('ada2');
    await Promise.all([a.settleAccountTasks(), b.settleAccountTasks()]);
    // The stored row's name (a page would hydrate it from the user row).
    const rows = await gated.listBucket({ userId: 3n, relation: 'follows', direction: 'out' }, 1, null, 10);
    expect(rows.map((r) => [r.otherId, plainUsername(r.username ?? '')])).toEqual([[ADA, 'ada2']]);
  });
});

describe('a PUT bounded like a pair write', () => {
  it('cells acknowledged past B + V + T after the version: 503, the write stands, and the retry answers 200 without writing', async () => {
    let now = 1_800_000_000_000_000n;
    class Slow extends MemoryGraphStore {
      slow = false;
      override async putUserFields(...a: Parameters<MemoryGraphStore['putUserFields']>) {
        if (this.slow) now += 6_500_000n; // default B + V + T = 6 s
        return super.putUserFields(...a);
      }
    }
    const slow = new Slow();
    const g = new GraphService({
      store: slow,
      lists: new SingleBucketLists(slow),
      maxFollowing: 1000,
      registry: false,
      clock: () => now,
    });
    await g.putUser({ id: 9n, username: 'nine' });
    slow.slow = true;
    await expect(g.putUser({ id: 9n, private: true })).rejects.toBeInstanceOf(StoreUnavailableError);
    expect((await slow.getUser(9n))?.private).toBe(true);
    const versionAfter = await slow.getUserVersioned(9n);
    expect(await g.putUser({ id: 9n, private: true })).toEqual({ user: versionAfter.user, created: false });
    expect(await slow.getUserVersioned(9n)).toEqual(versionAfter);
  });
});
