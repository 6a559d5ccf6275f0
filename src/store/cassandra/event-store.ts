/**
 * `EventStore` on Cassandra: the feed's rows (`graph_events`, a partition per minute of slots and
 * shard) and the index of periods that hold rows (`graph_event_periods`, a partition per day).
 *
 * Design note. Writers add rows only through `eventStatements`, which the edge and user stores put
 * into the logged batch of the change itself; the index row of a period rides in the first batch
 * this instance writes into that period (remembered in a small bounded set; another instance
 * writes its own, the write is idempotent). A read lists the index only for a range reaching a
 * period not in that set, and adds what it lists. A read merges the shards of each indexed period in
 * feed order: each shard is read from the cursor with a limit, and only rows up to the smallest
 * last row of a shard that filled its limit are taken before reading on from there, so no row of
 * a slower shard is skipped. Empty rows (ops without events) are read and dropped.
 */

import { nowPosition } from '../../model/clock.js';
import {
  compareEventKeys,
  DEFAULT_EVENT_RETENTION_SECONDS,
  EVENT_PERIOD_MICROS,
  EVENT_SHARDS,
  type EventKey,
  type EventRow,
  eventPeriod,
} from '../../model/events.js';
import { boundedLru } from '../../model/lru.js';
import type { Position } from '../../model/types.js';
import type { EventStore, FeedIntentStore, IntentDecision } from '../../ports/event-store.js';
import { decodeEvents, encodeEvents, hasEvents } from '../event-codec.js';
import type { Bound, CqlExecutor } from './executor.js';
import { intentParams } from './keys.js';
import type { Row } from './rows.js';
import { S } from './statements.js';

/** Periods per index partition: a day of minutes. */
const PERIODS_PER_DAY = 1440n;

/** Every shard of a period, for a read of them all at once. */
const ALL_EVENT_SHARDS = Array.from({ length: EVENT_SHARDS }, (_, shard) => shard);

const toKey = (r: Row, shard: number): EventKey => ({
  slot: r.slot as bigint,
  shard,
  low: r.low_id as bigint,
  high: r.high_id as bigint,
  opPosition: r.op_position as bigint,
  opSource: r.op_source as bigint,
  opKind: r.op_kind as string,
});

export class CassandraEventStore implements EventStore, FeedIntentStore {
  /** Periods whose index row this instance has written (or read). */
  private readonly indexed = boundedLru<bigint, true>(4096);

  constructor(
    private readonly cql: CqlExecutor,
    private readonly retentionSeconds = DEFAULT_EVENT_RETENTION_SECONDS,
    private readonly now: () => Position = nowPosition,
  ) {}

  /**
   * The statements that write `rows` at `version`, with the index row of each period this instance
   * has not yet indexed; call `written` once the batch holding them is acknowledged.
   */
  eventStatements(rows: readonly EventRow[], version: bigint): Bound[] {
    const out: Bound[] = [];
    const ttl = this.retentionSeconds;
    const periods = new Set<bigint>();
    for (const row of rows) {
      const k = row.key;
      const period = eventPeriod(k.slot);
      if (!this.indexed.has(period) && !periods.has(period)) {
        periods.add(period);
        out.push({ statement: S.putEventPeriod, params: [period / PERIODS_PER_DAY, period, ttl + 86_400] });
      }
      out.push({
        statement: S.putEvent,
        params: [
          period,
          k.shard,
          k.slot,
          k.low,
          k.high,
          k.opPosition,
          k.opSource,
          k.opKind,
          encodeEvents(row),
          version,
          ttl,
        ],
      });
    }
    return out;
  }

  /** Records that the batch holding `rows` landed: their periods are indexed. */
  written(rows: readonly EventRow[]): void {
    for (const row of rows) this.indexed.set(eventPeriod(row.key.slot), true);
  }

  async readEventRows(after: EventKey | null, until: Position, limit: number): Promise<EventRow[]> {
    const out: EventRow[] = [];
    if (limit <= 0) return out;
    const start = after?.slot ?? this.now() - BigInt(this.retentionSeconds) * 1_000_000n;
    let cursor = after;
    for (const period of await this.periods(eventPeriod(start), eventPeriod(until))) {
      // Rows of this period after `cursor` (or from `start`): every shard in one read first; only
      // when that read comes back full (it may have stopped inside any shard), shard by shard.
      const whole = await this.readShards(period, cursor, start, until, limit);
      if (whole !== null) {
        for (const row of whole) {
          if (!hasEvents(row)) continue;
          out.push(row);
          if (out.length === limit) return out;
        }
        continue;
      }
      for (;;) {
        const pages = await Promise.all(
          Array.from({ length: EVENT_SHARDS }, (_, shard) =>
            this.readShard(period, shard, cursor, start, until, limit),
          ),
        );
        let frontier: EventKey | null = null;
        for (const page of pages) {
          const last = page.at(-1);
          if (
            page.length === limit &&
            last &&
            (frontier === null || compareEventKeys(last.key, frontier) < 0)
          )
            frontier = last.key;
        }
        const merged = pages
          .flat()
          .filter((r) => frontier === null || compareEventKeys(r.key, frontier) <= 0)
          .sort((a, b) => compareEventKeys(a.key, b.key));
        for (const row of merged) {
          if (!hasEvents(row)) continue;
          out.push(row);
          if (out.length === limit) return out;
        }
        if (frontier === null) break;
        cursor = frontier;
      }
    }
    return out;
  }

  /**
   * Every row of `period` after `cursor` (from `start` without one, or when the cursor is in an
   * earlier period), slot ≤ `until`, in key order, read from all the shards in one statement
   * (`shard IN …`: the coordinator reads the 8 partitions; one request instead of 8, which is what
   * the feed's tail costs a poll). Null when the read comes back full: it may have stopped inside
   * any shard, so the caller reads shard by shard.
   */
  private async readShards(
    period: bigint,
    cursor: EventKey | null,
    start: Position,
    until: Position,
    limit: number,
  ): Promise<EventRow[] | null> {
    const inPeriod = cursor !== null && eventPeriod(cursor.slot) >= period;
    const periodStart = period * EVENT_PERIOD_MICROS;
    const from = inPeriod ? (cursor as EventKey).slot : periodStart > start ? periodStart : start;
    // The cursor's own slot is read again (a shard before its shard holds rows past it at a larger
    // slot only), and what is not after the cursor is dropped below. Enough to tell a full read.
    const want = limit + 64;
    const rs = await this.cql.exec('readEvents', S.readEventsShardsFromSlot, [
      period,
      ALL_EVENT_SHARDS,
      from,
      until,
      want,
    ]);
    if (rs.rows.length >= want) return null;
    return rs.rows
      .map((r) => decodeEvents(toKey(r, r.shard as number), r.events as string))
      .filter((row) => !inPeriod || compareEventKeys(row.key, cursor as EventKey) > 0)
      .sort((a, b) => compareEventKeys(a.key, b.key));
  }

  /**
   * The indexed periods in `[from, to]`, ascending. A range whose every period this instance knows
   * indexed (written here, or read from the index before) needs no read of the index: an index row
   * is never deleted while its period's rows live (its TTL is theirs plus a day). So the feed's tail
   * after activity reads the minute it knows, one statement a poll, as an idle one reads the index.
   */
  private async periods(from: bigint, to: bigint): Promise<bigint[]> {
    const known: bigint[] = [];
    for (let p = from; p <= to && this.indexed.has(p); p++) known.push(p);
    if (known.length === Number(to - from + 1n)) return known;
    const out: bigint[] = [];
    for (let day = from / PERIODS_PER_DAY; day <= to / PERIODS_PER_DAY; day++) {
      const rows = await this.cql.allRows('listEventPeriods', S.listEventPeriods, [day, from, to]);
      for (const r of rows) {
        out.push(r.period as bigint);
        this.indexed.set(r.period as bigint, true);
      }
    }
    return out;
  }

  /** Up to `limit` rows of one shard of `period` after `cursor` (from `start` without one), slot ≤ `until`. */
  private async readShard(
    period: bigint,
    shard: number,
    cursor: EventKey | null,
    start: Position,
    until: Position,
    limit: number,
  ): Promise<EventRow[]> {
    let rs: { rows: Row[] };
    if (cursor === null || eventPeriod(cursor.slot) < period) {
      rs = await this.cql.exec('readEvents', S.readEventsFromSlot, [
        period,
        shard,
        period * EVENT_PERIOD_MICROS > start ? period * EVENT_PERIOD_MICROS : start,
        until,
        limit,
      ]);
    } else if (shard === cursor.shard) {
      const c = cursor;
      rs = await this.cql.exec('readEvents', S.readEventsAfterKey, [
        period,
        shard,
        c.slot,
        c.low,
        c.high,
        c.opPosition,
        c.opSource,
        c.opKind,
        until,
        limit,
      ]);
    } else {
      const statement = shard < cursor.shard ? S.readEventsAfterSlot : S.readEventsFromSlot;
      rs = await this.cql.exec('readEvents', statement, [period, shard, cursor.slot, until, limit]);
    }
    return rs.rows.map((r) => decodeEvents(toKey(r, shard), r.events as string));
  }

  async putIntent(key: EventKey, timeoutMs?: number): Promise<void> {
    await this.cql.write('putIntent', [{ statement: S.putIntent, params: intentParams(key) }], {
      logged: false,
      ...(timeoutMs === undefined ? {} : { readTimeout: Math.max(1, Math.round(timeoutMs)) }),
    });
  }

  async deleteIntent(key: EventKey): Promise<void> {
    await this.cql.write('deleteIntent', [{ statement: S.deleteIntent, params: intentParams(key) }], {
      logged: false,
    });
  }

  async readIntents(shard: number, after: Position, until: Position, limit: number): Promise<EventKey[]> {
    if (until <= after || limit <= 0) return [];
    const rs = await this.cql.exec('readIntents', S.readIntents, [shard, after, until, limit]);
    return rs.rows.map((r) => toKey(r, shard));
  }

  async readIntentBound(): Promise<Position | null> {
    const rs = await this.cql.exec('readIntentBound', S.readIntentBound, []);
    return (rs.rows[0]?.through as bigint | undefined) ?? null;
  }

  async decideIntent(key: EventKey, decision: IntentDecision): Promise<IntentDecision> {
    const rs = await this.cql.exec('decideIntent', S.decideIntent, [...intentParams(key), decision]);
    const row = rs.first();
    if (!row || row['[applied]']) return decision;
    return row.decision === 'present' ? 'present' : 'fenced';
  }

  async claimOpSlot(key: EventKey): Promise<Position> {
    const rs = await this.cql.exec('claimOpSlot', S.claimOpSlot, [
      key.low,
      key.high,
      key.opPosition,
      key.opSource,
      key.opKind,
      key.slot,
    ]);
    const row = rs.first();
    if (!row || row['[applied]']) return key.slot;
    return row.slot as bigint;
  }

  async saveIntentBound(through: Position): Promise<void> {
    await this.cql.write('saveIntentBound', [{ statement: S.saveIntentBound, params: [through, through] }], {
      logged: false,
    });
  }
}
