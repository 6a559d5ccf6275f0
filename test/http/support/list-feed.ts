/**
 * A deterministic `EventFeed` for route tests: a list of settled events with opaque cursors. It
 * stands in for the domain's feed (not for the database), honours `waitMs` and `signal`, and
 * records every read so a test can see what the routes asked for and when a read was aborted.
 *
 * Cursors: `c<n>` resumes after the n-th event (`c0`: before the first); event n's `id` is `c<n>`.
 * A cursor below `expiredBelow` is expired (410); anything else that is not a cursor, or one past
 * the end of the list, is invalid (400). With `endless`, the list grows on demand: every read
 * finds `limit` new events, as an infinitely fast writer would make them.
 */
import type { EventFeed } from '../../../src/graph/contracts.js';
import { CursorExpiredError, InvalidCursorError } from '../../../src/model/errors.js';
import type { EventPage, EventType, GraphEvent } from '../../../src/model/events.js';

export const FEED_RETENTION_SECONDS = 604_800;
/** 2026-11-30T04:31:18.123456Z in µs: the slot of event 1; event n is n ms later. */
export const BASE_SLOT = 1_796_013_078_123_456n;

export interface FeedRead {
  after: string | null;
  limit: number;
  waitMs: number;
  /** Items returned (-1 while pending or when the read failed). */
  returned: number;
  /** The read's signal fired while it waited. */
  aborted: boolean;
}

/** Event n of a test feed: a follow by `n` of `n + 1` (types vary with `type`). */
export function testEvent(n: number, type: EventType = 'follow.created'): GraphEvent {
  return {
    id: `c${n}`,
    type,
    source: BigInt(n),
    target: BigInt(n + 1),
    position: BASE_SLOT + BigInt(n) * 1000n - 7n,
    slot: BASE_SLOT + BigInt(n - 1) * 1000n,
  };
}

export class ListFeed implements EventFeed {
  readonly events: GraphEvent[] = [];
  readonly reads: FeedRead[] = [];
  private readonly waiters = new Set<() => void>();

  constructor(private readonly o: { endless?: boolean; expiredBelow?: number } = {}) {}

  /** Appends events (numbered after the last) and wakes the waiting reads. */
  append(...types: EventType[]): GraphEvent[] {
    const added = types.map((t, i) => testEvent(this.events.length + 1 + i, t));
    for (const e of added) this.events.push(e);
    for (const wake of [...this.waiters]) wake();
    return added;
  }

  async read(after: string | null, limit: number, o: { waitMs?: number; signal?: AbortSignal } = {}) {
    const read: FeedRead = {
      after,
      limit,
      waitMs: o.waitMs ?? 0,
      returned: -1,
      aborted: false,
    };
    this.reads.push(read);
    const start = this.position(after);
    if (this.o.endless) {
      while (this.events.length < start + limit) this.append('follow.created');
    }
    if (this.events.length <= start && read.waitMs > 0) {
      await this.waitForMore(read, o.signal);
    }
    const items = this.events.slice(start, start + limit);
    const page: EventPage = { items, next: items.at(-1)?.id ?? `c${start}` };
    read.returned = items.length;
    return page;
  }

  subscribe(): () => void {
    return () => undefined;
  }

  private position(after: string | null): number {
    if (after === null) return this.o.expiredBelow ?? 0;
    const m = /^c(0|[1-9][0-9]*)$/.exec(after);
    const n = m ? Number(m[1]) : Number.NaN;
    if (!(n <= this.events.length)) throw new InvalidCursorError('not a cursor of this feed');
    if (n < (this.o.expiredBelow ?? 0)) throw new CursorExpiredError(FEED_RETENTION_SECONDS);
    return n;
  }

  /** Resolves when an event is appended or `read.waitMs` passes; rejects when `signal` aborts. */
  private waitForMore(read: FeedRead, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        signal?.removeEventListener('abort', abort);
      };
      const wake = () => {
        done();
        resolve();
      };
      const abort = () => {
        done();
        read.aborted = true;
        reject(signal?.reason ?? new Error('aborted'));
      };
      const timer = setTimeout(wake, read.waitMs);
      if (signal?.aborted) return abort();
      this.waiters.add(wake);
      signal?.addEventListener('abort', abort, { once: true });
    });
  }
}
