/**
 * The change feed on the memory store (`support/feed-suite.ts`); the same suite runs on the real
 * node in `feed.int.test.ts`.
 */
import { describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { ClockGuard } from '../../src/graph/pair/clock-guard.js';
import { ClockSkewError, StoreUnavailableError } from '../../src/model/errors.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { delayedWorld, FEED_TEST_POLICY, feedSuite, withDelays } from './support/feed-suite.js';
import { SingleBucketLists } from './support/single-bucket-lists.js';

const DelayedStore = withDelays(MemoryGraphStore);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let next = 1n;
describe('change feed (memory store)', () => {
  feedSuite(
    async () => delayedWorld(new DelayedStore()),
    () => next++,
  );
});

describe('compaction and intents', () => {
  it('compaction folds no op whose intent stands: the recovery finds it and delivers its event once, and the replay alternates', async () => {
    const store = new DelayedStore();
    const world = delayedWorld(store, {
      historyPolicy: { ...FEED_TEST_POLICY, compactAbove: 4, keep: 1 },
    });
    const { graph } = world;
    const [a, b] = [9001n, 9002n];
    for (const id of [a, b]) await graph.putUser({ id, username: `u${id}` });
    const start = (await graph.feed.read(null, 1000)).next;
    // The writer dies between its append (landed) and its view batch: its intent stands.
    store.faults.refuseNextViewBatch = true;
    await expect(graph.follow(a, b)).rejects.toThrow(/injected/);
    const dead = (await store.readPairHistory(a, b)).ops[0];
    // Past the event window (2L = 3 s) the dead op may be folded as far as slots go; a feed read
    // makes this process look at the intents meanwhile.
    await sleep(3300);
    await graph.feed.read(start, 10);
    // Enough toggles of the pair for a compaction to be announced, observed and committed.
    for (let i = 0; i < 12; i++) {
      await graph.unfollow(a, b);
      await graph.follow(a, b);
      await sleep(150);
    }
    const history = await store.readPairHistory(a, b);
    expect((history.checkpoint?.horizon ?? 0n) < (dead?.position ?? 0n)).toBe(true);
    expect(history.ops.some((o) => o.position === dead?.position)).toBe(true);
    // The recovery finds the op and delivers its follow.created; the pair's events alternate.
    expect(await graph.intentRecovery.runOnce()).toEqual({ present: 1, fenced: 0 });
    await sleep(1800);
    const events: string[] = [];
    for (let cursor = start; ; ) {
      const page = await graph.feed.read(cursor, 100);
      if (page.items.length === 0) break;
      events.push(...page.items.map((e) => e.type));
      cursor = page.next;
    }
    expect(events).toEqual(
      Array.from({ length: 25 }, (_, i) => (i % 2 === 0 ? 'follow.created' : 'follow.removed')),
    );
  });
});

describe('feed metrics hooks', () => {
  it('counts the events written with each change and reports the age of the newest event a read returns', async () => {
    const store = new MemoryGraphStore();
    const written: number[] = [];
    const reads: [number, boolean][] = [];
    const graph = new GraphService({
      store,
      lists: new SingleBucketLists(store),
      maxFollowing: 1000,
      historyPolicy: FEED_TEST_POLICY,
      onEventsWritten: (n) => written.push(n),
      onFeedRead: (n, age) => reads.push([n, age !== null && age >= 1.5 && age < 10]),
    });
    for (const id of [1n, 2n]) await graph.putUser({ id, username: `m${id}` });
    await graph.follow(1n, 2n);
    await graph.follow(1n, 2n);
    await graph.block(2n, 1n);
    await graph.putUser({ id: 1n, private: true });
    // follow.created; nothing; block.created + follow.removed; user.updated.
    expect(written).toEqual([1, 0, 2, 1]);
    await new Promise((r) => setTimeout(r, 1800));
    await graph.feed.read(null, 1000);
    expect(reads).toEqual([[4, true]]);
  });
});

describe('relay lag metric', () => {
  it('reports now − the slot of each relay’s saved cursor (sealed or plain), nothing for one that does not parse, and a scrape runs no query', async () => {
    const { Registry } = await import('prom-client');
    const { registerRelayLag } = await import('../../src/http/metrics.js');
    const { relayLagSampler } = await import('../../src/graph/relay-lag.js');
    const { FeedCursorSeal } = await import('../../src/graph/feed-cursor.js');
    const store = new MemoryGraphStore();
    const key = {
      slot: 5_000_000n,
      shard: 3,
      low: 1n,
      high: 2n,
      opPosition: 4n,
      opSource: 1n,
      opKind: 'follow',
    };
    await store.putRelayCursor('kafka-a', '5000000.3.1.2.4.1.follow.0');
    await store.putRelayCursor('kafka-b', 'not a cursor');
    await store.putRelayCursor(
      'kafka-c',
      new FeedCursorSeal(['a-cursor-secret-of-some-length']).seal(key, 0),
    );
    let reads = 0;
    const counted = {
      listRelayCursors: (limit: number) => {
        reads++;
        return store.listRelayCursors(limit);
      },
    };
    let now = 65_000_000n;
    const sampler = relayLagSampler(counted, () => now, 60_000);
    await sampler.ready;
    const registry = new Registry();
    registerRelayLag(registry, async () => sampler.lags());
    const lines = async () =>
      (await registry.metrics()).split('\n').filter((l) => l.startsWith('flocklist_relay_lag_seconds'));
    expect(await lines()).toEqual([
      'flocklist_relay_lag_seconds{relay="kafka-a"} 60',
      'flocklist_relay_lag_seconds{relay="kafka-c"} 60',
    ]);
    now += 5_000_000n;
    for (let i = 0; i < 20; i++) await lines();
    expect(await lines()).toEqual([
      'flocklist_relay_lag_seconds{relay="kafka-a"} 65',
      'flocklist_relay_lag_seconds{relay="kafka-c"} 65',
    ]);
    expect(reads).toBe(1);
    sampler.stop();
  });
});

describe('account updates hold the feed by their intents', () => {
  class GatedUsers extends MemoryGraphStore {
    gate: Promise<void> | null = null;
    override async putUserFields(...a: Parameters<MemoryGraphStore['putUserFields']>) {
      if (this.gate) await this.gate;
      return super.putUserFields(...a);
    }
  }

  it('a user PUT whose write stalls past the lag: a live reader stays below its slot and gets its user.updated once it lands', async () => {
    const store = new GatedUsers();
    let now = 1_800_000_000_000_000n;
    const graph = new GraphService({
      store,
      lists: new SingleBucketLists(store),
      maxFollowing: 1000,
      clock: () => now,
      registry: false,
    });
    await graph.putUser({ id: 1n, username: 'ada' });
    now += 20_000_000n;
    const origin = (await graph.feed.read(null, 1000)).next;
    let open!: () => void;
    store.gate = new Promise<void>((r) => {
      open = r;
    });
    const put = graph.putUser({ id: 1n, private: true });
    await new Promise((r) => setTimeout(r, 10));
    // 11 s pass (L = 10 s by default): a live reader finds nothing, and its cursor stays below the slot.
    now += 11_000_000n;
    const live = await graph.feed.read(origin, 1000);
    expect(live.items).toEqual([]);
    store.gate = null;
    open();
    // Acknowledged past its budget: 503 (outcome unknown); the write stands, and reaches the reader.
    await expect(put).rejects.toBeInstanceOf(StoreUnavailableError);
    expect((await store.getUser(1n))?.private).toBe(true);
    await new Promise((r) => setTimeout(r, 10));
    now += 30_000_000n;
    expect((await graph.feed.read(live.next, 1000)).items.map((e) => [e.type, e.source])).toEqual([
      ['user.updated', 1n],
    ]);
  });

  it('a user PUT whose write is held past the recovery is fenced: landing later, it changes nothing and emits nothing (503)', async () => {
    const store = new GatedUsers();
    let now = 1_800_000_000_000_000n;
    const graph = new GraphService({
      store,
      lists: new SingleBucketLists(store),
      maxFollowing: 1000,
      clock: () => now,
      registry: false,
    });
    await graph.putUser({ id: 1n, username: 'ada' });
    now += 20_000_000n;
    const origin = (await graph.feed.read(null, 1000)).next;
    let open!: () => void;
    store.gate = new Promise<void>((r) => {
      open = r;
    });
    const put = graph.putUser({ id: 1n, private: true });
    await new Promise((r) => setTimeout(r, 10));
    store.gate = null; // the PUT's write waits; the recovery's does not
    now += 30_000_000n;
    expect(await graph.intentRecovery.runOnce()).toEqual({ present: 0, fenced: 1 });
    open();
    await expect(put).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await store.getUser(1n)).toMatchObject({ private: false });
    now += 30_000_000n;
    expect((await graph.feed.read(origin, 1000)).items).toEqual([]);
  });

  it('a user PUT whose cells landed but whose feed row did not (a batch not yet whole) is present: the recovery writes its row, once', async () => {
    class CellsFirst extends MemoryGraphStore {
      dropEvent = false;
      override async putUserFields(...a: Parameters<MemoryGraphStore['putUserFields']>) {
        if (!this.dropEvent || !a[3]?.event) return super.putUserFields(...a);
        this.dropEvent = false;
        await super.putUserFields(a[0], a[1], a[2], {});
        throw new StoreUnavailableError('injected: the batch is half applied');
      }
    }
    const store = new CellsFirst();
    let now = 1_800_000_000_000_000n;
    const graph = new GraphService({
      store,
      lists: new SingleBucketLists(store),
      maxFollowing: 1000,
      clock: () => now,
      registry: false,
    });
    await graph.putUser({ id: 1n, username: 'ada' });
    now += 20_000_000n;
    const origin = (await graph.feed.read(null, 1000)).next;
    store.dropEvent = true;
    await expect(graph.putUser({ id: 1n, private: true, hideLists: true })).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
    now += 30_000_000n;
    expect((await graph.feed.read(origin, 1000)).items).toEqual([]);
    expect(await graph.intentRecovery.runOnce()).toEqual({ present: 1, fenced: 0 });
    expect(await store.getUser(1n)).toMatchObject({ private: true, hideLists: true });
    const items = (await graph.feed.read(origin, 1000)).items;
    expect(items.map((e) => [e.type, e.source, e.fields])).toEqual([
      ['user.updated', 1n, ['private', 'hideLists']],
    ]);
  });

  it('an update whose intent is acknowledged past the write budget is refused unwritten (503), and the feed moves on', async () => {
    class SlowIntents extends MemoryGraphStore {
      slow = false;
      override async putIntent(...a: Parameters<MemoryGraphStore['putIntent']>) {
        if (this.slow) now += 3_000_000n;
        return super.putIntent(...a);
      }
    }
    let now = 1_800_000_000_000_000n;
    const store = new SlowIntents();
    const graph = new GraphService({
      store,
      lists: new SingleBucketLists(store),
      maxFollowing: 1000,
      clock: () => now,
      registry: false,
    });
    await graph.putUser({ id: 1n, username: 'ada' });
    const origin = (await graph.feed.read(null, 1000)).next;
    store.slow = true;
    await expect(graph.putUser({ id: 1n, private: true })).rejects.toThrow(StoreUnavailableError);
    expect((await store.getUser(1n))?.private).toBe(false);
    now += 20_000_000n;
    // Its intent is fenced (nothing of the update was written; the fence rewrites the row as it is).
    expect(await graph.intentRecovery.runOnce()).toEqual({ present: 0, fenced: 1 });
    expect((await store.getUser(1n))?.private).toBe(false);
    expect((await graph.feed.read(origin, 1000)).items).toEqual([]);
    expect(await graph.intentRecovery.oldestIntentAgeSeconds()).toBe(0);
  });
});

describe('the oldest intent metric', () => {
  it('reports how long the oldest unresolved intent has stood (from the last look, no query per scrape), 0 once it is resolved', async () => {
    const { Registry } = await import('prom-client');
    const { registerOldestIntent } = await import('../../src/http/metrics.js');
    const store = new MemoryGraphStore();
    let now = 100_000_000n;
    const graph = new GraphService({
      store,
      lists: new SingleBucketLists(store),
      maxFollowing: 1000,
      historyPolicy: FEED_TEST_POLICY,
      clock: () => now,
    });
    const key = {
      slot: 70_000_000n,
      shard: 1,
      low: 1n,
      high: 2n,
      opPosition: 70_000_000n,
      opSource: 1n,
      opKind: 'follow',
    };
    await store.putIntent(key);
    const registry = new Registry();
    registerOldestIntent(registry, () => graph.intentRecovery.oldestIntentAgeSeconds());
    const line = async () =>
      (await registry.metrics())
        .split('\n')
        .find((l) => l.startsWith('flocklist_feed_oldest_intent_seconds '));
    expect(await line()).toBe('flocklist_feed_oldest_intent_seconds 0');
    // A read looks: the feed stops below the intent, and the metric says for how long it has stood.
    const page = await graph.feed.read(null, 10);
    expect(page.items).toEqual([]);
    expect(await line()).toBe('flocklist_feed_oldest_intent_seconds 30');
    now += 5_000_000n;
    expect(await line()).toBe('flocklist_feed_oldest_intent_seconds 35');
    // Its op never landed: the recovery fences it, and the next look finds none.
    expect(await graph.intentRecovery.runOnce()).toEqual({ present: 0, fenced: 1 });
    // The pass saved the bound its look established (below the intent it then resolved).
    expect(await store.readIntentBound()).toBe(key.slot - 1n);
    await graph.feed.read(page.next, 10);
    expect(await line()).toBe('flocklist_feed_oldest_intent_seconds 0');
  });
});

describe('feed reads and the clock guard', () => {
  it('a reader whose clock is 30 s fast is refused (503 clock_skew) instead of handing out a cursor past an acknowledged follow', async () => {
    const store = new MemoryGraphStore();
    let real = 1_800_000_000_000_000n;
    const fast = 30_000_000n;
    const writer = new GraphService({
      store,
      lists: new SingleBucketLists(store),
      maxFollowing: 1000,
      clock: () => real,
      registry: false,
    });
    const guard = new ClockGuard({
      boundMs: 2000,
      databaseClockMs: async () => Number(real / 1000n),
      clock: () => real + fast,
      monotonic: () => Number(real / 1000n),
    });
    await guard.check();
    const reader = new GraphService({
      store,
      lists: new SingleBucketLists(store),
      maxFollowing: 1000,
      clock: () => real + fast,
      clockGuard: guard,
      registry: false,
    });
    await writer.putUser({ id: 1n, username: 'ada' });
    await writer.putUser({ id: 2n, username: 'bo' });
    real += 20_000_000n;
    const origin = (await writer.feed.read(null, 1000)).next;
    await expect(reader.follow(2n, 1n)).rejects.toBeInstanceOf(ClockSkewError);
    await expect(reader.feed.read(origin, 1000)).rejects.toBeInstanceOf(ClockSkewError);
    await expect(reader.feed.read(origin, 1000, { waitMs: 50 })).rejects.toBeInstanceOf(ClockSkewError);
    await writer.follow(1n, 2n);
    real += 60_000_000n;
    expect((await writer.feed.read(origin, 1000)).items.map((e) => e.type)).toEqual(['follow.created']);
    // The same instance with its clock back within the bound reads again, from the same cursor.
    const healed = new ClockGuard({
      boundMs: 2000,
      databaseClockMs: async () => Number(real / 1000n),
      clock: () => real,
      monotonic: () => Number(real / 1000n),
    });
    await healed.check();
    const fixed = new GraphService({
      store,
      lists: new SingleBucketLists(store),
      maxFollowing: 1000,
      clock: () => real,
      clockGuard: healed,
      registry: false,
    });
    expect((await fixed.feed.read(origin, 1000)).items.map((e) => e.type)).toEqual(['follow.created']);
  });
});
