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
 * Waiting reads (long-polls, SSE streams between events) share one watcher: while any wait, it
 * looks every `pollMs` for one settled row after the oldest slot a waiter has seen, and wakes them
 * all when it finds one; each then reads its own page. The database sees one poll per `pollMs`
 * however many reads wait, and at most `maxWaiters` wait at once (beyond: `FeedBusyError`, 503).
 *
 * The unsettled tail (`subscribe`): rows this instance wrote, at once, and rows any instance wrote,
 * by polling the newest slots (above the watermark, up to the clock + 2S) every `tailPollMs` while
 * anyone listens; an event id seen lately is not passed on twice. Best effort, for caches that
 * also expire entries.
 */

import { CursorExpiredError, FeedBusyError, InvalidCursorError } from '../model/errors.js';
import {
  compareEventKeys,
  type EventKey,
  type EventPage,
  type EventRow,
  edgeEventType,
  eventShard,
  type GraphEvent,
} from '../model/events.js';
import { boundedLru } from '../model/lru.js';
import { SYSTEM_TIMERS, type Timers } from '../model/timers.js';
import type { Position, UserField, UserId } from '../model/types.js';
import type { EventStore } from '../ports/event-store.js';
import type { EventFeed, WriteClock } from './contracts.js';
import {
  DEFAULT_FEED_CURSOR_SECRET,
  type FeedCursor,
  FeedCursorSeal,
  watermarkCursor,
} from './feed-cursor.js';

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
  /** How often the one watcher looks for settled rows while reads wait (ms). Default 200. */
  pollMs?: number;
  /** Reads that may wait at once on this instance (long-polls, SSE streams); beyond, `FeedBusyError`. Default 1,000. */
  maxWaiters?: number;
  /** How often the unsettled tail is polled while someone listens (ms); 0: local events only. Default 250. */
  tailPollMs?: number;
  /** The tail poll's timer and clock (`tailPolledAtMs`); default the process's. */
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

/** The events of a row, in order, with their sealed ids. */
export function rowEvents(row: EventRow, seal: FeedCursorSeal): GraphEvent[] {
  const k = row.key;
  if (row.user)
    return [
      {
        id: seal.seal(k, 0),
        type: 'user.updated',
        source: k.low,
        target: k.low,
        position: k.opPosition,
        slot: k.slot,
        ...(row.fields ? { fields: row.fields } : {}),
      },
    ];
  return row.transitions.map((t, i) => ({
    id: seal.seal(k, i),
    type: edgeEventType(t.relation, t.on),
    source: t.sourceId,
    target: t.targetId,
    position: k.opPosition,
    slot: k.slot,
  }));
}

/**
 * The feed row of an admin change of `account` naming `fields`, at `slot` (the cells' version).
 * `nonce` tells apart the rows of two updates at one version (two PUTs that read the same cells
 * at once, on clocks behind them, both take the version above): stored in the key's `opSource`,
 * it keeps each update's row and its fields. Rows written before it carry the account there.
 */
export function userUpdatedRow(
  account: UserId,
  slot: Position,
  fields: readonly UserField[],
  nonce: bigint,
): EventRow {
  return {
    key: {
      slot,
      shard: eventShard(account, account),
      low: account,
      high: account,
      opPosition: slot,
      opSource: nonce,
      opKind: 'user',
    },
    transitions: [],
    user: true,
    ...(fields ? { fields } : {}),
  };
}

/** A read waiting for the feed to settle past `seen` (a slot). */
interface Waiter {
  seen: Position;
  wake: () => void;
}

/**
 * The tail poller: its timer, and where its next poll starts — `since`, the clock at its last
 * poll that caught up, or `resume`, the slot of the last row it read when a poll stopped short.
 */
interface Tail {
  stop: () => void;
  since: Position | null;
  resume: Position | null;
}

/** How far before its previous poll the tail poller reads again (µs), besides 2S (`pollTail`). */
const TAIL_OVERLAP_MICROS = 2_000_000n;
/** Rows per tail read, and reads per poll at most (a poll that needs more resumes at the next). */
const TAIL_PAGE = 1000;
const TAIL_MAX_PAGES = 20;

export class Feed implements EventFeed {
  private readonly listeners = new Set<(e: GraphEvent) => void>();
  private readonly seen = boundedLru<string, true>(10_000);
  /** Rows this instance wrote lately, by key: `written` counts each once. */
  private readonly counted = boundedLru<string, true>(10_000);
  private tail: Tail | null = null;

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
    const deadline = Date.now() + (w.waitMs ?? 0);
    // A read that may wait holds one of the instance's waiting places from its first read to its
    // answer, so a burst beyond the cap is refused before it costs the database anything.
    const waiting = (w.waitMs ?? 0) > 0;
    if (waiting) {
      if (this.waiting >= this.maxWaiters) throw new FeedBusyError(this.maxWaiters);
      this.waiting++;
    }
    try {
      for (;;) {
        const { page, until } = await this.readOnce(cursor, limit);
        if (page.items.length > 0 || Date.now() >= deadline || w.signal?.aborted) {
          const newest = page.items.at(-1);
          this.o.onRead?.(page.items.length, newest ? Number(this.o.clock() - newest.slot) / 1e6 : null);
          return page;
        }
        const seen = cursor && cursor.key.slot > until ? cursor.key.slot : until;
        await this.settled(seen, deadline, w.signal);
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
  private watcher: NodeJS.Timeout | null = null;

  /**
   * Resolves when the watcher finds settled rows after `seen` (or cannot look: the waiter then
   * reads and meets the error itself), at `deadline`, or when `signal` aborts.
   */
  private settled(seen: Position, deadline: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.waiters.delete(waiter);
        resolve();
      };
      const waiter: Waiter = { seen, wake: done };
      const timer = setTimeout(done, Math.max(1, deadline - Date.now()));
      signal?.addEventListener('abort', done, { once: true });
      this.waiters.add(waiter);
      this.startWatcher();
    });
  }

  private startWatcher(): void {
    if (this.watcher) return;
    const every = this.o.pollMs ?? 200;
    const tick = async () => {
      await this.watch().catch(() => undefined);
      this.watcher = this.waiters.size > 0 ? setTimeout(() => void tick(), every) : null;
    };
    this.watcher = setTimeout(() => void tick(), every);
  }

  /**
   * One look for every waiting read: a single read of at most one row after the oldest slot any
   * waiter has seen, up to the watermark. Rows found wake every waiter (each reads its own page);
   * none moves every waiter's seen slot up to the watermark. So the database sees one poll per
   * `pollMs` however many reads wait. A look that cannot be made (the clock guard, the database)
   * wakes them all: each then gets the error from its own read.
   */
  private async watch(): Promise<void> {
    const waiters = [...this.waiters];
    if (waiters.length === 0) return;
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
      for (const w of waiters) w.wake();
      return;
    }
    if (found) for (const w of waiters) w.wake();
    else for (const w of waiters) if (w.seen < until) w.seen = until;
  }

  private async readOnce(
    cursor: FeedCursor | null,
    limit: number,
  ): Promise<{ page: EventPage; until: Position }> {
    this.o.guard?.assertWritable();
    const until = await this.settledThrough();
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
    this.startTail();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stopTail();
    };
  }

  /**
   * When (ms since the epoch, this instance's clock) the last poll of the unsettled tail that caught
   * up with the feed *started* (it read every row landed by then); null while none has (or none
   * runs). What a cache that trusts the tail checks its freshness by: a tail that falls behind
   * stops looking fresh at once.
   */
  tailPolledAtMs(): number | null {
    return this.tailPolledMs;
  }

  private tailPolledMs: number | null = null;

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

  /** Stops the tail poller. */
  close(): void {
    this.listeners.clear();
    this.stopTail();
  }

  private emit(e: GraphEvent): void {
    if (this.seen.has(e.id)) return;
    this.seen.set(e.id, true);
    for (const l of this.listeners) {
      try {
        l(e);
      } catch {
        // A listener's failure is its own.
      }
    }
  }

  private startTail(): void {
    const every = this.o.tailPollMs ?? 250;
    if (this.tail || every <= 0) return;
    const tail: Tail = { stop: () => undefined, since: null, resume: null };
    tail.stop = this.timers.every(every, () => void this.pollTail(tail).catch(() => undefined));
    this.tail = tail;
  }

  private stopTail(): void {
    this.tail?.stop();
    this.tail = null;
    this.tailPolledMs = null;
  }

  private busy = false;

  /**
   * Reads the rows written lately, page after page until a page comes back short: from 2 s + 2S
   * before the previous caught-up poll (a row lands a few ms after its slot in the common case, and
   * a slot taken on a clock behind ours by up to 2S looks that much older), never further back than
   * the lag, up to now + 2S: a row another instance wrote on a clock ahead of ours (by up to 2S,
   * each clock within S) is read as soon as it lands, not once our clock passes its slot, so what
   * follows the tail (the registry, the caches) does not lag by the clocks' distance. A poll that
   * reads `TAIL_MAX_PAGES` full pages stops there without counting as caught up, and the next one
   * resumes at the slot of the last row it read (already-seen events are not passed on twice): the
   * tail falls behind under a burst, and says so, but skips nothing.
   */
  private async pollTail(tail: Tail): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      // Fresh as of the poll's start: the rows it reads are those landed by then, at least.
      const startedMs = this.timers.nowMs();
      const now = this.o.clock();
      // The widest distance between two instances' clocks, each within S of the database's.
      const clocksApart = 2n * this.o.skewMicros;
      const ahead = now + clocksApart;
      const oldest = now - this.o.lagMicros;
      const back =
        tail.resume !== null
          ? tail.resume - 1n
          : tail.since === null
            ? oldest
            : tail.since - TAIL_OVERLAP_MICROS - clocksApart;
      let from = watermarkCursor(tail.resume !== null || back > oldest ? back : oldest).key;
      for (let page = 0; page < TAIL_MAX_PAGES; page++) {
        const rows = await this.o.store.readEventRows(from, ahead, TAIL_PAGE);
        for (const row of rows) for (const e of rowEvents(row, this.seal)) this.emit(e);
        const last = rows.at(-1);
        if (rows.length < TAIL_PAGE || !last) {
          tail.since = now;
          tail.resume = null;
          this.tailPolledMs = startedMs;
          return;
        }
        from = last.key;
        tail.resume = last.key.slot;
      }
    } finally {
      this.busy = false;
    }
  }
}
