import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CursorCodec } from '../../../src/lists/cursor/cursor-codec.js';
import {
  type BucketState,
  compareEntries,
  mergePage,
  type PageStats,
} from '../../../src/lists/cursor/merge.js';
import type { ListEntry, ListKey } from '../../../src/model/types.js';

const SEED = Number(process.env.FC_SEED ?? (Date.now() ^ (Math.random() * 0x7fffffff)) | 0);
console.log(`[merge.test] fast-check seed ${SEED} (rerun with FC_SEED=${SEED})`);

const list: ListKey = { userId: 42n, relation: 'follows', direction: 'in' };
const codec = new CursorCodec('merge-test-secret-0123456789');

/** Buckets as sorted arrays; `fetch` is the store contract (strictly after, newest first). */
function source(buckets: ListEntry[][]) {
  const sorted = buckets.map((b) => [...b].sort(compareEntries));
  return (code: number, after: ListEntry | null, limit: number) => {
    const rows = sorted[code]!;
    let i = 0;
    if (after) while (i < rows.length && compareEntries(rows[i]!, after) <= 0) i++;
    return Promise.resolve(rows.slice(i, i + limit));
  };
}

/** Walks every page through the real cursor codec (so ceilings are rounded as in production). */
async function walk(buckets: ListEntry[][], pageSizes: number[]) {
  const fetch = source(buckets);
  const n = buckets.length;
  const codes = buckets.map((_, i) => i);
  let token: string | null = null;
  const out: ListEntry[] = [];
  const stats: PageStats[] = [];
  for (let page = 0; ; page++) {
    const limit = pageSizes[page % pageSizes.length]!;
    let states: BucketState[] = codes.map(() => ({ exhausted: false, ceiling: null }));
    let after: ListEntry | null = null;
    let gapUs = 0;
    if (token) {
      const c = codec.decodePage(token, list);
      ({ states, after, gapUs } = c);
    }
    const r = await mergePage({ codes, states, after, limit, gapUs, fetch });
    out.push(...r.items);
    stats.push(r.stats);
    expect(r.items.length).toBeLessThanOrEqual(limit);
    if (r.done || r.items.length < limit) break;
    token = codec.encodePage({ list, buckets: n, after: r.after!, gapUs: r.gapUs, states: r.states });
    if (page > 100_000) throw new Error('walk does not terminate');
  }
  return { out, stats };
}

const entry = (maxTime: number) =>
  fc.record({ createdAt: fc.bigInt(1n, BigInt(maxTime)), otherId: fc.bigInt(1n, (1n << 63n) - 1n) });

function dedupe(rows: ListEntry[][]): ListEntry[][] {
  const seen = new Set<bigint>();
  return rows.map((b) => b.filter((e) => !seen.has(e.otherId) && seen.add(e.otherId)));
}

const layoutArb = fc.constantFrom(1, 2, 4, 8, 16, 64);

describe('mergePage against a sorted reference', () => {
  it('random buckets, page sizes and equal timestamps give the reference sequence', async () => {
    await fc.assert(
      fc.asyncProperty(
        layoutArb.chain((n) =>
          fc.tuple(
            fc.array(
              fc.array(entry(fc.sample(fc.constantFrom(3, 50, 1e6, 1.7e15), 1)[0]!), { maxLength: 40 }),
              {
                minLength: n,
                maxLength: n,
              },
            ),
            fc.array(fc.integer({ min: 1, max: 60 }), { minLength: 1, maxLength: 5 }),
          ),
        ),
        async ([raw, pageSizes]) => {
          const buckets = dedupe(raw);
          const reference = buckets.flat().sort(compareEntries);
          const { out } = await walk(buckets, pageSizes);
          expect(out).toEqual(reference);
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('one giant bucket among empty ones, and all-equal timestamps', async () => {
    await fc.assert(
      fc.asyncProperty(
        layoutArb,
        fc.integer({ min: 0, max: 63 }),
        fc.integer({ min: 0, max: 600 }),
        fc.boolean(),
        fc.array(fc.integer({ min: 1, max: 200 }), { minLength: 1, maxLength: 4 }),
        async (n, giantAt, size, sameTime, pageSizes) => {
          const buckets: ListEntry[][] = Array.from({ length: n }, () => []);
          const giant = buckets[giantAt % n]!;
          for (let i = 0; i < size; i++) {
            giant.push({ createdAt: sameTime ? 7n : BigInt(1_000 + i * 13), otherId: BigInt(i + 1) });
          }
          if (n > 1) buckets[(giantAt + 1) % n]!.push({ createdAt: 7n, otherId: 100_000n });
          const reference = buckets.flat().sort(compareEntries);
          const { out } = await walk(buckets, pageSizes);
          expect(out).toEqual(reference);
        },
      ),
      { seed: SEED, numRuns: 200 },
    );
  });

  it('reads about limit + touched buckets rows per page at N = 64, limit = 50', async () => {
    const n = 64;
    let x = 12345;
    const rnd = () => {
      x = (Math.imul(x, 1103515245) + 12345) & 0x7fffffff;
      return x / 0x7fffffff;
    };
    const buckets: ListEntry[][] = Array.from({ length: n }, () => []);
    for (let i = 0; i < 20_000; i++) {
      buckets[Math.floor(rnd() * n)]!.push({
        createdAt: 1_700_000_000_000_000n + BigInt(Math.floor(rnd() * 1e12)),
        otherId: BigInt(i + 1),
      });
    }
    const reference = buckets.flat().sort(compareEntries);
    const { out, stats } = await walk(buckets, [50]);
    expect(out).toEqual(reference);
    const avgRows = stats.reduce((s, p) => s + p.rowsRead, 0) / stats.length;
    const avgQueries = stats.reduce((s, p) => s + p.queries, 0) / stats.length;
    console.log(
      `[merge.test] N=64 limit=50 over ${stats.length} pages: ${avgRows.toFixed(1)} rows, ${avgQueries.toFixed(1)} queries, ${(stats.reduce((s, p) => s + p.rounds, 0) / stats.length).toFixed(2)} rounds, ${(stats.reduce((s, p) => s + p.buckets, 0) / stats.length).toFixed(1)} buckets per page; page 1: ${stats[0]!.rowsRead} rows, ${stats[0]!.queries} queries`,
    );
    expect(avgRows).toBeLessThanOrEqual(100);
    expect(avgQueries).toBeLessThanOrEqual(51);
  });
});
