/**
 * The change feed on the memory store (`support/feed-suite.ts`); the same suite runs on the real
 * node in `feed.int.test.ts`.
 */
import { describe } from 'vitest';
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
