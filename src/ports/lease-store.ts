/**
 * Leases (`job_leases`): one row per name, naming its holder, a generation raised by every
 * takeover, the holder's expiry and what the holder saved under it. Every write is conditional on
 * the generation the writer took, so a holder that lost its lease (paused past its expiry, then
 * taken over) writes nothing that stands. The store judges no time: whether a lease has expired
 * is the caller's reading of its own guarded clock (`src/graph/lease.ts`).
 */
export interface LeaseRow {
  name: string;
  holder: string;
  /** 1 for the first holder, one more for each takeover. */
  generation: bigint;
  /** ms since the epoch, by the holder's clock. */
  expiresAtMs: number;
  /** What the holder saved (a job's position and schedule), or null. */
  state: string | null;
}

export interface LeaseStore {
  /** The row of `name`, or null when no one ever took it. */
  getLease(name: string): Promise<LeaseRow | null>;
  /** Every lease row, at most `limit` (a handful: one per job). */
  listLeases(limit: number): Promise<LeaseRow[]>;
  /**
   * Takes `name` for `holder` until `expiresAtMs`, at the generation after `seen`'s (1 when `seen`
   * is null), keeping the saved state — applied only while the row is still `seen` (the same
   * generation; absent for null). Returns whether it applied and the row as it then stands.
   * A lightweight transaction: sent once; after a timeout, re-read.
   *
   * @example
   * const seen = await store.getLease('split-search');
   * const { taken, row } = await store.takeLease('split-search', 'w1', now + 30_000, seen);
   * // taken: row.holder === 'w1', row.generation === (seen?.generation ?? 0n) + 1n
   */
  takeLease(
    name: string,
    holder: string,
    expiresAtMs: number,
    seen: LeaseRow | null,
  ): Promise<{ taken: boolean; row: LeaseRow | null }>;
  /**
   * Writes `change` (a new expiry, or the saved state) only while the row's generation is
   * `generation`; returns whether it applied. A lightweight transaction, like `takeLease`.
   */
  updateLease(
    name: string,
    generation: bigint,
    change: { expiresAtMs: number } | { state: string | null },
  ): Promise<boolean>;
}
