/**
 * The change feed on the memory store (`support/feed-suite.ts`); the same suite runs on the real
 * node in `feed.int.test.ts`.
 */
import { describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import type { PairAppend } from '../../src/ports/records.js';
import { MemoryGraphStore } from '../../src/store/memory/memory-store.js';
import { FEED_TEST_POLICY, feedSuite } from './support/feed-suite.js';
import { SingleBucketLists } from './support/single-bucket-lists.js';

/** A memory store whose appends and view batches wait a random while (set by the suite). */
class DelayedStore extends MemoryGraphStore {
  delay = { append: 0, batch: 0, random: Math.random };
  private async wait(ms: number) {
    if (ms > 0) await new Promise((r) => setTimeout(r, Math.floor(this.delay.random() * ms)));
  }
  override async appendPair(append: PairAppend): Promise<void> {
    await this.wait(this.delay.append);
    return super.appendPair(append);
  }
  override async writeEdges(...a: Parameters<MemoryGraphStore['writeEdges']>): Promise<void> {
    if (a[3]?.length) await this.wait(this.delay.batch);
    return super.writeEdges(...a);
  }
}

let next = 1n;
describe('change feed (memory store)', () => {
  feedSuite(
    async () => {
      const store = new DelayedStore();
      const graph = new GraphService({
        store,
        lists: new SingleBucketLists(store),
        maxFollowing: 1000,
        historyPolicy: FEED_TEST_POLICY,
        feedPollMs: { wait: 50 },
      });
      return {
        store,
        graph,
        delays: (append, batch, random) => {
          store.delay = { append, batch, random };
        },
      };
    },
    () => next++,
  );
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
