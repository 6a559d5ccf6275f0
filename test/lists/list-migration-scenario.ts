/**
 * The migration scenario both stores run (`list-migration.test.ts` on memory,
 * `list-migration.int.test.ts` on the real node): a celebrity's followers list, hash bucketed
 * (N = 4, as lists grown before time buckets are), migrated to time buckets while a writer
 * follows and unfollows through `GraphService` and a reader walks the list page by page, the
 * migration interrupted twice (mid-copy, then right after the flip) and re-run.
 *
 * What it returns is checked whole by the tests: the steps each run took, the list's rows at the
 * end against the folded edges, and every walk's verdict — a walk must return every member
 * present throughout it (followed before it began, not touched while it ran) exactly once, no
 * member twice, and everything in list order.
 */
import { expect } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { type MigrationStep, migrateList } from '../../src/lists/list-migration.js';
import { BucketedListService } from '../../src/lists/list-service.js';
import { bucketCode } from '../../src/model/buckets.js';
import { bucketFor, type RowMode } from '../../src/model/time-buckets.js';
import { compareEntries, type ListEntry } from '../../src/model/types.js';
import type { GraphStore } from '../../src/ports/graph-store.js';
import { followersOf, newestFirst } from '../support/list-fixtures.js';
import { mulberry32 } from '../support/random.js';

export interface ScenarioOptions {
  seed: number;
  celeb: bigint;
  fans: number;
  /** Fans following before the migration starts. */
  initial: number;
  /** Rows per planned time bucket. */
  bucketRows: number;
  /** Writer ops awaited at every migration step (so writes land between all steps). */
  opsPerStep: number;
  pageLimit: number;
}

export interface WalkVerdict {
  /** Modes the walk's pages were read under (`dual` … `time`), in order, deduplicated. */
  modes: RowMode[];
  missing: bigint[];
  duplicates: bigint[];
  outOfOrder: number;
}

export interface ScenarioResult {
  runs: string[][];
  errors: string[];
  finalMode: RowMode | null;
  progress: unknown;
  /** Rows of every time bucket, newest bucket first, concatenated. */
  rows: ListEntry[];
  /** Active follows of the celebrity, folded from the edges, in list order. */
  edges: ListEntry[];
  /** Rows that sit in a time bucket other than the one their `created_at` names. */
  misplaced: number;
  /** Rows left in the hash partitions. */
  hashRows: number;
  walks: WalkVerdict[];
  writerOps: number;
  /** The writer's own record of who follows at the end, in id order. */
  followers: bigint[];
}

const HASH_BUCKETS = 4;

export async function runInterruptedMigration(
  store: GraphStore,
  o: ScenarioOptions,
): Promise<ScenarioResult> {
  const random = mulberry32(o.seed);
  const list = followersOf(o.celeb);
  const lists = new BucketedListService({
    store,
    cursorSecret: 'list-migration-scenario-secret',
    bucketThresholds: [1e9],
    layoutCacheTtlMs: 0,
    writeGraceMs: 0,
  });
  const graph = new GraphService({ store, lists, maxFollowing: 1000 });
  const fans = Array.from({ length: o.fans }, (_, i) => o.celeb + 1n + BigInt(i));
  await graph.putUser({ id: o.celeb, username: `c${o.celeb}` });
  for (const f of fans) await graph.putUser({ id: f, username: `f${f}` });
  // A list grown before time buckets: a hash layout and no directory.
  await store.putLayout(list, { buckets: HASH_BUCKETS, growingTo: null, copiedThrough: 0 });

  const following = new Set<bigint>();
  for (const f of fans.slice(0, o.initial)) {
    await graph.follow(f, o.celeb);
    following.add(f);
  }

  // The writer: one op at a time; `inFlight` is what a settle must outwait.
  let stop = false;
  let ops = 0;
  let inFlight: Promise<unknown> = Promise.resolve();
  let inFlightTarget: bigint | null = null;
  const activeWalks = new Set<Set<bigint>>();
  const opWaiters: { at: number; resolve: () => void }[] = [];
  const writer = (async () => {
    while (!stop) {
      const fan = fans[Math.floor(random() * fans.length)]!;
      inFlightTarget = fan;
      for (const touched of activeWalks) touched.add(fan);
      const follow = !following.has(fan);
      inFlight = follow ? graph.follow(fan, o.celeb) : graph.unfollow(fan, o.celeb);
      await inFlight;
      if (follow) following.add(fan);
      else following.delete(fan);
      inFlightTarget = null;
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
      opWaiters.push({ at: ops + n, resolve });
    });

  // The reader: walks the whole list again and again.
  const walks: WalkVerdict[] = [];
  const reader = (async () => {
    while (!stop) {
      const touched = new Set<bigint>(inFlightTarget === null ? [] : [inFlightTarget]);
      activeWalks.add(touched);
      const present = new Set(following);
      const seen: ListEntry[] = [];
      const modes: RowMode[] = [];
      let cursor: string | null = null;
      do {
        const mode = (await store.getDirectory(list)).mode ?? 'hash';
        if (modes.at(-1) !== mode) modes.push(mode);
        const page = await lists.page(list, o.pageLimit, cursor);
        seen.push(...page.items.map((i) => ({ createdAt: i.createdAt, otherId: i.id })));
        cursor = page.nextCursor;
        await new Promise((r) => setImmediate(r));
      } while (cursor);
      activeWalks.delete(touched);
      walks.push(verdict(modes, present, touched, seen));
    }
  })();

  // One walk held across the migration: two pages under `dual` (hash pages, a hash cursor), the
  // rest after the last run (time pages, resumed from that cursor).
  const held = {
    touched: new Set<bigint>(),
    present: new Set<bigint>(),
    seen: [] as ListEntry[],
    cursor: null as string | null,
    started: false,
  };
  const holdWalk = async () => {
    held.started = true;
    held.touched = new Set(inFlightTarget === null ? [] : [inFlightTarget]);
    activeWalks.add(held.touched);
    held.present = new Set(following);
    for (let i = 0; i < 2; i++) {
      const page = await lists.page(list, o.pageLimit, held.cursor);
      held.seen.push(...page.items.map((it) => ({ createdAt: it.createdAt, otherId: it.id })));
      held.cursor = page.nextCursor;
    }
  };

  const runs: string[][] = [];
  const errors: string[] = [];
  const killAt = ['copied 1', 'flipped'];
  for (let run = 0; run < 3; run++) {
    const steps: string[] = [];
    runs.push(steps);
    try {
      await migrateList(store, list, {
        settleMs: 0,
        // The real settle outlasts every write that read the directory before the step.
        sleep: async () => {
          await inFlight;
          await moreOps(1);
        },
        bucketRows: o.bucketRows,
        copyPageSize: 3,
        planPageSize: 4,
        onProgress: async (p: MigrationStep) => {
          const name = p.step === 'copied' ? `copied ${p.bucket}` : p.step;
          steps.push(name);
          if (name === 'copied 0' && !held.started) await holdWalk();
          await moreOps(o.opsPerStep);
          if (name === killAt[run]) throw new Error(`killed at ${name}`);
        },
      });
    } catch (e) {
      errors.push(e instanceof Error ? e.message : String(e));
    }
    await moreOps(o.opsPerStep);
  }
  // The held walk ends in time buckets.
  while (held.cursor) {
    const page = await lists.page(list, o.pageLimit, held.cursor);
    held.seen.push(...page.items.map((it) => ({ createdAt: it.createdAt, otherId: it.id })));
    held.cursor = page.nextCursor;
  }
  activeWalks.delete(held.touched);
  walks.push(verdict(['dual', 'time'], held.present, held.touched, held.seen));
  // One more walk entirely in time buckets.
  const walksBefore = walks.length;
  while (walks.length < walksBefore + 2) await moreOps(1);
  stop = true;
  await Promise.all([writer, reader]);

  const directory = await store.getDirectory(list);
  const rows: ListEntry[] = [];
  let misplaced = 0;
  for (const b of directory.buckets) {
    const part = await store.listBucket(list, b.id, null, 1_000_000);
    misplaced += part.filter((r) => bucketFor(directory, r.createdAt).id !== b.id).length;
    rows.push(...part);
  }
  const layout = await store.getLayout(list);
  const folded = await store.getEdgesIn(o.celeb, 'follows', fans, layout);
  const edges = newestFirst(
    [...folded.values()]
      .filter((e) => e.state === 'active')
      // Every row carries its member's username (written with the follow, kept by the copy).
      .map((e) => ({ createdAt: e.createdAt, otherId: e.sourceId, username: `f${e.sourceId}` })),
  );
  let hashRows = 0;
  for (let b = 0; b < HASH_BUCKETS; b++) {
    hashRows += (await store.listBucket(list, bucketCode(HASH_BUCKETS, b), null, 1_000_000)).length;
  }
  return {
    runs,
    errors,
    finalMode: directory.mode,
    progress: await store.getListMigration(list),
    rows,
    edges,
    misplaced,
    hashRows,
    walks,
    writerOps: ops,
    followers: [...following].sort((a, b) => (a < b ? -1 : 1)),
  };
}

/**
 * What both stores' runs must show: the steps of each run and where the two kills fell, the list
 * in time mode with nothing left of the migration, every row where the directory places it and
 * equal to the folded edges, and no walk that missed, repeated or misordered a member.
 */
export function expectInterruptedTwice(r: ScenarioResult): void {
  expect(r.runs).toEqual([
    ['planned', 'copied 0', 'copied 1'],
    ['copied 2', 'copied 3', 'flipped'],
    ['flipped', 'finalized', 'dropped'],
  ]);
  expect(r.errors).toEqual(['killed at copied 1', 'killed at flipped']);
  expect([r.finalMode, r.progress, r.misplaced, r.hashRows]).toEqual(['time', null, 0, 0]);
  expect(r.rows).toEqual(r.edges);
  expect(r.edges.map((e) => e.otherId).sort((a, b) => (a < b ? -1 : 1))).toEqual(r.followers);
  expect(r.walks.filter((w) => w.missing.length + w.duplicates.length + w.outOfOrder > 0)).toEqual([]);
  // At least one walk crossed from hash pages to time pages (the held one does by construction).
  expect(
    r.walks.some(
      (w) => w.modes.includes('dual') && (w.modes.includes('flipped') || w.modes.includes('time')),
    ),
  ).toBe(true);
}

/** A walk's verdict: members present at its start and untouched during it must each appear once, in order. */
function verdict(
  modes: RowMode[],
  present: ReadonlySet<bigint>,
  touched: ReadonlySet<bigint>,
  seen: readonly ListEntry[],
): WalkVerdict {
  const counts = new Map<bigint, number>();
  for (const e of seen) counts.set(e.otherId, (counts.get(e.otherId) ?? 0) + 1);
  return {
    modes,
    missing: [...present].filter((f) => !touched.has(f) && !counts.has(f)),
    duplicates: [...counts].filter(([, n]) => n > 1).map(([id]) => id),
    outOfOrder: seen.filter((e, i) => i > 0 && compareEntries(seen[i - 1]!, e) >= 0).length,
  };
}
