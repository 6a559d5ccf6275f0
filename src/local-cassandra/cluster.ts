/**
 * A local N-node cluster: one node per loopback address (same ports, one address each), evenly
 * spaced single tokens, the first address as the seed. Nodes start one after another (a joining
 * node must see the ring) and stop together. Each node can be crashed, frozen and
 * restarted on its own data — with other options if need be (another commitlog mode) — which
 * is what the fault tests do.
 */
import { join } from 'node:path';
import { type LocalNode, startLocalNode } from './node.js';
import { defaultNodeOptions, type NodeOptions } from './node-options.js';

export interface LocalClusterOptions {
  /** One loopback address per node, e.g. `clusterAddresses('127.0.0.21', 3)`. */
  addresses: string[];
  /** Node directories go to `<dir>/<address>`. */
  dir: string;
  heap: string;
  clusterName?: string;
  /** Anything else every node shares (commitlog mode, failure detector, hints, schema flushes). */
  node?: Partial<
    Pick<NodeOptions, 'commitlogSync' | 'phiConvictThreshold' | 'hintedHandoff' | 'flushSchemaChanges'>
  >;
  fresh?: boolean;
  log?: (line: string) => void;
}

export interface LocalCluster {
  addresses: string[];
  /** `address:port` of every node, for `CASSANDRA_CONTACT_POINTS`. */
  contactPoints: string[];
  /** The current handle of node `i` (replaced by `start(i)`). */
  node(i: number): LocalNode;
  /** The options node `i` runs with. */
  options(i: number): NodeOptions;
  /** (Re)starts node `i` on its data, with `overrides` from now on; a running node is reused. */
  start(i: number, overrides?: Partial<NodeOptions>): Promise<LocalNode>;
  /** Stops every node this cluster started, all at once. Safe to call twice. */
  stop(): Promise<void>;
}

/** `clusterAddresses('127.0.0.21', 3)` → 127.0.0.21, .22, .23. */
export function clusterAddresses(base: string, count: number): string[] {
  const parts = base.split('.').map(Number);
  const last = parts[3];
  if (parts.length !== 4 || parts[0] !== 127 || last === undefined || last + count - 1 > 254) {
    throw new Error(`base address must be a loopback IPv4 address with room for ${count} nodes: ${base}`);
  }
  return Array.from({ length: count }, (_, i) => [...parts.slice(0, 3), last + i].join('.'));
}

/** Single tokens spread evenly over the Murmur3 ring. */
export function ringTokens(n: number): string[] {
  const span = 2n ** 64n / BigInt(n);
  return Array.from({ length: n }, (_, i) => (-(2n ** 63n) + span * BigInt(i)).toString());
}

export async function startLocalCluster(o: LocalClusterOptions): Promise<LocalCluster> {
  const log = o.log ?? (() => {});
  const tokens = ringTokens(o.addresses.length);
  const seed = `${o.addresses[0]}:7000`;
  const options = o.addresses.map((address, i) =>
    defaultNodeOptions({
      address,
      seeds: [seed],
      initialToken: tokens[i] as string,
      clusterName: o.clusterName ?? 'flocklist-cluster',
      heap: o.heap,
      nodeDir: join(o.dir, address),
      ringDelayMs: 5000,
      autoBootstrap: false,
      ...o.node,
    }),
  );
  const nodes: (LocalNode | undefined)[] = [];
  const start = async (i: number, overrides: Partial<NodeOptions> = {}, fresh = false) => {
    const current = options[i];
    if (!current) throw new Error(`no node ${i}`);
    options[i] = { ...current, ...overrides };
    const opts = options[i] as NodeOptions;
    const node = await startLocalNode(opts, { fresh, log: (line) => log(`${opts.address}: ${line}`) });
    nodes[i] = node;
    log(`${opts.address} ready in ${(node.startupMs / 1000).toFixed(1)} s${node.owned ? '' : ' (reused)'}`);
    return node;
  };
  let stopped = false;
  const cluster: LocalCluster = {
    addresses: o.addresses,
    contactPoints: options.map((n) => `${n.address}:${n.nativePort}`),
    node: (i) => {
      const node = nodes[i];
      if (!node) throw new Error(`node ${i} was never started`);
      return node;
    },
    options: (i) => options[i] as NodeOptions,
    start: (i, overrides) => start(i, overrides),
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await Promise.all(nodes.map((node) => node?.stop()));
    },
  };
  try {
    for (let i = 0; i < options.length; i++) await start(i, {}, o.fresh ?? false);
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}
