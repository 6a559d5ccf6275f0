/**
 * The feed cursors of the Kafka relays (`relay_cursors`, `src/jobs/relay.ts`): one per relay name.
 * A relay of one name runs as one process at a time; the newest write wins.
 */
export interface RelayCursorStore {
  /** The cursor the relay `name` saved last, or null when it never saved one. */
  getRelayCursor(name: string): Promise<string | null>;
  /** Saves `cursor` as the relay's (idempotent; replaces what was saved). */
  putRelayCursor(name: string, cursor: string): Promise<void>;
  /** Every relay's saved cursor, at most `limit` (the relay-lag metric reads it). */
  listRelayCursors(limit: number): Promise<{ name: string; cursor: string }[]>;
}
