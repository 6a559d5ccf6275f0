/**
 * Set queries on the follow graph: a newest-first page of one of the owner's follow lists
 * intersected with (or minus) the other one — mutuals, not-followed-back, and the walk behind
 * followed-by.
 *
 * Design note. One list *drives*: its pages (`ListService.page`, newest first) are the
 * candidates, in order; the other side is *probed* for active edges once per batch (one
 * single-partition read for `out`, one per bucket code for `in`, as `contains` reads). Mutuals drive from the smaller
 * side (the two counters are compared on the first page; the cursor records the choice, so a
 * walk keeps one order): the order is "newest first" on the driving list's `created_at`, i.e.
 * newest follow first when following drives, newest follower first when followers drive.
 * Not-followed-back always drives from followers (its order is the followers order) and keeps
 * the rows *absent* from following. Each batch's hits then go through the optional
 * `MemberFilter` (deactivated accounts) before they count: the probe itself does not consult
 * account state, so a batch costs one user read for its hits, not one for every candidate.
 *
 * A page reads on, batch after batch, until it holds `limit` items, so pages are full except the
 * last — with one documented exception: a page stops once it has read `budget` driving rows
 * (default `max(20 × limit, 1000)`) and answers what it found with a `next_cursor`, which may be
 * a short or even empty page. Without it a request over a 9M-follower list whose members all
 * fail the probe or the filter would read the whole list. Batches start at `max(limit, 100)`
 * rows and double (up to the `contains` limit of 1000) as a page reads on — a low hit rate is
 * what makes it read on — and the last one is cut to what is left of the budget, so a page never
 * reads more than `budget` driving rows (a re-read batch included).
 *
 * Resuming mid-batch: the cursor keeps the inner cursor *before* the batch and the last row
 * emitted (`set-cursor.ts`); the batch is re-read and rows at or above that row are skipped. The
 * re-read costs at most one batch per page and is counted in `rowsRead`. The re-read may use
 * smaller batches than the page that set the boundary (another `limit`), so the boundary applies
 * to every batch of the walk, and a cursor sealed after a batch that has not passed it yet (a
 * budget stop) carries it on.
 */

import type { ListItem, ListService, MemberFilter, TimeRange } from '../../lists/contracts.js';
import type { DrivingSide, SetCursorCodec, SetQueryKind } from '../../lists/cursor/set-cursor.js';
import { InvalidInputError } from '../../model/errors.js';
import { MAX_CONTAINS_IDS } from '../../model/limits.js';
import type { ListEntry, ListKey, UserId } from '../../model/types.js';

/** Most ids one probe takes: what `contains` takes. */
export const MAX_SET_BATCH = MAX_CONTAINS_IDS;
/** The smallest driving batch. */
export const MIN_SET_BATCH = 100;
/** Driving rows a page may read per item asked for (the budget), and its floor. */
export const SET_BUDGET_PER_ITEM = 20;
export const SET_MIN_BUDGET = 1000;

/** What one page cost; `onPage` receives it and `SetPage.stats` carries it. */
export interface SetPageStats {
  kind: SetQueryKind;
  owner: UserId;
  driving: DrivingSide;
  /** Driving rows read (including a re-read batch). */
  rowsRead: number;
  /** Driving pages read = `contains` probes made (an empty candidate batch makes no probe). */
  batches: number;
  /** Hits the member filter removed. */
  filtered: number;
  /** True when the page stopped at the rows-read budget (possibly short, with a cursor). */
  budgetHit: boolean;
}

export interface SetPage {
  items: ListItem[];
  nextCursor: string | null;
  stats: SetPageStats;
}

/** The one probe of a batch: which of `ids` are on the other side. */
export type Probe = (ids: readonly UserId[]) => Promise<ReadonlySet<UserId>>;

export interface SetQueryDeps {
  lists: Pick<ListService, 'page'>;
  codec: SetCursorCodec;
  /**
   * The ids among `ids` with an active follow edge of `owner` on `direction`'s side, without the
   * member filter (the walk applies it once, to the hits).
   */
  probe: (owner: UserId, direction: DrivingSide, ids: readonly UserId[]) => Promise<ReadonlySet<UserId>>;
  /** Approximate size of a list (the counter); only compared, never trusted for paging. */
  count: (list: ListKey) => Promise<number>;
  /** Members to skip (deactivated accounts); applied to every batch's hits. */
  memberFilter?: MemberFilter;
  /** Rows-read budget of one page; default `max(20 × limit, 1000)`. */
  budget?: (limit: number) => number;
  /** Told every page's cost (metrics, tests). */
  onPage?: (s: SetPageStats) => void;
}

/** One batch of a set walk: its candidates in list order and which of them matched. */
export interface SetBatch {
  rows: ListItem[];
  /** The matching rows (after the member filter), in list order. */
  matched: ListItem[];
  /** The driving list's cursor before this batch (what a resume re-reads). */
  before: string | null;
  /** The driving list's cursor after it; null at the end of the list. */
  after: string | null;
  /** Hits the filter removed. */
  filtered: number;
}

export interface SetWalk {
  drive: ListKey;
  probe: Probe;
  /** Keep rows the probe finds (`intersect`) or rows it does not (`difference`). */
  keep: 'intersect' | 'difference';
  /** Ids never to return (followed-by leaves out `id` itself). */
  exclude?: UserId;
  /** Only driving rows in `[since, until)`: read from the clustering order, bound to the inner cursor. */
  bounds?: TimeRange;
}

/** True when `e` comes strictly after `b` in list order (created_at DESC, other_id DESC). */
function after(e: ListItem, b: ListEntry): boolean {
  return e.createdAt < b.createdAt || (e.createdAt === b.createdAt && e.id < b.otherId);
}

const follows = (userId: UserId, direction: DrivingSide): ListKey => ({
  userId,
  relation: 'follows',
  direction,
});

export class SetQueries {
  constructor(private readonly d: SetQueryDeps) {}

  /**
   * Walks `w.drive` from `from` (inner cursor, skip boundary), one batch per driving page, each
   * probed once; `size()` is asked before every batch (clamped to 1..`MAX_SET_BATCH`).
   */
  async *walk(
    w: SetWalk,
    from: { inner: string | null; boundary: ListEntry | null },
    size: () => number,
    exclude: MemberFilter | undefined = this.d.memberFilter,
  ): AsyncGenerator<SetBatch> {
    let inner = from.inner;
    const boundary = from.boundary;
    for (;;) {
      const batch = Math.min(MAX_SET_BATCH, Math.max(1, Math.floor(size())));
      const page = await this.d.lists.page(w.drive, batch, inner, w.bounds ?? {});
      const rows = page.items.filter((r) => (!boundary || after(r, boundary)) && r.id !== w.exclude);
      let matched: ListItem[] = [];
      let filtered = 0;
      if (rows.length > 0) {
        const hits = await w.probe(rows.map((r) => r.id));
        matched = rows.filter((r) => hits.has(r.id) === (w.keep === 'intersect'));
        if (exclude && matched.length > 0) {
          const hidden = await exclude(matched.map((r) => r.id));
          const before = matched.length;
          matched = matched.filter((r) => !hidden.has(r.id));
          filtered = before - matched.length;
        }
      }
      yield { rows: page.items, matched, before: inner, after: page.nextCursor, filtered };
      if (page.nextCursor === null) return;
      // The boundary stays: a resume may re-read in smaller batches than the page that set it,
      // so the rows up to it can span several batches (rows after it are older in every batch).
      inner = page.nextCursor;
    }
  }

  /**
   * One newest-first page of a set query on `owner`'s follow lists (see the module note): full
   * unless it is the last or the rows-read budget stopped it. Throws `InvalidCursorError` for a
   * cursor not issued for this kind and owner, `InvalidInputError` for a limit below 1.
   */
  async page(
    kind: SetQueryKind,
    owner: UserId,
    limit: number,
    cursor: string | null,
    bounds: TimeRange = {},
    exclude: MemberFilter | undefined = this.d.memberFilter,
  ): Promise<SetPage> {
    if (!Number.isInteger(limit) || limit < 1) throw new InvalidInputError('limit', 'at least 1');
    const range = { since: bounds.since ?? null, until: bounds.until ?? null };
    const c = cursor ? this.d.codec.decode(cursor, kind, owner, range) : null;
    const driving = c?.driving ?? (await this.chooseDriving(kind, owner));
    const probeSide: DrivingSide = driving === 'out' ? 'in' : 'out';
    const w: SetWalk = {
      drive: follows(owner, driving),
      probe: (ids) => this.d.probe(owner, probeSide, ids),
      keep: kind === 'mutuals' ? 'intersect' : 'difference',
      bounds,
    };
    const budget = this.d.budget?.(limit) ?? Math.max(SET_BUDGET_PER_ITEM * limit, SET_MIN_BUDGET);
    const stats: SetPageStats = {
      kind,
      owner,
      driving,
      rowsRead: 0,
      batches: 0,
      filtered: 0,
      budgetHit: false,
    };
    const items: ListItem[] = [];
    const seal = (inner: string | null, boundary: ListEntry | null) =>
      this.d.codec.encode({ kind, owner, driving, inner, boundary, bounds: range });
    let nextCursor: string | null = null;
    const from = { inner: c?.inner ?? null, boundary: c?.boundary ?? null };
    // A cursor after batch `b` keeps the resume boundary while `b` has not passed it yet.
    const carry = (b: SetBatch): ListEntry | null => {
      const last = b.rows.at(-1);
      return from.boundary && last && !after(last, from.boundary) ? from.boundary : null;
    };
    // Doubling batches, the last one cut to what is left of the budget.
    let grow = Math.max(limit, MIN_SET_BATCH);
    const size = () => {
      const n = Math.min(grow, budget - stats.rowsRead);
      grow *= 2;
      return n;
    };
    for await (const b of this.walk(w, from, size, exclude)) {
      stats.rowsRead += b.rows.length;
      stats.batches++;
      stats.filtered += b.filtered;
      const room = limit - items.length;
      items.push(...b.matched.slice(0, room));
      if (items.length === limit) {
        const last = items[items.length - 1] as ListItem;
        if (b.matched.length > room)
          nextCursor = seal(b.before, { createdAt: last.createdAt, otherId: last.id });
        else nextCursor = b.after === null ? null : seal(b.after, carry(b));
        break;
      }
      if (b.after === null) break;
      if (stats.rowsRead >= budget) {
        stats.budgetHit = true;
        nextCursor = seal(b.after, carry(b));
        break;
      }
    }
    this.d.onPage?.(stats);
    return { items, nextCursor, stats };
  }

  /** Mutuals: the smaller of the two lists (ties: following); not-followed-back: followers. */
  private async chooseDriving(kind: SetQueryKind, owner: UserId): Promise<DrivingSide> {
    if (kind === 'not_followed_back') return 'in';
    const [following, followers] = await Promise.all([
      this.d.count(follows(owner, 'out')),
      this.d.count(follows(owner, 'in')),
    ]);
    return followers < following ? 'in' : 'out';
  }
}
