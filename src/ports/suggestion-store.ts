import type { UserId } from '../model/types.js';
import type { Suggestion, SuggestionSet } from './records.js';

/**
 * Precomputed friend-of-friend suggestions (`suggestions`): one partition per user, replaced whole
 * by each run.
 */
export interface SuggestionStore {
  /**
   * Replaces the user's suggestions with `items` (rank order) of run `generation` (µs), atomically
   * and isolated (one single-partition batch): the old rows are deleted at write time
   * `generation − 1` and the new ones written at `generation`, so readers see one run or the
   * other, and an older run finishing late never replaces a newer one.
   */
  putSuggestions(userId: UserId, generation: bigint, items: readonly Suggestion[]): Promise<void>;
  /** The user's stored suggestions in rank order, or null if no run wrote any for them. */
  getSuggestions(userId: UserId): Promise<SuggestionSet | null>;
}
