/**
 * The change feed on the real node (`support/feed-suite.ts`: exact events, exactly once from every
 * cursor under delayed appends, replays and duplicates, pair replay equals state), and what only
 * Cassandra can show: the feed rows and the change are all-or-nothing (a batch the node refuses
 * leaves neither), a batch carrying feed rows is never sent without the batchlog, and the rows
 * expire with the retention.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_FEED_CURSOR_SECRET, FeedCursorSeal } from '../../src/graph/feed-cursor.js';
import { GraphService } from '../../src/graph/graph-service.js';
import { ClockGuard } from '../../src/graph/pair/clock-guard.js';
import { nowPosition } from '../../src/model/clock.js';
import { StoreUnavailableError } from '../../src/model/errors.js';
import { eventShard } from '../../src/model/events.js';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { bearer, buildTestApp, call } from '../http/support/app.js';
import { type TestKeyspace, testKeyspace } from '../support/cassandra.js';
import { delayedWorld, FEED_TEST_POLICY, feedSuite, withDelays } from './support/feed-suite.js';
import { SingleBucketLists } from './support/single-bucket-lists.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const DelayedStore = withDelays(CassandraGraphStore);

let ks: TestKeyspace;
let next = 1n;

beforeAll(async () => {
  ks = await testKeyspace('feed');
});
afterAll(async () => {
  await ks?.drop();
});

describe('change feed (Cassandra)', () => {
  it('over HTTP on the real node: an instance whose clock runs 30 s ahead of the database answers a feed read 503 with Retry-After, and serves again once its clock is back', async () => {
    const store = new DelayedStore(ks.client);
    let ahead = 30_000_000n;
    const clock = () => nowPosition() + ahead;
    const guard = new ClockGuard({
      boundMs: 2000,
      databaseClockMs: () => store.databaseClockMs(),
      clock,
      monotonic: () => performance.now(),
    });
    await guard.check();
    const { graph } = delayedWorld(store, { clock, clockGuard: guard });
    const { app } = buildTestApp({ graph, feed: graph.feed });
    const admin = bearer(1, { admin: true });
    const res = await app.request('/v1/events?limit=10', { headers: { Authorization: admin } });
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await res.json()) as { type: string }).type).toMatch(/unavailable|clock/);
    ahead = 0n;
    await guard.check();
    expect((await app.request('/v1/events?limit=10', { headers: { Authorization: admin } })).status).toBe(
      200,
    );
  });

  feedSuite(
    async () => delayedWorld(new DelayedStore(ks.client)),
    () => next++,
  );

  it('over HTTP on the real node: SSE resumes exactly after its Last-Event-ID; a cursor older than the retention answers 410', async () => {
    const { graph } = delayedWorld(new DelayedStore(ks.client), { eventRetentionSeconds: 3600 });
    const { app } = buildTestApp({ graph, feed: graph.feed, events: { heartbeatMs: 60_000 } });
    const admin = bearer(1, { admin: true });
    const [a, b, c] = [next++, next++, next++];
    for (const id of [a, b, c]) await graph.putUser({ id, username: `s${id}` });
    // A cursor after everything settled so far, then three follows.
    await new Promise((r) => setTimeout(r, 1800));
    let cursor = (await graph.feed.read(null, 1)).next;
    for (;;) {
      const page = await graph.feed.read(cursor, 1000);
      if (page.items.length === 0) break;
      cursor = page.next;
    }
    await graph.follow(a, b);
    await graph.follow(a, c);
    await graph.follow(b, c);
    const open = (headers: Record<string, string>) =>
      app.request(`/v1/events/stream?after=${encodeURIComponent(cursor)}`, {
        headers: { Authorization: admin, Accept: 'text/event-stream', ...headers },
      });
    const frames = async (res: Response, n: number) => {
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      let text = '';
      while (text.split('\n\n').length <= n)
        text += decoder.decode((await reader.read()).value, { stream: true });
      await reader.cancel();
      return text
        .split('\n\n')
        .slice(0, n)
        .map((f) => {
          const line = (k: string) =>
            f
              .split('\n')
              .find((l) => l.startsWith(`${k}: `))
              ?.slice(k.length + 2);
          const data = JSON.parse(line('data') as string) as { source: string; target: string };
          return { id: line('id'), event: line('event'), pair: `${data.source}>${data.target}` };
        });
    };
    const all = await frames(await open({}), 3);
    expect(all.map((f) => [f.event, f.pair])).toEqual([
      ['follow.created', `${a}>${b}`],
      ['follow.created', `${a}>${c}`],
      ['follow.created', `${b}>${c}`],
    ]);
    const resumed = await frames(await open({ 'Last-Event-ID': all[0]?.id as string }), 2);
    expect(resumed).toEqual(all.slice(1));
    // A cursor (sealed, as the service seals them) from a slot older than the retention (an hour
    // here): 410 on both routes; the same cursor unsealed: 400.
    const key = {
      slot: 1_000_000n,
      shard: 0,
      low: a,
      high: b,
      opPosition: 1n,
      opSource: a,
      opKind: 'follow',
    };
    const old = new FeedCursorSeal([DEFAULT_FEED_CURSOR_SECRET]).seal(key, 0);
    const plain = `1000000.0.${a}.${b}.1.${a}.follow.0`;
    expect((await call(app, 'GET', `/v1/events?after=${plain}`, { auth: admin })).status).toBe(400);
    const poll = await call(app, 'GET', `/v1/events?after=${old}`, { auth: admin });
    expect([poll.status, (poll.json as { type: string }).type]).toEqual([
      410,
      expect.stringContaining('cursor_expired'),
    ]);
    expect((await open({ 'Last-Event-ID': old })).status).toBe(410);
  });

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

  it('account updates on the real node: one held past the recovery is fenced (landing later it changes nothing, shows nothing); one whose cells landed without its feed row gets its row, once', async () => {
    const own = await testKeyspace('feed_user');
    try {
      class Faulty extends CassandraGraphStore {
        gate: Promise<void> | null = null;
        cellsOnly = false;
        override async putUserFields(...a: Parameters<CassandraGraphStore['putUserFields']>) {
          const gate = this.gate;
          this.gate = null;
          if (gate) await gate;
          if (this.cellsOnly && a[3]?.event) {
            this.cellsOnly = false;
            await super.putUserFields(a[0], a[1], a[2], {});
            throw new StoreUnavailableError('injected: the batch is half applied');
          }
          return super.putUserFields(...a);
        }
      }
      const store = new Faulty(own.client);
      const graph = new GraphService({
        store,
        lists: new SingleBucketLists(store),
        maxFollowing: 1000,
        historyPolicy: FEED_TEST_POLICY,
        registry: false,
      });
      const [u, v] = [next++, next++];
      for (const id of [u, v]) await graph.putUser({ id, username: `f${id}` });
      await sleep(1800);
      const origin = (await graph.feed.read(null, 1000)).next;
      let open!: () => void;
      store.gate = new Promise<void>((r) => {
        open = r;
      });
      const held = graph.putUser({ id: u, private: true });
      store.cellsOnly = true;
      await sleep(50);
      await expect(graph.putUser({ id: v, hideLists: true })).rejects.toBeInstanceOf(StoreUnavailableError);
      // Past L (1.5 s) and the recovery's reach: the held one is fenced, the half-applied one completed.
      await sleep(2000);
      expect(await graph.intentRecovery.runOnce()).toEqual({ present: 1, fenced: 1 });
      open();
      await expect(held).rejects.toBeInstanceOf(StoreUnavailableError);
      expect([(await store.getUser(u))?.private, (await store.getUser(v))?.hideLists]).toEqual([false, true]);
      await sleep(1800);
      const items = (await graph.feed.read(origin, 1000)).items;
      expect(items.map((e) => [e.type, e.source, e.fields])).toEqual([['user.updated', v, ['hideLists']]]);
    } finally {
      await own.drop();
    }
  });
});
