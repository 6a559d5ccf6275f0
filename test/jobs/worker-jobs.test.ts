/**
 * The worker's jobs resume where a run stopped (`src/jobs/worker-jobs.ts`), on the in-memory
 * store: the user walk of the list jobs, and the repair sweep with its progress kept in the lease
 * row, and the relay with its cursor there. A run is stopped by its lease being lost at a chosen
 * save; the next run starts from the last position saved, and together they do what one whole run
 * does.
 */
import { describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { LeaseLostError } from '../../src/graph/lease.js';
import type { RelayMessage, RelaySink } from '../../src/jobs/relay.js';
import type { JobRun } from '../../src/jobs/worker.js';
import { walkUsers, workerJob } from '../../src/jobs/worker-jobs.js';
import type { UserId } from '../../src/model/types.js';
import { SingleBucketLists } from '../graph/support/single-bucket-lists.js';
import { generatedCursor, generatedFeed, generateEvents } from '../relay/generated-feed.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { mulberry32 } from '../support/random.js';
import { jobWorld } from './support/job-world.js';

/** A run from `position` whose `loseAt`-th save is refused, as after a takeover. */
function runFrom(position: string | null, loseAt = Number.POSITIVE_INFINITY) {
  const saved: string[] = [];
  const controller = new AbortController();
  const run: JobRun = {
    position,
    generation: 1n,
    signal: controller.signal,
    save: async (p) => {
      if (saved.length + 1 >= loseAt) {
        controller.abort(new LeaseLostError('taken over'));
        throw new LeaseLostError('taken over');
      }
      saved.push(p);
    },
  };
  return { run, saved, controller };
}

describe('worker jobs', () => {
  it('the user walk: a run lost at its second save, resumed from its first, visits every user once in all', async () => {
    const store = new MemoryGraphStore();
    const users = Array.from({ length: 1234 }, (_, i) => BigInt(i + 1));
    const graph = new GraphService({ store, lists: new SingleBucketLists(store), maxFollowing: 10 });
    for (const id of users) await graph.putUser({ id, username: `u${id}` });
    const seen: UserId[][] = [[], []];
    const first = runFrom(null, 2);
    await expect(walkUsers(store, first.run, async (u) => void seen[0]?.push(u))).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    expect(first.saved.length).toBe(1);
    const second = runFrom(first.saved[0] ?? null);
    const r = await walkUsers(store, second.run, async (u) => void seen[1]?.push(u));
    // The first run walked two pages (1,000 users) and saved after the first: the second redoes one.
    expect([seen[0]?.length, seen[1]?.length, r.rows, second.saved.length]).toEqual([1000, 734, 734, 1]);
    expect(new Set([...(seen[0] ?? []).slice(0, 500), ...(seen[1] ?? [])]).size).toBe(1234);
    expect([...new Set([...(seen[0] ?? []), ...(seen[1] ?? [])])].sort((a, b) => (a < b ? -1 : 1))).toEqual(
      users,
    );
  });

  it('the repair sweep: a run lost at its 5th progress save, resumed from the 4th, reports what one whole run reports', async () => {
    const seed = Number(process.env.SEED ?? 42);
    console.log(`[worker-jobs] seed ${seed} (SEED=${seed} replays it)`);
    const random = mulberry32(seed);
    const { deps } = await jobWorld(40, async (graph) => {
      for (let i = 0; i < 150; i++) {
        const [a, b] = [1n + BigInt(Math.floor(random() * 40)), 1n + BigInt(Math.floor(random() * 40))];
        if (a !== b) await graph.follow(a, b);
      }
    });
    const job = workerJob('repair-sweep', deps);
    const whole = runFrom(null);
    const wholeRows = (await job.run(whole.run)).rows;
    const lost = runFrom(null, 5);
    await expect(job.run(lost.run)).rejects.toBeInstanceOf(LeaseLostError);
    const resumed = runFrom(lost.saved.at(-1) ?? null);
    const resumedRows = (await job.run(resumed.run)).rows;
    expect({
      wholeRows: wholeRows > 0,
      resumedRows,
      lostSaves: lost.saved.length,
    }).toEqual({ wholeRows: true, resumedRows: wholeRows, lostSaves: 4 });
    // The resumed run carried on from the saved range: its saves are the whole run's after the 4th.
    const strip = (p: string) => {
      const { runId: _r, totals: _t, ...where } = JSON.parse(p) as Record<string, unknown>;
      return where;
    };
    expect(resumed.saved.map(strip)).toEqual(whole.saved.slice(4).map(strip));
  });

  it('the relay: a run lost at its 3rd cursor save repeats only that page; the next run resumes from the 2nd and delivers the rest, each cursor also left in relay_cursors', async () => {
    const events = generateEvents({ count: 1000, seed: 7 });
    const feed = generatedFeed(events);
    const { store, deps: world } = await jobWorld(0);
    await store.putRelayCursor('relay', generatedCursor(100)); // where an earlier `jobs relay` stopped
    const sent: RelayMessage[][] = [];
    let onSend = () => {};
    const sink: RelaySink = {
      send: async (messages) => {
        sent.push([...messages]);
        onSend();
      },
      close: async () => {},
    };
    const deps = {
      ...world,
      feed: () => feed,
      relay: { brokers: ['unused:9092'], topic: 'graph-events', name: 'relay', batch: 200 },
      relaySink: () => sink,
    };
    const job = workerJob('relay', deps);
    const first = runFrom(null, 3);
    await expect(job.run(first.run)).rejects.toBeInstanceOf(LeaseLostError);
    // From relay_cursors' 100: pages 100–299 saved, 300–499 sent but its save refused.
    expect(first.saved).toEqual([generatedCursor(300), generatedCursor(500)]);
    expect(await store.getRelayCursor('relay')).toBe(generatedCursor(500));
    const second = runFrom(first.saved.at(-1) ?? null);
    onSend = () => {
      if (sent.flat().length >= 1100) second.controller.abort(new Error('worker stopping'));
    };
    await expect(job.run(second.run)).rejects.toThrow('worker stopping');
    const ids = sent.flat().map((m) => JSON.parse(m.value).id as string);
    const want = events.map((e) => e.id);
    // Every event from relay_cursors' 100 on, in feed order; the page the lost lease could not commit twice.
    expect(ids).toEqual([...want.slice(100, 700), ...want.slice(500, 1000)]);
    expect(second.saved).toEqual([generatedCursor(700), generatedCursor(900), generatedCursor(1000)]);
    expect(await store.getRelayCursor('relay')).toBe(generatedCursor(1000));
  });
});
