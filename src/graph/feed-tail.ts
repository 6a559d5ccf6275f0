/**
 * The unsettled tail's reach (`Feed.subscribe`, the note atop `feed.ts`): how far the fresh read
 * reaches back, how far behind the sweep runs, how much either reads a period, and how late rows
 * have lately landed behind a fresh read's start (`Lateness`).
 */

/** The least the fresh read reaches back before the previous one's start (µs). */
export const TAIL_MIN_OVERLAP_MICROS = 100_000n;
/** How far behind the clock the sweep reads, besides 2S (µs): rows that land later are not passed on. */
export const TAIL_SWEEP_MICROS = 2_000_000n;
/** The sweep reads once at least this much (µs) is due: a read a second on an idle feed, not one a period. */
export const TAIL_SWEEP_STRIDE_MICROS = 1_000_000n;
/** Rows per tail read, and reads per period at most for each of the two (one that needs more resumes at the next). */
export const TAIL_PAGE = 1000;
export const TAIL_MAX_PAGES = 20;
/**
 * Event ids passed on lately, never passed on twice: from a fresh read to the sweep an event waits
 * 2 s + 2S + up to 1 s (7 s at S = 2 s), so this covers ~7,000 events/s across the cluster; past
 * that a sweep may pass an event on again (a cache drops an entry twice). ~10 MB at its fullest.
 */
export const SEEN_EVENTS = 50_000;

/** The span (ms) the tail's lateness is kept over: the furthest of this one and the last counts. */
const LATENESS_SPAN_MS = 30_000;

/**
 * How far behind the start of the previous fresh read rows have landed lately (µs): the furthest
 * in this span of `LATENESS_SPAN_MS` and the last (of the poller's clock); null until a whole span
 * has been watched.
 */
export class Lateness {
  private span = -1;
  private current = 0n;
  private previous: bigint | null = null;
  private firstMs: number | null = null;

  note(nowMs: number, behind: bigint): void {
    this.roll(nowMs);
    if (behind > this.current) this.current = behind;
  }

  /** The furthest of the last two spans, or null while less than a span has been watched. */
  furthest(nowMs: number): bigint | null {
    this.roll(nowMs);
    if (this.firstMs === null || nowMs - this.firstMs < LATENESS_SPAN_MS) return null;
    // Bigints: no Math.max.
    let furthest = this.current;
    if (this.previous !== null && this.previous > furthest) furthest = this.previous;
    return furthest;
  }

  private roll(nowMs: number): void {
    this.firstMs ??= nowMs;
    const span = Math.floor(nowMs / LATENESS_SPAN_MS);
    if (span === this.span) return;
    if (this.span >= 0) this.previous = span === this.span + 1 ? this.current : 0n;
    this.span = span;
    this.current = 0n;
  }
}
