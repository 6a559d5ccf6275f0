/**
 * Waiting feed reads share one watcher (`Feed` in `src/graph/feed.ts`): the database sees one
 * poll per period however many reads wait, every waiter wakes when an event settles, and an
 * instance holds at most `maxWaiters` waiting reads (beyond: `FeedBusyError`, HTTP 503).
 */
import { describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { nowPosition } from '../../src/model/clock.js';
import { FeedBusyError } from '../../src/model/errors.js';
import type { GraphStore } from '../../src/ports/graph-store.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { SingleBucketLists } from './support/single-bucket-lists.js';

const POLL_MS = 50;

function world(maxWaiters = 1000) {
  const store = new MemoryGraphStore();
  // Reads ask for a page (limit + 1 rows); the shared watcher asks whether one row settled (1).
  const calls = { reads: 0, polls: 0 };
  const counted = new Proxy(store, {
    get(t, p) {
      const v = Reflect.get(t, p, t) as unknown;
      if (typeof v !== 'function') return v;
      const fn = (v as (...a: unknown[]) => unknown).bind(t);
      if (p !== 'readEventRows') return fn;
      return (...a: unknown[]) => {
        if (a[2] === 1) calls.polls++;
        else calls.reads++;
        return fn(...a);
      };
    },
  }) as GraphStore;
  // The real clock, shifted forward to settle what was written (the feed's lag is 10 s).
  const clock = { shift: 0n };
  const graph = new GraphService({
    store: counted,
    lists: new SingleBucketLists(counted),
    maxFollowing: 100,
    clock: () => nowPosition() + clock.shift,
    registry: false,
    feedPollMs: POLL_MS,
    feedMaxWaiters: maxWaiters,
  });
  return { graph, calls, clock };
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('waiting feed reads', () => {
  for (const n of [10, 300]) {
    it(`${n} waiting reads: one read each, then one watcher poll per period for all of them`, async () => {
      const { graph, calls } = world();
      const start = (await graph.feed.read(null, 10)).next;
      calls.reads = 0;
      const ac = new AbortController();
      const reads = Array.from({ length: n }, () =>
        graph.feed.read(start, 10, { waitMs: 10_000, signal: ac.signal }),
      );
      // Until every read has read once and waits (on a busy machine, setting up 300 can outlast a
      // poll period, so the watcher's polls are told apart by their limit, not by timing).
      while (calls.reads < n || graph.feed.waitingReads() < n) await wait(5);
      expect(calls.reads).toBe(n);
      const before = calls.polls;
      await wait(POLL_MS * 10 + 20);
      const polls = calls.polls - before;
      expect(calls.reads).toBe(n);
      console.log(`${n} waiters: ${polls} watcher polls in ${POLL_MS * 10 + 20} ms`);
      expect(polls).toBeGreaterThanOrEqual(5);
      expect(polls).toBeLessThanOrEqual(11);
      ac.abort();
      expect((await Promise.all(reads)).every((p) => p.items.length === 0)).toBe(true);
      expect(graph.feed.waitingReads()).toBe(0);
    });
  }

  it('every waiter wakes with the event once it settles', async () => {
    const { graph, clock } = world();
    for (const id of [1n, 2n]) await graph.putUser({ id, username: `u${id}` });
    clock.shift += 30_000_000n;
    const start = (await graph.feed.read(null, 10)).next;
    const reads = Array.from({ length: 50 }, () => graph.feed.read(start, 10, { waitMs: 10_000 }));
    await wait(POLL_MS * 2);
    await graph.follow(1n, 2n);
    await wait(POLL_MS * 2);
    expect(graph.feed.waitingReads()).toBe(50);
    clock.shift += 30_000_000n;
    const pages = await Promise.all(reads);
    expect(new Set(pages.map((p) => JSON.stringify(p.items.map((e) => [e.type, e.id]))))).toEqual(
      new Set([JSON.stringify(pages[0]?.items.map((e) => ['follow.created', e.id]))]),
    );
    expect(pages[0]?.items.map((e) => e.type)).toEqual(['follow.created']);
  });

  it('beyond maxWaiters a waiting read is refused with FeedBusyError; a read that does not wait never is', async () => {
    const { graph } = world(3);
    const start = (await graph.feed.read(null, 10)).next;
    const ac = new AbortController();
    const held = Array.from({ length: 3 }, () =>
      graph.feed.read(start, 10, { waitMs: 10_000, signal: ac.signal }),
    );
    await wait(20);
    await expect(graph.feed.read(start, 10, { waitMs: 1000 })).rejects.toBeInstanceOf(FeedBusyError);
    expect((await graph.feed.read(start, 10)).items).toEqual([]);
    ac.abort();
    await Promise.all(held);
    expect((await graph.feed.read(start, 10, { waitMs: 60 })).items).toEqual([]);
  });
});

describe('the unsettled tail', () => {
  it('a burst of 2,500 events from another instance within one poll: the subscriber gets every one once, and the tail says it caught up', async () => {
    const store = new MemoryGraphStore();
    const opts = { store, lists: new SingleBucketLists(store), maxFollowing: 5000, registry: false } as const;
    const writer = new GraphService(opts);
    const reader = new GraphService({ ...opts, feedPollMs: 1000 });
    const users = 2501n;
    for (let id = 1n; id <= users; id++) await writer.putUser({ id, username: `u${id}` });
    const got: string[] = [];
    const stop = reader.feed.subscribe((e) => got.push(e.id));
    const started = Date.now();
    for (let id = 2n; id <= users; id++) await writer.follow(1n, id);
    const wrote = Date.now() - started;
    await wait(2600);
    const caughtUpAt = reader.feed.tailPolledAtMs();
    stop();
    console.log(`2,500 follows written in ${wrote} ms; the tail passed on ${got.length} events`);
    const all: string[] = [];
    let cursor: string | null = null;
    const settled = new GraphService({ ...opts, clock: () => nowPosition() + 60_000_000n });
    for (;;) {
      const page = await settled.feed.read(cursor, 1000);
      all.push(...page.items.map((e) => e.id));
      if (page.items.length === 0) break;
      cursor = page.next;
    }
    expect(all.length).toBe(2500);
    expect(got).toEqual(all);
    expect(caughtUpAt).toBeGreaterThan(started + wrote);
  });
});
