/**
 * The write path's batching: a follow's dirty marks go to the store as one call before
 * its append, all dated the lease's `until`, and its counter increments as one call after the view
 * batch; a counter batch that lands in part is recounted, as separate increments were. On the
 * in-memory store, recording each store call in order.
 */
import { describe, expect, it } from 'vitest';
import { GraphService } from '../../../src/graph/graph-service.js';
import { reconcileDirty } from '../../../src/jobs/reconcile-dirty.js';
import { StoreUnavailableError } from '../../../src/model/errors.js';
import type { ListKey } from '../../../src/model/types.js';
import type { CounterDelta } from '../../../src/ports/count-store.js';
import { MemoryGraphStore } from '../../support/memory/graph-store.js';
import { SingleBucketLists } from '../support/single-bucket-lists.js';

const name = (l: ListKey) => `${l.userId}/${l.relation}/${l.direction}`;

class RecordingStore extends MemoryGraphStore {
  readonly calls: string[] = [];
  /** The next `incrementCounts` applies its first delta only, then answers a timeout. */
  halfBatch = false;

  override async markDirty(list: ListKey, bucketCode: number, version: bigint) {
    this.calls.push(`markDirty ${name(list)}`);
    return super.markDirty(list, bucketCode, version);
  }
  override async markDirtyBuckets(marks: readonly { list: ListKey; bucketCode: number }[], version: bigint) {
    this.calls.push(`markDirtyBuckets ${marks.map((m) => name(m.list)).join(' ')} @${version > 0n}`);
    return super.markDirtyBuckets(marks, version);
  }
  /** Runs once, right before the next append of an op of this kind is sent (a racer's whole write). */
  beforeAppend: { kind: string; run: (position: bigint) => Promise<unknown> } | null = null;
  override async appendPair(...a: Parameters<MemoryGraphStore['appendPair']>) {
    const racer = this.beforeAppend;
    const op = a[0].op;
    if (racer && op && op.kind === racer.kind) {
      this.beforeAppend = null;
      await racer.run(op.position);
    }
    this.calls.push('appendPair');
    return super.appendPair(...a);
  }
  override async writeEdges(...a: Parameters<MemoryGraphStore['writeEdges']>) {
    this.calls.push('writeEdges');
    return super.writeEdges(...a);
  }
  override async incrementCount(list: ListKey, shard: number, delta: number) {
    this.calls.push(`incrementCount ${name(list)}`);
    return super.incrementCount(list, shard, delta);
  }
  override async incrementCounts(deltas: readonly CounterDelta[]) {
    this.calls.push(
      `incrementCounts ${deltas.map((d) => `${name(d.list)}${d.delta > 0 ? '+' : ''}${d.delta}`).join(' ')}`,
    );
    if (this.halfBatch) {
      this.halfBatch = false;
      const [first] = deltas;
      if (first) await super.incrementCount(first.list, first.shard, first.delta);
      throw new StoreUnavailableError('counter batch timed out (applied in part)');
    }
    return super.incrementCounts(deltas);
  }
}

async function setUp() {
  const store = new RecordingStore();
  let now = 1_000_000_000_000n;
  const clock = () => now++;
  const graph = new GraphService({ store, lists: new SingleBucketLists(store), maxFollowing: 100, clock });
  for (const id of [1n, 2n]) await graph.putUser({ id, username: `u${id}` });
  store.calls.length = 0;
  return { store, graph, advance: (micros: bigint) => (now += micros) };
}

describe('the follow path batches its marks and its increments', () => {
  it('a fresh follow: one marks call before the append, one increments call after the view batch', async () => {
    const { store, graph } = await setUp();
    await graph.follow(1n, 2n);
    expect(
      store.calls.filter((c) => !c.startsWith('incrementCount ') && !c.startsWith('markDirty ')),
    ).toEqual([
      'markDirtyBuckets 1/follows/out 2/follows/in @true',
      'appendPair',
      'writeEdges',
      'incrementCounts 1/follows/out+1 2/follows/in+1',
    ]);
  });

  it("an op that clears an edge its first read shows active marks that edge's lists too", async () => {
    const { store, graph } = await setUp();
    await graph.putUser({ id: 2n, username: 'u2', private: true });
    expect(await graph.follow(1n, 2n)).toMatchObject({ state: 'requested' });
    store.calls.length = 0;
    // Withdrawing the request: an unfollow clears it.
    await graph.unfollow(1n, 2n);
    expect(
      store.calls.filter((c) => c.startsWith('markDirtyBuckets') || c.startsWith('incrementCounts')),
    ).toEqual([
      'markDirtyBuckets 1/follows/out 2/follows/in 1/requests/out 2/requests/in @true',
      'incrementCounts 1/requests/out-1 2/requests/in-1',
    ]);
  });

  it("an op whose first read showed no request clears a racer's: it marks the request lists before its view write", async () => {
    const { store, graph } = await setUp();
    await graph.putUser({ id: 2n, username: 'u2', private: true });
    // The unfollow reads the pair (nothing), then a follow of the private account — a request —
    // lands just below it (a replay at an explicit position, whole, before the unfollow's append).
    store.beforeAppend = {
      kind: 'unfollow',
      run: (position) => graph.follow(1n, 2n, { position: position - 10n }),
    };
    store.calls.length = 0;
    expect(await graph.unfollow(1n, 2n)).toMatchObject({ state: 'none' });
    expect(
      store.calls.filter((c) => !c.startsWith('incrementCount ') && !c.startsWith('markDirty ')),
    ).toEqual([
      // the unfollow's marks: its own edge's lists only
      'markDirtyBuckets 1/follows/out 2/follows/in @true',
      // the racer: a request, whole
      'markDirtyBuckets 1/requests/out 2/requests/in @true',
      'appendPair',
      'writeEdges',
      'incrementCounts 1/requests/out+1 2/requests/in+1',
      // the unfollow: its re-read shows the request below it, which it clears and counts, so it
      // marks the request lists before its view write
      'appendPair',
      'markDirtyBuckets 1/requests/out 2/requests/in @true',
      'writeEdges',
      'incrementCounts 1/requests/out-1 2/requests/in-1',
    ]);
    const [a, b] = [await graph.counts(1n), await graph.counts(2n)];
    expect([a.following, b.followers]).toEqual([0, 0]);
    expect(await graph.getFollowStatus(1n, 2n)).toEqual({ state: 'none' });
  });

  it('an unfollow counts down in one call', async () => {
    const { store, graph } = await setUp();
    await graph.follow(1n, 2n);
    store.calls.length = 0;
    await graph.unfollow(1n, 2n);
    expect(store.calls.filter((c) => c.startsWith('incrementCounts'))).toEqual([
      'incrementCounts 1/follows/out-1 2/follows/in-1',
    ]);
  });

  it('a counter batch that lands in part is recounted once its lease has passed', async () => {
    const { store, graph, advance } = await setUp();
    store.halfBatch = true;
    await expect(graph.follow(1n, 2n)).rejects.toThrow(StoreUnavailableError);
    // The following side counted, the followers side not: off by one until the reconciler runs.
    expect([(await graph.counts(1n)).following, (await graph.counts(2n)).followers]).toEqual([1, 0]);
    advance(60_000_000n);
    await reconcileDirty(store, { now: () => 1_000_000_000_000n + 120_000_000n });
    const [a, b] = [await graph.counts(1n), await graph.counts(2n)];
    expect([a.following, a.exact, b.followers, b.exact]).toEqual([1, true, 1, true]);
  });
});
