/**
 * `SuggestionStore` on Cassandra (`suggestions`): one partition per user, replaced whole by each
 * run in one single-partition batch, the old rows deleted at `generation − 1` and the new written
 * at `generation`.
 */
import type { UserId } from '../../model/types.js';
import type { Suggestion, SuggestionSet } from '../../ports/records.js';
import type { SuggestionStore } from '../../ports/suggestion-store.js';
import type { Bound, CqlExecutor } from './executor.js';
import { toSuggestionSet } from './rows.js';
import { S } from './statements.js';

export class CassandraSuggestionStore implements SuggestionStore {
  constructor(private readonly cql: CqlExecutor) {}

  async putSuggestions(userId: UserId, generation: bigint, items: readonly Suggestion[]): Promise<void> {
    const queries: Bound[] = [
      { statement: S.clearSuggestions, params: [generation - 1n, userId] },
      { statement: S.putSuggestionGeneration, params: [generation, generation, userId] },
      ...items.map((s, rank) => ({
        statement: S.putSuggestion,
        params: [userId, rank, s.id, s.score, s.via, generation],
      })),
    ];
    // One partition: an unlogged batch is atomic and isolated on each replica.
    await this.cql.write('putSuggestions', queries, { logged: false });
  }

  async getSuggestions(userId: UserId): Promise<SuggestionSet | null> {
    return toSuggestionSet(await this.cql.allRows('getSuggestions', S.getSuggestions, [userId]));
  }
}
