/**
 * Which rows a fan-out scan slice owns.
 *
 * Design note. A row's bucket is the low bits of `h = murmur3(other_id)`. Reverse the 32 bits of
 * `h` into a *rank* `r`: then bucket `b` of any layout `N` is one contiguous rank range (the
 * `rev(b)`-th of `N` equal ranges), and bucket `b` of `N` is exactly the union of its two halves
 * `b` and `b + N` of `2N`. Slice `k` of `n` owns the rank range `[k·2³²/n, (k+1)·2³²/n)`.
 *
 * Invariant: ownership is a function of the row's id alone, not of the layout, so slices started
 * before and after a growth still partition the list, and a slice's resume point (an index into
 * the rank-ordered buckets) scales exactly from N to 2N (index j → 2j).
 *
 * Cost: when `n` is a power of two and `n ≤ N`, every slice owns whole buckets and reads nothing
 * it does not return. Otherwise a bucket straddling a slice edge is read by both neighbours, each
 * keeping its own ranks; with `n > N` each slice reads whole buckets to keep ~N/n of their rows.
 * Rejected: `bucket mod n` (changes meaning when N doubles mid-scan); slices owning zero buckets
 * (`n > N` would leave most workers idle and one doing all the work).
 *
 * Pinned layout (opt-in, issue #9). A rank slice narrower than a bucket cannot be read without
 * reading the whole bucket: rows of a partition are ordered by `(created_at, other_id)`, not by
 * rank. So with `n > N` the layout-free rule reads ≈ n/N times the list (T4 fell to 0.075 at 64
 * slices over 8 buckets). A caller that reads the layout once and passes the same `pinned` N to
 * every slice gets `effectiveSlices(n, pinned) = min(n, pinned)` owning slices: slice `k < e`
 * owns the rank range of slice `k` of `e` (whole buckets of the pinned layout, and of every larger
 * layout after a growth, since a growth only splits buckets), slices `k ≥ e` own nothing. Its
 * cursor is exactly the cursor of slice `k` of `e`, so the format is unchanged. Ownership is
 * still a function of the row's id and the (fixed) pinned value, so the scan stays exact across a
 * growth; what the caller gives up is parallelism beyond N (extra workers idle, like raw paging,
 * which cannot run more than N partition streams either). Rejected for now: splitting a bucket
 * among slices by clustering range (needs split points every slice agrees on, i.e. a shared scan
 * plan, which the independent-slice API does not have).
 */
import murmurhash from 'murmurhash';
import type { UserId } from '../../model/types.js';

export const RANK_SPACE = 2 ** 32;
export const MAX_SLICES = 1024;

function reverseBits(value: number, bits: number): number {
  let out = 0;
  let v = value;
  for (let i = 0; i < bits; i++) {
    out = out * 2 + (v & 1);
    v >>>= 1;
  }
  return out;
}

export function log2(buckets: number): number {
  return 31 - Math.clz32(buckets);
}

/** The row's rank: its 32-bit murmur3 hash with the bits reversed. */
export function rankOf(otherId: UserId): number {
  return reverseBits(murmurhash.v3(otherId.toString()) >>> 0, 32);
}

/**
 * The number of slices that own rows when `slices` are requested with the layout pinned at
 * `pinned` buckets (undefined: not pinned, every slice owns its rank range).
 */
export function effectiveSlices(slices: number, pinned: number | undefined): number {
  return pinned === undefined ? slices : Math.min(slices, pinned);
}

/** `[lo, hi)` in rank space owned by `slice` of `slices`. */
export function sliceRange(slice: number, slices: number): [number, number] {
  return [Math.floor((slice * RANK_SPACE) / slices), Math.floor(((slice + 1) * RANK_SPACE) / slices)];
}

/** The bucket (0..N-1) at rank-order index `j` of layout `buckets`. */
export function bucketAtIndex(j: number, buckets: number): number {
  return reverseBits(j, log2(buckets));
}

/** The rank-order index of `bucket` in layout `buckets`. */
export function indexOfBucket(bucket: number, buckets: number): number {
  return reverseBits(bucket, log2(buckets));
}

/** The rank-order bucket indexes `[from, to)` of layout `buckets` that intersect the slice. */
export function sliceIndexes(slice: number, slices: number, buckets: number): [number, number] {
  const [lo, hi] = sliceRange(slice, slices);
  const width = RANK_SPACE / buckets;
  return [Math.floor(lo / width), Math.ceil(hi / width)];
}

/** Whether the bucket at index `j` lies wholly inside `[lo, hi)` (no per-row filter needed). */
export function indexInside(j: number, buckets: number, lo: number, hi: number): boolean {
  const width = RANK_SPACE / buckets;
  return j * width >= lo && (j + 1) * width <= hi;
}
