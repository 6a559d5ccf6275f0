/**
 * Finds or starts the Cassandra node the integration tests talk to:
 * 1. `CASSANDRA_CONTACT_POINTS` when set (a cluster, ScyllaDB, a container you run);
 * 2. else a testcontainers Cassandra 5 when a Docker engine answers;
 * 3. else the project's own Maven-jar node (started, or reused if already running).
 * The chosen contact point reaches the test files through `inject('cassandra')`.
 */
import { existsSync } from 'node:fs';
import type { TestProject } from 'vitest/node';
import { startLocalNode } from '../../src/local-cassandra/node.js';
import { defaultNodeOptions } from '../../src/local-cassandra/node-options.js';

declare module 'vitest' {
  export interface ProvidedContext {
    cassandra: { contactPoints: string[]; localDataCenter: string; source: string };
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

export default async function setup(project: TestProject) {
  const fromEnv = process.env.CASSANDRA_CONTACT_POINTS;
  if (fromEnv) {
    project.provide('cassandra', {
      contactPoints: fromEnv.split(','),
      localDataCenter: process.env.CASSANDRA_LOCAL_DC ?? 'datacenter1',
      source: 'CASSANDRA_CONTACT_POINTS',
    });
    return;
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
    await node.stop();
  };
}
