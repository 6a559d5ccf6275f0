/**
 * The relay's loop on the in-memory store and a recording sink: the message shape, the order, the
 * cursor committed only after an acknowledged page, and what a crash between the two repeats.
 */
import { describe, expect, it } from 'vitest';
import {
  eventJson,
  javaPartitioner,
  type RelayMessage,
  type RelaySink,
  relayMessage,
  runRelay,
} from '../../src/jobs/relay.js';
import type { GraphEvent } from '../../src/model/events.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { generatedCursor, generatedFeed, generateEvents } from './generated-feed.js';

function recordingSink(failOnSend?: number): RelaySink & { sent: RelayMessage[][] } {
  const sent: RelayMessage[][] = [];
  return {
    sent,
    async send(messages) {
      if (failOnSend !== undefined && sent.length + 1 === failOnSend) throw new Error('broker down');
      sent.push([...messages]);
    },
    async close() {},
  };
}

const ids = (pages: RelayMessage[][]) => pages.flat().map((m) => JSON.parse(m.value).id as string);

describe('relay messages', () => {
  it('carry the API event shape, keyed by the numerically sorted pair', () => {
    const e: GraphEvent = {
      id: 'e1',
      type: 'follow.created',
      source: 10n,
      target: 9n,
      position: 1_796_000_000_123_456n,
      slot: 1_796_000_000_123_999n,
    };
    expect(relayMessage(e)).toEqual({
      key: '9:10',
      type: 'follow.created',
      value:
        '{"id":"e1","type":"follow.created","source":"10","target":"9","position":1796000000123456,"at":"2026-11-30T00:53:20.123999Z"}',
    });
    expect(relayMessage({ ...e, type: 'user.updated', source: 7n, target: 7n }).key).toBe('7:7');
  });

  it('write a position above 2^53 digit for digit', () => {
    const value = eventJson({
      id: 'x',
      type: 'block.created',
      source: 1n,
      target: 2n,
      position: 9_007_199_254_740_993n,
      slot: 0n,
    });
    expect(value).toBe(
      '{"id":"x","type":"block.created","source":"1","target":"2","position":9007199254740993,"at":"1970-01-01T00:00:00.000000Z"}',
    );
  });
});

describe('the partitioner', () => {
  it("is the Java client's: murmur2 as Kafka's own test vectors give it, sign bit cleared", () => {
    // org.apache.kafka.common.utils.UtilsTest#testMurmur2 (signed 32-bit results).
    const vectors: [string, number][] = [
      ['21', -973932308],
      ['foobar', -790332482],
      ['a-little-bit-long-string', -985981536],
      ['a-little-bit-longer-string', -1486304829],
      ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
      ['abc', 479470107],
    ];
    expect(vectors.map(([key]) => javaPartitioner({ key }))).toEqual(
      vectors.map(([, hash]) => hash & 0x7fffffff),
    );
    // The Java producer's partition for "foobar" among 50 partitions.
    expect(javaPartitioner({ key: 'foobar' }) % 50).toBe(16);
    // No key (the relay always sends one).
    expect(javaPartitioner({})).toBe(0);
  });
});

describe('runRelay', () => {
  const events = generateEvents({ count: 1000, pairs: 20, seed: 7 });

  it('sends every event once, in feed order, and commits the cursor after the last page', async () => {
    const store = new MemoryGraphStore();
    const sink = recordingSink();
    const r = await runRelay({
      feed: generatedFeed(events),
      cursors: store,
      sink,
      name: 'r',
      batch: 300,
      untilIdle: true,
    });
    expect(ids(sink.sent)).toEqual(events.map((e) => e.id));
    expect(sink.sent.map((p) => p.length)).toEqual([300, 300, 300, 100]);
    expect(r).toEqual({ events: 1000, cursor: generatedCursor(1000), elapsedMs: r.elapsedMs });
    expect(await store.getRelayCursor('r')).toBe(generatedCursor(1000));

    const again = recordingSink();
    await runRelay({ feed: generatedFeed(events), cursors: store, sink: again, name: 'r', untilIdle: true });
    expect(again.sent).toEqual([]);
  });

  it('a failed send leaves the cursor after the last acknowledged page; the restart loses nothing', async () => {
    const store = new MemoryGraphStore();
    const failing = recordingSink(3);
    await expect(
      runRelay({
        feed: generatedFeed(events),
        cursors: store,
        sink: failing,
        name: 'r',
        batch: 100,
        untilIdle: true,
      }),
    ).rejects.toThrow('broker down');
    expect(await store.getRelayCursor('r')).toBe(generatedCursor(200));
    const sink = recordingSink();
    await runRelay({
      feed: generatedFeed(events),
      cursors: store,
      sink,
      name: 'r',
      batch: 100,
      untilIdle: true,
    });
    expect([...ids(failing.sent), ...ids(sink.sent)]).toEqual(events.map((e) => e.id));
  });

  it('a crash between the acknowledgement and the commit repeats exactly that page', async () => {
    const store = new MemoryGraphStore();
    let puts = 0;
    const crashing = {
      getRelayCursor: (n: string) => store.getRelayCursor(n),
      putRelayCursor: async (n: string, c: string) => {
        if (++puts === 4) throw new Error('killed');
        await store.putRelayCursor(n, c);
      },
    };
    const first = recordingSink();
    await expect(
      runRelay({
        feed: generatedFeed(events),
        cursors: crashing,
        sink: first,
        name: 'r',
        batch: 100,
        untilIdle: true,
      }),
    ).rejects.toThrow('killed');
    const second = recordingSink();
    await runRelay({
      feed: generatedFeed(events),
      cursors: store,
      sink: second,
      name: 'r',
      batch: 100,
      untilIdle: true,
    });
    const all = [...ids(first.sent), ...ids(second.sent)];
    expect(all.length).toBe(1100);
    expect(new Set(all).size).toBe(1000);
    expect(ids(second.sent).slice(0, 100)).toEqual(events.slice(300, 400).map((e) => e.id));
    expect(ids(first.sent).slice(300)).toEqual(events.slice(300, 400).map((e) => e.id));
  });

  it('an abort stops after the page in flight and commits it', async () => {
    const store = new MemoryGraphStore();
    const abort = new AbortController();
    const sent: RelayMessage[][] = [];
    const sink: RelaySink = {
      async send(messages) {
        sent.push([...messages]);
        if (sent.length === 2) abort.abort();
      },
      async close() {},
    };
    const r = await runRelay({
      feed: generatedFeed(events),
      cursors: store,
      sink,
      name: 'r',
      batch: 100,
      signal: abort.signal,
    });
    expect(r.events).toBe(200);
    expect(await store.getRelayCursor('r')).toBe(generatedCursor(200));
  });

  it('reports progress: events, rate, lag from the newest slot, cursor', async () => {
    const store = new MemoryGraphStore();
    const seen: unknown[] = [];
    await runRelay({
      feed: generatedFeed(events.slice(0, 10)),
      cursors: store,
      sink: recordingSink(),
      name: 'r',
      untilIdle: true,
      onProgress: (p) =>
        seen.push({ events: p.events, cursor: p.cursor, lagPositive: (p.lagSeconds ?? -1) > 0 }),
    });
    expect(seen).toEqual([{ events: 10, cursor: generatedCursor(10), lagPositive: true }]);
  });
});
