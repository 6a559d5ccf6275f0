/**
 * A rename of an account with 20,000 followers (200,000 with `SOAK=1`, the size `docs/benchmarks.md`'s rate
 * comes from; `SEARCH_RENAME_FOLLOWERS` sets it) reaches search on the real node: a fixture writes
 * X's followers list, each follower's following row for X and its search row under X's name
 * directly (raw batched CQL, as `bench:load` writes rows: 200,000 follows through the service
 * would take the test's whole budget), X is renamed, the fan-out runs, and then, for a sample of
 * followers, their following-search finds X under the new name and not under the old one. The
 * fan-out's rate is printed (`docs/design/search.md` quotes it). At the soak size the whole
 * test is meant to fit about 120 s on the shared 2-core machine; there is no timed assertion
 * (rates are benches').
 */

import { describe, expect, it } from 'vitest';
import { runRenameFanout } from '../../../src/graph/accounts/rename-fanout.js';
import { GraphService } from '../../../src/graph/graph-service.js';
import { BucketedListService } from '../../../src/lists/list-service.js';
import { searchPrefix } from '../../../src/model/search.js';
import type { ListKey, UserId } from '../../../src/model/types.js';
import { CassandraGraphStore } from '../../../src/store/cassandra/graph-store.js';
import { LQ, Q } from '../../../src/store/cassandra/statements.js';
import { testKeyspace } from '../../support/cassandra.js';
import { mulberry32 } from '../../support/random.js';
import { knob } from '../../support/soak.js';

const FOLLOWERS = knob('SEARCH_RENAME_FOLLOWERS', 200_000, 20_000);
const SEED = Number(process.env.SEARCH_RENAME_SEED ?? Date.now() % 2_147_483_647);
const X = 1n;
const FIRST = 1_000_000n;
const T0 = 1_796_000_000_000_000n;
/** Followers whose searches are checked. */
const SAMPLE = 200;

describe(`rename of a ${FOLLOWERS}-follower account and search`, () => {
  it(`search finds the new name and not the old one in sampled followers’ following-search after the fan-out (${FOLLOWERS} followers)`, async () => {
    console.log(`[search rename] seed=${SEED} (replay: SEARCH_RENAME_SEED=${SEED})`);
    const ks = await testKeyspace('search_rename');
    try {
      const client = ks.client;
      const store = new CassandraGraphStore(client);
      const opts = { prepare: true };
      await client.execute(Q.putUser, [X, 'xavier', false, 'active', false, 1n], opts);
      await client.execute(Q.claimUsername, ['xavier', X], opts);
      const started = performance.now();
      // X's followers rows in one partition (a one-bucket list: time bucket 1), 100 a batch; each
      // follower's following row for X and its search row under 'xavier', at the row's version.
      const inflight = new Set<Promise<unknown>>();
      const send = async (p: () => Promise<unknown>) => {
        while (inflight.size >= 256) await Promise.race(inflight);
        const q = p().finally(() => inflight.delete(q));
        inflight.add(q);
      };
      for (let i = 0; i < FOLLOWERS; i += 100) {
        const batch: { query: string; params: unknown[] }[] = [];
        let theirs: { query: string; params: unknown[] }[] = [];
        for (let k = i; k < Math.min(i + 100, FOLLOWERS); k++) {
          const f = FIRST + BigInt(k);
          const pos = T0 + BigInt(k);
          const v = pos * 1024n + 1n;
          batch.push({ query: LQ.followers.putRow, params: [X, 1, pos, f, pos, v] });
          batch.push({ query: LQ.followers.setUsername, params: [v - 1n, `f${f}`, X, 1, pos, f] });
          // The following row, its name and its search row: two partitions of the follower's;
          // ten followers' rows a request (an unlogged batch over 20 partitions).
          theirs.push(
            { query: LQ.following.putRow, params: [f, 1, pos, X, pos, v] },
            { query: LQ.following.setUsername, params: [v - 1n, 'xavier', f, 1, pos, X] },
            { query: Q.searchPut, params: [f, 'out', 'xa', 'xavier', X, 'xavier', pos, v] },
          );
          if (theirs.length === 30 || k === FOLLOWERS - 1) {
            const group = theirs;
            theirs = [];
            await send(() => client.batch(group, { ...opts, logged: false }));
          }
        }
        await send(() => client.batch(batch, { ...opts, logged: false }));
      }
      await Promise.all(inflight);
      const loaded = (performance.now() - started) / 1000;

      const graph = new GraphService({
        store,
        lists: new BucketedListService({
          store,
          cursorSecret: 'search-rename-secret-0123456789',
          bucketThresholds: [1_000_000_000],
        }),
        maxFollowing: 7500,
        countLeaseMs: 0,
        historyPolicy: { writeBudgetMs: 100, viewBudgetMs: 100, batchTimeoutMs: 100, clockSkewMs: 50 },
        events: false,
        memberFilter: async () => new Set(),
      });
      const random = mulberry32(SEED);
      const sample = Array.from({ length: SAMPLE }, () => FIRST + BigInt(Math.floor(random() * FOLLOWERS)));
      const following = (f: UserId): ListKey => ({ userId: f, relation: 'follows', direction: 'out' });
      const search = async (f: UserId, q: string) =>
        (await graph.search(following(f), q, 10, null)).items.map((m) => ({
          id: m.id,
          username: m.username,
        }));
      expect(await search(sample[0] as UserId, 'xav')).toEqual([{ id: X, username: 'xavier' }]);

      // The rename, and its task run to the end here (the service's own run is this same call).
      const renameAt = performance.now();
      await graph.putUser({ id: X, username: 'Zed_X' });
      await graph.settleAccountTasks();
      expect(await store.getAccountTask(X, 'rename_fanout')).toBeNull();
      expect(await runRenameFanout(store, X)).toBe(0);
      const fanout = (performance.now() - renameAt) / 1000;
      console.log(
        `[search rename] ${FOLLOWERS} followers: fixture ${loaded.toFixed(1)} s, rename fan-out ${fanout.toFixed(1)} s ` +
          `(${Math.round(FOLLOWERS / fanout)} rows/s, incl. the write-path bound)`,
      );

      const found = await Promise.all(
        sample.map(async (f) => ({
          f,
          newName: await search(f, 'zED'),
          oldName: await search(f, 'xa'),
          one: await search(f, 'z'),
        })),
      );
      expect(found).toEqual(
        sample.map((f) => ({
          f,
          newName: [{ id: X, username: 'Zed_X' }],
          oldName: [],
          one: [{ id: X, username: 'Zed_X' }],
        })),
      );
      // Nothing is left in the old name's partition of a sampled list, and the new one holds X once.
      const rows = await Promise.all(
        sample
          .slice(0, 20)
          .map(async (f) => [
            await store.listSearchRows(
              following(f),
              searchPrefix('xavier'),
              { lower: '', otherId: 0n },
              '\uffff',
              10,
            ),
            (await store.listSearchRows(following(f), 'ze', { lower: '', otherId: 0n }, '\uffff', 10)).map(
              (r) => r.otherId,
            ),
          ]),
      );
      expect(rows).toEqual(sample.slice(0, 20).map(() => [[], [X]]));
    } finally {
      await ks.drop();
    }
  }, 600_000);
});
