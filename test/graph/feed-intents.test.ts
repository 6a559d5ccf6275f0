/**
 * The intent frontier on the memory store: where each look reads from (a standing intent is read
 * from itself, so the tombstones above it are not read again while it waits; every other shard
 * reads only above what it already looked at), and a process that starts later looks from the
 * bound the recovery saved, not from the retention; and the recovery under its lease, resolving in
 * one instance at a time.
 */
import { describe, expect, it, vi } from 'vitest';
import { IntentFrontier, IntentRecovery, RECOVERY_LEASE } from '../../src/graph/feed-intents.js';
import { GraphService } from '../../src/graph/graph-service.js';
import { feedLagMicros, type HistoryPolicy } from '../../src/graph/pair/pair-history.js';
import { nowPosition } from '../../src/model/clock.js';
import type { EventKey } from '../../src/model/events.js';
import type { Position } from '../../src/model/types.js';
import { followKey } from '../support/event-keys.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { MemoryLeaseStore } from '../support/memory/lease-store.js';
import { FEED_TEST_POLICY } from './support/feed-suite.js';
import { SingleBucketLists } from './support/single-bucket-lists.js';

const L = 10_000_000n;
const RETENTION = 7n * 86_400n * 1_000_000n;

const intent = (shard: number, slot: Position): EventKey => ({
  slot,
  shard,
  low: 1n,
  high: 2n,
  opPosition: slot,
  opSource: 1n,
  opKind: 'follow',
});

/** The memory store, recording each intent read's (shard, after). */
class CountingStore extends MemoryGraphStore {
  reads: [number, Position][] = [];
  override readIntents(shard: number, after: Position, until: Position, limit: number) {
    this.reads.push([shard, after]);
    return super.readIntents(shard, after, until, limit);
  }
}

/** An unleased recovery over `store` and a frontier of its own, on `clock`. */
const recoveryOn = (store: CountingStore, clock: () => Position) =>
  new IntentRecovery(
    { store, lists: new SingleBucketLists(store), clock, lagMicros: L },
    new IntentFrontier({ store, lagMicros: L, retentionMicros: RETENTION }),
  );

describe('the intent frontier', () => {
  it('stops below the oldest intent; its shard is then read from it, the others from their last look; it moves once the intent goes', async () => {
    const store = new CountingStore();
    const frontier = new IntentFrontier({ store, lagMicros: L, retentionMicros: RETENTION });
    let now = 1_000_000_000_000n;
    const stuck = intent(3, now - 30_000_000n);
    await store.putIntent(stuck);
    expect(await frontier.settledThrough(now)).toBe(stuck.slot - 1n);
    expect(store.reads).toEqual(Array.from({ length: 8 }, (_, s) => [s, now - RETENTION]));
    expect(frontier.oldestSlot()).toBe(stuck.slot);
    store.reads = [];
    const first = now;
    now += 5_000_000n;
    expect(await frontier.settledThrough(now)).toBe(stuck.slot - 1n);
    expect(store.reads).toEqual(
      Array.from({ length: 8 }, (_, s) => [s, s === 3 ? stuck.slot - 1n : first - L]),
    );
    await store.deleteIntent(stuck);
    store.reads = [];
    now += 5_000_000n;
    expect(await frontier.settledThrough(now)).toBe(now - L);
    expect(frontier.oldestSlot()).toBe(null);
    expect(store.reads[3]).toEqual([3, stuck.slot - 1n]);
  });

  it('a recovery pass reads only the shards its look found an intent in: an idle pass is the look alone (8 reads)', async () => {
    const store = new CountingStore();
    let now = 1_000_000_000_000n;
    const recovery = recoveryOn(store, () => now);
    expect(await recovery.runOnce()).toEqual({ present: 0, fenced: 0 });
    expect(store.reads.length).toBe(8);
    store.reads = [];
    now += 2_000_000n;
    expect(await recovery.runOnce()).toEqual({ present: 0, fenced: 0 });
    expect(store.reads).toEqual(Array.from({ length: 8 }, (_, s) => [s, now - 2_000_000n - L]));
    // A dead writer's intent in shard 5, past L at the next pass: its look stops below it, and the
    // pass reads that shard alone and fences it.
    const dead = intent(5, now);
    await store.putIntent(dead);
    store.reads = [];
    now += L + 2_000_000n;
    expect(await recovery.runOnce()).toEqual({ present: 0, fenced: 1 });
    expect(store.reads.slice(8)).toEqual([[5, dead.slot - 1n]]);
    expect(await store.readIntents(5, 0n, now, 10)).toEqual([]);
  });

  it('started, the recovery looks every period while an intent stands, and at waits doubling up to 4 periods while none does', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const store = new CountingStore();
      let now = 1_000_000_000_000n;
      const recovery = recoveryOn(store, () => now);
      const looks: number[] = [];
      let t = 0;
      const original = store.readIntents.bind(store);
      store.readIntents = (shard, after, until, limit) => {
        if (shard === 0 && limit === 1) looks.push(t);
        return original(shard, after, until, limit);
      };
      const advance = async (ms: number) => {
        for (let i = 0; i < ms / 50; i++) {
          t += 50;
          now += 50_000n;
          await vi.advanceTimersByTimeAsync(50);
        }
      };
      recovery.start(100);
      await vi.advanceTimersByTimeAsync(0);
      await advance(1500);
      // Idle: 0, then waits of 200, 400, 400, 400.
      expect(looks).toEqual([0, 200, 600, 1000, 1400]);
      // A dead writer's intent (above the last look's top, past L at the next look): found at the
      // next look (1800) and fenced; the next look comes a period later, and the waits grow again.
      await store.putIntent(intent(6, now - L + 1n));
      looks.length = 0;
      await advance(1000);
      expect(looks).toEqual([1800, 1900, 2100, 2500]);
      expect(await store.readIntents(6, 0n, now, 10)).toEqual([]);
      recovery.stop();
      await advance(1000);
      expect(looks.at(-1)).toBe(2500);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a process that starts later looks from the saved bound, not from the retention', async () => {
    const store = new CountingStore();
    const now = 1_000_000_000_000n;
    await store.saveIntentBound(now - 60_000_000n);
    await store.saveIntentBound(now - 90_000_000n); // an older save loses
    const frontier = new IntentFrontier({ store, lagMicros: L, retentionMicros: RETENTION });
    expect(await frontier.settledThrough(now)).toBe(now - L);
    expect(store.reads).toEqual(Array.from({ length: 8 }, (_, s) => [s, now - 60_000_000n]));
  });

  it('an orphan intent that lands at or below the saved bound (its insert timed out, then landed) holds no one; an intent above it does', async () => {
    const store = new CountingStore();
    let now = 1_000_000_000_000n;
    const reader = new IntentFrontier({ store, lagMicros: L, retentionMicros: RETENTION });
    expect(await reader.settledThrough(now)).toBe(now - L);
    // The recovery on another instance looks 20 s later and saves what it established.
    const recovery = new IntentFrontier({ store, lagMicros: L, retentionMicros: RETENTION });
    expect(await recovery.settledThrough(now + 20_000_000n)).toBe(now + 10_000_000n);
    await store.saveIntentBound(recovery.settledBound() as Position);
    // Then the orphan lands, at a slot the recovery passed and the reader did not, and with it an
    // intent of a live writer above the bound.
    const orphan = intent(5, now + 5_000_000n);
    const live = intent(2, now + 15_000_000n);
    await store.putIntent(orphan);
    await store.putIntent(live);
    now += 30_000_000n;
    store.reads = [];
    expect(await reader.settledThrough(now)).toBe(live.slot - 1n);
    expect(reader.oldestSlot()).toBe(live.slot);
    // Shard 5 was read again from the saved bound, after the look that found the orphan.
    expect(store.reads.filter(([s]) => s === 5)).toEqual([
      [5, 1_000_000_000_000n - L],
      [5, 1_000_000_000_000n + 10_000_000n],
    ]);
    await store.deleteIntent(live);
    now += 1_000_000n;
    expect(await reader.settledThrough(now)).toBe(now - L);
  });
});

describe('the leased recovery', () => {
  const LAG_MS = Number(feedLagMicros(FEED_TEST_POLICY as HistoryPolicy) / 1000n);
  /** The intent of a follow of `low` → `high` whose writer died before its append, `agoMs` ago. */
  const intentOf = (low: bigint, high: bigint, agoMs: number): EventKey =>
    followKey(low, high, nowPosition() - BigInt(agoMs) * 1000n);
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('two instances on one feed: the holder resolves, the other looks and answers held: false; once the holder stops, the other takes over', async () => {
    const store = new MemoryGraphStore();
    const leases = new MemoryLeaseStore();
    const instance = () =>
      new GraphService({
        store,
        lists: new SingleBucketLists(store),
        maxFollowing: 100,
        historyPolicy: FEED_TEST_POLICY,
        leases,
      });
    const [a, b] = [instance(), instance()];
    // One intent past L (resolved at once), one fresh (resolved once it is past L).
    await store.putIntent(intentOf(1n, 2n, 30_000));
    await store.putIntent(intentOf(3n, 4n, 0));
    expect(await a.intentRecovery.runOnce()).toEqual({ present: 0, fenced: 1 });
    await sleep(LAG_MS + 300);
    expect(await b.intentRecovery.runOnce()).toEqual({ present: 0, fenced: 0, held: false });
    expect(await a.intentRecovery.runOnce()).toEqual({ present: 0, fenced: 1 });
    await store.putIntent(intentOf(5n, 6n, 0));
    a.intentRecovery.stop();
    await sleep(LAG_MS + 300); // the release, sent on stop, lands meanwhile
    expect(await b.intentRecovery.runOnce()).toEqual({ present: 0, fenced: 1 });
    expect(await a.intentRecovery.runOnce()).toEqual({ present: 0, fenced: 0, held: false });
    expect((await leases.getLease(RECOVERY_LEASE))?.generation).toBe(2n);
    b.intentRecovery.stop();
  });
});
