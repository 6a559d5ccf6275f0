/**
 * The k-way merge of bucket pages behind every newest-first list page.
 *
 * Design note. A list of N buckets is read by merging the buckets' own ordered pages
 * (created_at DESC, other_id DESC). The merge emits keys in strictly decreasing global order, so
 * the last key emitted is a boundary that is valid for every bucket at once: the next page reads
 * each bucket strictly after it.
 *
 * Invariant: every bucket carries a *ceiling* — "no row of this bucket after the boundary has
 * created_at above c" — or is exhausted, or is open (nothing known: rows may start right after
 * the boundary). The heap holds one entry per bucket: its next buffered row, or a placeholder
 * ranked at its ceiling. A row is emitted only when it outranks every placeholder, so a bucket
 * that has not been read cannot hold a newer row; a placeholder that reaches the top is fetched
 * there and then. Buckets whose ceiling never reaches the top of a page are never queried, and a
 * ceiling only needs to be an upper bound (the cursor stores it rounded up), never an exact head.
 *
 * Fetch sizes adapt: before merging, the buckets whose ceiling lies inside the page's expected
 * time span (the list's µs-per-row estimate × limit, with a margin) are fetched in one parallel
 * round, each for its expected share plus one row, the extra row giving the bucket an exact head
 * for the next cursor. When the merge must stop for a bucket that ran dry, the same round also
 * tops up every other bucket whose buffer ends inside the expected page, so a page takes a few
 * sequential rounds rather than one per bucket. Measured at N = 64, limit 50: ~82 rows, ~41
 * queries, ~6 rounds per page on random times (test/lists/cursor/merge.test.ts); ~94 rows, ~47 queries,
 * ~2.8 rounds on evenly spaced follows (test/lists/list-scenarios.ts, both stores).
 *
 * Rejected: reading `limit` rows from every bucket (N × limit rows per page: 3,200 rows to serve 50
 * from 64 buckets); storing exact per-bucket heads in the cursor (16 bytes a bucket, 16 KiB at
 * N = 1024); the driver's paging state (per-partition, forgeable, not mergeable).
 */
import type { ListEntry } from '../../model/types.js';
import { compareEntries } from '../../model/types.js';

/** What the merge knows about one bucket relative to the walk boundary. */
export interface BucketState {
  exhausted: boolean;
  /** No row after the boundary has `createdAt` above this; null: unknown (open). */
  ceiling: bigint | null;
}

/** Reads one bucket: rows strictly after `after` (newest first), at most `limit`. */
export type FetchBucket = (code: number, after: ListEntry | null, limit: number) => Promise<ListEntry[]>;

/** Per-page cost, for metrics (`bucket-merge fetches per page`) and tests. */
export interface PageStats {
  /** Bucket queries issued. */
  queries: number;
  /** Rows returned by those queries (emitted or not). */
  rowsRead: number;
  /** Distinct buckets queried. */
  buckets: number;
  /** Sequential rounds of (parallel) queries: what page latency follows. */
  rounds: number;
}

export interface MergePageInput {
  /** Bucket codes of the layout being read; `states` is aligned with it. */
  codes: readonly number[];
  states: readonly BucketState[];
  /** The walk boundary (last key of the previous page); null on the first page. */
  after: ListEntry | null;
  limit: number;
  /** Estimated µs between consecutive rows of the whole list; 0 when unknown. */
  gapUs: number;
  fetch: FetchBucket;
}

export interface MergePageResult {
  items: ListEntry[];
  /** For each item, the index (into `codes`) of the bucket it came from. */
  sources: number[];
  /** The boundary for the next page (last emitted key, or the input boundary). */
  after: ListEntry | null;
  states: BucketState[];
  /** True when no bucket can yield another row after `after`. */
  done: boolean;
  gapUs: number;
  stats: PageStats;
}

export { compareEntries };

/** Above every real key: ids and positions are signed 64-bit. */
const TOP = 1n << 64n;

interface HeapKey {
  ca: bigint;
  id: bigint;
  placeholder: boolean;
}

interface Lane {
  idx: number;
  code: number;
  buf: ListEntry[];
  pos: number;
  /** Last row read from the store this page. */
  lastRead: ListEntry | null;
  lastFetch: number;
  fetched: boolean;
  /** The store returned fewer rows than asked: nothing after `lastRead`. */
  drained: boolean;
  ceiling: bigint | null;
}

function head(lane: Lane, after: ListEntry | null): HeapKey {
  const row = lane.buf[lane.pos];
  if (row) return { ca: row.createdAt, id: row.otherId, placeholder: false };
  if (lane.lastRead) return { ca: lane.lastRead.createdAt, id: lane.lastRead.otherId, placeholder: true };
  if (lane.ceiling !== null) return { ca: lane.ceiling, id: TOP, placeholder: true };
  if (after) return { ca: after.createdAt, id: after.otherId, placeholder: true };
  return { ca: TOP, id: TOP, placeholder: true };
}

/** Negative when `a` must be looked at first; placeholders win ties so a row never overtakes one. */
function compareHeads(a: HeapKey, b: HeapKey): number {
  if (a.ca !== b.ca) return a.ca > b.ca ? -1 : 1;
  if (a.id !== b.id) return a.id > b.id ? -1 : 1;
  if (a.placeholder !== b.placeholder) return a.placeholder ? -1 : 1;
  return 0;
}

class LaneHeap {
  private readonly items: { lane: Lane; key: HeapKey }[] = [];

  get size(): number {
    return this.items.length;
  }

  peek(): { lane: Lane; key: HeapKey } | undefined {
    return this.items[0];
  }

  push(lane: Lane, key: HeapKey): void {
    const a = this.items;
    a.push({ lane, key });
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (compareHeads(a[i]!.key, a[p]!.key) >= 0) break;
      [a[i], a[p]] = [a[p]!, a[i]!];
      i = p;
    }
  }

  pop(): { lane: Lane; key: HeapKey } | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && compareHeads(a[l]!.key, a[m]!.key) < 0) m = l;
        if (r < a.length && compareHeads(a[r]!.key, a[m]!.key) < 0) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m]!, a[i]!];
        i = m;
      }
    }
    return top;
  }
}

/** One newest-first page by a lazy k-way merge; see the module note for the contract. */
export async function mergePage(input: MergePageInput): Promise<MergePageResult> {
  const { codes, states, after, limit, fetch } = input;
  const n = codes.length;
  const stats: PageStats = { queries: 0, rowsRead: 0, buckets: 0, rounds: 0 };
  const lanes: Lane[] = codes.map((code, idx) => ({
    idx,
    code,
    buf: [],
    pos: 0,
    lastRead: null,
    lastFetch: 0,
    fetched: false,
    drained: states[idx]?.exhausted ?? false,
    ceiling: states[idx]?.ceiling ?? null,
  }));
  const live = lanes.filter((l) => !l.drained);

  const load = async (lane: Lane, size: number): Promise<void> => {
    const rows = await fetch(lane.code, lane.lastRead ?? after, size);
    stats.queries++;
    stats.rowsRead += rows.length;
    if (!lane.fetched) stats.buckets++;
    lane.fetched = true;
    lane.lastFetch = size;
    lane.buf = lane.pos < lane.buf.length ? lane.buf.slice(lane.pos).concat(rows) : rows;
    lane.pos = 0;
    if (rows.length < size) lane.drained = true;
    const last = rows.at(-1);
    if (last) lane.lastRead = last;
  };

  // The eager round: buckets expected to contribute, sized to their expected share.
  const eager: [Lane, number][] = [];
  if (limit > 0) {
    if (after && input.gapUs > 0) {
      const span = input.gapUs * limit;
      const perBucketGap = input.gapUs * n;
      for (const lane of live) {
        const depth = lane.ceiling === null ? 0 : Number(after.createdAt - lane.ceiling);
        if (depth >= span) continue;
        const expected = (span - depth) / perBucketGap;
        eager.push([lane, Math.min(limit + 1, Math.ceil(expected) + 1)]);
      }
    } else {
      const share = Math.ceil(limit / Math.max(1, live.length)) + 1;
      for (const lane of live) eager.push([lane, Math.min(limit + 1, share)]);
    }
  }
  if (eager.length > 0) stats.rounds++;
  await Promise.all(eager.map(([lane, size]) => load(lane, size)));

  const heap = new LaneHeap();
  const enqueue = (lane: Lane) => {
    if (lane.pos >= lane.buf.length && lane.drained) return;
    heap.push(lane, head(lane, after));
  };
  for (const lane of live) enqueue(lane);

  const items: ListEntry[] = [];
  const sources: number[] = [];
  let last: ListEntry | null = null;
  while (items.length < limit && heap.size > 0) {
    const top = heap.peek()!;
    if (top.key.placeholder) {
      // Every placeholder above the best buffered row must be read before anything is emitted.
      const due: Lane[] = [];
      while (heap.peek()?.key.placeholder) due.push(heap.pop()!.lane);
      const remaining = limit - items.length;
      const activeLanes = Math.max(1, heap.size + due.length);
      const base = after?.createdAt ?? items[0]?.createdAt ?? null;
      const end = input.gapUs > 0 && base !== null ? Number(base) - input.gapUs * limit : null;
      const perBucketGap = input.gapUs * n;
      const sizeFor = (from: bigint | null, lane: Lane) => {
        const guess =
          end !== null && from !== null
            ? Math.ceil(Math.max(0, Number(from) - end) / perBucketGap) + 1
            : Math.ceil(remaining / activeLanes) + 1;
        return Math.min(remaining + 1, Math.max(guess, lane.lastFetch, 2));
      };
      const round = due
        .filter((lane) => lane.pos >= lane.buf.length)
        .map((lane) => load(lane, sizeFor(head(lane, after).ca, lane)));
      // Lanes whose whole buffer lies inside the expected page would each stop the merge again
      // later; topping them up now keeps the page to a few sequential rounds.
      if (end !== null) {
        for (const lane of lanes) {
          if (lane.drained || due.includes(lane)) continue;
          if (lane.pos >= lane.buf.length) {
            // A placeholder still in the heap; once loaded, its stale entry is re-keyed when popped.
            if (!lane.fetched && lane.ceiling !== null && Number(lane.ceiling) > end) {
              round.push(load(lane, sizeFor(lane.ceiling, lane)));
            }
            continue;
          }
          if (Number(lane.lastRead!.createdAt) > end)
            round.push(load(lane, sizeFor(lane.lastRead!.createdAt, lane)));
        }
      }
      stats.rounds++;
      await Promise.all(round);
      for (const lane of due) enqueue(lane);
      continue;
    }
    heap.pop();
    const lane = top.lane;
    const row = lane.buf[lane.pos++]!;
    if (!last || compareEntries(last, row) < 0) {
      items.push(row);
      sources.push(lane.idx);
      last = row;
    }
    enqueue(lane);
  }

  const boundary = last ?? after;
  const nextStates: BucketState[] = lanes.map((lane) => {
    const buffered = lane.buf[lane.pos];
    if (buffered) return { exhausted: false, ceiling: buffered.createdAt };
    if (lane.drained) return { exhausted: true, ceiling: null };
    if (lane.fetched) return { exhausted: false, ceiling: null };
    return { exhausted: false, ceiling: lane.ceiling };
  });
  const done = nextStates.every((s) => s.exhausted);

  let gapUs = input.gapUs;
  if (last) {
    const from = after ? after.createdAt : items[0]!.createdAt;
    const steps = after ? items.length : items.length - 1;
    if (steps > 0) {
      const observed = Number(from - last.createdAt) / steps;
      gapUs = gapUs > 0 ? (gapUs + observed) / 2 : observed;
    }
  }
  return { items, sources, after: boundary, states: nextStates, done, gapUs, stats };
}
