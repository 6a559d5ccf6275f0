/**
 * The intent frontier on the memory store: where each look reads from (a standing intent is read
 * from itself, so the tombstones above it are not read again while it waits; every other shard
 * reads only above what it already looked at), and a process that starts later looks from the
 * bound the recovery saved, not from the retention.
 */
import { describe, expect, it } from 'vitest';
import { IntentFrontier } from '../../src/graph/feed-intents.js';
import type { EventKey } from '../../src/model/events.js';
import type { Position } from '../../src/model/types.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';

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
