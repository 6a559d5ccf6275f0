/**
 * The lease on the real node: the contract (`support/lease-suite.ts`), and a holder in a process
 * of its own SIGSTOPped past its expiry — another takes over, and when the first resumes neither
 * its next save nor a fenced write it sends straight to the store stands.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Lease } from '../../src/graph/lease.js';
import { CqlExecutor } from '../../src/store/cassandra/executor.js';
import { CassandraLeaseStore } from '../../src/store/cassandra/lease-store.js';
import { type TestKeyspace, testKeyspace } from '../support/cassandra.js';
import { leaseSuite } from './support/lease-suite.js';

let ks: TestKeyspace;
beforeAll(async () => {
  ks = await testKeyspace('lease');
});
afterAll(async () => {
  await ks?.drop();
});

describe('lease (Cassandra)', () => {
  leaseSuite(() => new CassandraLeaseStore(new CqlExecutor(ks.client)));

  it('a holder SIGSTOPped past its expiry is taken over; resumed, its save is refused and a fenced write it sends straight to the store does not apply', async () => {
    const store = new CassandraLeaseStore(new CqlExecutor(ks.client));
    const name = `job:stop-${randomBytes(4).toString('hex')}`;
    const [ttlMs, boundMs] = [2000, 200];
    const node = inject('cassandra');
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/graph/support/lease-holder.ts'], {
      env: {
        ...process.env,
        LEASE_CONTACT_POINTS: node.contactPoints.join(','),
        LEASE_DC: node.localDataCenter,
        LEASE_KEYSPACE: ks.keyspace,
        LEASE_NAME: name,
        LEASE_TTL_MS: String(ttlMs),
        LEASE_S_MS: String(boundMs),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    const exited = new Promise<number | null>((r) => child.on('exit', r));
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    try {
      for (let i = 0; !/saved a3\n/.test(out); i++) {
        if (i > 600) throw new Error(`the holder never saved: ${out}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      child.kill('SIGSTOP');
      const stoppedAt = await store.getLease(name);
      // Past its expiry + S by this clock (the child's renewals stopped with it).
      await new Promise((r) =>
        setTimeout(r, Math.max(0, stoppedAt!.expiresAtMs + boundMs - Date.now()) + 100),
      );
      const b = await Lease.acquire({ store, name, holder: 'b', ttlMs: 60_000, clockBoundMs: boundMs });
      expect(b?.generation).toBe(2n);
      await b!.save('b1');
      child.kill('SIGCONT');
      expect(await exited).toBe(0);
      const lines = out.trim().split('\n');
      expect(lines.slice(-2)).toEqual(['lost', 'late write applied false']);
      expect(lines[0]).toBe('taken 1');
      expect(await store.getLease(name)).toMatchObject({ holder: 'b', generation: 2n, state: 'b1' });
      await b!.release();
    } finally {
      child.kill('SIGKILL');
    }
  }, 60_000);
});
