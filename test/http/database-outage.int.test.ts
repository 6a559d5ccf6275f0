/**
 * A database that goes down answers 503 (with Retry-After, problem+json) and the same app — no
 * restart, same driver client — serves again once the node is back. Runs its own node on
 * 127.0.0.3 so the shared test node is never stopped.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { BucketedListService } from '../../src/lists/list-service.js';
import { type LocalNode, startLocalNode } from '../../src/local-cassandra/node.js';
import { defaultNodeOptions } from '../../src/local-cassandra/node-options.js';
import type { CqlClient } from '../../src/store/cassandra/client.js';
import { CassandraGraphStore } from '../../src/store/cassandra/graph-store.js';
import { CQL_DIR, openMigratedKeyspace } from '../../src/store/cassandra/keyspace.js';
import { schemaPresent } from '../../src/store/cassandra/migrations/migrate.js';
import { bearer, buildTestApp } from './support/app.js';

const ADDRESS = '127.0.0.3';

async function until<T>(
  what: string,
  ms: number,
  probe: () => Promise<T>,
  ok: (v: T) => boolean,
): Promise<T> {
  const deadline = Date.now() + ms;
  let last: T = await probe();
  while (!ok(last)) {
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(last)} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 250));
    last = await probe();
  }
  return last;
}

describe('database outage', () => {
  let dir: string;
  let node: LocalNode | undefined;
  let client: CqlClient | undefined;
  afterAll(async () => {
    await client?.shutdown();
    await node?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('answers 503 while the node is down and recovers by itself when it is back', async () => {
    dir = await mkdtemp(join(tmpdir(), 'flocklist-outage-'));
    const options = defaultNodeOptions({
      address: ADDRESS,
      nodeDir: dir,
      heap: '512M',
      seeds: [`${ADDRESS}:7000`],
    });
    node = await startLocalNode(options);
    client = await openMigratedKeyspace({
      contactPoints: [`${ADDRESS}:9042`],
      localDataCenter: 'datacenter1',
      keyspace: 'outage',
      replication: { class: 'SimpleStrategy', replication_factor: 1 },
      consistency: 'localQuorum',
      requestTimeoutMs: 2000,
    });
    const store = new CassandraGraphStore(client);
    const lists = new BucketedListService({
      store,
      cursorSecret: 'outage-secret-0123',
      bucketThresholds: [250_000],
    });
    const graph = new GraphService({ store, lists, maxFollowing: 10 });
    const { app } = buildTestApp({
      graph,
      receipts: store,
      ready: () => schemaPresent(client!, 'outage', CQL_DIR),
    });
    await graph.putUser({ id: 7n, username: 'ada' });

    const profile = async () => {
      const res = await app.request('/v1/users/7', { headers: { authorization: bearer(7) } });
      return {
        status: res.status,
        type: res.headers.get('content-type'),
        retryAfter: res.headers.get('retry-after'),
        body: (await res.json()) as Record<string, unknown>,
      };
    };
    const readyz = async () => (await app.request('/readyz')).status;

    expect((await profile()).status).toBe(200);
    expect(await readyz()).toBe(200);

    await node.stop();
    const down = await until('503 while down', 30_000, profile, (r) => r.status === 503);
    expect(down).toMatchObject({
      status: 503,
      type: 'application/problem+json; charset=utf-8',
      retryAfter: '1',
      body: { status: 503, code: 'unavailable', detail: 'the database is unavailable; retry later' },
    });
    expect(JSON.stringify(down.body)).not.toMatch(/NoHostAvailable|127\.0\.0|cql|Error:/i);
    expect(await readyz()).toBe(503);

    node = await startLocalNode(options);
    const back = await until('200 after restart', 90_000, profile, (r) => r.status === 200);
    expect(back.body).toMatchObject({ id: '7', username: 'ada', private: false });
    // The driver reconnects its pool one connection at a time, so readiness may lag the first
    // successful request by a moment; it must come back by itself all the same.
    expect(await until('readyz 200 after restart', 30_000, readyz, (s) => s === 200)).toBe(200);
  }, 240_000);
});
