/**
 * The store contract: one suite, run against the in-memory store and the real Cassandra node.
 * Every assertion compares whole values.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bucketCodeOf, bucketOf, SINGLE_BUCKET } from '../../src/model/buckets.js';
import { nowPosition } from '../../src/model/clock.js';
import { UsernameTakenError } from '../../src/model/errors.js';
import { compareEventKeys, eventShard } from '../../src/model/events.js';
import { renamedUsername } from '../../src/model/row-username.js';
import { SEARCH_END, type SearchKey } from '../../src/model/search.js';
import type { TimeBucket } from '../../src/model/time-buckets.js';
import {
  type EdgeRecord,
  type ListEntry,
  type ListKey,
  RELATIONS,
  type Relation,
} from '../../src/model/types.js';
import { DIRTY_SHARDS } from '../../src/ports/count-store.js';
import type { GraphStore } from '../../src/ports/graph-store.js';
import { PAIR_READ_ROWS, type SearchWrite } from '../../src/ports/records.js';

export interface StoreFixture {
  store: GraphStore;
  teardown(): Promise<void>;
}

let nextId = 1_000n;
/** Fresh ids per test so tests never see each other's rows. */
const ids = (n: number): bigint[] => Array.from({ length: n }, () => nextId++);

const edge = (
  s: bigint,
  t: bigint,
  state: EdgeRecord['state'],
  position: bigint,
  createdAt = position,
): EdgeRecord => ({
  sourceId: s,
  targetId: t,
  relation: 'follows',
  state,
  position,
  createdAt,
});

const followers = (userId: bigint): ListKey => ({ userId, relation: 'follows', direction: 'in' });

export function describeStoreContract(name: string, make: () => Promise<StoreFixture>) {
  describe(`GraphStore contract: ${name}`, () => {
    let fx: StoreFixture;
    let store: GraphStore;
    beforeAll(async () => {
      fx = await make();
      store = fx.store;
    });
    afterAll(async () => {
      await fx.teardown();
    });

    it('stores users and keeps usernames unique, case-insensitively', async () => {
      const [a, b] = ids(2) as [bigint, bigint];
      const userA = {
        id: a,
        username: `Ada${a}`,
        private: false,
        state: 'active' as const,
        hideLists: false,
      };
      expect(await store.putUser(userA)).toEqual({ created: true });
      expect(await store.putUser({ ...userA, private: true })).toEqual({ created: false });
      expect(await store.getUser(a)).toEqual({ ...userA, private: true });
      await expect(store.putUser({ ...userA, id: b, username: `ada${a}` })).rejects.toBeInstanceOf(
        UsernameTakenError,
      );
      expect(await store.getUser(b)).toBeNull();
      await store.putUser({ ...userA, username: `Renamed${a}` });
      expect(await store.putUser({ ...userA, id: b, username: `Ada${a}` })).toEqual({ created: true });
      expect([...(await store.getUsers([a, b, 1n])).keys()].sort()).toEqual([a, b]);
    });

    it('registers deactivated accounts: a deactivated write adds, only a reactivation removes; null over the limit', async () => {
      const us = ids(8);
      const user = (id: bigint, state: 'active' | 'deactivated') => ({
        id,
        username: `reg${id}`,
        private: false,
        state,
        hideLists: false,
      });
      for (const id of us) await store.putUser(user(id, 'active'));
      for (const id of us.slice(0, 5)) await store.putUser(user(id, 'deactivated'));
      await store.putUser(user(us[0] as bigint, 'active'));
      // A profile write of a deactivated account keeps it registered; of an active one, unregistered.
      await store.putUser({ ...user(us[1] as bigint, 'deactivated'), private: true });
      await store.putUser({ ...user(us[6] as bigint, 'active'), private: true });
      const sorted = (l: readonly bigint[]) => [...l].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
      const all = await store.listDeactivated(10_000);
      if (all === null) throw new Error('registry over 10,000 in a test keyspace');
      const mine = new Set(us);
      expect(sorted(all.filter((id) => mine.has(id)))).toEqual(sorted(us.slice(1, 5)));
      expect(await store.listDeactivated(all.length - 1)).toBeNull();
      expect(sorted((await store.listDeactivated(all.length)) ?? [])).toEqual(sorted(all));
    });

    it('user fields are cells: a write names only its fields, each at its version; the newer version wins per field, a tie the larger value; the read gives the newest cell’s version', async () => {
      const [a, b] = ids(2) as [bigint, bigint];
      const v = 1_796_000_000_000_000n;
      expect(await store.getUserVersioned(a)).toEqual({ user: null, version: -1n, versions: {} });
      await store.claimUsername(`Cell${a}`, a);
      await store.putUserFields(a, { username: `Cell${a}` }, v);
      // Absent cells read as defaults.
      expect(await store.getUserVersioned(a)).toEqual({
        user: { id: a, username: `Cell${a}`, private: false, state: 'active', hideLists: false },
        version: v,
        versions: { username: v },
      });
      // Two writes of different fields, in either order: both hold.
      await store.putUserFields(a, { state: 'deactivated' }, v + 20n);
      await store.putUserFields(a, { private: true }, v + 10n);
      // An older write of a field loses to the newer one whatever the arrival order.
      await store.putUserFields(a, { private: false, hideLists: true }, v + 5n);
      expect(await store.getUserVersioned(a)).toEqual({
        user: { id: a, username: `Cell${a}`, private: true, state: 'deactivated', hideLists: true },
        version: v + 20n,
        versions: { username: v, private: v + 10n, state: v + 20n, hideLists: v + 5n },
      });
      // At one version the larger value wins (true over false, 'deactivated' over 'active').
      await store.putUserFields(a, { hideLists: false }, v + 5n);
      await store.putUserFields(a, { state: 'active' }, v + 20n);
      expect((await store.getUser(a))?.hideLists).toBe(true);
      expect((await store.getUser(a))?.state).toBe('deactivated');
      // A row without a username is no user.
      await store.putUserFields(b, { private: true }, v);
      expect(await store.getUserVersioned(b)).toEqual({ user: null, version: v, versions: { private: v } });
    });

    it('the registry entry follows the state cell in every order, ties included; claims are held per id and released only by their holder', async () => {
      const us = ids(4) as [bigint, bigint, bigint, bigint];
      const v = 1_796_000_000_000_000n;
      for (const id of us) {
        await store.claimUsername(`tie${id}`, id);
        await store.putUserFields(id, { username: `tie${id}` }, v);
      }
      const [x, y, z, w] = us;
      // x: deactivated then active at one version (the deactivated cell wins): registered.
      await store.putUserFields(x, { state: 'deactivated' }, v + 1n);
      await store.putUserFields(x, { state: 'active' }, v + 1n);
      // y: the same in the other order.
      await store.putUserFields(y, { state: 'active' }, v + 1n);
      await store.putUserFields(y, { state: 'deactivated' }, v + 1n);
      // z: deactivated, then active one microsecond later (landing first): not registered.
      await store.putUserFields(z, { state: 'active' }, v + 2n);
      await store.putUserFields(z, { state: 'deactivated' }, v + 1n);
      // w: active, then deactivated one microsecond later (landing first): registered.
      await store.putUserFields(w, { state: 'deactivated' }, v + 2n);
      await store.putUserFields(w, { state: 'active' }, v + 1n);
      const states = await store.getUsers(us);
      expect(us.map((id) => states.get(id)?.state)).toEqual([
        'deactivated',
        'deactivated',
        'active',
        'deactivated',
      ]);
      const all = new Set((await store.listDeactivated(10_000)) ?? []);
      expect(us.map((id) => all.has(id))).toEqual([true, true, false, true]);
      // Claims: a second claim by the holder succeeds, by another id throws; a release by another
      // id leaves the claim.
      await store.claimUsername(`TIE${x}`, x);
      await expect(store.claimUsername(`tie${x}`, y)).rejects.toBeInstanceOf(UsernameTakenError);
      await store.releaseUsername(`tie${x}`, y);
      await expect(store.claimUsername(`tie${x}`, y)).rejects.toBeInstanceOf(UsernameTakenError);
      await store.releaseUsername(`tie${x}`, x);
      await store.claimUsername(`tie${x}`, y);
    });

    it('keeps each account’s latest reported activity, whatever order reports arrive in', async () => {
      const [a, b, c] = ids(3) as [bigint, bigint, bigint];
      const t = 1_796_000_000_000_000n;
      await store.putActivity(a, t + 5n);
      await store.putActivity(a, t + 2n); // older, arriving later: no change
      await store.putActivity(b, t);
      await store.putActivity(b, t + 9n);
      await store.putActivity(b, t + 9n); // repeated: idempotent
      expect(await store.getActivity([a, b, c, a])).toEqual(
        new Map([
          [a, t + 5n],
          [b, t + 9n],
        ]),
      );
      // Activity is not part of the user row.
      expect(await store.getUser(a)).toBeNull();
    });

    it('keeps an op’s feed slot with it (absent on ops appended without one)', async () => {
      const [a, b] = ids(2) as [bigint, bigint];
      await store.appendPair({
        pair: [a, b],
        op: { sourceId: a, targetId: b, kind: 'follow', position: 10n, base: 0, slot: 777n },
      });
      await store.appendPair({
        pair: [a, b],
        op: { sourceId: b, targetId: a, kind: 'mute', position: 20n, base: 0 },
      });
      expect((await store.readPairHistory(a, b)).ops).toEqual([
        { sourceId: a, targetId: b, kind: 'follow', position: 10n, base: 0, slot: 777n },
        { sourceId: b, targetId: a, kind: 'mute', position: 20n, base: 0 },
      ]);
    });

    it('feed intents: read per shard in slot order within bounds; 150 deleted at once (more than a batch), each delete settles and every one is gone', async () => {
      const base = 3_000_000_000n;
      const keys = Array.from({ length: 150 }, (_, i) => {
        const [low, high] = ids(2) as [bigint, bigint];
        const slot = base + BigInt(i);
        return { slot, shard: i % 8, low, high, opPosition: slot, opSource: low, opKind: 'follow' };
      });
      await Promise.all(keys.map((k) => store.putIntent(k)));
      const inShard = (shard: number) => keys.filter((k) => k.shard === shard);
      for (const shard of [0, 7])
        expect(await store.readIntents(shard, base - 1n, base + 1000n, 1000)).toEqual(inShard(shard));
      expect(await store.readIntents(3, base + 10n, base + 30n, 2)).toEqual(
        inShard(3)
          .filter((k) => k.slot > base + 10n)
          .slice(0, 2),
      );
      // Half of them twice: a delete is idempotent.
      await Promise.all([...keys, ...keys.slice(0, 75)].map((k) => store.deleteIntent(k)));
      for (let shard = 0; shard < 8; shard++)
        expect(await store.readIntents(shard, base - 1n, base + 1000n, 1000)).toEqual([]);
    });

    it('intent decisions: the first stands, whatever is proposed after it (of 10 proposed at once, one), per intent', async () => {
      const [low, high] = ids(2) as [bigint, bigint];
      const key = (slot: bigint) => ({
        slot,
        shard: 5,
        low,
        high,
        opPosition: slot,
        opSource: low,
        opKind: 'follow',
      });
      const a = key(4_000_000_001n);
      const b = key(4_000_000_002n);
      expect(await store.decideIntent(a, 'fenced')).toBe('fenced');
      expect(await store.decideIntent(a, 'present')).toBe('fenced');
      expect(await store.decideIntent(b, 'present')).toBe('present');
      expect(await store.decideIntent(b, 'fenced')).toBe('present');
      const c = key(4_000_000_003n);
      const raced = await Promise.all(
        Array.from({ length: 10 }, (_, i) => store.decideIntent(c, i % 2 === 0 ? 'present' : 'fenced')),
      );
      expect(new Set(raced).size).toBe(1);
      expect(await store.decideIntent(c, raced[0] === 'present' ? 'fenced' : 'present')).toBe(raced[0]);
    });

    it('op slots: the first claim stands for the op (of 10 claimed at once, one), per op', async () => {
      const [low, high] = ids(2) as [bigint, bigint];
      const key = (slot: bigint, opKind = 'follow', opSource = low) => ({
        slot,
        shard: 3,
        low,
        high,
        opPosition: 77n,
        opSource,
        opKind,
      });
      expect(await store.claimOpSlot(key(1_000n))).toBe(1_000n);
      expect(await store.claimOpSlot(key(2_000n))).toBe(1_000n);
      // Another kind, another source: other ops.
      expect(await store.claimOpSlot(key(3_000n, 'block'))).toBe(3_000n);
      expect(await store.claimOpSlot(key(4_000n, 'follow', high))).toBe(4_000n);
      const raced = await Promise.all(
        Array.from({ length: 10 }, (_, i) => store.claimOpSlot(key(5_000n + BigInt(i), 'mute'))),
      );
      expect(new Set(raced).size).toBe(1);
      expect(await store.claimOpSlot(key(9_000n, 'mute'))).toBe(raced[0]);
    });

    it('feed rows: newer version wins cell by cell, an empty row hides, read in feed order across shards and minutes', async () => {
      const base = nowPosition() - 10_000_000n;
      const pairs = Array.from({ length: 6 }, () => ids(2) as [bigint, bigint]);
      const row = (i: number, dSlot: bigint, on: boolean, kind = 'follow') => {
        const [low, high] = pairs[i] as [bigint, bigint];
        return {
          key: {
            slot: base + dSlot,
            shard: eventShard(low, high),
            low,
            high,
            opPosition: 5n,
            opSource: low,
            opKind: kind,
          },
          transitions: [{ sourceId: low, relation: 'follows' as const, targetId: high, on }],
        };
      };
      const edgeless = async (rows: ReturnType<typeof row>[], version: bigint) =>
        store.writeEdges([], [], version, rows);
      // Slots across two minutes and several shards, written out of order.
      await edgeless([row(3, 61_000_000n, true), row(0, 1_000n, true)], 10n);
      await edgeless([row(1, 1_000n, true), row(2, 2_000n, true), row(4, 59_999_999n, true)], 10n);
      // A fuller view: row 0 flips at a higher version; row 1 becomes empty; an older write loses.
      await edgeless([row(0, 1_000n, false)], 20n);
      await edgeless([{ ...row(1, 1_000n, true), transitions: [] }], 20n);
      await edgeless([row(2, 2_000n, false)], 5n);
      const until = base + 120_000_000n;
      const all = await store.readEventRows(null, until, 100);
      const mine = all.filter((r) => pairs.some(([low]) => low === r.key.low));
      const expected = [
        row(0, 1_000n, false),
        row(2, 2_000n, true),
        row(4, 59_999_999n, true),
        row(3, 61_000_000n, true),
      ].sort((x, y) => compareEventKeys(x.key, y.key));
      expect(mine).toEqual(expected);
      // `after` is exclusive, `until` inclusive, `limit` counts rows.
      const first = expected[0] as (typeof expected)[number];
      expect(
        (await store.readEventRows(first.key, until, 100)).filter((r) =>
          pairs.some(([low]) => low === r.key.low),
        ),
      ).toEqual(expected.slice(1));
      expect(
        (await store.readEventRows(null, base + 59_999_999n, 100)).filter((r) =>
          pairs.some(([low]) => low === r.key.low),
        ),
      ).toEqual(expected.slice(0, 3));
      expect(await store.readEventRows(first.key, until, 2)).toHaveLength(2);
    });

    it('a user update’s feed row rides with the user row', async () => {
      const [u] = ids(1) as [bigint];
      const slot = nowPosition() - 5_000_000n;
      const event = {
        key: {
          slot,
          shard: eventShard(u, u),
          low: u,
          high: u,
          opPosition: slot,
          opSource: u,
          opKind: 'user',
        },
        transitions: [],
        user: true,
      };
      await store.putUser(
        { id: u, username: `feed${u}`, private: true, state: 'active', hideLists: false },
        { event },
      );
      const rows = await store.readEventRows({ ...event.key, opKind: '' }, slot, 10);
      expect(rows.filter((r) => r.key.low === u)).toEqual([event]);
    });

    it('records pair history once per op, in position order, from either side', async () => {
      const [a, b] = ids(2) as [bigint, bigint];
      const pair = [a, b] as const;
      await store.appendPair({
        pair,
        op: { sourceId: b, targetId: a, kind: 'block', position: 30n, base: 0 },
      });
      await store.appendPair({
        pair,
        op: { sourceId: a, targetId: b, kind: 'follow', position: 10n, base: 0 },
      });
      await store.appendPair({
        pair,
        op: { sourceId: a, targetId: b, kind: 'follow', position: 10n, base: 0 },
      });
      await store.appendPair({
        pair,
        op: { sourceId: a, targetId: b, kind: 'unfollow', position: 20n, base: 0 },
      });
      expect(await store.readPairHistory(b, a)).toEqual({
        checkpoint: null,
        pending: null,
        ops: [
          { sourceId: a, targetId: b, kind: 'follow', position: 10n, base: 0 },
          { sourceId: a, targetId: b, kind: 'unfollow', position: 20n, base: 0 },
          { sourceId: b, targetId: a, kind: 'block', position: 30n, base: 0 },
        ],
        snapshotThrough: null,
      });
    });

    /** A pair with ops at 10 (follow) and 20 (unfollow), and the checkpoint that folds both. */
    const compactionPair = () => {
      const [a, b] = ids(2) as [bigint, bigint];
      const pair = [b, a] as const;
      const op = (kind: 'follow' | 'unfollow', position: bigint, base = 0) => ({
        sourceId: a,
        targetId: b,
        kind,
        position,
        base,
      });
      const checkpoint = (horizon: bigint, count: number, state: 'active' | 'removed' = 'removed') => ({
        horizon,
        count,
        newestBase: 0,
        edges: [
          {
            sourceId: a,
            targetId: b,
            relation: 'follows' as const,
            state,
            position: horizon,
            createdAt: 10n,
          },
        ],
      });
      return { a, b, pair, op, checkpoint };
    };

    it('announces, observes and commits a compaction: the checkpoint replaces the folded ops; a lower horizon never wins', async () => {
      const { a, b, pair, op, checkpoint } = compactionPair();
      await store.appendPair({ pair, op: op('follow', 10n) });
      await store.appendPair({
        pair,
        op: op('unfollow', 20n),
        announce: { horizon: 20n, announcedAt: 99n, seenAt: null },
      });
      expect((await store.readPairHistory(a, b)).pending).toEqual({
        horizon: 20n,
        announcedAt: 99n,
        seenAt: null,
      });
      await store.appendPair({ pair, op: op('follow', 25n), observe: { horizon: 20n, seenAt: 120n } });
      expect((await store.readPairHistory(a, b)).pending).toEqual({
        horizon: 20n,
        announcedAt: 99n,
        seenAt: 120n,
      });
      const cp = checkpoint(20n, 2);
      await store.appendPair({ pair, op: op('follow', 30n, 2), commit: { checkpoint: cp, folded: 2 } });
      const committed = {
        checkpoint: cp,
        pending: null,
        ops: [op('follow', 25n), op('follow', 30n, 2)],
        snapshotThrough: null,
      };
      expect(await store.readPairHistory(b, a)).toEqual(committed);
      // A second read starts at the horizon (the Cassandra store remembers it): same answer.
      expect(await store.readPairHistory(a, b)).toEqual(committed);
      const older = checkpoint(15n, 1);
      await store.appendPair({ pair, op: op('unfollow', 40n, 2), commit: { checkpoint: older, folded: 1 } });
      const h = await store.readPairHistory(a, b);
      expect(h.checkpoint).toEqual(cp);
      expect(h.ops).toEqual([op('follow', 25n), op('follow', 30n, 2), op('unfollow', 40n, 2)]);
    });

    it('an observation counts only for the announcement it observed, whatever order it lands in', async () => {
      const { a, b, pair, op, checkpoint } = compactionPair();
      await store.appendPair({
        pair,
        op: op('follow', 10n),
        announce: { horizon: 10n, announcedAt: 1n, seenAt: null },
      });
      await store.appendPair({ pair, op: op('unfollow', 20n), observe: { horizon: 10n, seenAt: 500n } });
      await store.appendPair({
        pair,
        op: op('follow', 30n, 1),
        commit: { checkpoint: checkpoint(10n, 1, 'active'), folded: 1 },
      });
      await store.appendPair({
        pair,
        op: op('unfollow', 40n, 1),
        announce: { horizon: 20n, announcedAt: 2n, seenAt: null },
      });
      expect((await store.readPairHistory(a, b)).pending).toEqual({
        horizon: 20n,
        announcedAt: 2n,
        seenAt: null,
      });
      // A late observation of the committed announcement (horizon 10) lands now: it does not count.
      await store.appendPair({ pair, observe: { horizon: 10n, seenAt: 900n } });
      expect((await store.readPairHistory(a, b)).pending).toEqual({
        horizon: 20n,
        announcedAt: 2n,
        seenAt: null,
      });
      await store.appendPair({ pair, observe: { horizon: 20n, seenAt: 700n } });
      expect((await store.readPairHistory(a, b)).pending).toEqual({
        horizon: 20n,
        announcedAt: 2n,
        seenAt: 700n,
      });
      // Two observers of one announcement: either is a true observation; the later time stands.
      await store.appendPair({ pair, observe: { horizon: 20n, seenAt: 650n } });
      expect((await store.readPairHistory(a, b)).pending?.seenAt).toBe(700n);
    });

    it('compaction cells order by horizon, not by arrival: a late announcement or commit of a lower horizon changes nothing', async () => {
      const { a, b, pair, op, checkpoint } = compactionPair();
      await store.appendPair({ pair, op: op('follow', 10n) });
      await store.appendPair({
        pair,
        op: op('unfollow', 20n),
        announce: { horizon: 20n, announcedAt: 5n, seenAt: null },
      });
      await store.appendPair({ pair, announce: { horizon: 10n, announcedAt: 9n, seenAt: null } });
      expect((await store.readPairHistory(a, b)).pending).toEqual({
        horizon: 20n,
        announcedAt: 5n,
        seenAt: null,
      });
      const cp20 = checkpoint(20n, 2);
      await store.appendPair({ pair, op: op('follow', 30n, 2), commit: { checkpoint: cp20, folded: 2 } });
      await store.appendPair({ pair, announce: { horizon: 15n, announcedAt: 9n, seenAt: null } });
      await store.appendPair({ pair, commit: { checkpoint: checkpoint(10n, 1, 'active'), folded: 1 } });
      expect(await store.readPairHistory(a, b)).toEqual({
        checkpoint: cp20,
        pending: null,
        ops: [op('follow', 30n, 2)],
        snapshotThrough: null,
      });
    });

    it('two commits of one horizon: the one that folded more ops wins, never the larger text', async () => {
      // The finding: '{"n":99…' sorts above '{"n":132…', so a string tie-break kept the older checkpoint.
      for (const order of ['more first', 'fewer first'] as const) {
        const { a, b, pair, op, checkpoint } = compactionPair();
        await store.appendPair({ pair, op: op('follow', 10n) });
        const more = { checkpoint: checkpoint(20n, 132), folded: 3 };
        const fewer = { checkpoint: checkpoint(20n, 99), folded: 2 };
        for (const commit of order === 'more first' ? [more, fewer] : [fewer, more]) {
          await store.appendPair({ pair, commit });
        }
        expect((await store.readPairHistory(a, b)).checkpoint).toEqual(more.checkpoint);
      }
    });

    it('a compaction step written alone adds no op', async () => {
      const { a, b, pair, op } = compactionPair();
      await store.appendPair({ pair, op: op('follow', 10n) });
      await store.appendPair({ pair, announce: { horizon: 10n, announcedAt: 3n, seenAt: null } });
      expect(await store.readPairHistory(a, b)).toEqual({
        checkpoint: null,
        pending: { horizon: 10n, announcedAt: 3n, seenAt: null },
        ops: [op('follow', 10n)],
        snapshotThrough: null,
      });
    });

    it(`a history over ${PAIR_READ_ROWS} rows says where its one-statement snapshot ends`, async () => {
      const { a, b, pair, op } = compactionPair();
      const n = PAIR_READ_ROWS + 100;
      for (let i = 0; i < n; i += 50) {
        await Promise.all(
          Array.from({ length: Math.min(50, n - i) }, (_, k) =>
            store.appendPair({ pair, op: op(k % 2 ? 'unfollow' : 'follow', BigInt(i + k + 1)) }),
          ),
        );
      }
      const h = await store.readPairHistory(a, b);
      expect(h.ops.map((o) => o.position)).toEqual(Array.from({ length: n }, (_, i) => BigInt(i + 1)));
      expect(h.snapshotThrough).toBe(BigInt(PAIR_READ_ROWS));
    });

    it('edge writes are last-writer-wins by version, whatever the arrival order', async () => {
      const [a, b] = ids(2) as [bigint, bigint];
      await store.writeEdges([{ edge: edge(a, b, 'removed', 20n, 10n), inBucketCodes: [1] }], [], 2000n);
      await store.writeEdges([{ edge: edge(a, b, 'active', 10n), inBucketCodes: [1] }], [], 1000n);
      const expected = edge(a, b, 'removed', 20n, 10n);
      expect(await store.getEdgesOut(a, 'follows', [b])).toEqual(new Map([[b, expected]]));
      expect(await store.getEdgesIn(b, 'follows', [a, 1n], SINGLE_BUCKET)).toEqual(new Map([[a, expected]]));
      expect(await store.getPairEdges(b, a)).toEqual([expected]);
    });

    it("an out read of several relations returns each relation's edges to the targets, in one partition", async () => {
      const [a, b, c] = ids(3) as [bigint, bigint, bigint];
      const written = [
        edge(a, b, 'active', 10n),
        { ...edge(a, b, 'removed', 20n, 10n), relation: 'requests' as const },
        { ...edge(a, c, 'active', 30n), relation: 'requests' as const },
        { ...edge(a, b, 'active', 40n), relation: 'blocks' as const },
      ];
      await store.writeEdges(
        written.map((e) => ({ edge: e, inBucketCodes: [1] })),
        [],
        1000n,
      );
      const key = (e: EdgeRecord) => `${e.relation}|${e.targetId}`;
      const sorted = (es: EdgeRecord[]) => [...es].sort((x, y) => (key(x) < key(y) ? -1 : 1));
      expect(sorted(await store.getEdgesOutOf(a, ['follows', 'requests'], [b, c, 99n]))).toEqual(
        sorted(written.slice(0, 3)),
      );
      expect(await store.getEdgesOutOf(a, ['follows'], [c])).toEqual([]);
      expect(await store.getEdgesOutOf(a, [], [b])).toEqual([]);
    });

    it('a pair read returns the edges of every relation, restricts included, both ways', async () => {
      const [a, b] = ids(2) as [bigint, bigint];
      const all = RELATIONS.flatMap((relation) => [
        { ...edge(a, b, 'active', 10n), relation },
        { ...edge(b, a, 'removed', 20n, 10n), relation },
      ]);
      await store.writeEdges(
        all.map((e) => ({ edge: e, inBucketCodes: [1] })),
        [],
        1000n,
      );
      const key = (e: EdgeRecord) => `${e.sourceId}|${e.relation}`;
      const sorted = (es: EdgeRecord[]) => [...es].sort((x, y) => (key(x) < key(y) ? -1 : 1));
      expect(sorted(await store.getPairEdges(a, b))).toEqual(sorted(all));
    });

    it('at equal versions the larger cell value wins (removed over active)', async () => {
      const [a, b] = ids(2) as [bigint, bigint];
      await store.writeEdges([{ edge: edge(a, b, 'removed', 10n), inBucketCodes: [1] }], [], 500n);
      await store.writeEdges([{ edge: edge(a, b, 'active', 10n), inBucketCodes: [1] }], [], 500n);
      expect((await store.getEdgesOut(a, 'follows', [b])).get(b)?.state).toBe('removed');
    });

    it('list rows: newest first, ties by id descending; delete wins a tie; an older put cannot resurrect', async () => {
      const [owner, x, y, z] = ids(4) as [bigint, bigint, bigint, bigint];
      const list = followers(owner);
      const put = (e: ListEntry, v: bigint) =>
        store.writeEdges([], [{ list, bucketCodes: [1], entry: e, op: 'put' }], v);
      const del = (e: ListEntry, v: bigint) =>
        store.writeEdges([], [{ list, bucketCodes: [1], entry: e, op: 'delete' }], v);
      await put({ createdAt: 100n, otherId: x }, 10n);
      await put({ createdAt: 100n, otherId: z }, 10n);
      await put({ createdAt: 200n, otherId: y }, 10n);
      expect(await store.listBucket(list, 1, null, 10)).toEqual([
        { createdAt: 200n, otherId: y },
        { createdAt: 100n, otherId: z },
        { createdAt: 100n, otherId: x },
      ]);
      expect(await store.listBucket(list, 1, { createdAt: 100n, otherId: z }, 10)).toEqual([
        { createdAt: 100n, otherId: x },
      ]);
      expect(await store.listBucket(list, 1, null, 1)).toEqual([{ createdAt: 200n, otherId: y }]);
      await del({ createdAt: 200n, otherId: y }, 20n);
      await put({ createdAt: 200n, otherId: y }, 20n);
      await put({ createdAt: 200n, otherId: y }, 15n);
      await del({ createdAt: 100n, otherId: x }, 5n);
      expect(await store.listBucket(list, 1, null, 10)).toEqual([
        { createdAt: 100n, otherId: z },
        { createdAt: 100n, otherId: x },
      ]);
      await put({ createdAt: 200n, otherId: y }, 21n);
      expect((await store.listBucket(list, 1, null, 10)).map((e) => e.otherId)).toEqual([y, z, x]);
    });

    it('list rows carry the username their put wrote; a put without one leaves it; every read returns it', async () => {
      const [owner, x, y] = ids(3) as [bigint, bigint, bigint];
      const list = followers(owner);
      const put = (e: ListEntry, v: bigint) =>
        store.writeEdges([], [{ list, bucketCodes: [1], entry: e, op: 'put' }], v);
      await put({ createdAt: 100n, otherId: x, username: 'ex' }, 10n);
      await put({ createdAt: 200n, otherId: y }, 10n);
      const both = [
        { createdAt: 200n, otherId: y },
        { createdAt: 100n, otherId: x, username: 'ex' },
      ];
      expect(await store.listBucket(list, 1, null, 10)).toStrictEqual(both);
      expect(await store.listBucket(list, 1, null, 10, 100n)).toStrictEqual(both);
      expect(await store.listBucketNewer(list, 1, { createdAt: 0n, otherId: 0n }, 10)).toStrictEqual(
        [...both].reverse(),
      );
      // A later put without a name (a repair that read no users) keeps the cell; one with a name replaces it.
      await put({ createdAt: 100n, otherId: x }, 11n);
      expect(await store.listBucket(list, 1, null, 10)).toStrictEqual(both);
      await put({ createdAt: 100n, otherId: x, username: 'ex2' }, 12n);
      expect(await store.listBucketVersions(list, 1, null, 10)).toStrictEqual([
        { entry: { createdAt: 200n, otherId: y }, version: 10n },
        {
          entry: { createdAt: 100n, otherId: x, username: 'ex2' },
          version: 12n,
        },
      ]);
    });

    it('setListUsernames writes at each row’s own version: a later delete, or one at the same version, keeps the row deleted', async () => {
      const [owner, x, y, z] = ids(4) as [bigint, bigint, bigint, bigint];
      const list = followers(owner);
      const write = (e: ListEntry, op: 'put' | 'delete', v: bigint) =>
        store.writeEdges([], [{ list, bucketCodes: [1], entry: e, op }], v);
      const [ex, ey, ez] = [
        { createdAt: 100n, otherId: x },
        { createdAt: 200n, otherId: y },
        { createdAt: 300n, otherId: z },
      ];
      await write({ ...ex, username: 'old' }, 'put', 10n);
      await write({ ...ey, username: 'old' }, 'put', 10n);
      await write({ ...ez, username: 'old' }, 'put', 10n);
      const walked = await store.listBucketVersions(list, 1, null, 10);
      // While the fan-out runs: y unfollows later, z's delete lands at the very version of its put.
      await write(ey, 'delete', 11n);
      await write(ez, 'delete', 10n);
      await store.setListUsernames(list, 1, walked, 'new');
      expect(await store.listBucket(list, 1, null, 10)).toStrictEqual([{ ...ex, username: 'new' }]);
      // A later put (a write that read the newer name) wins over the fan-out's cell.
      await write({ ...ex, username: 'newer' }, 'put', 13n);
      await store.setListUsernames(list, 1, walked, 'new');
      expect(await store.listBucket(list, 1, null, 10)).toStrictEqual([{ ...ex, username: 'newer' }]);
    });

    it('regression: of two renames at one row’s write time the newer generation wins, whatever the names’ order; copies keep it', async () => {
      const [owner, x] = ids(2) as [bigint, bigint];
      const list = followers(owner);
      const ex = { createdAt: 100n, otherId: x };
      await store.writeEdges(
        [],
        [{ list, bucketCodes: [1], entry: { ...ex, username: 'john' }, op: 'put' }],
        10n,
      );
      const walked = await store.listBucketVersions(list, 1, null, 10);
      // Untagged, the later (smaller) name lost the tie to the earlier one: "zed" stayed.
      await store.setListUsernames(list, 1, walked, 'zed', 1_000n);
      await store.setListUsernames(list, 1, walked, 'amy', 2_000n);
      expect(await store.listBucket(list, 1, null, 10)).toStrictEqual([{ ...ex, username: 'amy' }]);
      // An older rename landing late changes nothing; the versions read show the plain name.
      await store.setListUsernames(list, 1, walked, 'zed', 1_000n);
      expect(await store.listBucketVersions(list, 1, null, 10)).toStrictEqual([
        { entry: { ...ex, username: 'amy' }, version: 10n },
      ]);
      await store.copyBucketPage(list, 1, null, 10, () => 4096);
      await store.setListUsernames(list, 4096, walked, 'zed', 1_000n);
      expect(await store.listBucket(list, 4096, null, 10)).toStrictEqual([{ ...ex, username: 'amy' }]);
    });

    it('search rows ride with follows rows: a put indexes its name (and the pair’s indexed name), searchNames deletes, one partition per prefix read after a key and below an end', async () => {
      const [owner, x, y, z] = ids(4) as [bigint, bigint, bigint, bigint];
      const list = followers(owner);
      const row = (entry: ListEntry, op: 'put' | 'delete', searchNames?: string[]) => ({
        list,
        bucketCodes: [1, 2],
        entry,
        op,
        ...(searchNames ? { searchNames } : {}),
      });
      await store.writeEdges(
        [],
        [
          row({ createdAt: 100n, otherId: x, username: 'Bob' }, 'put'),
          row({ createdAt: 200n, otherId: y, username: 'bobby' }, 'put'),
          row({ createdAt: 300n, otherId: z, username: 'Bo' }, 'put'),
          {
            list: { userId: owner, relation: 'mutes', direction: 'in' },
            bucketCodes: [1],
            entry: { createdAt: 400n, otherId: x, username: 'Bob' },
            op: 'put',
          },
        ],
        10n,
      );
      const start = { lower: '', otherId: 0n };
      const [bo, bob, bobby] = [
        { lower: 'bo', otherId: z, username: 'Bo', createdAt: 300n },
        { lower: 'bob', otherId: x, username: 'Bob', createdAt: 100n },
        { lower: 'bobby', otherId: y, username: 'bobby', createdAt: 200n },
      ];
      expect(await store.listSearchRows(list, 'bo', start, SEARCH_END, 10)).toStrictEqual([bo, bob, bobby]);
      expect(await store.listSearchRows(list, 'bo', { lower: 'bo', otherId: z }, 'bobb', 10)).toStrictEqual([
        bob,
      ]);
      expect(await store.listSearchRows(list, 'bo', start, SEARCH_END, 2)).toStrictEqual([bo, bob]);
      expect(await store.listSearchRows(list, 'b', start, SEARCH_END, 10)).toStrictEqual([]);
      expect(
        await store.listSearchRows({ ...list, direction: 'out' }, 'bo', start, SEARCH_END, 10),
      ).toStrictEqual([]);
      expect((await store.readPairHistory(x, owner)).indexedNames).toStrictEqual(new Map([[x, 'Bob']]));
      // A put under a new name deletes the one named beside it; a delete deletes under every name.
      await store.writeEdges(
        [],
        [row({ createdAt: 100n, otherId: x, username: 'Carl' }, 'put', ['Bob'])],
        11n,
      );
      await store.writeEdges([], [row({ createdAt: 200n, otherId: y }, 'delete', ['BOBBY', 'zed'])], 11n);
      expect(await store.listSearchRows(list, 'bo', start, SEARCH_END, 10)).toStrictEqual([bo]);
      expect(await store.listSearchRows(list, 'ca', start, SEARCH_END, 10)).toStrictEqual([
        { lower: 'carl', otherId: x, username: 'Carl', createdAt: 100n },
      ]);
      expect((await store.readPairHistory(owner, x)).indexedNames).toStrictEqual(new Map([[x, 'Carl']]));
      // An older put cannot bring a deleted row back, nor one at the delete's version; a case-only
      // rename named beside its own put is the same row, kept.
      await store.writeEdges([], [row({ createdAt: 200n, otherId: y, username: 'bobby' }, 'put')], 11n);
      await store.writeEdges([], [row({ createdAt: 300n, otherId: z, username: 'BO' }, 'put', ['Bo'])], 12n);
      expect(await store.listSearchRows(list, 'bo', start, SEARCH_END, 10)).toStrictEqual([
        { ...bo, username: 'BO' },
      ]);
    });

    it('writeSearchRows: each write at its own version, a rename’s tagged name wins at one write time, a delete at it wins over both', async () => {
      const [owner, x] = ids(2) as [bigint, bigint];
      const list: ListKey = { userId: owner, relation: 'follows', direction: 'out' };
      const start = { lower: '', otherId: 0n };
      await store.writeEdges(
        [],
        [{ list, bucketCodes: [1], entry: { createdAt: 100n, otherId: x, username: 'bob' }, op: 'put' }],
        10n,
      );
      const cell = renamedUsername('BOB', 5n);
      await store.writeSearchRows(
        [
          {
            op: 'put',
            list,
            row: { lower: 'bob', otherId: x, username: cell, createdAt: 100n },
            version: 10n,
            partitions: ['bo'],
          },
        ],
        [{ member: x, other: owner, cell, version: 10n }],
      );
      const renamed = { lower: 'bob', otherId: x, username: 'BOB', createdAt: 100n };
      expect(await store.listSearchRows(list, 'bo', start, SEARCH_END, 10)).toStrictEqual([renamed]);
      expect((await store.readPairHistory(owner, x)).indexedNames).toStrictEqual(new Map([[x, 'BOB']]));
      // A plain name at the same write time loses to the tagged one; an older write changes nothing.
      await store.writeSearchRows(
        [
          {
            op: 'put',
            list,
            row: { lower: 'bob', otherId: x, username: 'bob', createdAt: 100n },
            version: 10n,
            partitions: ['bo'],
          },
        ],
        [{ member: x, other: owner, cell: 'zzz', version: 9n }],
      );
      expect(await store.listSearchRows(list, 'bo', start, SEARCH_END, 10)).toStrictEqual([renamed]);
      expect((await store.readPairHistory(owner, x)).indexedNames).toStrictEqual(new Map([[x, 'BOB']]));
      await store.writeSearchRows([
        { op: 'delete', list, key: { lower: 'bob', otherId: x }, version: 10n, partitions: ['bo'] },
      ]);
      expect(await store.listSearchRows(list, 'bo', start, SEARCH_END, 10)).toStrictEqual([]);
    });

    it('search ranges: the layout round-trips through the directory beside its buckets; writes go to each partition named; a copy keeps each cell’s write time; a range delete shadows older writes from a name on', async () => {
      const [owner, x, y, z] = ids(4) as [bigint, bigint, bigint, bigint];
      const list: ListKey = { userId: owner, relation: 'follows', direction: 'in' };
      const start = { lower: '', otherId: -(1n << 63n) };
      const split = { parent: 'th', starts: ['thm'], stage: 'dual' as const, copied: 0 };
      expect(await store.updateDirectory(list, 0, { search: { starts: [], split } })).toBe(true);
      const b: TimeBucket = { id: 2, start: 1_000n, base: 5 };
      expect(await store.updateDirectory(list, 1, { add: [b] })).toBe(true);
      const d = await store.getDirectory(list);
      expect([d.version, d.buckets.length, d.search]).toStrictEqual([2, 2, { starts: [], split }]);
      const put = (otherId: bigint, name: string, version: bigint, partitions: string[]): SearchWrite => ({
        op: 'put',
        list,
        row: { lower: name.toLowerCase(), otherId, username: name, createdAt: 100n },
        version,
        partitions,
      });
      await store.writeSearchRows([put(x, 'thor', 10n, ['th', 'thm']), put(y, 'thea', 11n, ['th'])]);
      await store.writeSearchRows([put(z, 'Thz', 12n, ['th'])]);
      const row = (otherId: bigint, name: string) => ({
        lower: name.toLowerCase(),
        otherId,
        username: name,
        createdAt: 100n,
      });
      expect(await store.listSearchRows(list, 'th', start, SEARCH_END, 10)).toStrictEqual([
        row(y, 'thea'),
        row(x, 'thor'),
        row(z, 'Thz'),
      ]);
      expect(await store.listSearchRows(list, 'thm', start, SEARCH_END, 10)).toStrictEqual([row(x, 'thor')]);
      // The copy of the parent's rows from 'thm' on: in pages, resumable from `last`.
      const first = await store.copySearchRows(
        list,
        'th',
        'thm',
        { lower: 'thm', otherId: start.otherId },
        SEARCH_END,
        1,
      );
      expect(first).toStrictEqual({ copied: 1, last: { lower: 'thor', otherId: x } });
      const rest = await store.copySearchRows(list, 'th', 'thm', first.last as SearchKey, SEARCH_END, 10);
      expect(rest).toStrictEqual({ copied: 1, last: { lower: 'thz', otherId: z } });
      // Each copied cell kept its time: a delete at the put's version wins, an older one does not.
      await store.writeSearchRows([
        { op: 'delete', list, key: { lower: 'thz', otherId: z }, version: 12n, partitions: ['thm'] },
        { op: 'delete', list, key: { lower: 'thor', otherId: x }, version: 9n, partitions: ['thm'] },
      ]);
      expect(await store.listSearchRows(list, 'thm', start, SEARCH_END, 10)).toStrictEqual([row(x, 'thor')]);
      // The parent's moved range deleted at 20: rows below 'thm' stay; a write at or below 20 stays
      // deleted, one above shows.
      await store.deleteSearchRange(list, 'th', 'thm', 20n);
      await store.writeSearchRows([put(z, 'Thz', 20n, ['th']), put(x, 'thor', 21n, ['th'])]);
      expect(await store.listSearchRows(list, 'th', start, SEARCH_END, 10)).toStrictEqual([
        row(y, 'thea'),
        row(x, 'thor'),
      ]);
      // Starts and a cleared split; a time-bucket change leaves the layout alone.
      expect(await store.updateDirectory(list, 2, { search: { starts: ['thm', 'thx'], split: null } })).toBe(
        true,
      );
      expect(await store.updateDirectory(list, 3, { mode: 'time' })).toBe(true);
      expect((await store.getDirectory(list)).search).toStrictEqual({ starts: ['thm', 'thx'], split: null });
      expect((await store.getPlacements([list]))[0]?.directory.search).toStrictEqual({
        starts: ['thm', 'thx'],
        split: null,
      });
    });

    it('list rows: since bounds an older read; listBucketNewer reads upward, oldest first, below until', async () => {
      const [owner, x, y, z, w] = ids(5) as [bigint, bigint, bigint, bigint, bigint];
      const list = followers(owner);
      const rows: ListEntry[] = [
        { createdAt: 100n, otherId: x },
        { createdAt: 100n, otherId: z },
        { createdAt: 200n, otherId: y },
        { createdAt: 300n, otherId: w },
      ];
      await store.writeEdges(
        [],
        rows.map((entry) => ({ list, bucketCodes: [1], entry, op: 'put' as const })),
        10n,
      );
      const at = (createdAt: bigint, otherId: bigint) => ({ createdAt, otherId });
      // since: created_at >= since, with and without a start key.
      expect(await store.listBucket(list, 1, null, 10, 200n)).toEqual([at(300n, w), at(200n, y)]);
      expect(await store.listBucket(list, 1, at(300n, w), 10, 100n)).toEqual([
        at(200n, y),
        at(100n, z),
        at(100n, x),
      ]);
      expect(await store.listBucket(list, 1, at(100n, z), 10, 100n)).toEqual([at(100n, x)]);
      expect(await store.listBucket(list, 1, at(300n, w), 1, 100n)).toEqual([at(200n, y)]);
      expect(await store.listBucket(list, 1, null, 10, 301n)).toEqual([]);
      // newer: strictly above the key, ascending, ties by id ascending; until is exclusive.
      expect(await store.listBucketNewer(list, 1, at(100n, x), 10)).toEqual([
        at(100n, z),
        at(200n, y),
        at(300n, w),
      ]);
      expect(await store.listBucketNewer(list, 1, at(0n, 0n), 2)).toEqual([at(100n, x), at(100n, z)]);
      expect(await store.listBucketNewer(list, 1, at(100n, x), 10, 300n)).toEqual([at(100n, z), at(200n, y)]);
      expect(await store.listBucketNewer(list, 1, at(0n, 0n), 10, 100n)).toEqual([]);
      expect(await store.listBucketNewer(list, 1, at(300n, w), 10)).toEqual([]);
      await store.writeEdges([], [{ list, bucketCodes: [1], entry: at(200n, y), op: 'delete' }], 20n);
      expect(await store.listBucketNewer(list, 1, at(100n, z), 10)).toEqual([at(300n, w)]);
      expect(await store.listBucket(list, 1, null, 10, 150n)).toEqual([at(300n, w)]);
    });

    it('layouts default to one bucket and round-trip', async () => {
      const [owner] = ids(1) as [bigint];
      expect(await store.getLayout(followers(owner))).toEqual({
        buckets: 1,
        growingTo: null,
        copiedThrough: 0,
      });
      await store.putLayout(followers(owner), { buckets: 4, growingTo: 8, copiedThrough: 2 });
      expect(await store.getLayout(followers(owner))).toEqual({ buckets: 4, growingTo: 8, copiedThrough: 2 });
    });

    it('replaceLayout is a compare-and-set, from the default layout too', async () => {
      const [owner] = ids(1) as [bigint];
      const list = followers(owner);
      const start = { buckets: 1, growingTo: null, copiedThrough: 0 };
      const growing = { buckets: 1, growingTo: 2, copiedThrough: 0 };
      expect(await store.replaceLayout(list, growing, start)).toBe(false);
      expect(await store.replaceLayout(list, start, growing)).toBe(true);
      expect(await store.replaceLayout(list, start, { buckets: 1, growingTo: 4, copiedThrough: 0 })).toBe(
        false,
      );
      expect(await store.getLayout(list)).toEqual(growing);
      const copied = { buckets: 1, growingTo: 2, copiedThrough: 1 };
      expect(await store.replaceLayout(list, growing, copied)).toBe(true);
      const flipped = { buckets: 2, growingTo: null, copiedThrough: 0 };
      expect(await store.replaceLayout(list, copied, flipped)).toBe(true);
      expect(await store.replaceLayout(list, growing, copied)).toBe(false);
      expect(await store.getLayout(list)).toEqual(flipped);
      expect(await store.replaceLayout(list, flipped, { buckets: 2, growingTo: 4, copiedThrough: 0 })).toBe(
        true,
      );
    });

    it('the time-bucket directory: empty until written, then a compare-and-set on its version that adds buckets and keeps or sets the mode', async () => {
      const [owner] = ids(1) as [bigint];
      const list = followers(owner);
      const first = { id: 1, start: null, base: 0 };
      expect(await store.getDirectory(list)).toEqual({ mode: null, version: 0, buckets: [first] });
      const b1 = { id: 4096, start: 1_800_000_000_000_000n, base: 250_000 };
      const b2 = { id: 4097, start: 1_800_000_100_000_000n, base: 500_000 };
      expect(await store.updateDirectory(list, 1, { add: [b1] })).toBe(false);
      expect(await store.updateDirectory(list, 0, { add: [b1] })).toBe(true);
      expect(await store.updateDirectory(list, 0, { add: [b2] })).toBe(false);
      expect(await store.getDirectory(list)).toEqual({ mode: null, version: 1, buckets: [b1, first] });
      expect(await store.updateDirectory(list, 1, { mode: 'dual' })).toBe(true);
      expect(await store.updateDirectory(list, 2, { add: [b2] })).toBe(true);
      expect(await store.getDirectory(list)).toEqual({ mode: 'dual', version: 3, buckets: [b2, b1, first] });
      // A mode alone on a list without a directory row.
      const [other] = ids(1) as [bigint];
      expect(await store.updateDirectory(followers(other), 0, { mode: 'time' })).toBe(true);
      expect(await store.getDirectory(followers(other))).toEqual({
        mode: 'time',
        version: 1,
        buckets: [first],
      });
    });

    it('getPlacements: each list’s layout and directory, in order, over many lists of several relations and directions (duplicates too)', async () => {
      const owners = ids(230);
      const lists: ListKey[] = owners.flatMap((userId, i) => [
        { userId, relation: 'follows', direction: i % 2 === 0 ? 'in' : 'out' } as ListKey,
        ...(i % 7 === 0 ? [{ userId, relation: 'mutes', direction: 'out' } as ListKey] : []),
      ]);
      lists.push(lists[3] as ListKey, lists[150] as ListKey);
      for (const [i, list] of lists.entries()) {
        if (i % 3 === 0)
          await store.putLayout(list, { buckets: 2 + (i % 4), growingTo: null, copiedThrough: 0 });
        if (i % 5 === 0)
          await store.updateDirectory(list, 0, {
            add: [{ id: 4096 + i, start: 1_800_000_000_000_000n + BigInt(i), base: i }],
            mode: i % 2 === 0 ? 'time' : 'dual',
          });
      }
      const expected = await Promise.all(
        lists.map(async (l) => ({
          layout: await store.getLayout(l),
          directory: await store.getDirectory(l),
        })),
      );
      expect(expected.filter((p) => p.directory.version > 0).length).toBeGreaterThan(40);
      expect(await store.getPlacements(lists)).toEqual(expected);
      expect(await store.getPlacements([])).toEqual([]);
    });

    it('copyBucketPage keeps write times: a newer delete still wins over the copy; drop shadows older rows', async () => {
      const [owner, x, y, z] = ids(4) as [bigint, bigint, bigint, bigint];
      const list = followers(owner);
      for (const [id, t] of [
        [x, 1n],
        [y, 2n],
        [z, 3n],
      ] as const) {
        await store.writeEdges(
          [],
          [{ list, bucketCodes: [1], entry: { createdAt: t, otherId: id }, op: 'put' }],
          100n,
        );
      }
      await store.writeEdges(
        [],
        [{ list, bucketCodes: [2], entry: { createdAt: 2n, otherId: y }, op: 'delete' }],
        150n,
      );
      const first = await store.copyBucketPage(list, 1, null, 2, () => 2);
      expect(first).toEqual({ copied: 2, last: { createdAt: 2n, otherId: y } });
      const second = await store.copyBucketPage(list, 1, first.last, 2, () => 2);
      expect(second).toEqual({ copied: 1, last: null });
      expect(await store.listBucket(list, 2, null, 10)).toEqual([
        { createdAt: 3n, otherId: z },
        { createdAt: 1n, otherId: x },
      ]);
      await store.dropBucket(list, 1, 200n);
      expect(await store.listBucket(list, 1, null, 10)).toEqual([]);
      await store.writeEdges(
        [],
        [{ list, bucketCodes: [1], entry: { createdAt: 9n, otherId: x }, op: 'put' }],
        300n,
      );
      expect(await store.listBucket(list, 1, null, 10)).toEqual([{ createdAt: 9n, otherId: x }]);
    });

    it('every relation and direction is its own list, whatever table holds it', async () => {
      const [owner, x, y] = ids(3) as [bigint, bigint, bigint];
      const lists: ListKey[] = RELATIONS.flatMap((relation) =>
        (['out', 'in'] as const).map((direction) => ({ userId: owner, relation, direction })),
      );
      for (const [i, list] of lists.entries()) {
        const entry = { createdAt: BigInt(100 + i), otherId: i % 2 === 0 ? x : y };
        await store.writeEdges([], [{ list, bucketCodes: [2], entry, op: 'put' }], 10n);
      }
      const read = await Promise.all(lists.map((list) => store.listBucket(list, 2, null, 10)));
      expect(read).toEqual(
        lists.map((_, i) => [{ createdAt: BigInt(100 + i), otherId: i % 2 === 0 ? x : y }]),
      );
      expect(await Promise.all(lists.map((list) => store.listBucket(list, 3, null, 10)))).toEqual(
        lists.map(() => []),
      );
    });

    it('inverse edges are bucketed: probes read the layout they are given, writes land in every code', async () => {
      const [target, ...sources] = ids(9) as [bigint, ...bigint[]];
      const at4 = (s: bigint) => bucketCodeOf(4, s);
      const at8 = (s: bigint) => bucketCodeOf(8, s);
      const four = { buckets: 4, growingTo: null, copiedThrough: 0 };
      const eight = { buckets: 8, growingTo: null, copiedThrough: 0 };
      const [growing, ...settled] = sources as [bigint, ...bigint[]];
      for (const s of settled) {
        await store.writeEdges([{ edge: edge(s, target, 'active', 10n), inBucketCodes: [at4(s)] }], [], 100n);
      }
      await store.writeEdges(
        [{ edge: edge(growing, target, 'active', 20n), inBucketCodes: [at4(growing), at8(growing)] }],
        [],
        200n,
      );
      const expected = new Map([
        ...settled.map((s) => [s, edge(s, target, 'active', 10n)] as const),
        [growing, edge(growing, target, 'active', 20n)] as const,
      ]);
      expect(await store.getEdgesIn(target, 'follows', [...sources, 1n], four)).toEqual(expected);
      expect(await store.getEdgesIn(target, 'follows', sources, eight)).toEqual(
        new Map([[growing, edge(growing, target, 'active', 20n)]]),
      );
      const single = await store.getEdgesIn(target, 'follows', sources, SINGLE_BUCKET);
      expect(single).toEqual(new Map());
      expect(await store.getEdgesIn(target, 'blocks', sources, four)).toEqual(new Map());
    });

    it('copyInverseEdgePage keeps write times and pages by source; dropInverseEdgeBucket shadows older rows', async () => {
      const [target, a, b, c] = ids(4) as [bigint, bigint, bigint, bigint];
      const list = followers(target);
      const two = { buckets: 2, growingTo: null, copiedThrough: 0 };
      const at2 = (s: bigint) => bucketCodeOf(2, s);
      for (const s of [a, b, c]) {
        await store.writeEdges([{ edge: edge(s, target, 'active', 10n), inBucketCodes: [1] }], [], 100n);
      }
      await store.writeEdges(
        [{ edge: edge(b, target, 'removed', 30n, 10n), inBucketCodes: [at2(b)] }],
        [],
        150n,
      );
      const first = await store.copyInverseEdgePage(list, 1, null, 2, at2);
      expect(first).toEqual({ copied: 2, last: b });
      expect(await store.copyInverseEdgePage(list, 1, first.last, 2, at2)).toEqual({ copied: 1, last: null });
      await store.writeEdges(
        [{ edge: edge(c, target, 'removed', 20n, 10n), inBucketCodes: [at2(c)] }],
        [],
        120n,
      );
      expect(await store.getEdgesIn(target, 'follows', [a, b, c], two)).toEqual(
        new Map([
          [a, edge(a, target, 'active', 10n)],
          [b, edge(b, target, 'removed', 30n, 10n)],
          [c, edge(c, target, 'removed', 20n, 10n)],
        ]),
      );
      await store.dropInverseEdgeBucket(list, 1, 200n);
      expect(await store.getEdgesIn(target, 'follows', [a, b, c], SINGLE_BUCKET)).toEqual(new Map());
      await store.writeEdges([{ edge: edge(a, target, 'active', 40n), inBucketCodes: [1] }], [], 300n);
      expect(await store.getEdgesIn(target, 'follows', [a, b, c], SINGLE_BUCKET)).toEqual(
        new Map([[a, edge(a, target, 'active', 40n)]]),
      );
      expect(await store.getEdgesIn(target, 'follows', [a], two)).toEqual(
        new Map([[a, edge(a, target, 'active', 10n)]]),
      );
    });

    it('counts sum their shards; reconciliations round-trip', async () => {
      const [owner] = ids(1) as [bigint];
      const list = followers(owner);
      expect(await store.getCount(list)).toBe(0);
      await store.incrementCount(list, 0, 3);
      await store.incrementCount(list, 7, 2);
      await store.incrementCount(list, 0, -1);
      expect(await store.getCount(list)).toBe(4);
      expect(await store.getReconciliation(list)).toBeNull();
      const r = { reconciledAt: new Date('2026-11-30T05:00:00.000Z'), counted: 5, drift: 1 };
      await store.putReconciliation(list, r);
      expect(await store.getReconciliation(list)).toEqual(r);
    });

    it('incrementCounts adds every delta of several lists and shards in one call, zero deltas left out', async () => {
      const [a, b] = ids(2) as [bigint, bigint];
      const following: ListKey = { userId: a, relation: 'follows', direction: 'out' };
      await store.incrementCount(followers(b), 3, 5);
      await store.incrementCounts([
        { list: following, shard: 1, delta: 1 },
        { list: followers(b), shard: 3, delta: 1 },
        { list: followers(b), shard: 9, delta: -2 },
        { list: following, shard: 4, delta: 0 },
      ]);
      await store.incrementCounts([]);
      expect([await store.getCount(following), await store.getCount(followers(b))]).toEqual([1, 4]);
    });

    it('markDirtyBuckets marks every bucket of several lists at one version; a newer mark stands, a clear at it wins', async () => {
      const [a, b] = ids(2) as [bigint, bigint];
      const following: ListKey = { userId: a, relation: 'follows', direction: 'out' };
      await store.markDirty(followers(b), 2, 900n);
      await store.markDirtyBuckets(
        [
          { list: following, bucketCode: 1 },
          { list: followers(b), bucketCode: 1 },
          { list: followers(b), bucketCode: 2 },
        ],
        500n,
      );
      const marks = async (userId: bigint) =>
        (await store.listDirty(bucketOf(userId, DIRTY_SHARDS), 10_000))
          .filter((m) => m.list.userId === userId)
          .map((m) => `${m.list.direction}/${m.bucketCode}@${m.version}`)
          .sort();
      expect(await marks(a)).toEqual(['out/1@500']);
      expect(await marks(b)).toEqual(['in/1@500', 'in/2@900']);
      await store.clearDirty({ list: followers(b), bucketCode: 1, version: 500n });
      await store.markDirtyBuckets([{ list: followers(b), bucketCode: 1 }], 500n);
      expect(await marks(b)).toEqual(['in/2@900']);
    });

    it('the account tables: increments, marks and clears reach both copies; getUserCounts gives both directions of one relation', async () => {
      const [a, b] = ids(2) as [bigint, bigint];
      const out: ListKey = { userId: a, relation: 'follows', direction: 'out' };
      const blocks: ListKey = { userId: a, relation: 'blocks', direction: 'out' };
      const never = { shardSum: 0, correction: 0, asOf: null, dirty: false, written: false };
      expect(await store.getUserCounts(a, 'follows')).toEqual({ in: never, out: never });
      await store.incrementCount(out, 2, 3);
      await store.incrementCounts([
        { list: out, shard: 5, delta: 1 },
        { list: followers(a), shard: 1, delta: 7 },
        { list: blocks, shard: 0, delta: 4 },
        { list: followers(b), shard: 0, delta: 2 },
      ]);
      await store.markDirtyBuckets(
        [
          { list: followers(a), bucketCode: 3 },
          { list: followers(b), bucketCode: 1 },
        ],
        600n,
      );
      expect(await store.getUserCounts(a, 'follows')).toEqual({
        in: { shardSum: 7, correction: 0, asOf: null, dirty: true, written: true },
        out: { shardSum: 4, correction: 0, asOf: null, dirty: false, written: true },
      });
      expect(await store.getUserCounts(a, 'blocks')).toEqual({
        in: never,
        out: { shardSum: 4, correction: 0, asOf: null, dirty: false, written: true },
      });
      // The list tables hold the same counters.
      expect([
        await store.getCount(out),
        await store.getCount(followers(a)),
        await store.getCount(blocks),
      ]).toEqual([4, 7, 4]);
      // A clear at an older version leaves the mark; one at its version removes both copies of it.
      await store.clearDirty({ list: followers(a), bucketCode: 3, version: 599n });
      expect((await store.getUserCounts(a, 'follows')).in.dirty).toBe(true);
      await store.clearDirty({ list: followers(a), bucketCode: 3, version: 600n });
      expect((await store.getUserCounts(a, 'follows')).in.dirty).toBe(false);
      expect(await store.hasDirty(followers(a))).toBe(false);
      // A mark at that version again stays cleared (the clear wins at equal versions); a newer one stands.
      await store.markDirty(followers(a), 3, 600n);
      expect((await store.getUserCounts(a, 'follows')).in.dirty).toBe(false);
      await store.markDirty(followers(a), 3, 601n);
      expect([
        (await store.getUserCounts(a, 'follows')).in.dirty,
        await store.hasDirty(followers(a)),
      ]).toEqual([true, true]);
      expect((await store.getUserCounts(b, 'follows')).in).toEqual({
        shardSum: 2,
        correction: 0,
        asOf: null,
        dirty: true,
        written: true,
      });
    });

    it('the account tables keep their own reconciliation: the newest asOf wins, bucket counts merge, the list tables untouched', async () => {
      const [a] = ids(1) as [bigint];
      const list = followers(a);
      await store.incrementCount(list, 1, 5);
      await store.putUserCountSync(list, { correction: -2, asOf: 1_000n, buckets: new Map([[1, 3]]) });
      const many = new Map(Array.from({ length: 250 }, (_, i) => [4096 + i, i] as const));
      await store.putUserCountSync(list, { correction: 4, asOf: 2_000n, buckets: many });
      await store.putUserCountSync(list, { correction: 9, asOf: 1_500n, buckets: new Map([[1, 7]]) });
      expect(await store.getUserCountSync(list)).toEqual({
        shardSum: 5,
        correction: 4,
        asOf: 2_000n,
        buckets: new Map([[1, 7], ...many]),
        written: true,
      });
      expect((await store.getUserCounts(a, 'follows')).in).toEqual({
        shardSum: 5,
        correction: 4,
        asOf: 2_000n,
        dirty: false,
        written: true,
      });
      expect(await store.getCountSync(list)).toEqual({
        shardSum: 5,
        correction: 0,
        asOf: null,
        buckets: new Map(),
        written: true,
      });
      // A list with a reconciliation and no counter is written too.
      const out: ListKey = { userId: a, relation: 'follows', direction: 'out' };
      await store.putUserCountSync(out, { correction: 0, asOf: 3_000n, buckets: new Map() });
      expect((await store.getUserCounts(a, 'follows')).out).toEqual({
        shardSum: 0,
        correction: 0,
        asOf: 3_000n,
        dirty: false,
        written: true,
      });
    });

    it('receipts: the first put wins', async () => {
      const [actor] = ids(1) as [bigint];
      expect(await store.getReceipt(actor, 'k1')).toBeNull();
      await store.putReceipt(actor, 'k1', { requestHash: 'h1', status: 200, body: '{"a":1}' }, 3600);
      await store.putReceipt(actor, 'k1', { requestHash: 'h2', status: 409, body: '{}' }, 3600);
      expect(await store.getReceipt(actor, 'k1')).toEqual({
        requestHash: 'h1',
        status: 200,
        body: '{"a":1}',
      });
      expect(await store.getReceipt(actor + 1n, 'k1')).toBeNull();
    });

    it('scans the lists with counts: list_counts and bucket_counts partitions, each once, in token order', async () => {
      const [a, b] = ids(2) as [bigint, bigint];
      const out: ListKey = { userId: a, relation: 'follows', direction: 'out' };
      const mutes: ListKey = { userId: b, relation: 'mutes', direction: 'in' };
      await store.incrementCounts([
        { list: out, shard: 0, delta: 1 },
        { list: followers(b), shard: 3, delta: 2 },
      ]);
      await store.putCountSync(mutes, { correction: 0, asOf: 10n, buckets: new Map([[1, 0]]) });
      const whole = { start: -(2n ** 63n), end: 2n ** 63n - 1n };
      const walk = async (table: 'list_counts' | 'bucket_counts') => {
        const found: { token: bigint; key: unknown }[] = [];
        let after: bigint | null = null;
        for (;;) {
          const page = await store.scanPartitions(table, whole, after, 50);
          found.push(...page);
          if (page.length < 50) break;
          after = page.at(-1)?.token ?? null;
        }
        const tokens = found.map((p) => p.token);
        expect(tokens).toEqual([...tokens].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)));
        expect(new Set(tokens).size).toBe(tokens.length);
        return found
          .map((p) => p.key as { table: string; list: ListKey })
          .filter((k) => k.list.userId === a || k.list.userId === b)
          .sort((x, y) => (x.list.userId < y.list.userId ? -1 : 1));
      };
      expect(await walk('list_counts')).toEqual([
        { table: 'list_counts', list: out },
        { table: 'list_counts', list: followers(b) },
      ]);
      expect(await walk('bucket_counts')).toEqual([{ table: 'bucket_counts', list: mutes }]);
    });

    it('scans partitions by token range: every partition once, in token order, resumable at any token', async () => {
      const [a, b, c] = ids(3) as [bigint, bigint, bigint];
      const following = (userId: bigint): ListKey => ({ userId, relation: 'follows', direction: 'out' });
      const mutesIn = (userId: bigint): ListKey => ({ userId, relation: 'mutes', direction: 'in' });
      await store.writeEdges(
        [
          { edge: edge(a, b, 'active', 10n), inBucketCodes: [1] },
          { edge: edge(b, c, 'active', 11n), inBucketCodes: [1] },
        ],
        [
          { list: following(a), bucketCodes: [1], entry: { createdAt: 10n, otherId: b }, op: 'put' },
          { list: following(b), bucketCodes: [1], entry: { createdAt: 11n, otherId: c }, op: 'put' },
          { list: mutesIn(c), bucketCodes: [1], entry: { createdAt: 12n, otherId: a }, op: 'put' },
        ],
        1000n,
      );
      await store.appendPair({
        pair: [a, b],
        op: { sourceId: a, targetId: b, kind: 'follow', position: 10n, base: 0 },
      });
      const whole = { start: -(2n ** 63n), end: 2n ** 63n - 1n };
      /** Every partition of `table`, one at a time, each page resumed after the last token. */
      const walk = async (table: Parameters<GraphStore['scanPartitions']>[0], range = whole) => {
        const found: { token: bigint; key: unknown }[] = [];
        let after: bigint | null = null;
        for (;;) {
          const page = await store.scanPartitions(table, range, after, 1);
          found.push(...page);
          if (page.length < 1) return found;
          after = page.at(-1)?.token ?? null;
        }
      };
      const mine = (found: { key: unknown }[]) =>
        found
          .map((p) => p.key)
          .filter((k) =>
            JSON.stringify(k, (_, v) => (typeof v === 'bigint' ? `${v}` : v)).match(
              new RegExp(`"(${a}|${b}|${c})"`),
            ),
          );
      const out = await walk('edges_out');
      expect(out.map((p) => p.token)).toEqual(
        [...out.map((p) => p.token)].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)),
      );
      expect(new Set(out.map((p) => p.token)).size).toBe(out.length);
      expect(
        mine(out).sort((x, y) =>
          (x as { sourceId: bigint }).sourceId < (y as { sourceId: bigint }).sourceId ? -1 : 1,
        ),
      ).toEqual([
        { table: 'edges_out', sourceId: a },
        { table: 'edges_out', sourceId: b },
      ]);
      expect(mine(await walk('pair_ops'))).toEqual([{ table: 'pair_ops', lowId: a, highId: b }]);
      expect(mine(await walk('relation_lists'))).toEqual([
        { table: 'relation_lists', list: mutesIn(c), bucketCode: 1 },
      ]);
      // Split in two ranges at the first found token: the halves hold exactly the whole.
      const all = await walk('following');
      const mid = (all[0] as { token: bigint }).token;
      const halves = [
        ...(await walk('following', { start: whole.start, end: mid })),
        ...(await walk('following', { start: mid, end: whole.end })),
      ];
      expect(halves).toEqual(all);
      expect(mine(all).length).toBe(2);
    });

    it('pages a source’s edges in (relation, target) order and answers list-row probes', async () => {
      const [a, b, c] = ids(3) as [bigint, bigint, bigint];
      const e = (t: bigint, relation: Relation, state: EdgeRecord['state']): EdgeRecord => ({
        ...edge(a, t, state, 10n),
        relation,
      });
      await store.writeEdges(
        [e(c, 'follows', 'active'), e(b, 'mutes', 'removed'), e(b, 'follows', 'active')].map((edge) => ({
          edge,
          inBucketCodes: [1],
        })),
        [
          {
            list: { userId: a, relation: 'follows', direction: 'out' },
            bucketCodes: [1],
            entry: { createdAt: 10n, otherId: b },
            op: 'put',
          },
        ],
        1000n,
      );
      const first = await store.edgesOfSource(a, null, 2);
      expect(first).toEqual([e(b, 'follows', 'active'), e(c, 'follows', 'active')]);
      expect(await store.edgesOfSource(a, first[1] ?? null, 2)).toEqual([e(b, 'mutes', 'removed')]);
      const out = { userId: a, relation: 'follows', direction: 'out' } as const;
      expect(
        await Promise.all([
          store.hasListRow(out, 1, { createdAt: 10n, otherId: b }),
          store.hasListRow(out, 1, { createdAt: 11n, otherId: b }),
          store.hasListRow(out, 2, { createdAt: 10n, otherId: b }),
        ]),
      ).toEqual([true, false, false]);
    });

    it('sweep progress round-trips; the newest put wins', async () => {
      const job = `job-${ids(1)[0]}`;
      expect(await store.getSweepProgress(job)).toBeNull();
      const p = {
        job,
        runId: 'r1',
        ranges: 64,
        rangeIndex: 3,
        table: 'edges_out' as const,
        lastToken: -42n,
        totals: '{"rows":7}',
        done: false,
      };
      await store.putSweepProgress(p);
      expect(await store.getSweepProgress(job)).toEqual(p);
      await store.putSweepProgress({ ...p, lastToken: null, done: true });
      expect(await store.getSweepProgress(job)).toEqual({ ...p, lastToken: null, done: true });
    });

    it('relay cursors: null until saved, each name its own, the newest put wins', async () => {
      const [a, b] = ids(2).map((n) => `relay-${n}`) as [string, string];
      expect([await store.getRelayCursor(a), await store.getRelayCursor(b)]).toEqual([null, null]);
      await store.putRelayCursor(a, 'c1');
      await store.putRelayCursor(b, 'other');
      await store.putRelayCursor(a, 'c2');
      expect([await store.getRelayCursor(a), await store.getRelayCursor(b)]).toEqual(['c2', 'other']);
      await store.putRelayCursor(a, 'c2');
      expect(await store.getRelayCursor(a)).toBe('c2');
    });

    it('relay cursors are listed, each relay once with its newest cursor, up to the limit', async () => {
      const names = ids(3).map((n) => `list-relay-${n}`);
      for (const [i, name] of names.entries()) await store.putRelayCursor(name, `c${i}`);
      await store.putRelayCursor(names[0] as string, 'c9');
      const mine = (await store.listRelayCursors(1000)).filter((r) => names.includes(r.name));
      expect(mine.sort((x, y) => (x.name < y.name ? -1 : 1))).toEqual(
        [
          { name: names[0], cursor: 'c9' },
          { name: names[1], cursor: 'c1' },
          { name: names[2], cursor: 'c2' },
        ].sort((x, y) => ((x.name as string) < (y.name as string) ? -1 : 1)),
      );
      expect(await store.listRelayCursors(1)).toHaveLength(1);
    });

    it('suggestions are replaced whole by a newer generation, never by an older one', async () => {
      const [u, x, y, z] = ids(4) as [bigint, bigint, bigint, bigint];
      expect(await store.getSuggestions(u)).toBeNull();
      const first = [
        { id: x, score: 1.5, via: [z] },
        { id: y, score: 0.25, via: [] },
      ];
      await store.putSuggestions(u, 2000n, first);
      expect(await store.getSuggestions(u)).toEqual({ generation: 2000n, items: first });
      await store.putSuggestions(u, 3000n, [{ id: y, score: 2, via: [x, z] }]);
      expect(await store.getSuggestions(u)).toEqual({
        generation: 3000n,
        items: [{ id: y, score: 2, via: [x, z] }],
      });
      await store.putSuggestions(u, 2500n, first);
      expect(await store.getSuggestions(u)).toEqual({
        generation: 3000n,
        items: [{ id: y, score: 2, via: [x, z] }],
      });
      await store.putSuggestions(u, 4000n, []);
      expect(await store.getSuggestions(u)).toEqual({ generation: 4000n, items: [] });
    });

    it('account tasks are written and deleted at their versions: a delete leaves a newer generation standing', async () => {
      const [u] = ids(1) as [bigint];
      const mine = async () =>
        (await store.listAccountTasks())
          .filter((t) => t.userId === u)
          .sort((x, y) => (x.task < y.task ? -1 : 1));
      const g1 = { userId: u, task: 'mark_counterparts' as const, cursor: 'g1', version: 5_000n };
      expect(await store.getAccountTask(u, 'mark_counterparts')).toBeNull();
      await store.putAccountTask(g1);
      await store.putAccountTask({ ...g1, cursor: 'g1 page 1', version: 5_001n });
      await store.putAccountTask({ ...g1, cursor: 'g1 late', version: 5_000n }); // an older write landing late
      expect(await store.getAccountTask(u, 'mark_counterparts')).toEqual({
        ...g1,
        cursor: 'g1 page 1',
        version: 5_001n,
      });
      const accept = { userId: u, task: 'accept_requests' as const, cursor: null, version: 4_000n };
      await store.putAccountTask(accept);
      // A newer generation lands between g1's run's last check and its delete at g1's version.
      const g2 = { ...g1, cursor: 'g2', version: 9_000n };
      await store.putAccountTask(g2);
      await store.deleteAccountTask(u, 'mark_counterparts', 5_001n);
      expect(await mine()).toEqual([accept, g2]);
      await store.deleteAccountTask(u, 'mark_counterparts', 9_000n);
      await store.putAccountTask({ ...g2, cursor: 'g2 late' }); // equal version: the delete wins
      expect(await store.getAccountTask(u, 'mark_counterparts')).toBeNull();
      await store.deleteAccountTask(u, 'accept_requests', 4_000n);
      await store.deleteAccountTask(u, 'accept_requests', 4_000n);
      expect(await mine()).toEqual([]);
      await store.putAccountTask({ ...g1, cursor: 'g3', version: 9_001n });
      expect(await mine()).toEqual([{ ...g1, cursor: 'g3', version: 9_001n }]);
    });
  });
}
