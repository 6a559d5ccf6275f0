import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';

/** Everything that distinguishes one local broker from another. */
export interface KafkaOptions {
  /** `org.apache.kafka:kafka_2.13` version resolved from Maven Central. */
  version: string;
  /** Loopback address both listeners bind. */
  address: string;
  /** The client (PLAINTEXT) listener. */
  port: number;
  /** The KRaft controller listener. */
  controllerPort: number;
  /** Jar cache. */
  cacheDir: string;
  /** This broker's log dirs, metadata log, written config and logs. */
  dir: string;
  heap: string;
  /** Partitions of an auto-created topic. */
  partitions: number;
}

export const KAFKA_VERSION = '4.1.1';

/** Kafka 4 logs through SLF4J 1.7; its Maven closure has no binding, so the launcher adds log4j 2's. */
export const KAFKA_LOG_BINDING = {
  groupId: 'org.apache.logging.log4j',
  artifactId: 'log4j-slf4j-impl',
  version: '2.24.3',
} as const;

/** The project-relative home of jars and broker data; git-ignored. */
export function defaultKafkaHome(): string {
  return resolve(process.cwd(), '.kafka');
}

export function defaultKafkaOptions(overrides: Partial<KafkaOptions> = {}): KafkaOptions {
  const home = defaultKafkaHome();
  const port = overrides.port ?? 9092;
  return {
    version: KAFKA_VERSION,
    address: '127.0.0.1',
    port,
    controllerPort: port + 1,
    cacheDir: resolve(home, 'cache'),
    dir: resolve(home, 'brokers', String(port)),
    heap: '512M',
    partitions: 8,
    ...overrides,
  };
}

/**
 * A KRaft cluster id: 16 random bytes, base64url without padding, as Kafka's `Uuid` prints them.
 * Never starting with `-`, which the storage tool's argument parser would take for a flag.
 */
export function newClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/** `server.properties` of a one-node KRaft cluster: broker and controller in one JVM. */
export function renderServerProperties(o: KafkaOptions, dataDir: string): string {
  const lines: Record<string, string | number> = {
    'process.roles': 'broker,controller',
    'node.id': 1,
    'controller.quorum.voters': `1@${o.address}:${o.controllerPort}`,
    listeners: `PLAINTEXT://${o.address}:${o.port},CONTROLLER://${o.address}:${o.controllerPort}`,
    'advertised.listeners': `PLAINTEXT://${o.address}:${o.port}`,
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'PLAINTEXT',
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'log.dirs': dataDir,
    'num.partitions': o.partitions,
    'auto.create.topics.enable': 'true',
    'offsets.topic.replication.factor': 1,
    'offsets.topic.num.partitions': 4,
    'transaction.state.log.replication.factor': 1,
    'transaction.state.log.min.isr': 1,
    'transaction.state.log.num.partitions': 4,
    'share.coordinator.state.topic.replication.factor': 1,
    'share.coordinator.state.topic.min.isr': 1,
    'group.initial.rebalance.delay.ms': 0,
    'num.network.threads': 2,
    'num.io.threads': 4,
    'log.retention.hours': 24,
  };
  return `${Object.entries(lines)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n')}\n`;
}

/** log4j 2 configuration: INFO to one file, the controller's and request logs quieter. */
export function renderLog4j2(logFile: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders>
    <File name="file" fileName="${logFile}" append="true">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </File>
  </Appenders>
  <Loggers>
    <Logger name="kafka.request.logger" level="WARN"/>
    <Logger name="org.apache.kafka.controller" level="WARN"/>
    <Logger name="state.change.logger" level="WARN"/>
    <Root level="INFO"><AppenderRef ref="file"/></Root>
  </Loggers>
</Configuration>
`;
}
