/**
 * The feed's one poller and its tail (`Feed` in `src/graph/feed.ts`), on the memory store and a
 * hand-driven clock: each period costs the same few reads however many reads wait and listeners
 * listen; a row is read about twice, not once per period of its first seconds; a row another
 * instance wrote on a clock that fell behind is still passed on (by the sweep), once, and the
 * fresh read reaches back far enough for the next one.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { TAIL_MIN_OVERLAP_MICROS } from '../../src/graph/feed-tail.js';
import { GraphService } from '../../src/graph/graph-service.js';
import { registerFeedTail } from '../../src/http/metrics.js';
import type { Timers } from '../../src/model/timers.js';
import type { GraphStore } from '../../src/ports/graph-store.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { SingleBucketLists } from './support/single-bucket-lists.js';

const PERIOD_MS = 200;

/** A clock and timers moved by hand: `step` advances one period and runs the timers due. */
function handClock() {
  let ms = 1_800_000_000_000;
  const due = new Set<() => void>();
  const once = new Map<() => void, number>();
  const timers: Timers = {
    nowMs: () => ms,
    every: (_ms, fn) => {
      due.add(fn);
      return () => due.delete(fn);
    },
    sleep: async () => undefined,
    after: (afterMs, fn) => {
      once.set(fn, ms + afterMs);
      return () => once.delete(fn);
    },
  };
  const turn = () => new Promise((r) => setImmediate(r));
  return {
    timers,
    /** µs, `skewMs` away from the hand clock. */
    position:
      (skewMs = 0) =>
      () =>
        BigInt(ms + skewMs) * 1000n,
    timersRunning: () => due.size,
    async step(byMs = PERIOD_MS) {
      ms += byMs;
      for (const fn of [...due]) fn();
      for (const [fn, at] of [...once]) if (at <= ms && once.delete(fn)) fn();
      for (let i = 0; i < 20; i++) await turn();
    },
  };
}

/** Counts the store's feed-row reads and the rows they return. */
function counted(store: MemoryGraphStore) {
  const calls = { reads: 0, rows: 0 };
  const proxy = new Proxy(store, {
    get(t, p) {
      const v = Reflect.get(t, p, t) as unknown;
      if (typeof v !== 'function') return v;
      const fn = (v as (...a: unknown[]) => unknown).bind(t);
      if (p !== 'readEventRows') return fn;
      return async (...a: unknown[]) => {
        calls.reads++;
        const rows = (await fn(...a)) as unknown[];
        calls.rows += rows.length;
        return rows;
      };
    },
  }) as GraphStore;
  return { proxy, calls };
}

function instances(o: { writerSkewMs?: number } = {}) {
  const clock = handClock();
  const memory = new MemoryGraphStore();
  const { proxy, calls } = counted(memory);
  const common = { lists: new SingleBucketLists(memory), maxFollowing: 10_000, registry: false } as const;
  const writer = new GraphService({ ...common, store: memory, clock: clock.position(o.writerSkewMs ?? 0) });
  const reader = new GraphService({
    ...common,
    store: proxy,
    clock: clock.position(),
    timers: clock.timers,
    feedPollMs: PERIOD_MS,
  });
  return { clock, memory, calls, writer, reader };
}

describe("the feed's one poller", () => {
  it('300 waiting reads and 3 listeners: one timer, and per period one look and the tail’s fresh read, and a sweep a second', async () => {
    const { clock, calls, writer, reader } = instances();
    for (const id of [1n, 2n]) await writer.putUser({ id, username: `u${id}` });
    const heard: string[][] = [[], [], []];
    const stops = heard.map((h) => reader.feed.subscribe((e) => h.push(e.id)));
    const start = (await reader.feed.read(null, 10)).next;
    const base = calls.reads;
    const ac = new AbortController();
    const reads = Array.from({ length: 300 }, () =>
      reader.feed.read(start, 10, { waitMs: 60_000, signal: ac.signal }),
    );
    // Until each has read once (no timer has run: nothing else reads).
    while (calls.reads < base + 300) await new Promise((r) => setImmediate(r));
    expect(reader.feed.waitingReads()).toBe(300);
    expect(clock.timersRunning()).toBe(1);
    const before = calls.reads;
    for (let i = 0; i < 10; i++) await clock.step();
    // The look (one row) and the fresh read each period, each short, so one read each; the sweep
    // once a second's worth is due (its first, then 1 s later): 10 + 10 + 2.
    expect(calls.reads - before).toBe(22);
    await writer.follow(1n, 2n);
    await clock.step();
    expect(heard.map((h) => h.length)).toEqual([1, 1, 1]);
    ac.abort();
    expect((await Promise.all(reads)).every((p) => p.items.length === 0)).toBe(true);
    for (const stop of stops) stop();
    await clock.step();
    expect(clock.timersRunning()).toBe(0);
  });
});

describe('the tail', () => {
  it('2,000 follows from another instance over 40 s: each event passed on once, about two row reads each once 30 s were watched', async () => {
    const { clock, calls, writer, reader } = instances();
    const users = 2001n;
    for (let id = 1n; id <= users; id++) await writer.putUser({ id, username: `u${id}` });
    const heard: string[] = [];
    reader.feed.subscribe((e) => heard.push(e.id));
    // 40 s of quiet: the tail watches how late rows land (none) for 30 s, and narrows.
    for (let i = 0; i < 40_000 / PERIOD_MS; i++) await clock.step();
    const from = reader.feed.tailStats();
    const rowsBefore = calls.rows;
    let target = 2n;
    for (let period = 0; period < 200; period++) {
      for (let k = 0; k < 10; k++) await writer.follow(1n, target++);
      await clock.step();
    }
    // Past the sweep's reach (2 s + 2S): every row has been read by both.
    for (let i = 0; i < 60; i++) await clock.step();
    const stats = reader.feed.tailStats();
    const rows = calls.rows - rowsBefore;
    const passed = stats.eventsPassed - from.eventsPassed;
    console.log(
      `2,000 follows: ${rows} rows read by the tail, ${passed} events passed on, ${stats.eventsLate - from.eventsLate} late`,
    );
    expect(passed).toBe(2000);
    expect(new Set(heard).size).toBe(heard.length);
    expect(stats.eventsLate - from.eventsLate).toBe(0);
    // Fresh reads reach back the least overlap before the previous start (100 ms of a 200 ms
    // period) and the sweep reads each row once: 2.5 at most.
    expect(rows).toBeGreaterThanOrEqual(2 * 2000);
    expect(rows / passed).toBeLessThanOrEqual(2 + Number(TAIL_MIN_OVERLAP_MICROS) / 1000 / PERIOD_MS);
    // The settled feed, once the lag has passed: the same events.
    for (let i = 0; i < 100; i++) await clock.step();
    const all: string[] = [];
    let cursor: string | null = null;
    for (;;) {
      const page = await reader.feed.read(cursor, 1000);
      all.push(...page.items.map((e) => e.id));
      if (page.items.length === 0) break;
      cursor = page.next;
    }
    // Every event of the feed, each once (a new account's row makes none).
    expect(all.length).toBe(2000);
    expect([...heard].sort()).toEqual([...all].sort());
  });

  it('a writer whose clock is 1.5 s behind: its first rows come by the sweep, once; then the fresh read reaches back for them', async () => {
    const { clock, writer, reader } = instances({ writerSkewMs: -1500 });
    for (let id = 1n; id <= 30n; id++) await writer.putUser({ id, username: `u${id}` });
    const heard: { id: string; atMs: number }[] = [];
    reader.feed.subscribe((e) => heard.push({ id: e.id, atMs: clock.timers.nowMs() }));
    for (let i = 0; i < 40_000 / PERIOD_MS; i++) await clock.step();
    const before = reader.feed.tailStats();
    // A row landing 1.5 s behind the reader's clock: past the narrowed fresh read.
    await writer.follow(1n, 2n);
    const wroteAt = clock.timers.nowMs();
    for (let i = 0; i < 40; i++) await clock.step();
    const first = reader.feed.tailStats();
    expect(first.eventsPassed - before.eventsPassed).toBe(1);
    expect(first.eventsLate - before.eventsLate).toBe(1);
    expect((heard.at(-1)?.atMs ?? 0) - wroteAt).toBeGreaterThan(4000);
    // Now the fresh read reaches back 2 × 1.5 s: the next rows come within a period, not late.
    for (let t = 3n; t <= 22n; t++) {
      await writer.follow(1n, t);
      const at = clock.timers.nowMs();
      await clock.step();
      expect((heard.at(-1)?.atMs ?? 0) - at).toBe(PERIOD_MS);
    }
    for (let i = 0; i < 40; i++) await clock.step();
    const after = reader.feed.tailStats();
    expect(after.eventsPassed - first.eventsPassed).toBe(20);
    expect(after.eventsLate - first.eventsLate).toBe(0);
    expect(new Set(heard.map((h) => h.id)).size).toBe(heard.length);
    // What a scrape reports, from memory: the tail caught up this period, one event came late.
    const registry = new Registry();
    registerFeedTail(
      registry,
      () => ({ polledAtMs: reader.feed.tailPolledAtMs(), ...reader.feed.tailStats() }),
      clock.timers.nowMs,
    );
    const lines = (await registry.metrics()).split('\n').filter((l) => l.startsWith('flocklist_feed_tail_'));
    expect(lines).toEqual([
      'flocklist_feed_tail_age_seconds 0',
      `flocklist_feed_tail_rows_read_total ${after.rowsRead}`,
      `flocklist_feed_tail_events_total ${after.eventsPassed}`,
      'flocklist_feed_tail_late_events_total 1',
    ]);
  });
});
