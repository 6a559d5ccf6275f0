/**
 * Two counts of the database requests a service causes, for `bench:all-in`:
 *
 * - From the service's own `/metrics`: `flocklist_db_query_duration_seconds_count{op,outcome}`,
 *   one per statement or batch the store, the leases and the jobs send through `onQuery` (the
 *   embedded worker and the reconciler share the process and the registry). Not in it: what the
 *   driver sends by itself (its control connection's metadata reads, heartbeats, prepares, retries).
 * - From the node (Cassandra 5's virtual tables), which no process can leave out:
 *   `system_views.clients.request_count`, per client connection, summed over the connections that
 *   are the service's (their local port is one of its sockets, read from `/proc/<pid>`: this finds
 *   the control connection too, which has no keyspace) or that use the bench's keyspace (any other
 *   process on it: a forgotten worker), less this process's own connections (its keyspace client
 *   and the client that reads these tables). A connection is counted from its first sample on, or
 *   from 0 when it opened after the first; one that closes keeps what was counted. And
 *   `system_views.coordinator_{read,write,scan}_latency.count` of the keyspace's tables:
 *   coordinator operations, which are not requests (a batch counts once for every table it
 *   writes, a multi-partition read once a partition), reported beside them by table.
 *
 * Node-wide counters (`thread_pools`' Native-Transport-Requests, `cql_metrics`) are not used: other
 * processes share the node.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import type { CqlClient } from '../../src/store/cassandra/client.js';

/** One sample of a Prometheus text exposition: its labels and value. */
export interface MetricSample {
  labels: Record<string, string>;
  value: number;
}

/** Every sample of metric `name` (an exact series name, e.g. `…_count`) in a `/metrics` text. */
export function metricSamples(text: string, name: string): MetricSample[] {
  const out: MetricSample[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1] as string] = l[2] as string;
    out.push({ labels, value: Number(m[3]) });
  }
  return out;
}

/** `flocklist_db_query_duration_seconds_count` by `op`, both outcomes summed. */
export function dbQueriesByOp(metricsText: string): Map<string, number> {
  const byOp = new Map<string, number>();
  for (const s of metricSamples(metricsText, 'flocklist_db_query_duration_seconds_count')) {
    const op = s.labels.op ?? '?';
    byOp.set(op, (byOp.get(op) ?? 0) + s.value);
  }
  return byOp;
}

/** The sum of a map's values. */
export const total = (m: ReadonlyMap<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

/** `after − before` for every key (keys only in `before` count as 0 after). */
export function mapDelta(
  before: ReadonlyMap<string, number>,
  after: ReadonlyMap<string, number>,
): Map<string, number> {
  const d = new Map<string, number>();
  for (const [k, v] of after) d.set(k, v - (before.get(k) ?? 0));
  for (const [k, v] of before) if (!after.has(k)) d.set(k, -v);
  return d;
}

/**
 * The local ports of `pid`'s TCP sockets connected to remote port `remotePort` (from
 * `/proc/<pid>/fd` and `/proc/net/tcp{,6}`); empty when the process is gone or not ours to read.
 */
export function socketPortsOf(pid: number, remotePort: number): Set<number> {
  const inodes = new Set<string>();
  let fds: string[] = [];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return new Set();
  }
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m?.[1]) inodes.add(m[1]);
    } catch {
      // closed while we looked
    }
  }
  const ports = new Set<number>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      const [local, remote, inode] = [f[1], f[2], f[9]];
      if (!local || !remote || !inode || !inodes.has(inode)) continue;
      if (Number.parseInt(remote.split(':')[1] ?? '', 16) !== remotePort) continue;
      ports.add(Number.parseInt(local.split(':')[1] ?? '', 16));
    }
  }
  return ports;
}

/** What the node counted so far (see the module note), cumulative since the meter's first sample. */
export interface ServerCount {
  /** `system_views.clients.request_count` of the service's and the keyspace's connections. */
  requests: number;
  /** Connections counted now: the service's (by socket) and others' on the keyspace. */
  connections: { service: number; otherOnKeyspace: number };
  /** Coordinator operations on the keyspace's tables, by kind, and by `kind table`. */
  coordinator: { read: number; write: number; scan: number; byTable: Map<string, number> };
}

/** Reads the node's counters of one service process and one keyspace (see the module note). */
export class ServerRequestMeter {
  private readonly last = new Map<string, number>();
  private first = true;
  private requests = 0;

  constructor(
    private readonly cql: CqlClient,
    private readonly keyspace: string,
    private readonly servicePid: number,
    private readonly nativePort: number,
  ) {}

  /** Reads the counters now; the first call sets the baseline of the connections open then. */
  async sample(): Promise<ServerCount> {
    const rows = (
      await this.cql.execute('SELECT address, port, keyspace_name, request_count FROM system_views.clients')
    ).rows;
    const service = socketPortsOf(this.servicePid, this.nativePort);
    const own = socketPortsOf(process.pid, this.nativePort);
    const connections = { service: 0, otherOnKeyspace: 0 };
    for (const r of rows) {
      const port = Number(r.port);
      if (own.has(port)) continue;
      const ours = service.has(port);
      if (!ours && r.keyspace_name !== this.keyspace) continue;
      if (ours) connections.service++;
      else connections.otherOnKeyspace++;
      const key = `${String(r.address)}:${port}`;
      const count = Number(r.request_count);
      const before = this.last.get(key) ?? (this.first ? count : 0);
      this.requests += Math.max(0, count - before);
      this.last.set(key, count);
    }
    this.first = false;
    const byTable = new Map<string, number>();
    const kinds = { read: 0, write: 0, scan: 0 };
    for (const kind of ['read', 'write', 'scan'] as const) {
      const rs = await this.cql.execute(
        `SELECT table_name, count FROM system_views.coordinator_${kind}_latency WHERE keyspace_name = ?`,
        [this.keyspace],
      );
      for (const r of rs.rows) {
        const n = Number(r.count);
        kinds[kind] += n;
        if (n > 0) byTable.set(`${kind} ${String(r.table_name)}`, n);
      }
    }
    return { requests: this.requests, connections, coordinator: { ...kinds, byTable } };
  }
}
