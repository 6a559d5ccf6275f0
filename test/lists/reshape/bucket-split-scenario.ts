/**
 * The split scenario both stores run (`bucket-split.test.ts` on memory, `bucket-split.int.test.ts`
 * on the real node): a time-bucketed followers list whose closed middle bucket X was overfilled
 * by old-time writes is split (`lists/reshape/bucket-split.ts`) while a writer keeps inserting rows into
 * X's range (old `created_at`s, as an admin replay does) and deleting rows everywhere, a reader
 * walks the list page by page, and a 16-slice scan runs over and over; the split is interrupted
 * twice (mid-copy, then right after the flip) and re-run.
 *
 * What it returns is checked whole by the tests: the steps each run took, every bucket's rows at
 * the end against the writer's reference (each bucket holding exactly the rows of its range), and
 * every walk's and scan's verdict: every member present throughout (there before it began, not
 * touched while it ran) exactly once, nobody twice, and (walks) everything in list order.
 */
import { expect } from 'vitest';
import { BucketedListService } from '../../../src/lists/list-service.js';
import { type SplitStep, splitBucket } from '../../../src/lists/reshape/bucket-split.js';
import { upperOf } from '../../../src/model/time-buckets.js';
import { compareEntries, type ListEntry } from '../../../src/model/types.js';
import type { GraphStore } from '../../../src/ports/graph-store.js';
import { followersOf, newestFirst } from '../../support/list-fixtures.js';
import { mulberry32 } from '../../support/random.js';

export interface SplitScenarioOptions {
  seed: number;
  celeb: bigint;
  /** Rows in X at the start (over 2 × `bucketRows`). */
  initial: number;
  bucketRows: number;
  /** Writer ops awaited at every split step (so writes land between all steps). */
  opsPerStep: number;
  pageLimit: number;
  /** Slices of the scan that runs throughout. */
  slices: number;
}

export interface Verdict {
  missing: bigint[];
  duplicates: bigint[];
  outOfOrder: number;
  /** Split stages (`none` before and after) the run's pages were read under, in order. */
  stages: string[];
}

export interface SplitScenarioResult {
  runs: string[][];
  errors: string[];
  children: number[];
  /** Each bucket's rows at the end, newest bucket first, concatenated. */
  rows: ListEntry[];
  /** The writer's reference, in list order. */
  reference: ListEntry[];
  /** Rows found in a bucket outside its range (a parent's moved rows not deleted). */
  outOfRange: number;
  pendingSplit: unknown;
  walks: Verdict[];
  scans: Verdict[];
  writerOps: number;
}

/** X covers [T1, T2); the first bucket holds older rows, the newest bucket newer ones. */
const T1 = 1_000_000_000n;
const T2 = 2_000_000_000n;
const T3 = 3_000_000_000n;
const X = 4096;

export async function runInterruptedSplit(
  store: GraphStore,
  o: SplitScenarioOptions,
): Promise<SplitScenarioResult> {
  const random = mulberry32(o.seed);
  const list = followersOf(o.celeb);
  const lists = new BucketedListService({
    store,
    cursorSecret: 'bucket-split-scenario-secret',
    bucketThresholds: [1e9],
    layoutCacheTtlMs: 0,
    writeGraceMs: 0,
    timeBucketRows: 1e9,
  });
  await store.updateDirectory(list, 0, {
    mode: 'time',
    add: [
      { id: X, start: T1, base: 0 },
      { id: X + 1, start: T2, base: 0 },
    ],
  });

  let version = 10n ** 15n;
  let nextId = o.celeb + 1n;
  const live = new Map<bigint, ListEntry>();
  const write = async (entry: ListEntry, op: 'put' | 'delete') => {
    const placement = await lists.placement(list);
    const row = op === 'put' ? { ...entry, username: `u${entry.otherId}` } : entry;
    version += 1n;
    await store.writeEdges([], [{ list, bucketCodes: placement.codes(entry), entry: row, op }], version);
  };
  const at = (lo: bigint, hi: bigint) => lo + BigInt(Math.floor(random() * Number(hi - lo)));
  const insert = async (lo: bigint, hi: bigint) => {
    const entry = { createdAt: at(lo, hi), otherId: nextId++ };
    await write(entry, 'put');
    live.set(entry.otherId, entry);
    return entry.otherId;
  };
  for (let i = 0; i < 4; i++) await insert(0n, T1);
  for (let i = 0; i < o.initial; i++) await insert(T1, T2);
  for (let i = 0; i < 4; i++) await insert(T2, T3);

  // The writer: mostly old-time inserts into X's range, and deletes anywhere.
  let stop = false;
  let ops = 0;
  let inFlight: Promise<unknown> = Promise.resolve();
  const touchedBy = new Set<Set<bigint>>();
  const opWaiters: { at: number; resolve: () => void }[] = [];
  const writer = (async () => {
    while (!stop) {
      const r = random();
      let op: Promise<bigint>;
      if (r < 0.55 || live.size < 10) {
        op = insert(T1, T2);
      } else if (r < 0.6) {
        op = insert(0n, T1);
      } else {
        const ids = [...live.keys()];
        const id = ids[Math.floor(random() * ids.length)]!;
        const entry = live.get(id)!;
        live.delete(id);
        op = write(entry, 'delete').then(() => id);
      }
      inFlight = op;
      const id = await op;
      for (const touched of touchedBy) touched.add(id);
      ops++;
      for (const w of opWaiters.filter((w) => ops >= w.at)) {
        opWaiters.splice(opWaiters.indexOf(w), 1);
        w.resolve();
      }
      await new Promise((r) => setImmediate(r));
    }
  })();
  const moreOps = (n: number) =>
    new Promise<void>((resolve) => {
      if (stop) resolve();
      else opWaiters.push({ at: ops + n, resolve });
    });
  const stage = async () => (await store.getDirectory(list)).split?.stage ?? 'none';

  /** Who is present throughout a run, and the run's verdict on what it returned. */
  const judge = (
    present: Set<bigint>,
    touched: Set<bigint>,
    seen: ListEntry[],
    stages: string[],
    ordered: boolean,
  ) => {
    const counts = new Map<bigint, number>();
    for (const e of seen) counts.set(e.otherId, (counts.get(e.otherId) ?? 0) + 1);
    return {
      missing: [...present].filter((id) => !touched.has(id) && !counts.has(id)),
      duplicates: [...counts].filter(([, n]) => n > 1).map(([id]) => id),
      outOfOrder: ordered ? seen.filter((e, i) => i > 0 && compareEntries(seen[i - 1]!, e) >= 0).length : 0,
      stages,
    };
  };
  const begin = () => {
    const touched = new Set<bigint>();
    touchedBy.add(touched);
    return { touched, present: new Set(live.keys()) };
  };

  /** A run read step by step: `next()` reads one more page (false at the end), `done()` judges it. */
  interface Reading {
    next(): Promise<boolean>;
    done(): void;
  }
  const walks: Verdict[] = [];
  const openWalk = (): Reading => {
    const { touched, present } = begin();
    const seen: ListEntry[] = [];
    const stages: string[] = [];
    let cursor: string | null = null;
    return {
      next: async () => {
        const s = await stage();
        if (stages.at(-1) !== s) stages.push(s);
        const page = await lists.page(list, o.pageLimit, cursor);
        seen.push(...page.items.map((i) => ({ createdAt: i.createdAt, otherId: i.id })));
        cursor = page.nextCursor;
        return cursor !== null;
      },
      done: () => {
        touchedBy.delete(touched);
        walks.push(judge(present, touched, seen, stages, true));
      },
    };
  };
  // The scanner's runs: all slices advance one page per step, so every slice is mid-bucket at steps.
  const scans: Verdict[] = [];
  const openScan = (): Reading => {
    const { touched, present } = begin();
    const seen: ListEntry[] = [];
    const stages: string[] = [];
    const cursors = new Map<number, string | null>(Array.from({ length: o.slices }, (_, s) => [s, null]));
    return {
      next: async () => {
        const s = await stage();
        if (stages.at(-1) !== s) stages.push(s);
        for (const [slice, cursor] of [...cursors]) {
          const page = await lists.scan(list, slice, o.slices, 3, cursor);
          seen.push(...page.ids.map((id) => ({ createdAt: 0n, otherId: id })));
          if (page.nextCursor === null) cursors.delete(slice);
          else cursors.set(slice, page.nextCursor);
        }
        return cursors.size > 0;
      },
      done: () => {
        touchedBy.delete(touched);
        scans.push(judge(present, touched, seen, stages, false));
      },
    };
  };
  /** Reads `r` to its end, one step per writer op (paced by the writer, so a run spans split steps). */
  const finish = async (r: Reading, more = true) => {
    while (more) {
      more = await r.next();
      await moreOps(1);
    }
    r.done();
  };
  // Two readers, out of step, and the scanner, over and over.
  const read = async (delay: number, open: () => Reading) => {
    await moreOps(delay);
    while (!stop) await finish(open());
  };
  const readers = [read(0, openWalk), read(5, openWalk), read(0, openScan)];
  // A walk and a scan held across the flip whatever the timing: their first step at the last copy
  // (under `dual`), their next right after the flip (`flipped`), the rest beside the others. (The
  // readers alone missed the flipped stage now and then: it lasts a few writer ops, a page may take
  // longer on a busy machine.)
  let held: Reading[] = [];
  const finishing: Promise<void>[] = [];

  const runs: string[][] = [];
  const errors: string[] = [];
  let children: number[] = [];
  const killAt = ['copied 1', 'flipped'];
  for (let run = 0; run < 3; run++) {
    const steps: string[] = [];
    runs.push(steps);
    try {
      const r = await splitBucket(store, list, X, {
        settleMs: 0,
        // The real settle outlasts every write that read the directory before the step.
        sleep: async () => {
          await inFlight;
          await moreOps(1);
        },
        bucketRows: o.bucketRows,
        pageSize: 4,
        onProgress: async (p: SplitStep) => {
          const name = p.step === 'copied' ? `copied ${p.child - children[0]!}` : p.step;
          if (p.step === 'planned') children = p.children;
          steps.push(name);
          if (p.step === 'copied' && p.child === children.at(-1) && held.length === 0) {
            held = [openWalk(), openScan()];
            for (const r of held) await r.next();
          }
          if (p.step === 'flipped' && finishing.length === 0) {
            for (const r of held) finishing.push(finish(r, await r.next()));
          }
          await moreOps(o.opsPerStep);
          if (name === killAt[run]) throw new Error(`killed at ${name}`);
        },
      });
      if (r.outcome === 'split') children = r.children;
    } catch (e) {
      errors.push(e instanceof Error ? e.message : String(e));
    }
    await moreOps(o.opsPerStep);
  }
  await Promise.all(finishing);
  // A walk and a scan entirely after the split.
  const [w0, s0] = [walks.length, scans.length];
  while (walks.length < w0 + 2 || scans.length < s0 + 2) await moreOps(1);
  stop = true;
  await writer;
  for (const w of opWaiters.splice(0)) w.resolve();
  await Promise.all(readers);

  const directory = await store.getDirectory(list);
  const rows: ListEntry[] = [];
  let outOfRange = 0;
  for (const [i, b] of directory.buckets.entries()) {
    const upper = upperOf(directory, i);
    const part = await store.listBucket(list, b.id, null, 1_000_000);
    outOfRange += part.filter(
      (r) => (upper !== null && r.createdAt >= upper) || (b.start !== null && r.createdAt < b.start),
    ).length;
    rows.push(...part);
  }
  return {
    runs,
    errors,
    children,
    rows,
    reference: newestFirst([...live.values()].map((e) => ({ ...e, username: `u${e.otherId}` }))),
    outOfRange,
    pendingSplit: directory.split ?? null,
    walks,
    scans,
    writerOps: ops,
  };
}

/**
 * What both stores' runs must show: the steps of each run and the two kills, no split left pending
 * and no row outside its bucket's range, the rows equal to the writer's reference, and no walk or
 * scan that missed, repeated or (walks) misordered a member, with at least one of each across the flip.
 */
export function expectSplitInterruptedTwice(r: SplitScenarioResult): void {
  const n = r.children.length;
  expect(n).toBeGreaterThanOrEqual(4);
  expect(r.runs).toEqual([
    ['planned', 'copied 0', 'copied 1'],
    [...Array.from({ length: n - 2 }, (_, i) => `copied ${i + 2}`), 'flipped'],
    ['flipped', 'finalized', 'deleted'],
  ]);
  expect(r.errors).toEqual(['killed at copied 1', 'killed at flipped']);
  expect([r.pendingSplit, r.outOfRange]).toEqual([null, 0]);
  expect(r.rows).toEqual(r.reference);
  const bad = (v: { missing: bigint[]; duplicates: bigint[]; outOfOrder: number }) =>
    v.missing.length + v.duplicates.length + v.outOfOrder > 0;
  expect(r.walks.filter(bad)).toEqual([]);
  expect(r.scans.filter(bad)).toEqual([]);
  const across = (v: { stages: string[] }) => v.stages.includes('dual') && v.stages.includes('flipped');
  expect([r.walks.some(across), r.scans.some(across)]).toEqual([true, true]);
}
