/** `LeaseStore` on Cassandra (`job_leases`): every write a lightweight transaction on the name's row. */
import type { LeaseRow, LeaseStore } from '../../ports/lease-store.js';
import type { CqlExecutor } from './executor.js';
import { toLeaseRow } from './rows.js';
import { S } from './statements.js';

export class CassandraLeaseStore implements LeaseStore {
  constructor(private readonly cql: CqlExecutor) {}

  async getLease(name: string): Promise<LeaseRow | null> {
    return toLeaseRow((await this.cql.exec('getLease', S.getLease, [name])).first());
  }

  async listLeases(limit: number): Promise<LeaseRow[]> {
    const rs = await this.cql.exec('listLeases', S.listLeases, [limit]);
    return rs.rows.flatMap((r) => toLeaseRow(r) ?? []);
  }

  async takeLease(
    name: string,
    holder: string,
    expiresAtMs: number,
    seen: LeaseRow | null,
  ): Promise<{ taken: boolean; row: LeaseRow | null }> {
    const expires = BigInt(Math.round(expiresAtMs));
    const rs = seen
      ? await this.cql.exec('takeLease', S.takeLease, [
          holder,
          seen.generation + 1n,
          expires,
          name,
          seen.generation,
        ])
      : await this.cql.exec('createLease', S.createLease, [name, holder, expires]);
    const taken = Boolean(rs.first()?.['[applied]']);
    return { taken, row: await this.getLease(name) };
  }

  async updateLease(
    name: string,
    generation: bigint,
    change: { expiresAtMs: number } | { state: string | null },
  ): Promise<boolean> {
    const rs =
      'expiresAtMs' in change
        ? await this.cql.exec('extendLease', S.extendLease, [
            BigInt(Math.round(change.expiresAtMs)),
            name,
            generation,
          ])
        : await this.cql.exec('putLeaseState', S.putLeaseState, [change.state, name, generation]);
    return Boolean(rs.first()?.['[applied]']);
  }
}
