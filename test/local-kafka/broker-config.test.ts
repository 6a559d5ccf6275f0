import { describe, expect, it } from 'vitest';
import {
  defaultKafkaOptions,
  newClusterId,
  renderServerProperties,
} from '../../src/local-kafka/broker-config.js';

describe('local Kafka configuration', () => {
  it('one KRaft node: broker and controller, listeners on the given ports, single-replica internals', () => {
    const o = defaultKafkaOptions({ port: 19092, dir: '/x', cacheDir: '/c' });
    expect(o).toMatchObject({ port: 19092, controllerPort: 19093, heap: '512M', dir: '/x' });
    expect(renderServerProperties(o, '/x/data').split('\n')).toEqual([
      'process.roles=broker,controller',
      'node.id=1',
      'controller.quorum.voters=1@127.0.0.1:19093',
      'listeners=PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093',
      'advertised.listeners=PLAINTEXT://127.0.0.1:19092',
      'controller.listener.names=CONTROLLER',
      'inter.broker.listener.name=PLAINTEXT',
      'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
      'log.dirs=/x/data',
      'num.partitions=8',
      'auto.create.topics.enable=true',
      'offsets.topic.replication.factor=1',
      'offsets.topic.num.partitions=4',
      'transaction.state.log.replication.factor=1',
      'transaction.state.log.min.isr=1',
      'transaction.state.log.num.partitions=4',
      'share.coordinator.state.topic.replication.factor=1',
      'share.coordinator.state.topic.min.isr=1',
      'group.initial.rebalance.delay.ms=0',
      'num.network.threads=2',
      'num.io.threads=4',
      'log.retention.hours=24',
      '',
    ]);
  });

  it('cluster ids are 16 random bytes in base64url, never starting with a dash', () => {
    const ids = Array.from({ length: 2000 }, newClusterId);
    expect(ids.every((id) => /^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
