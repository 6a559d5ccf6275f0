import type { UserId } from '../../../src/model/types.js';
import type { Suggestion, SuggestionSet } from '../../../src/ports/records.js';
import type { SuggestionStore } from '../../../src/ports/suggestion-store.js';
import { MemoryRelayCursorStore } from './relay-cursor-store.js';

/** `SuggestionStore` in memory: one layer of `MemoryGraphStore` (`graph-store.ts`). */
export abstract class MemorySuggestionStore extends MemoryRelayCursorStore implements SuggestionStore {
  async putSuggestions(userId: UserId, generation: bigint, items: readonly Suggestion[]): Promise<void> {
    const cur = this.suggestions.get(userId);
    if (cur && cur.generation > generation) return;
    this.suggestions.set(userId, {
      generation,
      items: structuredClone([...items]),
    });
  }

  async getSuggestions(userId: UserId): Promise<SuggestionSet | null> {
    const s = this.suggestions.get(userId);
    return s ? structuredClone(s) : null;
  }
}
