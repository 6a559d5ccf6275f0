import type { LeaseRow, LeaseStore } from '../../../src/ports/lease-store.js';

/** `LeaseStore` in memory: the same conditions as the lightweight transactions of the Cassandra store. */
export class MemoryLeaseStore implements LeaseStore {
  private readonly rows = new Map<string, LeaseRow>();

  async getLease(name: string): Promise<LeaseRow | null> {
    const row = this.rows.get(name);
    return row ? { ...row } : null;
  }

  async listLeases(limit: number): Promise<LeaseRow[]> {
    return [...this.rows.values()].slice(0, limit).map((r) => ({ ...r }));
  }

  async takeLease(
    name: string,
    holder: string,
    expiresAtMs: number,
    seen: LeaseRow | null,
  ): Promise<{ taken: boolean; row: LeaseRow | null }> {
    const now = this.rows.get(name);
    const taken = seen ? now?.generation === seen.generation : now === undefined;
    if (taken) {
      this.rows.set(name, {
        name,
        holder,
        generation: (seen?.generation ?? 0n) + 1n,
        expiresAtMs: Math.round(expiresAtMs),
        state: now?.state ?? null,
      });
    }
    return { taken, row: await this.getLease(name) };
  }

  async updateLease(
    name: string,
    generation: bigint,
    change: { expiresAtMs: number } | { state: string | null },
  ): Promise<boolean> {
    const row = this.rows.get(name);
    if (row?.generation !== generation) return false;
    if ('expiresAtMs' in change) row.expiresAtMs = Math.round(change.expiresAtMs);
    else row.state = change.state;
    return true;
  }
}
