/**
 * The following cap: what a new follow or an accept compares against `maxFollowing`.
 *
 * Design note. The cap counts follows plus pending outgoing requests (`committedFollowing`), so
 * requests to private accounts cannot be accepted past it. Reading two counters on every follow
 * would double a follow's reads, so a live follow uses an estimate (`committedEstimate`): the
 * committed count last read plus the follows this process reserved since, re-read once those
 * follows reach 1/`CAP_CHECK_SHARE` of the headroom or the read is `CAP_CHECK_MAX_AGE_MS` old.
 * Each call reserves one follow whether or not it lands, so the estimate only errs high. A user far
 * below the cap is read about once per eighth of the remaining headroom; near the cap every follow
 * reads. The cap was never exact across processes (two follows race their reads); P processes can
 * pass it only when P > `CAP_CHECK_SHARE`. Budgets are an LRU of `CAP_BUDGET_ENTRIES` actors, so
 * the map is bounded whatever the number of users served.
 */
import { boundedLru } from '../../model/lru.js';
import { listOut, type UserId } from '../../model/types.js';
import type { CountStore } from '../../ports/count-store.js';

/** A follow reads the cap's counters once this process's follows since the last read reach 1/this of the headroom. */
export const CAP_CHECK_SHARE = 8;
/** A cap read is reused for at most this long. */
export const CAP_CHECK_MAX_AGE_MS = 30_000;
/** Actors whose cap budget one process keeps. */
export const CAP_BUDGET_ENTRIES = 10_000;

export class FollowCap {
  /** Per actor: the committed following last read, when, and the follows reserved since (LRU). */
  private readonly budgets = boundedLru<UserId, { committed: number; at: number; reserved: number }>(
    CAP_BUDGET_ENTRIES,
  );

  constructor(
    private readonly store: Pick<CountStore, 'getCount'>,
    readonly max: number,
    /** A monotonic clock (ms) for the budgets' ages. */
    private readonly monotonic: () => number = () => performance.now(),
  ) {}

  /** The estimate a live follow of `actor` compares with the cap; reserves one follow (see the note). */
  committedEstimate(actor: UserId): Promise<number> {
    const b = this.budgets.peek(actor);
    if (
      b &&
      this.monotonic() - b.at <= CAP_CHECK_MAX_AGE_MS &&
      (b.reserved + 1) * CAP_CHECK_SHARE <= this.max - b.committed
    ) {
      b.reserved += 1;
      return Promise.resolve(b.committed + b.reserved - 1);
    }
    return this.committedFollowing(actor).then((committed) => {
      this.budgets.set(actor, { committed, at: this.monotonic(), reserved: 1 });
      return committed;
    });
  }

  /** Follows plus pending outgoing requests, as the counters say now. */
  async committedFollowing(actor: UserId): Promise<number> {
    const [following, requested] = await Promise.all([
      this.store.getCount(listOut(actor, 'follows')),
      this.store.getCount(listOut(actor, 'requests')),
    ]);
    return Math.max(0, following) + Math.max(0, requested);
  }

  /** The committed follows alone (what an accept compares: the request already counts). */
  following(actor: UserId): Promise<number> {
    return this.store.getCount(listOut(actor, 'follows'));
  }
}
