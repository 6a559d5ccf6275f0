/**
 * The repair sweep's vocabulary (`repair-sweep.ts`): the kinds of drift it finds, the tables it
 * walks, its options, and the totals and report of a run (saved with its progress, so a resumed run
 * reports the whole run).
 */
import type { UserId } from '../model/types.js';

export const DRIFT_KINDS = [
  'fold_mismatch',
  'missing_inverse',
  'missing_row',
  'ghost_row',
  'count_drift',
  'orphan_claim',
  'missing_claim',
  'name_conflict',
] as const;
export type DriftKind = (typeof DRIFT_KINDS)[number];

/** The tables a sweep walks, in order, each over every range. */
export const SWEEP_TABLES = [
  'following',
  'followers',
  'relation_lists',
  'edges_out',
  'pair_ops',
  'usernames',
  'users',
] as const;

export type SweepTable = (typeof SWEEP_TABLES)[number];

/** One thing found wrong, for the report (a bounded sample is kept). */
export interface Finding {
  kind: DriftKind;
  /**
   * `source relation target @createdAt` for edges and rows, `user relation direction` for counts,
   * `low|high` for pairs, `name user` for claims (the lower-cased name and the claim's holder, or
   * the user missing its claim), `holder and user both named name` for a conflict.
   */
  what: string;
}

/** The sweep's totals (persisted with its progress, so a resumed run reports the whole run). */
export interface SweepTotals {
  /** Partitions visited per table. */
  partitions: Record<SweepTable, number>;
  /** Rows read (ops, edges, list rows, claims, user rows). */
  rows: number;
  findings: Record<DriftKind, number>;
  /** Pairs re-folded and rewritten (0 in a dry run). */
  repairedPairs: number;
  /** List buckets marked dirty for the reconciler (0 in a dry run). */
  markedDirty: number;
  /** Lists whose count check was skipped because they were already marked dirty. */
  countsPending: number;
  /** Pages done. */
  pages: number;
}

export interface SweepReport extends SweepTotals {
  dryRun: boolean;
  /** Whether the whole ring was swept (false when stopped by `maxPages`). */
  complete: boolean;
  /** Up to `sampleLimit` findings of this process's part of the run, in the order found. */
  samples: Finding[];
  runId: string;
}

export interface SweepProgressEvent {
  totals: SweepTotals;
  /** Fraction of the ring done, 0..1. */
  fraction: number;
  elapsedMs: number;
}

export interface SweepOptions {
  dryRun?: boolean;
  /** Continue the saved unfinished run (default false: start a new run). */
  resume?: boolean;
  /** Slices of the ring (default 64). Ignored on resume (the saved run's count is used). */
  ranges?: number;
  /** Partitions per scan page (default 100). */
  pageSize?: number;
  /** Rows per read inside a partition (default 500). */
  rowPageSize?: number;
  /** Rows read per second at most (default unlimited). */
  rate?: number;
  /** Stop after this many pages (progress saved; for tests and partial runs). */
  maxPages?: number;
  /** Findings kept in the report (default 1000). */
  sampleLimit?: number;
  /** Progress name (default `repair-sweep`, `repair-sweep:dry-run` for dry runs). */
  job?: string;
  onProgress?: (e: SweepProgressEvent) => void;
  /** Called in every repair between its history read and its writes (race tests). */
  afterRepairRead?: (a: UserId, b: UserId) => Promise<void>;
}

export const emptyTotals = (): SweepTotals => ({
  partitions: {
    pair_ops: 0,
    edges_out: 0,
    following: 0,
    followers: 0,
    relation_lists: 0,
    usernames: 0,
    users: 0,
  },
  rows: 0,
  findings: {
    fold_mismatch: 0,
    missing_inverse: 0,
    missing_row: 0,
    ghost_row: 0,
    count_drift: 0,
    orphan_claim: 0,
    missing_claim: 0,
    name_conflict: 0,
  },
  repairedPairs: 0,
  markedDirty: 0,
  countsPending: 0,
  pages: 0,
});
