/**
 * The change feed's contract, run on the memory store (`feed.test.ts`) and on the real node
 * (`feed.int.test.ts`): exact events for the relation rules (no event for a no-op, a block's
 * `follow.removed`s, `user.updated`, restricts beside blocks), and a seeded property — concurrent writers whose appends and
 * batches are delayed at random, replays at old positions and duplicate deliveries, readers that
 * read while the writers run: every read from any cursor it was given returns exactly the events
 * after it, and each pair's events applied in feed order give its current state.
 */
import { expect, it } from 'vitest';
import { GraphService, type GraphServiceOptions } from '../../../src/graph/graph-service.js';
import { feedLagMicros, type HistoryPolicy } from '../../../src/graph/pair/pair-history.js';
import { nowPosition } from '../../../src/model/clock.js';
import { StoreUnavailableError } from '../../../src/model/errors.js';
import type { GraphEvent } from '../../../src/model/events.js';
import { edgeKey, type OpKind, type Relation, type UserId } from '../../../src/model/types.js';
import type { GraphStore } from '../../../src/ports/graph-store.js';
import { mulberry32 } from '../../support/random.js';
import { SingleBucketLists } from './single-bucket-lists.js';

/** Bounds small enough that the feed settles in `lag` (1.5 s) and large enough for a busy node. */
export const FEED_TEST_POLICY: Partial<HistoryPolicy> = {
  writeBudgetMs: 400,
  viewBudgetMs: 400,
  batchTimeoutMs: 300,
  clockSkewMs: 200,
};
const LAG_MS = Number(feedLagMicros(FEED_TEST_POLICY as HistoryPolicy) / 1000n);

/**
 * What a delayed store adds: a random wait before each append and each batch carrying feed rows,
 * and two fault points: the next batch carrying feed rows refused after the append landed (a
 * writer that dies between the two), and the next append held back, unsent, with the writer told
 * it timed out (`releaseHeld` lands it later).
 */
export interface Delays {
  delay: { append: number; batch: number; random: () => number };
  faults: { refuseNextViewBatch: boolean; holdNextAppend: boolean };
  releaseHeld(): Promise<void>;
}

// biome-ignore lint/suspicious/noExplicitAny: a mixin's base constructor takes any arguments
type StoreClass = new (...args: any[]) => GraphStore;

/** `Base` whose appends and feed-carrying batches wait a random while below the set delays (ms). */
export function withDelays<B extends StoreClass>(Base: B) {
  return class extends Base implements Delays {
    delay = { append: 0, batch: 0, random: Math.random };
    faults = { refuseNextViewBatch: false, holdNextAppend: false };
    private held: (() => Promise<void>)[] = [];
    async wait(ms: number) {
      if (ms > 0) await new Promise((r) => setTimeout(r, Math.floor(this.delay.random() * ms)));
    }
    override async appendPair(...a: Parameters<GraphStore['appendPair']>): Promise<void> {
      if (this.faults.holdNextAppend && a[0].op) {
        this.faults.holdNextAppend = false;
        this.held.push(() => super.appendPair(a[0]));
        throw new StoreUnavailableError('injected: the append timed out (held back, unsent)');
      }
      await this.wait(this.delay.append);
      return super.appendPair(...a);
    }
    override async writeEdges(...a: Parameters<GraphStore['writeEdges']>): Promise<void> {
      if (a[3]?.length && this.faults.refuseNextViewBatch) {
        this.faults.refuseNextViewBatch = false;
        throw new StoreUnavailableError('injected: the writer died before its view batch');
      }
      if (a[3]?.length) await this.wait(this.delay.batch);
      return super.writeEdges(...a);
    }
    async releaseHeld(): Promise<void> {
      const held = this.held;
      this.held = [];
      for (const land of held) await land();
    }
  };
}

/** A feed world over a delayed store: the graph service the suite drives, with the test bounds. */
export function delayedWorld(
  store: GraphStore & Delays,
  extra: Partial<GraphServiceOptions> = {},
): FeedWorld {
  const graph = new GraphService({
    store,
    lists: new SingleBucketLists(store),
    maxFollowing: 1000,
    historyPolicy: FEED_TEST_POLICY,
    feedPollMs: 50,
    ...extra,
  });
  return {
    store,
    graph,
    delays: (append, batch, random) => {
      store.delay = { append, batch, random };
    },
    faults: store,
  };
}

export interface FeedWorld {
  store: GraphStore;
  graph: GraphService;
  /** Sets the delays the store adds before each append and each view batch (ms, at random below). */
  delays(appendMs: number, batchMs: number, random: () => number): void;
  /** The store's fault points (`Delays`). */
  faults: Pick<Delays, 'faults' | 'releaseHeld'>;
}

const settle = () => new Promise((r) => setTimeout(r, LAG_MS + 300));

/** Every settled event after `after`, page by page (`limit` per page). */
async function readAll(graph: GraphService, after: string | null, limit = 7): Promise<GraphEvent[]> {
  const out: GraphEvent[] = [];
  let cursor = after;
  for (;;) {
    const page = await graph.feed.read(cursor, limit);
    out.push(...page.items);
    if (page.items.length === 0) return out;
    cursor = page.next;
  }
}

const brief = (e: GraphEvent) => ({ type: e.type, source: e.source, target: e.target });

export function feedSuite(open: () => Promise<FeedWorld>, ids: () => bigint) {
  it('emits exactly the changes: none for a no-op, a block’s follow.removed both ways, user.updated for admin changes', async () => {
    const { graph } = await open();
    const [a, b, c] = [ids(), ids(), ids()];
    for (const id of [a, b, c]) await graph.putUser({ id, username: `u${id}` });
    const start = (await graph.feed.read(null, 1000)).next;
    // Settled before the writes below: the cursor resumes after everything up to now − lag.
    await settle();
    const mark = (await readAll(graph, start)).at(-1)?.id ?? start;

    await graph.follow(a, b);
    await graph.follow(a, b); // a no-op
    await graph.follow(b, a);
    await graph.block(a, b); // removes both follows
    await graph.unblock(a, b);
    await graph.unblock(a, b); // a no-op
    await graph.putUser({ id: c, private: true });
    await graph.putUser({ id: c, private: true }); // a no-op
    await graph.follow(a, c); // a request
    await graph.putUser({ id: c, state: 'deactivated' });
    await graph.putUser({ id: c, username: `u${c}` }); // a no-op
    await settle();

    const events = await readAll(graph, mark);
    expect(events.map(brief)).toEqual([
      { type: 'follow.created', source: a, target: b },
      { type: 'follow.created', source: b, target: a },
      { type: 'block.created', source: a, target: b },
      { type: 'follow.removed', source: a, target: b },
      { type: 'follow.removed', source: b, target: a },
      { type: 'block.removed', source: a, target: b },
      { type: 'user.updated', source: c, target: c },
      { type: 'request.created', source: a, target: c },
      { type: 'user.updated', source: c, target: c },
    ]);
    // Ids are unique and ordered; every id resumes right after its event.
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    for (let i = 0; i < events.length; i++) {
      expect((await readAll(graph, (events[i] as GraphEvent).id, 2)).map((e) => e.id)).toEqual(
        events.slice(i + 1).map((e) => e.id),
      );
    }
  });

  it('a change that takes effect unacknowledged reaches a reader who was already past its lag: held by its intent, delivered by the recovery; one that never lands is fenced and stays out', async () => {
    const world = await open();
    const { graph } = world;
    const { faults } = world;
    const [a, b, c, d] = [ids(), ids(), ids(), ids()];
    for (const id of [a, b, c, d]) await graph.putUser({ id, username: `u${id}` });
    const start = (await graph.feed.read(null, 1000)).next;
    await settle();
    const mark = (await readAll(graph, start)).at(-1)?.id ?? start;

    // The writer dies between its append (landed) and its view batch: answered with an error.
    faults.faults.refuseNextViewBatch = true;
    await expect(graph.follow(a, b)).rejects.toThrow(/injected/);
    await settle();
    // Past the lag, a reader still does not pass the op's slot: nothing, and a cursor below it.
    const held = await graph.feed.read(mark, 100);
    expect(held.items).toEqual([]);
    expect(await graph.intentRecovery.runOnce()).toEqual({ present: 1, fenced: 0 });
    const delivered = await graph.feed.read(held.next, 100);
    expect(delivered.items.map(brief)).toEqual([{ type: 'follow.created', source: a, target: b }]);

    // An append that never landed (the writer was told it timed out): fenced by the recovery, so
    // when it lands after all it changes nothing, and the feed moves on.
    faults.faults.holdNextAppend = true;
    await expect(graph.follow(c, d)).rejects.toThrow(/injected/);
    await settle();
    expect((await graph.feed.read(delivered.next, 100)).items).toEqual([]);
    expect(await graph.intentRecovery.runOnce()).toEqual({ present: 0, fenced: 1 });
    await faults.releaseHeld();
    await graph.follow(d, c);
    await settle();
    expect((await readAll(graph, delivered.next)).map(brief)).toEqual([
      { type: 'follow.created', source: d, target: c },
    ]);
    expect((await world.store.readPairHistory(c, d)).ops.map((o) => [o.sourceId, o.kind])).toEqual([
      [d, 'follow'],
    ]);
    expect(await graph.intentRecovery.runOnce()).toEqual({ present: 0, fenced: 0 });
  });

  it('restrict.created / restrict.removed: none for a no-op; a block leaves the restrict, also one replayed late below the block', async () => {
    const { graph } = await open();
    const [a, b, c, d] = [ids(), ids(), ids(), ids()];
    for (const id of [a, b, c, d]) await graph.putUser({ id, username: `u${id}` });
    const start = (await graph.feed.read(null, 1000)).next;
    await settle();
    const mark = (await readAll(graph, start)).at(-1)?.id ?? start;

    await graph.follow(b, a);
    await graph.restrict(a, b);
    await graph.restrict(a, b); // a no-op
    await graph.block(b, a); // removes b's follow; a's restrict of b stays
    await graph.unrestrict(a, b);
    await graph.unrestrict(a, b); // a no-op
    await graph.unblock(b, a);
    // Late: a restrict whose position is below a block already delivered. A block does not clear
    // a restrict, so it lands (under a clearing rule it would fold to nothing and emit nothing).
    const block = await graph.block(d, c);
    await graph.restrict(c, d, { position: block.position - 1000n });
    await settle();

    expect((await readAll(graph, mark)).map(brief)).toEqual([
      { type: 'follow.created', source: b, target: a },
      { type: 'restrict.created', source: a, target: b },
      { type: 'block.created', source: b, target: a },
      { type: 'follow.removed', source: b, target: a },
      { type: 'restrict.removed', source: a, target: b },
      { type: 'block.removed', source: b, target: a },
      { type: 'block.created', source: d, target: c },
      { type: 'restrict.created', source: c, target: d },
    ]);
  });

  it('an empty page still answers a cursor, at the watermark, and a read with wait returns when an event settles', async () => {
    const { graph } = await open();
    const [a, b] = [ids(), ids()];
    for (const id of [a, b]) await graph.putUser({ id, username: `u${id}` });
    await settle();
    let cursor = (await graph.feed.read(null, 1000)).next;
    for (;;) {
      const page = await graph.feed.read(cursor, 1000);
      if (page.items.length === 0) {
        expect(page.next).toMatch(/^\d+\.8\.0\.0\.0\.0\.\.-1\.[\w-]{22}$/);
        cursor = page.next;
        break;
      }
      cursor = page.next;
    }
    const started = Date.now();
    const follow = graph.follow(a, b);
    const page = await graph.feed.read(cursor, 10, { waitMs: LAG_MS + 5_000 });
    await follow;
    expect(page.items.map(brief)).toEqual([{ type: 'follow.created', source: a, target: b }]);
    expect(Date.now() - started).toBeLessThan(LAG_MS + 5_000);
  });

  it('rows that differ only in op kind never shorten a page: a reader taking one event at a time gets every event', async () => {
    const { graph } = await open();
    const [a, b, c, d] = [ids(), ids(), ids(), ids()];
    for (const id of [a, b, c, d]) await graph.putUser({ id, username: `u${id}` });
    await settle();
    const origin = (await readAll(graph, null, 1000)).at(-1)?.id ?? (await graph.feed.read(null, 1)).next;
    // Two admin replays of a → b at one explicit position ahead of the clock (slot = position):
    // two feed rows whose keys differ only in the op's kind.
    const p = nowPosition() + 500_000n;
    await graph.mute(a, b, { position: p });
    await graph.follow(a, b, { position: p });
    await new Promise((r) => setTimeout(r, 600));
    await graph.follow(c, d);
    await graph.follow(d, c);
    await settle();
    const all = await readAll(graph, origin, 1000);
    expect(all.map(brief)).toEqual([
      // Same slot, pair and position: in the order of the op kinds.
      { type: 'follow.created', source: a, target: b },
      { type: 'mute.created', source: a, target: b },
      { type: 'follow.created', source: c, target: d },
      { type: 'follow.created', source: d, target: c },
    ]);
    // One event a page: after the second same-slot row's cursor, the first row (before the cursor)
    // must not take the read's only spare row and turn the page into a jump to the watermark.
    const one: GraphEvent[] = [];
    let cursor = origin;
    for (let i = 0; i < 8; i++) {
      const page = await graph.feed.read(cursor, 1);
      one.push(...page.items);
      cursor = page.next;
    }
    expect(one.map((e) => e.id)).toEqual(all.map((e) => e.id));
  });

  it('exactly once from every cursor, and each pair’s events replay to its state, under delayed appends, replays and duplicates (seeded)', async () => {
    const seed = Number(process.env.FEED_SEED ?? Math.floor(Math.random() * 2 ** 31));
    const rounds = Number(process.env.FEED_ROUNDS ?? 3);
    console.log(`feed property: FEED_SEED=${seed} FEED_ROUNDS=${rounds}`);
    const world = await open();
    const { graph } = world;
    const random = mulberry32(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
    const users = Array.from({ length: 5 }, () => ids());
    for (const id of users) await graph.putUser({ id, username: `u${id}` });
    await settle();
    const origin = (await graph.feed.read(null, 1)).next;
    const full0 = await readAll(graph, origin);
    const mark = full0.at(-1)?.id ?? origin;

    const kinds: OpKind[] = [
      'follow',
      'follow',
      'unfollow',
      'block',
      'unblock',
      'mute',
      'unmute',
      'close_friend_add',
      'restrict',
      'unrestrict',
    ];
    const cursors = new Set<string>([mark]);
    const acknowledged = new Set<bigint>();
    const failures = new Map<string, number>();
    const seenByReader: GraphEvent[] = [];
    for (let round = 0; round < rounds; round++) {
      world.delays(60, 60, random);
      let running = true;
      const reader = (async () => {
        let cursor = seenByReader.at(-1)?.id ?? mark;
        while (running) {
          const page = await graph.feed.read(cursor, 1 + Math.floor(random() * 9));
          seenByReader.push(...page.items);
          cursors.add(page.next);
          for (const e of page.items) if (random() < 0.3) cursors.add(e.id);
          cursor = page.next;
          await new Promise((r) => setTimeout(r, 20 + random() * 80));
        }
        // Drain what settles after the writers stop.
        await settle();
        for (;;) {
          const page = await graph.feed.read(cursor, 50);
          seenByReader.push(...page.items);
          if (page.items.length === 0) break;
          cursor = page.next;
        }
      })();
      const writers = Array.from({ length: 6 }, async () => {
        for (let i = 0; i < 12; i++) {
          const a = pick(users);
          let b = pick(users);
          while (b === a) b = pick(users);
          const kind = pick(kinds);
          // A replay with an old position (a second back), sometimes delivered twice.
          const replay =
            random() < 0.25 ? { position: nowPosition() - BigInt(Math.floor(random() * 1e6)) } : {};
          const times = Object.keys(replay).length > 0 && random() < 0.4 ? 2 : 1;
          await Promise.all(
            Array.from({ length: times }, () =>
              apply(graph, kind, a, b, replay).then(
                (r) => acknowledged.add((r as { position: bigint }).position),
                (e: unknown) => {
                  failures.set(String((e as Error).name), (failures.get(String((e as Error).name)) ?? 0) + 1);
                },
              ),
            ),
          );
        }
      });
      await Promise.all(writers);
      world.delays(0, 0, random);
      running = false;
      await reader;
    }
    await settle();
    const full = await readAll(graph, mark);
    console.log(
      `feed property: ${full.length} events, ${acknowledged.size} ops acknowledged, refused: ${JSON.stringify([...failures])}`,
    );
    // The reader that read while the writers ran saw the feed in order, once each, and every event
    // of an acknowledged op (an op answered with an error may have landed after the reader passed).
    const seen = new Set(seenByReader.map((e) => e.id));
    expect(seen.size).toBe(seenByReader.length);
    expect(seenByReader.map((e) => e.id)).toEqual(full.filter((e) => seen.has(e.id)).map((e) => e.id));
    expect(full.filter((e) => !seen.has(e.id) && acknowledged.has(e.position))).toEqual([]);
    // From every cursor handed out: exactly the events after it.
    const index = new Map(full.map((e, i) => [e.id, i]));
    for (const c of cursors) {
      const after = await readAll(graph, c, 13);
      const at = index.get(c);
      const expected = at === undefined ? full.filter((e) => compareIds(e.id, c) > 0) : full.slice(at + 1);
      expect(after.map((e) => e.id)).toEqual(expected.map((e) => e.id));
    }
    // Each pair's events, applied in feed order, give its current edges.
    const replayed = new Map<string, boolean>();
    for (const e of full) {
      const [relation, on] = EVENT_EDGE[e.type] ?? [];
      if (relation) replayed.set(edgeKey(e.source, relation, e.target), on as boolean);
    }
    const actual = new Map<string, boolean>();
    for (const a of users)
      for (const b of users)
        if (a < b)
          for (const e of await world.store.getPairEdges(a, b))
            actual.set(edgeKey(e.sourceId, e.relation, e.targetId), e.state === 'active');
    const active = (m: Map<string, boolean>) =>
      [...m]
        .filter(([, on]) => on)
        .map(([k]) => k)
        .sort();
    expect(active(replayed)).toEqual(active(actual));
    expect(full.length).toBeGreaterThan(20);
  });
}

const EVENT_EDGE: Partial<Record<GraphEvent['type'], [Relation, boolean]>> = {
  'follow.created': ['follows', true],
  'follow.removed': ['follows', false],
  'request.created': ['requests', true],
  'request.removed': ['requests', false],
  'block.created': ['blocks', true],
  'block.removed': ['blocks', false],
  'mute.created': ['mutes', true],
  'mute.removed': ['mutes', false],
  'close_friend.added': ['close_friends', true],
  'close_friend.removed': ['close_friends', false],
  'restrict.created': ['restricts', true],
  'restrict.removed': ['restricts', false],
};

/** Feed order of two ids (cursors): their numeric parts, the op kind as text. */
function compareIds(x: string, y: string): number {
  const a = x.split('.');
  const b = y.split('.');
  for (let i = 0; i < 8; i++) {
    const p = a[i] as string;
    const q = b[i] as string;
    if (i === 6) {
      if (p !== q) return p < q ? -1 : 1;
      continue;
    }
    const d = BigInt(p) - BigInt(q);
    if (d !== 0n) return d < 0n ? -1 : 1;
  }
  return 0;
}

async function apply(
  graph: GraphService,
  kind: OpKind,
  a: UserId,
  b: UserId,
  o: { position?: bigint },
): Promise<unknown> {
  switch (kind) {
    case 'follow':
      return graph.follow(a, b, o);
    case 'unfollow':
      return graph.unfollow(a, b, o);
    case 'block':
      return graph.block(a, b, o);
    case 'unblock':
      return graph.unblock(a, b, o);
    case 'mute':
      return graph.mute(a, b, o);
    case 'unmute':
      return graph.unmute(a, b, o);
    case 'close_friend_add':
      return graph.addCloseFriend(a, b, o);
    case 'restrict':
      return graph.restrict(a, b, o);
    case 'unrestrict':
      return graph.unrestrict(a, b, o);
    default:
      throw new Error(`no call for ${kind}`);
  }
}
