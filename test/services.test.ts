/**
 * The job runtime's feed starts no background reads: a jobs process (relay, repair, migrations)
 * serves no reads, so it must not load the deactivated-accounts registry nor poll the feed's tail.
 * The same store behind the server's service does both (the control that shows the spy sees them).
 */
import { expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { GraphService } from '../src/graph/graph-service.js';
import { ClockGuard } from '../src/graph/pair/clock-guard.js';
import { ClockSkewError } from '../src/model/errors.js';
import type { GraphStore } from '../src/ports/graph-store.js';
import { jobFeed } from '../src/services.js';
import { SingleBucketLists } from './graph/support/single-bucket-lists.js';
import { MemoryGraphStore } from './support/memory/graph-store.js';

/** A memory store that counts the feed-row reads and the deactivated-registry loads. */
function spiedStore() {
  const store = new MemoryGraphStore();
  const calls = { events: 0, deactivated: 0 };
  const spied = new Proxy(store, {
    get(t, p) {
      const v = Reflect.get(t, p, t) as unknown;
      if (typeof v !== 'function') return v;
      const fn = (v as (...a: unknown[]) => unknown).bind(t);
      const counted = p === 'readEventRows' ? 'events' : p === 'listDeactivated' ? 'deactivated' : null;
      if (!counted) return fn;
      return (...a: unknown[]) => {
        calls[counted]++;
        return fn(...a);
      };
    },
  }) as GraphStore;
  return { spied, calls };
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

it('the job feed reads only when read: no registry load, no tail poll', async () => {
  const { spied, calls } = spiedStore();
  const feed = jobFeed(loadConfig({}), spied, new SingleBucketLists(spied));
  await wait(1100);
  expect(calls).toEqual({ events: 0, deactivated: 0 });
  const page = await feed.read(null, 10);
  expect(page.items).toEqual([]);
  expect(calls).toEqual({ events: 1, deactivated: 0 });
});

it('control: the server’s service on the same kind of store loads the registry and polls the tail', async () => {
  const { spied, calls } = spiedStore();
  const graph = new GraphService({ store: spied, lists: new SingleBucketLists(spied), maxFollowing: 7500 });
  await wait(1100);
  expect(calls.deactivated).toBeGreaterThan(0);
  expect(calls.events).toBeGreaterThan(2);
  graph.feed.close();
  graph.registry?.close();
});

it('the job feed is clock-guarded: with a clock 30 s ahead of the database’s, a read is refused', async () => {
  const store = new MemoryGraphStore();
  const now = 1_800_000_000_000_000n;
  const guard = new ClockGuard({
    boundMs: 2000,
    databaseClockMs: async () => Number(now / 1000n),
    clock: () => now + 30_000_000n,
    monotonic: () => Number(now / 1000n),
  });
  await guard.check();
  const feed = jobFeed(loadConfig({}), store, new SingleBucketLists(store), guard);
  await expect(feed.read(null, 10)).rejects.toBeInstanceOf(ClockSkewError);
});
