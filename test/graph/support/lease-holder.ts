/**
 * A lease holder in a process of its own, for the SIGSTOP test (`lease.int.test.ts`): takes the
 * lease named by `LEASE_NAME` on `LEASE_KEYSPACE` and saves `a<i>` every 50 ms, printing a line per
 * step, until a save is refused; then, as a paused holder might with a write already on its way,
 * sends one more fenced write straight to the store and prints whether it applied.
 */
import { hostname } from 'node:os';
import { Lease, LeaseLostError } from '../../../src/graph/lease.js';
import { createCqlClient } from '../../../src/store/cassandra/client.js';
import { CqlExecutor } from '../../../src/store/cassandra/executor.js';
import { CassandraLeaseStore } from '../../../src/store/cassandra/lease-store.js';

const env = (k: string) => process.env[k] ?? '';
const client = createCqlClient({
  contactPoints: env('LEASE_CONTACT_POINTS').split(','),
  localDataCenter: env('LEASE_DC'),
  keyspace: env('LEASE_KEYSPACE'),
  consistency: 'localQuorum',
  requestTimeoutMs: 10_000,
});
const store = new CassandraLeaseStore(new CqlExecutor(client));
const name = env('LEASE_NAME');
try {
  const lease = await Lease.acquire({
    store,
    name,
    holder: `${hostname()}:${process.pid}`,
    ttlMs: Number(env('LEASE_TTL_MS')),
    clockBoundMs: Number(env('LEASE_S_MS')),
  });
  if (!lease) throw new Error('not taken');
  console.log(`taken ${lease.generation}`);
  for (let i = 1; ; i++) {
    try {
      await lease.save(`a${i}`);
      console.log(`saved a${i}`);
    } catch (e) {
      if (!(e instanceof LeaseLostError)) throw e;
      console.log('lost');
      const applied = await store.updateLease(name, lease.generation, { state: 'a-late' });
      console.log(`late write applied ${applied}`);
      break;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
} finally {
  await client.shutdown();
}
