/**
 * The inverse-edge layout (`BucketLayout`): hash buckets of a list's `edges_in` rows and of its
 * count codes. (A list's own rows live in time buckets, `time-buckets.ts`; "bucket" alone in
 * this file always means a layout bucket.)
 *
 * A layout has `N` buckets (`N` a power of two). Member `otherId` belongs to bucket
 * `b = murmur3(otherId) & (N-1)`; its partition is addressed by the layout-qualified *bucket code*
 * `N | b` (N=1 → 1; N=2 → 2,3; N=4 → 4..7; …). Codes of different layouts never collide, so during
 * a growth from N to 2N both layouts can hold rows at once, and because 2N's low bits extend N's,
 * bucket `b` of N splits exactly into `b` and `b + N` of 2N.
 *
 * The inverse edge state (`edges_in`) is bucketed by the codes of the target's `in` list layout,
 * and the list's counter shards and dirty marks by the same codes, so the store, the list engine
 * and the domain all address them with these functions: they live on the ground floor.
 *
 * murmurhash is 32-bit and used only for bucketing — never for token placement (the driver's
 * metadata owns that).
 */
import murmurhash from 'murmurhash';
import type { BucketLayout, UserId } from './types.js';

export function bucketOf(otherId: UserId, buckets: number): number {
  return murmurhash.v3(otherId.toString()) & (buckets - 1);
}

export function bucketCode(buckets: number, bucket: number): number {
  return buckets | bucket;
}

/** The code of the bucket that holds `otherId` in a layout of `buckets` buckets. */
export function bucketCodeOf(buckets: number, otherId: UserId): number {
  return bucketCode(buckets, bucketOf(otherId, buckets));
}

/** Every bucket code a writer must touch for `otherId` under `layout` (both layouts while growing). */
export function writeBucketCodes(layout: BucketLayout, otherId: UserId): number[] {
  const codes = [bucketCodeOf(layout.buckets, otherId)];
  if (layout.growingTo) codes.push(bucketCodeOf(layout.growingTo, otherId));
  return codes;
}

/** All bucket codes readers use under `layout`. */
export function readBucketCodes(layout: BucketLayout): number[] {
  return Array.from({ length: layout.buckets }, (_, b) => bucketCode(layout.buckets, b));
}

/** The largest inverse-edge layout a list may grow to. */
export const MAX_LAYOUT_BUCKETS = 1024;

export const SINGLE_BUCKET: BucketLayout = { buckets: 1, growingTo: null, copiedThrough: 0 };
