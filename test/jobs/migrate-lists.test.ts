import { describe, expect, it } from 'vitest';
import { everyUser, listsToMigrate, migrateLists } from '../../src/jobs/migrate-lists.js';
import type { ListKey } from '../../src/model/types.js';
import { followersOf, loadRows, syntheticRows } from '../support/list-fixtures.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';

const noSleep = () => Promise.resolve();
const name = (l: ListKey) => `${l.userId} ${l.relation}/${l.direction}`;

/** Users 1–4: a hash followers list, a hash following list, a time list, a hash list mid-growth. */
async function world() {
  const store = new MemoryGraphStore();
  for (const id of [1n, 2n, 3n, 4n])
    await store.putUser({ id, username: `u${id}`, private: false, state: 'active', hideLists: false });
  const hash1 = followersOf(1n);
  const hash2: ListKey = { userId: 2n, relation: 'follows', direction: 'out' };
  await loadRows(store, hash1, syntheticRows(40), [4]);
  await store.putLayout(hash1, { buckets: 4, growingTo: null, copiedThrough: 0 });
  await loadRows(store, hash2, syntheticRows(10, { firstId: 5_000_000n }), [2]);
  await store.putLayout(hash2, { buckets: 2, growingTo: null, copiedThrough: 0 });
  await loadRows(store, followersOf(3n), syntheticRows(10), [1]);
  await loadRows(store, followersOf(4n), syntheticRows(10), [2]);
  await store.putLayout(followersOf(4n), { buckets: 2, growingTo: 4, copiedThrough: 0 });
  return store;
}

async function run(store: MemoryGraphStore, killAt?: string) {
  const log: string[] = [];
  const summary = await migrateLists(store, listsToMigrate(store, everyUser(store, 2)), {
    settleMs: 0,
    sleep: noSleep,
    bucketRows: 8,
    onStep: (list, p) => {
      const line = `${name(list)} ${p.step === 'copied' ? `copied ${p.bucket}` : p.step}`;
      log.push(line);
      if (line === killAt) throw new Error(`killed at ${line}`);
    },
    onList: (list, outcome) => log.push(`${name(list)}: ${outcome}`),
  });
  return { summary, log };
}

describe('migrate-lists', () => {
  it('finds every hash list, migrates it, skips a growing one, and resumes after a crash', async () => {
    const store = await world();
    await expect(run(store, '1 follows/in copied 2')).rejects.toThrow('killed at 1 follows/in copied 2');
    const resumed = await run(store);
    expect(resumed.log.sort()).toEqual(
      [
        '1 follows/in copied 3',
        '1 follows/in flipped',
        '1 follows/in finalized',
        '1 follows/in dropped',
        '1 follows/in: migrated',
        '2 follows/out planned',
        '2 follows/out copied 0',
        '2 follows/out copied 1',
        '2 follows/out flipped',
        '2 follows/out finalized',
        '2 follows/out dropped',
        '2 follows/out: migrated',
        '4 follows/in: blocked',
      ].sort(),
    );
    expect(resumed.summary).toEqual({ migrated: 2, 'already-time': 0, blocked: 1, conflict: 0 });
    const again = await run(store);
    expect(again).toEqual({
      summary: { migrated: 0, 'already-time': 0, blocked: 1, conflict: 0 },
      log: ['4 follows/in: blocked'],
    });
    expect(
      await Promise.all([1n, 2n, 3n].map(async (u) => (await store.getDirectory(followersOf(u))).mode)),
    ).toEqual(['time', null, null]);
    expect((await store.getDirectory({ userId: 2n, relation: 'follows', direction: 'out' })).mode).toBe(
      'time',
    );
  });
});
