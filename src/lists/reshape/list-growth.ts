/**
 * Online growth of a list from N to 2N buckets: the reshape protocol (`reshape.ts`, its steps
 * and their invariant) with hash buckets as what moves; growth brings only its record (the
 * list's `BucketLayout`) and its copy step.
 *
 * Design note — the protocol, one list at a time:
 *
 * 1. Set `{ buckets: N, growingTo: 2N, copiedThrough: 0 }`. From now on writers write every
 *    list row to both layouts' bucket codes (`writeBucketCodes`); readers keep reading N.
 * 2. Wait `settleMs` — at least the layout cache TTL plus the longest write in flight — so that no
 *    writer still acts on a layout read before step 1. Without this wait a writer holding a stale
 *    `{ N, null }` could add a row to N after its bucket was copied, and 2N would never have it.
 * 3. Copy each old bucket `b` page by page into `b` and `b + N` of 2N with `copyBucketPage`, which
 *    keeps each row's original write time: a concurrent unfollow (a newer write time, sent to both
 *    layouts) still shadows the copy whichever lands last. An `in` list also carries the inverse
 *    edge state of its owner (`edges_in`, bucketed by the same codes so that "which of these ids
 *    follow B" reads at most min(N, ids) partitions): bucket `b`'s inverse rows are copied the
 *    same way (`copyInverseEdgePage`, per-cell write times kept), so probes reading 2N after the
 *    flip find every edge. After each bucket, record `copiedThrough = b + 1`, so a crashed job
 *    resumes at the first bucket not yet copied (re-copying is idempotent for the same reason).
 * 4. Flip to `{ buckets: 2N, growingTo: N }`: readers now read 2N, and writers keep writing both
 *    layouts (`growingTo` below `buckets` names the layout being retired). A cursor made under N
 *    keeps working: bucket `b` of N is exactly `b` ∪ `b + N` of 2N, so each half inherits b's
 *    ceiling and exhausted flag (see `list-service.ts`).
 * 5. Wait `settleMs` (every reader's cached layout now says 2N; one still on N saw every row,
 *    because writers kept writing N), then finalize to `{ buckets: 2N, growingTo: null }`.
 * 6. Wait `settleMs` again (writers holding the step-4 layout finish), then drop the N old
 *    partitions (list rows, and inverse edges for an `in` list) with a partition tombstone above
 *    every version written so far.
 *
 * Writers are never blocked: they only ever read the layout. Readers see no duplicate, lost or
 * misordered entry because at every instant the layout they read holds every row (N is complete
 * until step 5; 2N is complete from step 4) and the merge cursor's boundary is layout-independent.
 *
 * How the layout carries the protocol's stages: `{ N, growingTo: 2N, copiedThrough }` is `dual`,
 * `{ 2N, growingTo: N }` is `flipped`, and finalizing writes `{ 2N, growingTo: null }`, which is
 * also "nothing pending" (so there is no clear step). There is no verify step: a bucket's copy
 * reads a whole partition, and a row written meanwhile is dual-written. Growth reports its own
 * steps (`GrowthProgress`: `started` also on a resumed copy, no `finalized`).
 *
 * Why step 4 keeps the dual write: flipping straight to `{ 2N, null }` would leave a follow
 * written just after the flip (to 2N only) invisible, for up to the cache TTL, to a reader whose
 * cached layout still says N — a member present for that reader's whole walk, missing. A crash
 * after step 4 resumes at step 5. A crash between 5 and 6 leaves the old partitions behind:
 * unreachable (no reader or writer addresses a retired layout's codes, and the repair sweep skips
 * them), so they cost disk only; nothing removes them today (the resumed layout `{ 2N, null }`
 * looks like a finished growth).
 *
 * Many runners, one winner: every service instance may notice that a list crossed its threshold
 * and start a growth. Each layout step is a compare-and-set (`replaceLayout`, a lightweight
 * transaction on the layout row — never on the edge path) from the layout this runner last
 * wrote, so two runners can never interleave (a late `copiedThrough` write can no longer un-flip
 * a finished growth); the loser stops with `GrowthConflictError` and the winner carries on.
 */

import { bucketCode, bucketCodeOf } from '../../model/buckets.js';
import { nowPosition, wallClockVersion } from '../../model/clock.js';
import type { BucketLayout, ListEntry, ListKey, Position } from '../../model/types.js';
import type { ListStore } from '../../ports/list-store.js';
import {
  type Reshape,
  ReshapeConflictError,
  type ReshapeOptions,
  type ReshapeStep,
  runReshape,
} from './reshape.js';

export interface GrowthOptions extends Omit<ReshapeOptions<GrowthProgress>, 'pageSize' | 'verifyAttempts'> {
  /**
   * Whether the list's rows live in the layout's hash buckets (a list in `hash` row mode) and so
   * move with it. A time-bucketed list (`model/time-buckets.ts`) grows only its inverse edges: its
   * rows stay where they are, and its first time bucket (id 1, the same number as the one-bucket
   * layout's code) is never dropped. Default true.
   */
  listRows?: boolean;
  /** Rows per copy page. Default 1,000. */
  copyPageSize?: number;
}

export type GrowthProgress =
  | { step: 'started'; from: number; to: number }
  | {
      step: 'copied';
      from: number;
      to: number;
      bucket: number;
      rows: number;
      /** Inverse edge rows copied with the bucket (`in` lists only; removed edges included). */
      inverseEdges: number;
    }
  | { step: 'flipped'; from: number; to: number }
  | { step: 'dropped'; from: number; to: number };

/** Another runner changed the layout under this growth; the growth stopped without writing. */
export class GrowthConflictError extends ReshapeConflictError {
  override name = 'GrowthConflictError' as const;
  constructor(
    readonly expected: BucketLayout,
    readonly found: BucketLayout,
  ) {
    super(
      `layout changed during growth: expected ${JSON.stringify(expected)}, found ${JSON.stringify(found)}`,
    );
  }
}

/** What one bucket's copy moved. */
type BucketCopied = { rows: number; inverseEdges: number };

/** The growth's record: the list's layout, replaced whole; its stages as the module note says. */
function growthKind(store: ListStore, list: ListKey): Reshape<BucketLayout, BucketLayout> {
  const sizes = (l: BucketLayout) =>
    (l.growingTo as number) > l.buckets
      ? [l.buckets, l.growingTo as number]
      : [l.growingTo as number, l.buckets];
  return {
    read: () => store.getLayout(list),
    stateOf: (l) => l,
    same: (a, b) =>
      a.buckets === b.buckets && a.growingTo === b.growingTo && a.copiedThrough === b.copiedThrough,
    write: (l, next) => store.replaceLayout(list, l, next),
    conflict: (_step, expected, found) => new GrowthConflictError(expected, found),
    markOf: (l) =>
      l.growingTo === null
        ? null
        : l.growingTo > l.buckets
          ? { stage: 'dual', copied: l.copiedThrough }
          : { stage: 'flipped', copied: l.growingTo },
    at: (l, mark) => {
      const [from, to] = sizes(l) as [number, number];
      if (mark.stage === 'dual') return { buckets: from, growingTo: to, copiedThrough: mark.copied };
      if (mark.stage === 'flipped') return { buckets: to, growingTo: from, copiedThrough: 0 };
      return { buckets: to, growingTo: null, copiedThrough: 0 };
    },
    cleared: (l) => l,
  };
}

/**
 * Grows `list` by one step (N → 2N), or finishes a growth a previous run started. Idempotent and
 * resumable: re-running after a crash continues from `copiedThrough`. Returns the final layout.
 */
export async function growList(store: ListStore, list: ListKey, o: GrowthOptions): Promise<BucketLayout> {
  const pageSize = o.copyPageSize ?? 1000;
  const listRows = o.listRows !== false;
  const layout = await store.getLayout(list);
  const flipped = layout.growingTo !== null && layout.growingTo < layout.buckets;
  const from = flipped ? (layout.growingTo as number) : layout.buckets;
  const to = flipped ? layout.buckets : (layout.growingTo ?? from * 2);
  // A resumed copy reports `started` too; a fresh one once its plan is stored.
  if (layout.growingTo !== null && !flipped) await o.onProgress?.({ step: 'started', from, to });

  const target = (otherId: bigint) => bucketCodeOf(to, otherId);
  const rowTarget = (row: ListEntry) => target(row.otherId);
  const copy = async (b: number): Promise<BucketCopied> => {
    let after = null;
    let rows = 0;
    while (listRows) {
      const page = await store.copyBucketPage(list, bucketCode(from, b), after, pageSize, rowTarget);
      rows += page.copied;
      after = page.last;
      if (!after) break;
    }
    let inverseEdges = 0;
    if (list.direction === 'in') {
      let afterSource: bigint | null = null;
      do {
        const page = await store.copyInverseEdgePage(
          list,
          bucketCode(from, b),
          afterSource,
          pageSize,
          target,
        );
        inverseEdges += page.copied;
        afterSource = page.last;
      } while (afterSource !== null);
    }
    return { rows, inverseEdges };
  };
  const report = async (p: ReshapeStep<number, BucketCopied>): Promise<void> => {
    if (p.step === 'planned') await o.onProgress?.({ step: 'started', from, to });
    else if (p.step === 'copied')
      await o.onProgress?.({
        step: 'copied',
        from,
        to,
        bucket: p.child,
        rows: p.rows,
        inverseEdges: p.inverseEdges,
      });
    else if (p.step === 'flipped') await o.onProgress?.({ step: 'flipped', from, to });
    else if (p.step === 'deleted') await o.onProgress?.({ step: 'dropped', from, to });
  };

  const done = await runReshape(
    growthKind(store, list),
    layout,
    {
      next: () => ({ buckets: from, growingTo: to, copiedThrough: 0 }),
      rows: 0,
    },
    () => ({
      parent: from,
      children: Array.from({ length: from }, (_, b) => b),
      copy,
      describe: (b) => `bucket ${b} of ${from}`,
      cleanUp: () => dropLayoutBuckets(store, list, from, (o.clock ?? nowPosition)(), listRows),
    }),
    {
      settleMs: o.settleMs,
      ...(o.sleep ? { sleep: o.sleep } : {}),
      ...(o.giveUpAfter ? { giveUpAfter: o.giveUpAfter } : {}),
      onProgress: report,
    },
  );
  return done.state;
}

async function dropLayoutBuckets(
  store: ListStore,
  list: ListKey,
  buckets: number,
  now: Position,
  listRows: boolean,
): Promise<void> {
  // List rows carry pair-fold versions (≈ position × 1024), far above wall-clock µs.
  const version = wallClockVersion(now);
  for (let b = 0; b < buckets; b++) {
    if (listRows) await store.dropBucket(list, bucketCode(buckets, b), version);
    if (list.direction === 'in') await store.dropInverseEdgeBucket(list, bucketCode(buckets, b), version);
  }
}
