/**
 * The node's own configuration, written by the project rather than taken from a tarball.
 *
 * Storage follows Cassandra 5.0's `cassandra_latest.yaml`: trie memtables (offheap objects), the
 * BTI sstable format with a 4 KiB column index, unified compaction, and
 * `storage_compatibility_mode: NONE`. Those matter for our wide, bucketed list partitions: BTI's
 * trie row index makes a seek deep into a partition cost the same as one near its head.
 *
 * Start-up is made fast and predictable for a test box: one token per node (fixed), no gossip
 * settle wait, no auto snapshots. A multi-node cluster (127.0.0.1–3, or any loopback addresses)
 * uses the same template with its own address, seeds and directories.
 *
 * `batchlog_endpoint_strategy: dynamic_remote` (Cassandra 5): with more than two live candidates
 * in the data centre, the batchlog goes to the two the dynamic snitch ranks best, so a replica
 * that stopped answering but is not yet convicted is avoided. With three nodes it changes
 * nothing (the two other nodes are the only candidates), which is why the driver policies in
 * `store/cassandra/client.ts` fail fast instead.
 */
import type { NodeOptions } from './node-options.js';

export function renderCassandraYaml(o: NodeOptions, dirs: NodeDirs): string {
  const seeds = o.seeds.join(',');
  const commitlog =
    o.commitlogSync === 'periodic'
      ? 'commitlog_sync: periodic\ncommitlog_sync_period: 10000ms'
      : o.commitlogSync === 'group'
        ? 'commitlog_sync: group\ncommitlog_sync_group_window: 15ms'
        : 'commitlog_sync: batch';
  return `# Written by flocklist's local-cassandra launcher; edits are overwritten on start.
cluster_name: '${o.clusterName}'
num_tokens: 1
auto_bootstrap: ${o.autoBootstrap}
initial_token: ${o.initialToken}
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: SimpleSnitch
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "${seeds}"
listen_address: ${o.address}
rpc_address: ${o.address}
storage_port: ${o.storagePort}
native_transport_port: ${o.nativePort}
start_native_transport: true
data_file_directories: [${JSON.stringify(dirs.data)}]
commitlog_directory: ${JSON.stringify(dirs.commitlog)}
saved_caches_directory: ${JSON.stringify(dirs.savedCaches)}
hints_directory: ${JSON.stringify(dirs.hints)}
${commitlog}
commitlog_disk_access_mode: legacy
storage_compatibility_mode: NONE
authenticator: AllowAllAuthenticator
authorizer: AllowAllAuthorizer
auto_snapshot: false
incremental_backups: false
snapshot_before_compaction: false
concurrent_compactors: 1
memtable_flush_writers: 1
cdc_enabled: false
hinted_handoff_enabled: ${o.hintedHandoff}
max_hint_window: 3h
phi_convict_threshold: ${o.phiConvictThreshold}
batchlog_endpoint_strategy: dynamic_remote
memtable:
  configurations:
    skiplist:
      class_name: SkipListMemtable
    trie:
      class_name: TrieMemtable
    default:
      inherits: trie
memtable_allocation_type: offheap_objects
sstable:
  selected_format: bti
column_index_size: 4KiB
default_compaction:
  class_name: UnifiedCompactionStrategy
  parameters:
    scaling_parameters: T4
    max_sstables_to_compact: 64
    target_sstable_size: 1GiB
    sstable_growth: 0.3333333333333333
    min_sstable_size: 100MiB
tombstone_warn_threshold: 1000
tombstone_failure_threshold: 100000
batch_size_warn_threshold: 5KiB
batch_size_fail_threshold: 50KiB
partition_size_warn_threshold: 100MiB
read_request_timeout: 5000ms
range_request_timeout: 10000ms
write_request_timeout: 2000ms
`;
}

export interface NodeDirs {
  root: string;
  data: string;
  commitlog: string;
  savedCaches: string;
  hints: string;
  logs: string;
  conf: string;
}

/** Console logging at INFO for our readiness lines, WARN for chatty subsystems. */
export function renderLogback(logFile: string): string {
  return `<configuration scan="false">
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>${logFile}</file>
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%-5level %date{HH:mm:ss.SSS} %msg%n</pattern></encoder>
  </appender>
  <logger name="org.apache.cassandra" level="INFO"/>
  <root level="INFO">
    <appender-ref ref="FILE"/>
    <appender-ref ref="STDOUT"/>
  </root>
</configuration>
`;
}
