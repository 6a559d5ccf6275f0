/**
 * The test keyspaces' drops on the real node: a drop that fails stops the batch and names what is
 * left (the failed keyspace first), so `testKeyspace`'s retirement can put those names back on the
 * run's list instead of failing the test that retired them.
 */
import { randomBytes } from 'node:crypto';
import { expect, inject, it } from 'vitest';
import { createCqlClient, SCHEMA_CHANGE } from '../../src/store/cassandra/client.js';
import { dropKeyspaces, KeyspaceDropError } from './retired-keyspaces.js';

it('a failed drop names the keyspaces not dropped, the failed one first; the ones before it are gone', async () => {
  const node = inject('cassandra');
  const client = createCqlClient({ ...node, consistency: 'one', requestTimeoutMs: 30_000 });
  const tag = randomBytes(4).toString('hex');
  const [first, last] = [`t_drop_a_${tag}`, `t_drop_c_${tag}`];
  const bad = `"t drop b ${tag}`; // not a keyspace name: the node refuses the statement
  try {
    for (const k of [first, last]) {
      await client.execute(
        `CREATE KEYSPACE ${k} WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
        [],
        SCHEMA_CHANGE,
      );
    }
    const err = await dropKeyspaces([first, bad, last], { client }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KeyspaceDropError);
    expect((err as KeyspaceDropError).remaining).toEqual([bad, last]);
    const rs = await client.execute(
      'SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name IN ?',
      [[first, last]],
    );
    expect(rs.rows.map((r) => r.keyspace_name)).toEqual([last]);
  } finally {
    await dropKeyspaces([first, last], { client });
    await client.shutdown();
  }
});
