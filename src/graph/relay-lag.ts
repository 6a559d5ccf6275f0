/**
 * The relays' lag for the metrics: each relay's saved feed cursor read in the background, so a
 * scrape costs the database nothing.
 */
import { SYSTEM_TIMERS } from '../model/timers.js';
import type { Position } from '../model/types.js';
import type { RelayCursorStore } from '../ports/relay-cursor-store.js';
import { cursorSlot } from './feed-cursor.js';

/** What `relayLagSampler` keeps: each relay's saved slot, read in the background. */
export interface RelayLagSampler {
  /** Each relay's lag as of now, from the slots read last: no query. */
  lags(): { relay: string; lagSeconds: number }[];
  /** Settles when the first read has (failed or not). */
  ready: Promise<void>;
  stop(): void;
}

/**
 * Reads the relays' saved cursors now and every `everyMs` after (the timer does not keep the
 * process alive), so a metrics scrape computes the lags from memory and costs the database
 * nothing, however often it comes. A failed read keeps the slots of the last good one.
 */
export function relayLagSampler(
  store: Pick<RelayCursorStore, 'listRelayCursors'>,
  clock: () => Position,
  everyMs = 15_000,
): RelayLagSampler {
  let slots: { relay: string; slot: Position }[] = [];
  const sample = async () => {
    const rows = await store.listRelayCursors(100);
    slots = rows.flatMap(({ name, cursor }) => {
      const slot = cursorSlot(cursor);
      return slot === null ? [] : [{ relay: name, slot }];
    });
  };
  const ready = sample().catch(() => undefined);
  const stop = SYSTEM_TIMERS.every(everyMs, () => void sample().catch(() => undefined));
  return {
    ready,
    lags: () => {
      const now = clock();
      return slots.map(({ relay, slot }) => ({ relay, lagSeconds: Number(now - slot) / 1e6 }));
    },
    stop,
  };
}
