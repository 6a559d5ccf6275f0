/**
 * A deterministic `EventFeed` over a generated list, for the relay's tests and bench until (and
 * besides) the real feed: the same `count`, `pairs` and `seed` give the same events with the same
 * ids in the same order, in any process — so a relay child process and the test that checks the
 * topic agree on the feed without sharing memory.
 *
 * Events: over `pairs` pairs of accounts, each event flips one directed follow of a random pair
 * (`follow.created` / `follow.removed`, alternating per edge), and every 17th is a `user.updated`
 * of one account. Slots rise by 1–1000 µs from `firstSlot`. Cursors are `g:<events before it>`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { EventFeed } from '../../src/graph/contracts.js';
import { InvalidCursorError } from '../../src/model/errors.js';
import type { EventPage, GraphEvent } from '../../src/model/events.js';
import { mulberry32 } from '../support/random.js';

export interface GeneratedFeedOptions {
  count: number;
  pairs?: number;
  seed?: number;
  /** µs of the first event's slot (default 2026-01-01). */
  firstSlot?: bigint;
}

export function generateEvents(o: GeneratedFeedOptions): GraphEvent[] {
  const pairs = o.pairs ?? 200;
  const random = mulberry32(o.seed ?? 1);
  const following = new Set<string>();
  const events: GraphEvent[] = [];
  let slot = o.firstSlot ?? 1_767_225_600_000_000n;
  for (let i = 0; i < o.count; i++) {
    slot += BigInt(1 + Math.floor(random() * 1000));
    const p = Math.floor(random() * pairs);
    const a = BigInt(1000 + 2 * p);
    const b = BigInt(1001 + 2 * p);
    const id = `${slot}-${i.toString(36)}`;
    if (i % 17 === 16) {
      events.push({ id, type: 'user.updated', source: a, target: a, position: slot, slot });
      continue;
    }
    const [source, target] = random() < 0.5 ? [a, b] : [b, a];
    const edge = `${source}>${target}`;
    const on = !following.has(edge);
    if (on) following.add(edge);
    else following.delete(edge);
    const type = on ? 'follow.created' : 'follow.removed';
    events.push({ id, type, source, target, position: slot - 3n, slot });
  }
  return events;
}

export interface GeneratedFeed extends EventFeed {
  readonly events: readonly GraphEvent[];
  /** How many reads returned at least one event. */
  readonly reads: number;
}

/** The cursor right after the first `n` events. */
export const generatedCursor = (n: number) => `g:${n}`;

/** The number of events before `cursor` (0 for null). */
export function generatedOffset(cursor: string | null): number {
  if (cursor === null) return 0;
  const m = /^g:(\d+)$/.exec(cursor);
  if (!m) throw new InvalidCursorError(`not a generated-feed cursor: ${cursor}`);
  return Number(m[1]);
}

/**
 * A feed over `events`; each non-empty read takes `readDelayMs` (a slow feed gives a test time to
 * crash the relay mid-way). A read past the end holds for `waitMs` (or until aborted) and returns
 * nothing: the list never grows.
 */
export function generatedFeed(
  events: readonly GraphEvent[],
  o: { readDelayMs?: number } = {},
): GeneratedFeed {
  let reads = 0;
  return {
    events,
    get reads() {
      return reads;
    },
    async read(after, limit, opts = {}): Promise<EventPage> {
      const from = generatedOffset(after);
      const items = events.slice(from, from + limit);
      if (items.length === 0) {
        if (opts.waitMs)
          await sleep(opts.waitMs, undefined, opts.signal ? { signal: opts.signal } : {}).catch(() => {});
        return { items: [], next: after ?? generatedCursor(0) };
      }
      reads++;
      if (o.readDelayMs) await sleep(o.readDelayMs);
      return { items, next: generatedCursor(from + items.length) };
    },
    subscribe: () => () => {},
  };
}
