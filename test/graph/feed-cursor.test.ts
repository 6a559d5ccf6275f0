/**
 * Sealed feed cursors (`src/graph/feed-cursor.ts`): the seal itself, then the feed that uses it —
 * forged, foreign and future cursors refused, ids the same on every instance that shares the
 * secret, a rotation, and the relay's stored cursor of the old plain form taken once and rewritten
 * sealed.
 */
import { describe, expect, it } from 'vitest';
import { cursorSlot, FeedCursorSeal } from '../../src/graph/feed-cursor.js';
import { GraphService } from '../../src/graph/graph-service.js';
import { type RelayMessage, runRelay } from '../../src/jobs/relay.js';
import { InvalidCursorError } from '../../src/model/errors.js';
import type { EventKey } from '../../src/model/events.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { SingleBucketLists } from './support/single-bucket-lists.js';

const KEY: EventKey = {
  slot: 1_800_000_000_000_000n,
  shard: 3,
  low: 11n,
  high: 42n,
  opPosition: 1_799_999_999_000_000n,
  opSource: 11n,
  opKind: 'follow',
};
const PLAIN = '1800000000000000.3.11.42.1799999999000000.11.follow.0';
const SECRET = 'a-cursor-secret-of-some-length';

describe('the seal', () => {
  it('is deterministic, opens to the same key and index, and keeps the plain text readable', () => {
    const seal = new FeedCursorSeal([SECRET]);
    const id = seal.seal(KEY, 0);
    expect(id).toBe(new FeedCursorSeal([SECRET]).seal(KEY, 0));
    expect(id.startsWith(`${PLAIN}.`)).toBe(true);
    expect(id).toMatch(/\.[\w-]{22}$/);
    expect(seal.open(id)).toEqual({ key: KEY, index: 0 });
    expect(cursorSlot(id)).toBe(KEY.slot);
    expect(cursorSlot(PLAIN)).toBe(KEY.slot);
    expect(cursorSlot('nope')).toBe(null);
  });

  it('refuses an altered cursor, another secret’s, a plain one unless asked, and malformed text', () => {
    const seal = new FeedCursorSeal([SECRET]);
    const id = seal.seal(KEY, 0);
    const tag = id.slice(id.lastIndexOf('.') + 1);
    const refused = (text: string, o?: { acceptUnsealed?: boolean }) => {
      try {
        seal.open(text, o);
        return 'opened';
      } catch (e) {
        return e instanceof InvalidCursorError ? e.message : `other: ${String(e)}`;
      }
    };
    expect([
      refused(`${PLAIN.replace('1800000000000000', '1800000000000001')}.${tag}`),
      refused(`${PLAIN.replace('.0', '.1')}.${tag}`),
      refused(new FeedCursorSeal(['another-secret-entirely']).seal(KEY, 0)),
      refused(PLAIN),
      refused('nope'),
      refused(`${PLAIN}.${'A'.repeat(22)}.x`),
      refused(PLAIN, { acceptUnsealed: true }),
    ]).toEqual([
      'invalid cursor: the feed cursor is altered or not this service’s',
      'invalid cursor: the feed cursor is altered or not this service’s',
      'invalid cursor: the feed cursor is altered or not this service’s',
      'invalid cursor: not a feed cursor',
      'invalid cursor: not a feed cursor',
      'invalid cursor: not a feed cursor',
      'opened',
    ]);
  });

  it('during a rotation the previous secret opens, the new one seals', () => {
    const old = new FeedCursorSeal(['the-old-cursor-secret']);
    const rotating = new FeedCursorSeal(['the-new-cursor-secret', 'the-old-cursor-secret']);
    expect(rotating.open(old.seal(KEY, 2))).toEqual({ key: KEY, index: 2 });
    expect(rotating.seal(KEY, 2)).toBe(new FeedCursorSeal(['the-new-cursor-secret']).seal(KEY, 2));
    expect(() => old.open(rotating.seal(KEY, 2))).toThrow(InvalidCursorError);
  });
});

describe('the feed with sealed cursors', () => {
  async function world(secrets: string[], clock: { now: bigint }, store = new MemoryGraphStore()) {
    const graph = new GraphService({
      store,
      lists: new SingleBucketLists(store),
      maxFollowing: 100,
      clock: () => clock.now,
      registry: false,
      feedCursorSecrets: secrets,
    });
    return { store, graph };
  }

  it('two instances sharing the secret give an event the same id; a forged or foreign cursor is refused; so is one from the future', async () => {
    const clock = { now: 1_800_000_000_000_000n };
    const { store, graph } = await world([SECRET], clock);
    const other = await world([SECRET], clock, store);
    const foreign = await world(['not-the-same-secret-at-all'], clock, store);
    for (const id of [1n, 2n]) await graph.putUser({ id, username: `u${id}` });
    await graph.follow(1n, 2n);
    await graph.follow(2n, 1n);
    clock.now += 30_000_000n;
    const page = await graph.feed.read(null, 10);
    expect(page.items.map((e) => e.type)).toEqual(['follow.created', 'follow.created']);
    expect((await other.graph.feed.read(null, 10)).items).toEqual(page.items);
    const first = page.items[0]?.id as string;
    expect((await other.graph.feed.read(first, 10)).items).toEqual(page.items.slice(1));
    await expect(foreign.graph.feed.read(first, 10)).rejects.toThrow(InvalidCursorError);
    const forged = first.replace(/^\d+/, (s) => String(BigInt(s) + 1n));
    await expect(graph.feed.read(forged, 10)).rejects.toThrow(InvalidCursorError);
    // Sealed with the right secret but later than any reader could have issued (L = 10 s, S = 2 s
    // by default): now − L + 2S is the furthest a cursor may stand.
    const seal = new FeedCursorSeal([SECRET]);
    const at = (slot: bigint) => seal.seal({ ...KEY, slot }, 0);
    const edge = clock.now - 10_000_000n + 4_000_000n;
    expect((await graph.feed.read(at(edge), 10)).items).toEqual([]);
    await expect(graph.feed.read(at(edge + 1n), 10)).rejects.toThrow(
      'invalid cursor: the feed cursor is later than the feed',
    );
  });

  it('the relay takes its stored plain cursor once and saves the sealed one in its place', async () => {
    const clock = { now: 1_800_000_000_000_000n };
    const { store, graph } = await world([SECRET], clock);
    for (const id of [1n, 2n, 3n]) await graph.putUser({ id, username: `u${id}` });
    await graph.follow(1n, 2n);
    await graph.follow(3n, 2n);
    clock.now += 30_000_000n;
    const all = (await graph.feed.read(null, 10)).items;
    // The relay had stored, before cursors were sealed, the plain cursor of the first follow.
    const plainOfFirstFollow = String(all[0]?.id).replace(/\.[\w-]{22}$/, '');
    await store.putRelayCursor('kafka', plainOfFirstFollow);
    const sent: RelayMessage[] = [];
    const r = await runRelay({
      feed: graph.feed,
      cursors: store,
      sink: { send: async (m) => void sent.push(...m), close: async () => undefined },
      name: 'kafka',
      untilIdle: true,
    });
    expect(sent.map((m) => m.type)).toEqual(['follow.created']);
    expect(JSON.parse(sent[0]?.value as string)).toMatchObject({ id: all[1]?.id, source: '3', target: '2' });
    expect(r.events).toBe(1);
    const saved = (await store.getRelayCursor('kafka')) as string;
    expect(saved).toMatch(/\.[\w-]{22}$/);
    expect((await graph.feed.read(saved, 10)).items).toEqual([]);
    // Anywhere else a plain cursor is refused.
    await expect(graph.feed.read(plainOfFirstFollow, 10)).rejects.toThrow(InvalidCursorError);
  });
});
