import { compareEventKeys, type EventKey, type EventRow } from '../../../src/model/events.js';
import type { Position } from '../../../src/model/types.js';
import type { EventStore, FeedIntentStore, IntentDecision } from '../../../src/ports/event-store.js';
import { decodeEvents, encodeEvents, hasEvents } from '../../../src/store/event-codec.js';
import { MemorySearchStore } from './search-store.js';

/** `EventStore` in memory: one layer of `MemoryGraphStore` (`graph-store.ts`). */
export abstract class MemoryEventStore extends MemorySearchStore implements EventStore, FeedIntentStore {
  protected writeEvents(rows: readonly EventRow[], version: bigint): void {
    for (const row of rows) {
      const k = row.key;
      const id = `${k.slot}|${k.shard}|${k.low}|${k.high}|${k.opPosition}|${k.opSource}|${k.opKind}`;
      const text = encodeEvents(row);
      const cur = this.events.get(id);
      if (cur && (cur.version > version || (cur.version === version && cur.text >= text))) continue;
      this.events.set(id, { row: decodeEvents(k, text), text, version });
    }
  }

  async readEventRows(after: EventKey | null, until: Position, limit: number): Promise<EventRow[]> {
    return [...this.events.values()]
      .map((e) => e.row)
      .filter(
        (r) => hasEvents(r) && r.key.slot <= until && (after === null || compareEventKeys(r.key, after) > 0),
      )
      .sort((a, b) => compareEventKeys(a.key, b.key))
      .slice(0, limit);
  }

  private readonly intents = new Map<string, EventKey>();

  async putIntent(key: EventKey): Promise<void> {
    this.intents.set(intentId(key), { ...key });
  }

  async deleteIntent(key: EventKey): Promise<void> {
    this.intents.delete(intentId(key));
  }

  async readIntents(shard: number, after: Position, until: Position, limit: number): Promise<EventKey[]> {
    return [...this.intents.values()]
      .filter((k) => k.shard === shard && k.slot > after && k.slot <= until)
      .sort(compareEventKeys)
      .slice(0, limit)
      .map((k) => ({ ...k }));
  }

  private intentBound: Position | null = null;

  async readIntentBound(): Promise<Position | null> {
    return this.intentBound;
  }

  async saveIntentBound(through: Position): Promise<void> {
    if (this.intentBound === null || through > this.intentBound) this.intentBound = through;
  }

  private readonly slots = new Map<string, Position>();

  async claimOpSlot(key: EventKey): Promise<Position> {
    const op = `${key.low}|${key.high}|${key.opPosition}|${key.opSource}|${key.opKind}`;
    const stands = this.slots.get(op) ?? key.slot;
    this.slots.set(op, stands);
    return stands;
  }

  private readonly decisions = new Map<string, IntentDecision>();

  async decideIntent(key: EventKey, decision: IntentDecision): Promise<IntentDecision> {
    const stands = this.decisions.get(intentId(key)) ?? decision;
    this.decisions.set(intentId(key), stands);
    return stands;
  }
}

const intentId = (k: EventKey) =>
  `${k.shard}|${k.slot}|${k.low}|${k.high}|${k.opPosition}|${k.opSource}|${k.opKind}`;
