/**
 * A checkpoint written before the `restricts` relation existed still decodes: the
 * fixture's `cp_state` came from the encoder on main before the change (see the fixture's note).
 * It decodes to the edges it was written from, re-encodes to the same bytes (so a tie between an
 * old and a new writer's checkpoint of one horizon still breaks the same way), the fold continues
 * from it with restrict ops exactly as from the whole history, and a pair whose only state is that
 * checkpoint takes a restrict through the service with every old edge intact.
 */
import { describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { foldPair } from '../../src/graph/pair/pair-fold.js';
import type { PairOp } from '../../src/model/types.js';
import { decodeCheckpoint, encodeCheckpoint } from '../../src/store/checkpoint-codec.js';
import { SingleBucketLists } from '../graph/support/single-bucket-lists.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { activeEdges, OLD_CHECKPOINT as OLD } from './checkpoint-before-restrict.js';

const [A, B] = [OLD.low, OLD.high];
const past = (k: number) => OLD.horizon + BigInt(k) * 1000n;

describe('a checkpoint written before restricts existed', () => {
  it('decodes to the edges it was written from, and re-encodes to the same bytes', () => {
    const cp = decodeCheckpoint(OLD.horizon, OLD.text);
    expect(cp).toEqual({
      horizon: OLD.horizon,
      count: OLD.count,
      newestBase: OLD.newestBase,
      edges: expect.arrayContaining(OLD.edges),
    });
    expect(cp.edges).toHaveLength(OLD.edges.length);
    expect(cp.edges.some((e) => e.relation === 'restricts')).toBe(false);
    expect(encodeCheckpoint(cp)).toBe(OLD.text);
    // And it is what the fold of its ops gives today: the new relation changed no old rule.
    const refolded = [...foldPair(OLD.ops).edges.values()].map(({ candidates: _, ...e }) => e);
    expect(activeEdges(refolded)).toEqual(activeEdges(OLD.edges));
  });

  it('the fold continues from it with restrict ops exactly as from the whole history', () => {
    const cp = decodeCheckpoint(OLD.horizon, OLD.text);
    const later: PairOp[] = [
      { sourceId: A, targetId: B, kind: 'restrict', position: past(1) },
      { sourceId: B, targetId: A, kind: 'restrict', position: past(2) },
      { sourceId: B, targetId: A, kind: 'block', position: past(3) },
      { sourceId: B, targetId: A, kind: 'unrestrict', position: past(4) },
    ];
    const fromCheckpoint = [...foldPair(later, cp.edges).edges.values()];
    const fromHistory = [...foldPair([...OLD.ops, ...later]).edges.values()];
    expect(activeEdges(fromCheckpoint)).toEqual(activeEdges(fromHistory));
    expect(activeEdges(fromCheckpoint)).toEqual([
      `${A} close_friends ${B} @${OLD.horizon - 60n}`,
      `${A} mutes ${B} @${OLD.horizon - 70n}`,
      `${A} restricts ${B} @${past(1)}`,
      `${B} blocks ${A} @${past(3)}`,
    ]);
  });

  it('a pair held only by that checkpoint takes a restrict through the service, its old edges intact (memory store)', async () => {
    const store = new MemoryGraphStore();
    const graph = new GraphService({ store, lists: new SingleBucketLists(store), maxFollowing: 100 });
    await graph.putUser({ id: A, username: 'ada' });
    await graph.putUser({ id: B, username: 'bo' });
    const old = decodeCheckpoint(OLD.horizon, OLD.text);
    await store.appendPair({ pair: [A, B], commit: { checkpoint: old, folded: OLD.count } });
    expect((await store.readPairHistory(A, B)).checkpoint).toEqual(old);

    expect(await graph.restrict(A, B)).toMatchObject({ state: 'restricting', changed: true });
    expect(await graph.relationship(A, B)).toEqual({
      following: 'following',
      followedBy: false,
      blocking: false,
      muting: true,
      restricting: true,
    });
    expect(await graph.relationship(B, A)).toEqual({
      following: 'none',
      followedBy: true,
      blocking: false,
      muting: false,
      restricting: false,
    });
    const active = activeEdges(await store.getPairEdges(A, B));
    expect(active.filter((e) => !e.includes('restricts'))).toEqual(activeEdges(OLD.edges));
    expect(active.filter((e) => e.includes('restricts'))).toHaveLength(1);
  });
});
