/**
 * Per-file keyspaces on the real node: `await testKeyspace('edges')` creates a fresh keyspace
 * from the baseline of `cql/` (`TEST_SCHEMA=migrations` replays every file instead), and returns
 * a connected client; `drop()` retires it. `TEST_REPLICATION` (e.g. `simple:3`, with
 * `CASSANDRA_CONTACT_POINTS` naming a cluster) runs the same tests with replicas at LOCAL_QUORUM.
 * Both ways give the same schema
 * (`test/store/cassandra/migrations/baseline-schema.int.test.ts`).
 *
 * Design note: retired keyspaces are dropped in batches. Dropping a table makes Cassandra recycle
 * its commitlog segments, which flushes every table on the node with unflushed writes — the other
 * files' keyspaces included — and a keyspace drop does that for each of its ~30 tables. One drop
 * per file made a CI run's shared node flush ~8,400 tiny memtables (`Reason: COMMITLOG_DIRTY`) and
 * compact ~1,700 times in ten minutes; dropping in batches of eight, ~6,100 and ~1,150 (the
 * Node 24 run's time did not move measurably: 758 s and 749 s, within this machine's spread).
 * Keeping every keyspace to the end is no answer: 60 baseline keyspaces held 723 MB of the test
 * node's 1 GB heap after a full GC. So a retired keyspace's name goes into a file the run shares
 * (`ProvidedContext['testRun']`, from the global setup); whichever file brings it to `DROP_BATCH`
 * names takes the list (an atomic rename) and drops them one after another, and the global
 * teardown drops what is left. A run killed midway leaves its last keyspaces behind, as before.
 */
import { randomBytes } from 'node:crypto';
import { appendFile, rename, rm } from 'node:fs/promises';
import { inject } from 'vitest';
import { parseReplication } from '../../src/config.js';
import type { CqlClient } from '../../src/store/cassandra/client.js';
import { openBaselineKeyspace, openMigratedKeyspace } from '../../src/store/cassandra/keyspace.js';
import { dropKeyspaces, KeyspaceDropError, readRetired, schemaLog } from './retired-keyspaces.js';

export { CQL_DIR } from '../../src/store/cassandra/keyspace.js';

export interface TestKeyspace {
  client: CqlClient;
  keyspace: string;
  drop(): Promise<void>;
}

/** `TEST_SCHEMA`: `baseline` (default) or `migrations`. */
function schemaSource(): typeof openBaselineKeyspace {
  const source = process.env.TEST_SCHEMA ?? 'baseline';
  if (source === 'baseline') return openBaselineKeyspace;
  if (source === 'migrations') return (o) => openMigratedKeyspace({ ...o, fromBaseline: false });
  throw new Error(`TEST_SCHEMA must be baseline or migrations, not ${source}`);
}

export async function testKeyspace(label: string): Promise<TestKeyspace> {
  const { contactPoints, localDataCenter } = inject('cassandra');
  const keyspace = `t_${label.replace(/\W/g, '_').toLowerCase().slice(0, 24)}_${randomBytes(4).toString('hex')}`;
  const t0 = performance.now();
  const client = await schemaSource()({
    contactPoints,
    localDataCenter,
    keyspace,
    replication: parseReplication(process.env.TEST_REPLICATION ?? 'simple:1'),
    consistency: 'localQuorum',
    requestTimeoutMs: 30_000,
  });
  await logSchemaWork('create', 1, performance.now() - t0);
  return {
    client,
    keyspace,
    drop: async () => {
      try {
        await retireKeyspace(keyspace, client);
      } finally {
        await client.shutdown();
      }
    },
  };
}

/**
 * `TEST_KEYSPACES=keep`: nothing is dropped, by the files or the teardown — for a node thrown
 * away after the run (CI's), where the drops are work the node does for nobody (see the design
 * note). It needs a heap that holds every keyspace of the run (`--heap 3G` for the ~80 of CI's
 * three runs). `drop` (the default) drops them in batches.
 */
function keepKeyspaces(): boolean {
  const mode = process.env.TEST_KEYSPACES ?? 'drop';
  if (mode !== 'drop' && mode !== 'keep') throw new Error(`TEST_KEYSPACES must be drop or keep, not ${mode}`);
  return mode === 'keep';
}

/** Retired keyspaces dropped together (see the design note). */
const DROP_BATCH = 8;

/**
 * Retires `keyspace`: adds it to the run's list and, when the list has reached `DROP_BATCH`
 * names, takes it and drops them all through `client` (a fresh one when none is given). Without a
 * run's list (a file run under another config) it drops `keyspace` at once.
 */
async function retireKeyspace(keyspace: string, client?: CqlClient): Promise<void> {
  if (keepKeyspaces()) return;
  const list = inject('testRun')?.retiredKeyspaces;
  let batch = [keyspace];
  if (list) {
    await appendFile(list, `${keyspace}\n`);
    if ((await readRetired(list)).length < DROP_BATCH) return;
    const taken = `${list}.${process.pid}.${randomBytes(4).toString('hex')}`;
    try {
      await rename(list, taken);
    } catch {
      return; // another file took the list first
    }
    batch = await readRetired(taken);
    await rm(taken, { force: true });
  }
  const t0 = performance.now();
  try {
    await dropKeyspaces(batch, client ? { client } : { node: inject('cassandra') });
    await logSchemaWork('drop', batch.length, performance.now() - t0);
  } catch (err) {
    // A drop that failed (a node too busy to answer in time) is not the test's failure: the
    // names go back on the list, for the next batch or the global teardown to drop.
    if (!(err instanceof KeyspaceDropError) || !list) throw err;
    console.warn(`[test keyspaces] ${err.message}; ${err.remaining.length} left for a later drop`);
    await appendFile(list, err.remaining.map((k) => `${k}\n`).join(''));
  }
}

/** Adds a line to the run's schema-work log (`schemaLog` in `retired-keyspaces.ts`), if there is a run. */
async function logSchemaWork(kind: 'create' | 'drop', keyspaces: number, ms: number): Promise<void> {
  const list = inject('testRun')?.retiredKeyspaces;
  if (list) await appendFile(schemaLog(list), `${kind} ${keyspaces} ${ms.toFixed(0)}\n`);
}

/** Retires `keyspace` on the test node, as `drop()` does (for keyspaces a test's own process created). */
export async function dropKeyspace(keyspace: string): Promise<void> {
  await retireKeyspace(keyspace);
}
