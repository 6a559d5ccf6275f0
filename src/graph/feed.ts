/**
 * The change feed (`EventFeed`): the feed rows the writers put into their batches
 * (`pair-events.ts`, `accounts.ts`), read back in feed order behind a watermark.
 *
 * Design note.
 *
 * Settled. A row at slot σ can still be written (or corrected by a fuller view) until σ + L, where
 * L is the feed lag the pair protocol's bounds give (`feedLagMicros`: B + V + T + 2S, 10 s by
 * default). A read returns only rows with `slot <= now − L`: nothing can land behind a cursor
 * once it is issued, so resuming from any cursor returns every later event exactly once, and the
 * events of a pair applied in feed order give its current state (`pair-events.ts`). A change that
 * lands without an acknowledgement (a write answered 503, a writer that died after its append)
 * holds the watermark below its slot by its intent until the recovery resolves it
 * (`feed-intents.ts`, `FeedOptions.intents`); what is left open is in `docs/design/feed.md`.
 *
 * Cursors. An event's id is its cursor: its row's key and its index in the row, as text. A read
 * after a cursor re-reads that row (from a key just before it) and skips the events up to the
 * index, so a page may end inside a row. Rows sharing the cursor row's key up to its op kind never
 * shorten a page: a read that comes back full goes on. An empty page answers a cursor at the
 * watermark (after every row at or below it) only after a read that came back short, so the next
 * read does not scan the same empty stretch again and nothing before the watermark is skipped.
 *
 * One poller per process, on `timers`, runs while reads wait or anyone listens; each period it
 * looks for the waiting reads and polls the tail for the listeners (the caches, the registry).
 *
 * Waiting reads (long-polls, SSE streams between events): one look per period, a read of at most
 * one row after the oldest slot a waiter has seen, up to the watermark; a row found wakes them all,
 * each reading its own page up to the watermark the look computed (no second intent read). The
 * database sees one look per `pollMs` however many reads wait, and at most `maxWaiters` wait at
 * once (beyond: `FeedBusyError`, 503).
 *
 * The unsettled tail (`subscribe`): rows this instance wrote, at once, and rows any instance wrote,
 * by two reads in each period. The fresh read takes the newest slots, up to the clock + 2S, from a
 * little before the previous caught-up read began: as far back as rows have lately been seen to
 * land behind it (twice the furthest in the last 30–60 s, at least `TAIL_MIN_OVERLAP_MICROS`, at
 * most 2 s + 2S; the widest until 30 s have been watched). The sweep reads every row once
 * more when it is 2 s + 2S old, a second's worth at a time, in key order from where it stopped
 * (one read a second on an idle feed): a row the fresh read missed (a
 * writer whose clock fell behind since, a slow write) is passed on then, and widens the fresh read
 * for the next 30–60 s. So a row is read about twice, not once per period of its first 6 s,
 * and every row landed within 2 s + 2S of its slot reaches the listeners. Both reads page until
 * caught up (at most `TAIL_MAX_PAGES` a period; the next resumes where one stopped), never skip,
 * and the tail counts as fresh (`tailPolledAtMs`) only as of a fresh read that caught up. An event
 * id passed on lately is not passed on twice. Best effort, for caches that also expire entries.
 */

import { CursorExpiredError, FeedBusyError, InvalidCursorError } from '../model/errors.js';
import {
  compareEventKeys,
  type EventKey,
  type EventPage,
  type EventRow,
  type GraphEvent,
} from '../model/events.js';
import { boundedLru } from '../model/lru.js';
import { SYSTEM_TIMERS, type Timers } from '../model/timers.js';
import type { Position } from '../model/types.js';
import type { EventStore } from '../ports/event-store.js';
import type { EventFeed, WriteClock } from './contracts.js';
import {
  DEFAULT_FEED_CURSOR_SECRET,
  type FeedCursor,
  FeedCursorSeal,
  watermarkCursor,
} from './feed-cursor.js';
import { rowEvents } from './feed-rows.js';
import {
  Lateness,
  SEEN_EVENTS,
  TAIL_MAX_PAGES,
  TAIL_MIN_OVERLAP_MICROS,
  TAIL_PAGE,
  TAIL_SWEEP_MICROS,
  TAIL_SWEEP_STRIDE_MICROS,
} from './feed-tail.js';

export interface FeedOptions {
  store: Pick<EventStore, 'readEventRows'>;
  /** µs since the epoch. */
  clock: () => Position;
  /** L: how far behind the clock the settled feed ends (µs). */
  lagMicros: bigint;
  /** S: the largest distance between an instance's clock and the database's (µs). */
  skewMicros: bigint;
  /** The cursor secrets: the first seals, each one opens (`feed-cursor.ts`). Default: a fixed one. */
  cursorSecrets?: readonly string[];
  /** Events older than this are gone (a cursor before it is expired). */
  retentionSeconds: number;
  /** The one poller's period (ms): a look for the waiting reads, and the tail's reads. Default 200. */
  pollMs?: number;
  /** Reads that may wait at once on this instance (long-polls, SSE streams); beyond, `FeedBusyError`. Default 1,000. */
  maxWaiters?: number;
  /** False: listeners get this instance's rows only (no tail reads). Default true. */
  tail?: boolean;
  /**
   * Rows per tail read (`TAIL_PAGE`, 1,000, by default); a poll reads up to `TAIL_MAX_PAGES` of them
   * for each of its two reads and resumes where it stopped. Smaller only where a test needs a burst
   * to span pages (the whole-service simulation).
   */
  tailPage?: number;
  /** The poller's timer and clock (`tailPolledAtMs`); default the process's. */
  timers?: Timers;
  /**
   * The clock-skew guard the writers use (`clock-guard.ts`). The watermark is `clock − L`, and L
   * covers only a clock within S of the database's: a reader whose clock runs ahead would hand out
   * cursors past slots still being written. So a read, like a write, is refused
   * (`ClockSkewError`, HTTP 503) while the guard does not vouch for the clock.
   */
  guard?: WriteClock;
  /**
   * The intents of changes not yet resolved (`IntentFrontier`, `feed-intents.ts`): a read stops
   * below the oldest one.
   * Without: reads go to `now − L` (a store that writes no intents, or a test of the lag alone).
   */
  intents?: { settledThrough(now: Position): Promise<Position> };
  /** Called with the number of events each read returns, and how old (s) the newest of them is. */
  onRead?: (events: number, newestAgeSeconds: number | null) => void;
  /** Told the number of new feed events each acknowledged batch of this instance wrote (`written`). */
  onWritten?: (events: number) => void;
}

/** A read waiting for the feed to settle past `seen` (a slot). */
interface Waiter {
  seen: Position;
  /** With the watermark the look that found rows read up to (null: read your own). */
  wake: (until: Position | null) => void;
}

/**
 * The tail's reads: the fresh read's start (`since`, the clock when its last caught-up read
 * began, or `resume`, the last key an unfinished one read), the sweep's position (`swept`), and
 * how far behind a fresh read's start rows have landed lately (`lateness`).
 */
interface Tail {
  since: Position | null;
  resume: EventKey | null;
  swept: EventKey | null;
  lateness: Lateness;
}

/** What the tail read and passed on since the feed was built (`tailStats`). */
export interface TailStats {
  /** Rows the fresh reads and the sweep returned. */
  rowsRead: number;
  /** Events passed on to the listeners from those reads (this instance's own come first, not counted). */
  eventsPassed: number;
  /** Of those, the ones only the sweep found (the fresh read had not reached back far enough). */
  eventsLate: number;
}

export class Feed implements EventFeed {
  private readonly listeners = new Set<(e: GraphEvent) => void>();
  private readonly seen = boundedLru<string, true>(SEEN_EVENTS);
  /** Rows this instance wrote lately, by key: `written` counts each once. */
  private readonly counted = boundedLru<string, true>(10_000);

  private readonly seal: FeedCursorSeal;

  private readonly timers: Timers;

  constructor(private readonly o: FeedOptions) {
    this.timers = o.timers ?? SYSTEM_TIMERS;
    this.seal = new FeedCursorSeal(o.cursorSecrets?.length ? o.cursorSecrets : [DEFAULT_FEED_CURSOR_SECRET]);
  }

  async read(
    after: string | null,
    limit: number,
    w: { waitMs?: number; signal?: AbortSignal; acceptUnsealed?: boolean } = {},
  ): Promise<EventPage> {
    const cursor =
      after === null ? null : this.seal.open(after, { acceptUnsealed: w.acceptUnsealed ?? false });
    const now = this.o.clock();
    const retentionStart = now - BigInt(this.o.retentionSeconds) * 1_000_000n;
    if (cursor && cursor.key.slot < retentionStart) throw new CursorExpiredError(this.o.retentionSeconds);
    // No reader hands out a cursor past its watermark, now − L, and readers' clocks are within S
    // of the database's: a cursor beyond now − L + 2S was not issued by this feed.
    if (cursor && cursor.key.slot > now - this.o.lagMicros + 2n * this.o.skewMicros)
      throw new InvalidCursorError('the feed cursor is later than the feed');
    const deadline = this.timers.nowMs() + (w.waitMs ?? 0);
    // A read that may wait holds one of the instance's waiting places from its first read to its
    // answer, so a burst beyond the cap is refused before it costs the database anything.
    const waiting = (w.waitMs ?? 0) > 0;
    if (waiting) {
      if (this.waiting >= this.maxWaiters) throw new FeedBusyError(this.maxWaiters);
      this.waiting++;
    }
    try {
      let known: Position | null = null;
      for (;;) {
        const { page, until } = await this.readOnce(cursor, limit, known);
        if (page.items.length > 0 || this.timers.nowMs() >= deadline || w.signal?.aborted) {
          const newest = page.items.at(-1);
          this.o.onRead?.(page.items.length, newest ? Number(this.o.clock() - newest.slot) / 1e6 : null);
          return page;
        }
        const seen = cursor && cursor.key.slot > until ? cursor.key.slot : until;
        known = await this.settled(seen, deadline, w.signal);
      }
    } finally {
      if (waiting) this.waiting--;
    }
  }

  /** Reads that may wait now in progress (long-polls, SSE streams' reads between events). */
  waitingReads(): number {
    return this.waiting;
  }

  private waiting = 0;
  private get maxWaiters(): number {
    return this.o.maxWaiters ?? 1000;
  }
  private readonly waiters = new Set<Waiter>();

  /**
   * Resolves when the poller finds settled rows after `seen` (with the watermark it read up to),
   * or cannot look (null: the waiter then reads and meets the error itself), at `deadline`, or when
   * `signal` aborts (null).
   */
  private settled(seen: Position, deadline: number, signal?: AbortSignal): Promise<Position | null> {
    return new Promise<Position | null>((resolve) => {
      const done = (until: Position | null) => {
        stop();
        signal?.removeEventListener('abort', aborted);
        this.waiters.delete(waiter);
        resolve(until);
      };
      const aborted = () => done(null);
      const waiter: Waiter = { seen, wake: done };
      // The deadline on the feed's timers (a simulation's are virtual).
      const stop = this.timers.after(Math.max(1, deadline - this.timers.nowMs()), aborted);
      signal?.addEventListener('abort', aborted, { once: true });
      this.waiters.add(waiter);
      this.startPoller();
    });
  }

  /** The one poller's stop while it runs. */
  private poller: (() => void) | null = null;
  private polling = false;
  /** The tail's reads while anyone listens (and the tail is on). */
  private tail: Tail | null = null;

  private startPoller(): void {
    if (this.poller) return;
    this.poller = this.timers.every(this.o.pollMs ?? 200, () => void this.poll());
  }

  /** One period: a look for the waiting reads, then the tail's reads; stops when nobody is left. */
  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const waiters = [...this.waiters];
      const tail = this.tail;
      if (waiters.length === 0 && !tail) {
        this.poller?.();
        this.poller = null;
        return;
      }
      if (waiters.length > 0) await this.look(waiters);
      if (tail) await this.pollTail(tail).catch(() => undefined);
    } finally {
      this.polling = false;
    }
  }

  /**
   * One look for every waiting read: a single read of at most one row after the oldest slot any
   * waiter has seen, up to the watermark. Rows found wake every waiter (each reads its own page up
   * to that watermark); none moves every waiter's seen slot up to it. A look that cannot be made
   * (the clock guard, the database) wakes them all: each then gets the error from its own read.
   */
  private async look(waiters: readonly Waiter[]): Promise<void> {
    let from = (waiters[0] as Waiter).seen;
    for (const w of waiters) if (w.seen < from) from = w.seen;
    let found: boolean;
    let until: Position;
    try {
      this.o.guard?.assertWritable();
      until = await this.settledThrough();
      found =
        until > from && (await this.o.store.readEventRows(watermarkCursor(from).key, until, 1)).length > 0;
    } catch {
      for (const w of waiters) w.wake(null);
      return;
    }
    if (found) for (const w of waiters) w.wake(until);
    else for (const w of waiters) if (w.seen < until) w.seen = until;
  }

  private async readOnce(
    cursor: FeedCursor | null,
    limit: number,
    known: Position | null = null,
  ): Promise<{ page: EventPage; until: Position }> {
    this.o.guard?.assertWritable();
    // A watermark the poller computed a moment ago stays true (the bound only rises): reading up
    // to it spares every woken waiter its own read of the intents.
    const until = known ?? (await this.settledThrough());
    // From just before the cursor's row, so the rest of that row comes back too (and any rows
    // that differ from it only in op kind, which sort before it and are skipped here). Those must
    // not shorten the page: the read goes on from the last row it saw until the page is full or
    // a read comes back short, i.e. reached the watermark. Only then does an empty page answer
    // the watermark cursor.
    let from: EventKey | null = cursor ? { ...cursor.key, opKind: '' } : null;
    const items: GraphEvent[] = [];
    for (;;) {
      const rows = await this.o.store.readEventRows(from, until, limit + 1);
      for (const row of rows) {
        const order = cursor ? compareEventKeys(row.key, cursor.key) : 1;
        if (order < 0) continue;
        const events = rowEvents(row, this.seal).slice(order === 0 ? (cursor as FeedCursor).index + 1 : 0);
        for (const e of events) {
          items.push(e);
          if (items.length === limit) return { page: { items, next: e.id }, until };
        }
      }
      const last = rows.at(-1);
      if (rows.length <= limit || !last) break;
      from = last.key;
    }
    const last = items.at(-1);
    if (last) return { page: { items, next: last.id }, until };
    // Nothing after the cursor up to the watermark: resume from the watermark.
    if (cursor && cursor.key.slot > until)
      return { page: { items, next: this.seal.seal(cursor.key, cursor.index) }, until };
    const mark = watermarkCursor(until);
    return { page: { items, next: this.seal.seal(mark.key, mark.index) }, until };
  }

  /**
   * The newest slot a read may return now: the clock (sampled first) minus L, and below the oldest
   * unresolved intent (read after the clock; `feed-intents.ts`).
   */
  private settledThrough(): Promise<Position> {
    const now = this.o.clock();
    return this.o.intents ? this.o.intents.settledThrough(now) : Promise.resolve(now - this.o.lagMicros);
  }

  subscribe(listener: (event: GraphEvent) => void): () => void {
    this.listeners.add(listener);
    if (!this.tail && this.o.tail !== false) {
      this.tail = { since: null, resume: null, swept: null, lateness: new Lateness() };
      this.startPoller();
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stopTail();
    };
  }

  /**
   * When (ms since the epoch, this instance's clock) the last fresh read of the unsettled tail that
   * caught up with the feed *started* (it read every row landed by then within its reach); null
   * while none has (or none runs). What a cache that trusts the tail checks its freshness by: a
   * tail that falls behind stops looking fresh at once.
   */
  tailPolledAtMs(): number | null {
    return this.tailPolledMs;
  }

  private tailPolledMs: number | null = null;

  /** What the tail's reads cost and passed on since the feed was built. */
  tailStats(): TailStats {
    return { ...this.stats };
  }

  private readonly stats: TailStats = { rowsRead: 0, eventsPassed: 0, eventsLate: 0 };

  /**
   * Told the feed rows of each batch this instance's writers had acknowledged (the view writer's
   * and the account writes' `onEvents`): counts the new events (`onWritten`) and publishes them. A
   * view write rewrites the rows of the recent ops it sees, so a row counts once, when this
   * instance first writes it (a later correction of its content is not a new event).
   */
  readonly written = (rows: readonly EventRow[]): void => {
    let n = 0;
    for (const r of rows) {
      const k = `${r.key.slot}|${r.key.low}|${r.key.high}|${r.key.opPosition}|${r.key.opSource}|${r.key.opKind}`;
      if (this.counted.has(k)) continue;
      this.counted.set(k, true);
      n += r.user ? 1 : r.transitions.length;
    }
    this.o.onWritten?.(n);
    this.publish(rows);
  };

  /** Passes rows this instance just wrote to the subscribers (the writers call it after their batch). */
  publish(rows: readonly EventRow[]): void {
    if (this.listeners.size === 0) return;
    for (const row of rows) for (const e of rowEvents(row, this.seal)) this.emit(e);
  }

  /** Stops the tail's reads (the poller stops at its next period once no read waits). */
  close(): void {
    this.listeners.clear();
    this.stopTail();
  }

  /** Passes `e` on unless it was lately; true when it was passed on now. */
  private emit(e: GraphEvent): boolean {
    if (this.seen.has(e.id)) return false;
    this.seen.set(e.id, true);
    for (const l of this.listeners) {
      try {
        l(e);
      } catch {
        // A listener's failure is its own.
      }
    }
    return true;
  }

  private stopTail(): void {
    this.tail = null;
    this.tailPolledMs = null;
  }

  /**
   * The tail's two reads of one period (see the note at the top). The fresh read goes from
   * `since` less the overlap (or from `resume`) up to now + 2S: a row another instance wrote on a
   * clock ahead of ours (by up to 2S, each clock within S) is read as soon as it lands, not once
   * our clock passes its slot, so what follows the tail (the registry, the caches) does not lag by
   * the clocks' distance. The sweep goes from `swept` up to now − 2 s − 2S. Rows the fresh read
   * passes on for the first time tell how far behind its previous start they landed; rows only the
   * sweep finds count as the whole reach (the fresh read then reaches back to 2 s + 2S).
   */
  private async pollTail(tail: Tail): Promise<void> {
    // Fresh as of the read's start: the rows it reads are those landed by then, at least.
    const startedMs = this.timers.nowMs();
    const now = this.o.clock();
    // The widest distance between two instances' clocks, each within S of the database's.
    const clocksApart = 2n * this.o.skewMicros;
    const reach = TAIL_SWEEP_MICROS + clocksApart;
    const oldest = now - this.o.lagMicros;
    const furthest = tail.lateness.furthest(startedMs);
    let overlap = furthest === null ? reach : 2n * furthest + TAIL_MIN_OVERLAP_MICROS;
    if (overlap > reach) overlap = reach;
    const resumed = tail.resume !== null;
    const previous = tail.since;
    let back = previous === null ? oldest : previous - overlap;
    if (back < oldest) back = oldest;
    let from = tail.resume ?? watermarkCursor(back).key;
    tail.swept ??= watermarkCursor(oldest).key;
    const ahead = now + clocksApart;
    const pageRows = this.o.tailPage ?? TAIL_PAGE;
    let caughtUp = false;
    for (let page = 0; page < TAIL_MAX_PAGES && !caughtUp; page++) {
      const rows = await this.o.store.readEventRows(from, ahead, pageRows);
      this.stats.rowsRead += rows.length;
      for (const row of rows) {
        const passed = this.emitRow(row);
        // How far behind the previous start a row newly read landed: the reach the next needs.
        if (passed > 0 && !resumed && previous !== null && row.key.slot < previous)
          tail.lateness.note(startedMs, previous - row.key.slot);
      }
      const last = rows.at(-1);
      if (rows.length < pageRows || !last) caughtUp = true;
      else from = last.key;
    }
    if (caughtUp) {
      tail.since = now;
      tail.resume = null;
      this.tailPolledMs = startedMs;
    } else tail.resume = from;
    // The sweep: every row once more when it is `reach` old, in key order, a second at a time.
    const sweepTo = now - reach;
    for (let page = 0; page < TAIL_MAX_PAGES; page++) {
      if (tail.swept.slot > sweepTo - TAIL_SWEEP_STRIDE_MICROS) break;
      const rows = await this.o.store.readEventRows(tail.swept, sweepTo, pageRows);
      this.stats.rowsRead += rows.length;
      for (const row of rows) {
        const passed = this.emitRow(row);
        if (passed > 0) {
          this.stats.eventsLate += passed;
          tail.lateness.note(startedMs, reach);
        }
      }
      const last = rows.at(-1);
      if (rows.length < pageRows || !last) {
        // Every row up to `sweepTo` landed within the reach has been read.
        tail.swept = watermarkCursor(sweepTo).key;
        break;
      }
      tail.swept = last.key;
    }
  }

  /** Passes on a row's events not passed on lately; how many it passed on. */
  private emitRow(row: EventRow): number {
    let n = 0;
    for (const e of rowEvents(row, this.seal)) if (this.emit(e)) n++;
    this.stats.eventsPassed += n;
    return n;
  }
}
