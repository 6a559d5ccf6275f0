/**
 * Offline "who to follow": `npm run jobs -- suggest [--top 100] [--limit-fanout N]`.
 *
 * Design note.
 *
 * Score. For a user u and a candidate x, Adamic–Adar over the follow graph of the snapshot:
 *
 *     score(u, x) = Σ over z with u → z and z → x of 1 / ln(1 + deg(z))
 *
 * where deg(z) is z's following size in the snapshot (its distinct `following` rows, deactivated
 * targets included). `1 + deg` rather than `deg` keeps a z that follows only x finite (ln 1 = 0):
 * such a z weighs 1/ln 2. Scores are rounded to 6 decimals. Candidates are ranked by score, ties
 * by smaller id; `via` holds the `VIA` (3) mutual z with the biggest contribution (smallest deg,
 * ties by smaller id). Excluded: u itself, accounts u follows (snapshot), deactivated accounts
 * (the users table, scanned too), accounts u has a pending request to, blocks, or is blocked by
 * (point reads of u's edge partitions for the candidates only, after scoring). The HTTP read
 * filters again whatever changed since the run.
 *
 * Intermediaries. A suggestion tells u that z follows x, an edge of z's following list, so only a
 * z whose following list u may see is an intermediary: one that u follows (a private z has
 * approved u), that is active and that does not hide its lists. A deactivated or `hide_lists` z
 * adds nothing to any score and is never in `via` (`EXCLUDE_VIA`); a `hide_lists` account can
 * still be suggested itself. A z that blocks u cannot be followed by u, so the snapshot does not
 * hold it. The read (`graph/suggestions.ts`) re-applies the rule to `via` for what changed since
 * the run (z hid its lists, was deactivated, blocked u, u unfollowed it).
 *
 * Fan-out cap (FlockDB/TAO style). A z following more than `limitFanout` accounts (default 5000)
 * is skipped as an intermediary: its weight is ≤ 1/ln 5001 ≈ 0.117 per candidate, its fan-out is
 * what makes the computation quadratic, and hub-following says little about taste. It still
 * counts towards deg and can itself be suggested.
 *
 * Snapshot and memory. The snapshot is a token-range scan of `following` (partition by partition,
 * pages of rows) feeding `FollowSnapshotBuilder`: ids are mapped to dense indices (one Map entry
 * per user), edges are appended to two growable Int32Arrays, then turned into CSR form — offsets
 * (Int32Array of n+1) and targets (Int32Array of m), each adjacency sorted and de-duplicated
 * (growth copies can show a row twice) — with indices renumbered in id order so ties break by id
 * without bigint compares. While collecting, the pair arrays take 8 bytes per row (up to 16 just
 * after a doubling); compacting adds 4 more per row; afterwards 4 bytes per follow remain. Per
 * user ≈ 100 bytes (the id Map while building, ids, offsets, scratch). Users are then
 * processed one at a time with O(n) scratch reused across users (score Float64Array, via
 * Int32Array of 3n, touched list) and only touched entries reset; results are written in chunks
 * of `chunk` users, so results never accumulate. The whole adjacency is in memory: fine for
 * 10^5–10^7 users on one machine; beyond that, partition users by token range and stream the
 * two-hop neighbourhood per chunk.
 *
 * Storage. Each user's list replaces the previous one atomically (`putSuggestions`: one
 * single-partition batch, delete at generation − 1, rows at generation = run start µs).
 * Users with no follows are not in the snapshot; their older suggestions stay (read-time filters
 * still apply).
 */

import { nowPosition } from '../model/clock.js';
import type { ListEntry, UserId } from '../model/types.js';
import type { GraphStore } from '../ports/graph-store.js';
import type { Suggestion } from '../ports/records.js';
import { splitRing } from './repair-sweep.js';

/** The tables the snapshot scans: the follow lists and the users (deactivated, hide_lists). */
const SNAPSHOT_TABLES = ['following', 'users'] as const;

/** Mutual accounts kept per suggestion. */
export const VIA = 3;

/** Flag of `topCandidates`' `excluded`: never suggested (deactivated). */
export const EXCLUDE_CANDIDATE = 1;
/** Flag of `topCandidates`' `excluded`: never an intermediary (deactivated, hide_lists). */
export const EXCLUDE_VIA = 2;

/** The follow graph of a snapshot in CSR form; index order is id order. */
export interface FollowGraph {
  n: number;
  m: number;
  ids: BigInt64Array;
  offsets: Int32Array;
  targets: Int32Array;
}

/** Collects `(user, other)` follow rows in any order and builds a `FollowGraph`. */
export class FollowSnapshotBuilder {
  private readonly index = new Map<bigint, number>();
  private readonly idList: bigint[] = [];
  private src = new Int32Array(1 << 16);
  private dst = new Int32Array(1 << 16);
  private m = 0;

  private idx(id: bigint): number {
    let i = this.index.get(id);
    if (i === undefined) {
      i = this.idList.length;
      this.index.set(id, i);
      this.idList.push(id);
    }
    return i;
  }

  /** Adds the follow `user → other`. */
  add(user: UserId, other: UserId): void {
    if (this.m === this.src.length) {
      const grow = (a: Int32Array) => {
        const b = new Int32Array(a.length * 2);
        b.set(a);
        return b;
      };
      this.src = grow(this.src);
      this.dst = grow(this.dst);
    }
    this.src[this.m] = this.idx(user);
    this.dst[this.m] = this.idx(other);
    this.m++;
  }

  /** The CSR graph; the builder's buffers are released. */
  build(): FollowGraph {
    const n = this.idList.length;
    const order = this.idList
      .map((id, i) => [id, i] as const)
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const rank = new Int32Array(n);
    const ids = new BigInt64Array(n);
    order.forEach(([id, i], r) => {
      rank[i] = r;
      ids[r] = id;
    });
    const counts = new Int32Array(n + 1);
    for (let e = 0; e < this.m; e++) {
      const c = (rank[this.src[e] as number] as number) + 1;
      counts[c] = (counts[c] as number) + 1;
    }
    for (let i = 0; i < n; i++) counts[i + 1] = (counts[i + 1] as number) + (counts[i] as number);
    const fill = counts.slice();
    const raw = new Int32Array(this.m);
    for (let e = 0; e < this.m; e++) {
      const u = rank[this.src[e] as number] as number;
      const at = fill[u] as number;
      fill[u] = at + 1;
      raw[at] = rank[this.dst[e] as number] as number;
    }
    this.src = new Int32Array(0);
    this.dst = new Int32Array(0);
    // Sort and de-duplicate each adjacency in place, compacting.
    const offsets = new Int32Array(n + 1);
    let w = 0;
    for (let u = 0; u < n; u++) {
      const a = raw.subarray(counts[u] as number, counts[u + 1] as number).sort();
      offsets[u] = w;
      for (let k = 0; k < a.length; k++) {
        const x = a[k] as number;
        if (k > 0 && x === a[k - 1]) continue;
        if (x === u) continue;
        raw[w++] = x;
      }
    }
    offsets[n] = w;
    this.index.clear();
    return { n, m: w, ids, offsets, targets: raw.subarray(0, w) };
  }
}

/** A scored candidate by index. */
export interface ScoredIndex {
  x: number;
  score: number;
  via: number[];
}

/** Per-run scratch, reused across users; only touched entries are reset. */
export class SuggestionScratch {
  readonly score: Float64Array;
  readonly via: Int32Array;
  readonly viaCount: Uint8Array;
  readonly touched: Int32Array;
  readonly mark: Uint8Array;
  constructor(n: number) {
    this.score = new Float64Array(n);
    this.via = new Int32Array(n * VIA);
    this.viaCount = new Uint8Array(n);
    this.touched = new Int32Array(n);
    this.mark = new Uint8Array(n);
  }
}

const better = (sa: number, xa: number, sb: number, xb: number) => sa > sb || (sa === sb && xa < xb);

/**
 * The best `k` candidates of user index `u` (score desc, then index asc), excluding `u`, its
 * followees and indices flagged `EXCLUDE_CANDIDATE` in `excluded`. Intermediaries flagged
 * `EXCLUDE_VIA` or with more than `limitFanout` followees are skipped: they add to no score and
 * are in no `via`.
 */
export function topCandidates(
  g: FollowGraph,
  u: number,
  k: number,
  limitFanout: number,
  excluded: Uint8Array,
  s: SuggestionScratch,
): ScoredIndex[] {
  const { offsets, targets } = g;
  const from = offsets[u] as number;
  const to = offsets[u + 1] as number;
  s.mark[u] = 1;
  for (let i = from; i < to; i++) s.mark[targets[i] as number] = 1;
  // Intermediaries by contribution, biggest first (smallest degree, then smallest index), so the
  // first VIA that reach a candidate are its biggest contributors.
  const zs: number[] = [];
  for (let i = from; i < to; i++) {
    const z = targets[i] as number;
    const d = (offsets[z + 1] as number) - (offsets[z] as number);
    if (d > 0 && d <= limitFanout && ((excluded[z] as number) & EXCLUDE_VIA) === 0) zs.push(z);
  }
  const deg = (z: number) => (offsets[z + 1] as number) - (offsets[z] as number);
  zs.sort((a, b) => deg(a) - deg(b) || a - b);
  let touched = 0;
  for (const z of zs) {
    const zFrom = offsets[z] as number;
    const zTo = offsets[z + 1] as number;
    const w = 1 / Math.log(1 + (zTo - zFrom));
    for (let i = zFrom; i < zTo; i++) {
      const x = targets[i] as number;
      if (s.mark[x] === 1 || ((excluded[x] as number) & EXCLUDE_CANDIDATE) !== 0) continue;
      if (s.score[x] === 0) s.touched[touched++] = x;
      s.score[x] = (s.score[x] as number) + w;
      const c = s.viaCount[x] as number;
      if (c < VIA) {
        s.via[x * VIA + c] = z;
        s.viaCount[x] = c + 1;
      }
    }
  }
  // Round once (ties are decided on the rounded scores, by index), then keep the top k in a
  // bounded min-heap (worst on top).
  for (let t = 0; t < touched; t++) {
    const x = s.touched[t] as number;
    s.score[x] = Math.round((s.score[x] as number) * 1e6) / 1e6;
  }
  const heap: number[] = [];
  const sc = (x: number) => s.score[x] as number;
  const worse = (a: number, b: number) => better(sc(b), b, sc(a), a);
  const up = (i: number) => {
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!worse(heap[i] as number, heap[p] as number)) break;
      [heap[i], heap[p]] = [heap[p] as number, heap[i] as number];
      i = p;
    }
  };
  const down = (i: number) => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && worse(heap[l] as number, heap[m] as number)) m = l;
      if (r < heap.length && worse(heap[r] as number, heap[m] as number)) m = r;
      if (m === i) return;
      [heap[i], heap[m]] = [heap[m] as number, heap[i] as number];
      i = m;
    }
  };
  for (let t = 0; t < touched; t++) {
    const x = s.touched[t] as number;
    if (heap.length < k) {
      heap.push(x);
      up(heap.length - 1);
    } else if (k > 0 && better(sc(x), x, sc(heap[0] as number), heap[0] as number)) {
      heap[0] = x;
      down(0);
    }
  }
  const out = heap
    .map((x) => ({
      x,
      score: sc(x),
      via: Array.from(s.via.subarray(x * VIA, x * VIA + (s.viaCount[x] as number))),
    }))
    .sort((a, b) => (better(a.score, a.x, b.score, b.x) ? -1 : 1));
  for (let t = 0; t < touched; t++) {
    const x = s.touched[t] as number;
    s.score[x] = 0;
    s.viaCount[x] = 0;
  }
  s.mark[u] = 0;
  for (let i = from; i < to; i++) s.mark[targets[i] as number] = 0;
  return out;
}

export interface SuggestRunOptions {
  /** Suggestions kept per user (≤ 100). */
  top: number;
  /** Intermediaries following more than this many accounts are skipped. */
  limitFanout: number;
  /** Token ranges of the snapshot scan (default 16). */
  ranges?: number;
  /** Users whose results are written concurrently (default 32). */
  chunk?: number;
  log?: (line: string) => void;
}

export interface SuggestRunResult {
  users: number;
  edges: number;
  written: number;
  skippedHubs: number;
  scanMs: number;
  computeMs: number;
  generation: bigint;
}

/** Reads the snapshot: every `following` row, the deactivated users and the hide_lists ones, by token range. */
async function readSnapshot(store: GraphStore, ranges: number) {
  const b = new FollowSnapshotBuilder();
  const deactivated: bigint[] = [];
  const hidden: bigint[] = [];
  for (const range of splitRing(ranges)) {
    for (const table of SNAPSHOT_TABLES) {
      let after: bigint | null = null;
      for (;;) {
        const page = await store.scanPartitions(table, range, after, 200);
        for (const p of page) {
          if (p.key.table !== 'following') continue;
          const { list, bucketCode } = p.key;
          let from: ListEntry | null = null;
          for (;;) {
            const rows = await store.listBucket(list, bucketCode, from, 5000);
            for (const r of rows) b.add(list.userId, r.otherId);
            if (rows.length < 5000) break;
            from = rows.at(-1) as ListEntry;
          }
        }
        const users = page.flatMap((p) => (p.key.table === 'users' ? [p.key.userId] : []));
        if (users.length > 0) {
          for (const u of (await store.getUsers(users)).values()) {
            if (u.state === 'deactivated') deactivated.push(u.id);
            else if (u.hideLists) hidden.push(u.id);
          }
        }
        if (page.length < 200) break;
        after = page.at(-1)?.token ?? after;
      }
    }
  }
  return { builder: b, deactivated, hidden };
}

/** The candidates u has requested, blocks or is blocked by (point reads of u's partitions). */
async function storeExclusions(store: GraphStore, u: UserId, ids: readonly UserId[]): Promise<Set<UserId>> {
  const out = new Set<UserId>();
  if (ids.length === 0) return out;
  const layout = await store.getLayout({
    userId: u,
    relation: 'blocks',
    direction: 'in',
  });
  const maps = await Promise.all([
    store.getEdgesOut(u, 'requests', ids),
    store.getEdgesOut(u, 'blocks', ids),
    store.getEdgesIn(u, 'blocks', ids, layout),
  ]);
  for (const m of maps) for (const [id, e] of m) if (e.state === 'active') out.add(id);
  return out;
}

/** Scans, scores and stores the suggestions of every user in the snapshot. */
export async function runSuggestions(store: GraphStore, o: SuggestRunOptions): Promise<SuggestRunResult> {
  const log = o.log ?? (() => {});
  const generation = nowPosition();
  const t0 = performance.now();
  const { builder, deactivated, hidden } = await readSnapshot(store, o.ranges ?? 16);
  const g = builder.build();
  const excluded = new Uint8Array(g.n);
  const flag = (ids: readonly bigint[], flags: number) => {
    for (const id of ids) {
      // Indices were renumbered in id order by build(): find by binary search.
      const i = binarySearch(g.ids, id);
      if (i >= 0) excluded[i] = (excluded[i] as number) | flags;
    }
  };
  flag(deactivated, EXCLUDE_CANDIDATE | EXCLUDE_VIA);
  flag(hidden, EXCLUDE_VIA);
  const scanMs = Math.round(performance.now() - t0);
  log(
    `snapshot: ${g.n} users, ${g.m} follows, ${deactivated.length} deactivated, ${hidden.length} hide_lists, ${scanMs} ms`,
  );
  let skippedHubs = 0;
  for (let z = 0; z < g.n; z++)
    if ((g.offsets[z + 1] as number) - (g.offsets[z] as number) > o.limitFanout) skippedHubs++;
  const s = new SuggestionScratch(g.n);
  const chunk = o.chunk ?? 32;
  let written = 0;
  const t1 = performance.now();
  for (let start = 0; start < g.n; start += chunk) {
    const jobs: Promise<void>[] = [];
    for (let u = start; u < Math.min(g.n, start + chunk); u++) {
      if (((excluded[u] as number) & EXCLUDE_CANDIDATE) !== 0 || g.offsets[u] === g.offsets[u + 1]) continue;
      // Over-fetch, so the store exclusions rarely leave fewer than `top`.
      let k = o.top + 16;
      let cands = topCandidates(g, u, k, o.limitFanout, excluded, s);
      const uid = g.ids[u] as bigint;
      jobs.push(
        (async () => {
          for (;;) {
            const ex = await storeExclusions(
              store,
              uid,
              cands.map((c) => g.ids[c.x] as bigint),
            );
            const kept = cands.filter((c) => !ex.has(g.ids[c.x] as bigint));
            if (kept.length >= o.top || cands.length < k) {
              const items: Suggestion[] = kept.slice(0, o.top).map((c) => ({
                id: g.ids[c.x] as bigint,
                score: c.score,
                via: c.via.map((z) => g.ids[z] as bigint),
              }));
              await store.putSuggestions(uid, generation, items);
              written++;
              return;
            }
            k *= 2;
            cands = topCandidates(g, u, k, o.limitFanout, excluded, s);
          }
        })(),
      );
    }
    await Promise.all(jobs);
    if (start % (chunk * 100) === 0) log(`${Math.min(g.n, start + chunk)}/${g.n} users`);
  }
  return {
    users: g.n,
    edges: g.m,
    written,
    skippedHubs,
    scanMs,
    computeMs: Math.round(performance.now() - t1),
    generation,
  };
}

function binarySearch(a: BigInt64Array, v: bigint): number {
  let lo = 0;
  let hi = a.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const x = a[mid] as bigint;
    if (x === v) return mid;
    if (x < v) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
