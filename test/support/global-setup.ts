/**
 * Finds or starts the Cassandra node the integration tests talk to:
 * 1. `CASSANDRA_CONTACT_POINTS` when set (a cluster, ScyllaDB, a container you run);
 * 2. else a testcontainers Cassandra 5 when a Docker engine answers;
 * 3. else the project's own Maven-jar node (started, or reused if already running).
 * The chosen contact point reaches the test files through `inject('cassandra')`, and the run's
 * list of retired keyspaces through `inject('testRun')` (`support/cassandra.ts` drops them in
 * batches; the teardown here drops what is left).
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startLocalNode } from '../../src/local-cassandra/node.js';
import { defaultNodeOptions } from '../../src/local-cassandra/node-options.js';
import { dropKeyspaces, readRetired, schemaLog, schemaWorkSummary } from './retired-keyspaces.js';

declare module 'vitest' {
  export interface ProvidedContext {
    cassandra: { contactPoints: string[]; localDataCenter: string; source: string };
    /** A file listing the keyspaces test files retired and nobody dropped yet, one per line. */
    testRun: { retiredKeyspaces: string };
  }
}

async function dockerAnswers(): Promise<boolean> {
  if (!existsSync('/var/run/docker.sock') && !process.env.DOCKER_HOST) return false;
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

/** Drops the keyspaces still listed in `file` (the last, partial batch), then removes it. */
async function dropRetired(file: string, contactPoints: string[], localDataCenter: string): Promise<void> {
  const names = await readRetired(file);
  await rm(file, { force: true });
  console.log(`[cassandra] ${await schemaWorkSummary(file)}`);
  await rm(schemaLog(file), { force: true });
  const t0 = performance.now();
  await dropKeyspaces(names, { node: { contactPoints, localDataCenter } });
  console.log(
    `[cassandra] teardown dropped the last ${names.length} in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
}

export default async function setup(project: TestProject) {
  const retiredKeyspaces = join(tmpdir(), `flocklist-retired-keyspaces-${randomBytes(6).toString('hex')}`);
  project.provide('testRun', { retiredKeyspaces });
  const fromEnv = process.env.CASSANDRA_CONTACT_POINTS;
  if (fromEnv) {
    const contactPoints = fromEnv.split(',');
    const localDataCenter = process.env.CASSANDRA_LOCAL_DC ?? 'datacenter1';
    project.provide('cassandra', { contactPoints, localDataCenter, source: 'CASSANDRA_CONTACT_POINTS' });
    return () => dropRetired(retiredKeyspaces, contactPoints, localDataCenter);
  }
  if (await dockerAnswers()) {
    const { CassandraContainer } = await import('@testcontainers/cassandra');
    const container = await new CassandraContainer('cassandra:5.0').start();
    project.provide('cassandra', {
      contactPoints: [container.getContactPoint()],
      localDataCenter: container.getDatacenter(),
      source: 'testcontainers',
    });
    return async () => {
      await dropRetired(retiredKeyspaces, [container.getContactPoint()], container.getDatacenter());
      await container.stop();
    };
  }
  // A node started here is the tests' own: schema changes stay in memory until it stops (every
  // file makes and drops a keyspace, ~1 s each instead of ~3); no test kills it.
  const node = await startLocalNode(defaultNodeOptions({ flushSchemaChanges: false }), {
    log: (line) => console.log(`[cassandra] ${line}`),
  });
  console.log(
    `[cassandra] ${node.owned ? `started in ${(node.startupMs / 1000).toFixed(1)} s` : 'reused'} on ${node.address}:${node.nativePort}`,
  );
  project.provide('cassandra', {
    contactPoints: [`${node.address}:${node.nativePort}`],
    localDataCenter: 'datacenter1',
    source: node.owned ? 'local node (started)' : 'local node (reused)',
  });
  return async () => {
    await dropRetired(retiredKeyspaces, [`${node.address}:${node.nativePort}`], 'datacenter1');
    await node.stop();
  };
}
