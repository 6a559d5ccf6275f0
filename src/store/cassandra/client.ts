/**
 * The one place a `cassandra-driver` Client is built. Conventions: prepared statements, explicit
 * consistency (LOCAL_QUORUM by default), bigint ids, token-aware routing (the driver's default
 * load-balancing policy), constant reconnection so a node that comes back is picked up without a
 * restart.
 */
import cassandra from 'cassandra-driver';

export interface CassandraConnectOptions {
  contactPoints: string[];
  localDataCenter: string;
  /** Omit to connect without a keyspace (migrations create it). */
  keyspace?: string;
  consistency: 'localOne' | 'localQuorum' | 'quorum' | 'one' | 'all';
  credentials?: { username: string; password: string } | undefined;
  requestTimeoutMs: number;
}

export type CqlClient = cassandra.Client;

export function createCqlClient(o: CassandraConnectOptions): cassandra.Client {
  return new cassandra.Client({
    contactPoints: o.contactPoints,
    localDataCenter: o.localDataCenter,
    ...(o.keyspace ? { keyspace: o.keyspace } : {}),
    ...(o.credentials ? { credentials: o.credentials } : {}),
    encoding: { useBigIntAsLong: true, useBigIntAsVarint: true },
    queryOptions: {
      consistency: cassandra.types.consistencies[o.consistency],
      prepare: true,
      isIdempotent: true,
    },
    socketOptions: { readTimeout: o.requestTimeoutMs, connectTimeout: 5000 },
    policies: {
      reconnection: new cassandra.policies.reconnection.ConstantReconnectionPolicy(1000),
    },
    pooling: { heartBeatInterval: 5000 },
  });
}
