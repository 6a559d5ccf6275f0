/**
 * Fan-out scans that skip the inactive (`active_since`), on the in-memory store behind
 * the real list service: random followers lists in time buckets, random activity (some never
 * reported, some deactivated), random slice counts 1–1024 and page sizes. Across the slices a scan
 * returns exactly the members active since the bound and not deactivated, each once, and every
 * slice returns what the unfiltered scan of that slice returns minus the inactive (the coverage is
 * unchanged). Replay with `ACTIVE_SCAN_SEED=<seed>` (printed every run).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GraphService } from '../../../src/graph/graph-service.js';
import { BucketedListService } from '../../../src/lists/list-service.js';
import type { ListEntry } from '../../../src/model/types.js';
import { followersOf, loadTimeRows } from '../../support/list-fixtures.js';
import { MemoryGraphStore } from '../../support/memory/graph-store.js';

const SEED = Number(process.env.ACTIVE_SCAN_SEED ?? Date.now() % 2_147_483_647);
const T0 = 1_796_000_000_000_000n;
const sortIds = (xs: bigint[]) => [...xs].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

describe('scans with active_since', () => {
  it('cover exactly the active members across the slices, each once, each slice its unfiltered coverage minus the inactive', async () => {
    console.log(`[active scan] seed=${SEED} (replay: ACTIVE_SCAN_SEED=${SEED})`);
    let skipped = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            // Minutes after T0 of the last activity; null: never reported.
            active: fc.option(fc.integer({ min: 0, max: 100 }), { nil: null, freq: 4 }),
            deactivated: fc.integer({ min: 0, max: 9 }).map((n) => n < 2),
          }),
          { maxLength: 120 },
        ),
        fc.integer({ min: 1, max: 25 }),
        fc.oneof(fc.integer({ min: 1, max: 9 }), fc.constantFrom(64, 1024)),
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 0, max: 100 }),
        async (members, bucketRows, slices, limit, sinceMinute) => {
          const store = new MemoryGraphStore();
          const lists = new BucketedListService({
            store,
            cursorSecret: 'active-scan-secret-0123456789',
            bucketThresholds: [1_000_000_000],
            layoutCacheTtlMs: 0,
          });
          const hidden = new Set<bigint>();
          const graph = new GraphService({
            store,
            lists,
            maxFollowing: 10_000,
            memberFilter: async (ids) => new Set(ids.filter((id) => hidden.has(id))),
          });
          const minute = 60_000_000n;
          const rows: ListEntry[] = members.map((_, i) => ({
            createdAt: T0 + BigInt(i) * 1000n,
            otherId: 500n + BigInt(i),
          }));
          await loadTimeRows(store, followersOf(1n), rows, bucketRows);
          members.forEach((m, i) => {
            if (m.deactivated) hidden.add(500n + BigInt(i));
          });
          for (const [i, m] of members.entries())
            if (m.active !== null) await store.putActivity(500n + BigInt(i), T0 + BigInt(m.active) * minute);
          const since = T0 + BigInt(sinceMinute) * minute;
          const expected = members.flatMap((m, i) =>
            m.active !== null && m.active >= sinceMinute && !m.deactivated ? [500n + BigInt(i)] : [],
          );
          const scanSlice = async (slice: number, activeSince?: bigint) => {
            const ids: bigint[] = [];
            let cursor: string | null = null;
            do {
              const p = await graph.scanPage(
                followersOf(1n),
                slice,
                slices,
                limit,
                cursor,
                activeSince === undefined ? {} : { activeSince },
              );
              expect(p.ids.length).toBeLessThanOrEqual(limit);
              ids.push(...p.ids);
              cursor = p.nextCursor;
            } while (cursor);
            return ids;
          };
          const filtered: bigint[][] = [];
          const whole: bigint[][] = [];
          for (let s = 0; s < slices; s++) {
            filtered.push(await scanSlice(s, since));
            whole.push(await scanSlice(s));
          }
          const keep = new Set(expected);
          expect(filtered.flat().length).toBe(new Set(filtered.flat()).size);
          expect(sortIds(filtered.flat())).toEqual(sortIds(expected));
          expect(filtered.map(sortIds)).toEqual(
            whole.map((ids) => sortIds(ids.filter((id) => keep.has(id)))),
          );
          skipped += whole.flat().length - filtered.flat().length;
        },
      ),
      { seed: SEED, numRuns: 60 },
    );
    console.log(`[active scan] members skipped as inactive over all runs: ${skipped}`);
    expect(skipped).toBeGreaterThan(0);
  });
});
