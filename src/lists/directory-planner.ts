/**
 * `planDirectory` (`model/time-buckets.ts`) fed one `created_at` at a time, oldest first, for a
 * walk too large to hold: a bucket split plans its children with it (`bucket-split.ts`).
 */
import { FIRST_TIME_BUCKET, TIME_BUCKET_BASE, type TimeBucket } from '../model/time-buckets.js';
import type { Position } from '../model/types.js';

/**
 * `planDirectory` fed one `created_at` at a time (oldest first), holding only the boundaries:
 * the same rule (a boundary at the `created_at` of every `bucketRows`-th row from the oldest,
 * rows sharing a `created_at` kept in one bucket), so a 9M list is planned without holding it.
 */
export class DirectoryPlanner {
  private readonly starts: { start: Position; base: number }[] = [];
  private inBucket = 0;
  private last: Position | null = null;
  /** Rows added so far. */
  rows = 0;

  constructor(private readonly bucketRows: number) {
    if (!Number.isInteger(bucketRows) || bucketRows < 1)
      throw new RangeError('bucketRows must be a positive integer');
  }

  add(createdAt: Position): void {
    if (this.last !== null && createdAt < this.last)
      throw new RangeError('created_at values must come oldest first');
    if (this.inBucket >= this.bucketRows && createdAt !== this.last) {
      this.starts.push({ start: createdAt, base: this.rows });
      this.inBucket = 0;
    }
    this.inBucket++;
    this.rows++;
    this.last = createdAt;
  }

  /** The planned buckets, newest first, ending with the implicit first bucket (as `planDirectory`). */
  buckets(): TimeBucket[] {
    const buckets: TimeBucket[] = this.starts.map((s, i) => ({
      id: TIME_BUCKET_BASE + i,
      start: s.start,
      base: s.base,
    }));
    return [...buckets.reverse(), { id: FIRST_TIME_BUCKET, start: null, base: 0 }];
  }
}
