/**
 * Load with a ledger. Each writer owns its source accounts, so every (source, target) pair has
 * exactly one writer and its ops are sequential: the pair's final state is the state of its last
 * acknowledged op — unless an op is still unacknowledged at the end, whose outcome is unknown
 * (it may land or not). A writer retries a failed op (same Idempotency-Key) until it is
 * acknowledged, so in a run that stops cleanly no pair ends unknown. Readers page through
 * follower and following lists. Every request is timed and kept.
 */

import { mulberry32 } from '../../support/random.js';
import type { ClusterApp, Reply } from './cluster-app.js';

export type PairState = 'following' | 'none';

export interface Attempt {
  kind: 'write' | 'read';
  startedAt: number;
  ms: number;
  status: number;
}

export interface Accounts {
  sources: bigint[];
  targets: bigint[];
  /** Sources owned by each writer. */
  owned: bigint[][];
}

/** `writers` writers, each owning `perWriter` sources; `targets` shared targets; ids from `base`. */
export function accounts(base: bigint, writers: number, perWriter: number, targets: number): Accounts {
  const sources = Array.from({ length: writers * perWriter }, (_, i) => base + BigInt(i));
  const owned = Array.from({ length: writers }, (_, w) => sources.slice(w * perWriter, (w + 1) * perWriter));
  const t = Array.from({ length: targets }, (_, i) => base + 1000n + BigInt(i));
  return { sources, targets: t, owned };
}

export async function createAccounts(app: ClusterApp, a: Accounts): Promise<void> {
  for (const id of [...a.sources, ...a.targets]) {
    const r = await app.call('PUT', `/v1/users/${id}`, { admin: true, body: { username: `u${id}` } });
    if (r.status !== 200 && r.status !== 201) throw new Error(`PUT user ${id}: ${r.status}`);
  }
}

const key = (s: bigint, t: bigint) => `${s}>${t}`;

export interface Ledger {
  /** State of the last acknowledged op per pair (pairs never acknowledged are absent: none). */
  acked: Map<string, PairState>;
  /** The op still unacknowledged when the writer stopped, per pair (outcome unknown). */
  unknown: Map<string, PairState>;
  attempts: Attempt[];
  opsAcked: number;
}

export interface LoadHandle {
  ledger: Ledger;
  /** Writers finish (or abandon, when `abandon`) their current op; readers stop. */
  stop(o?: { abandon?: boolean }): Promise<void>;
}

export function startLoad(
  app: ClusterApp,
  a: Accounts,
  o: {
    seed: number;
    readers: number;
    pageSize?: number;
    retryDelayMs?: number;
    /**
     * Pause after each acknowledged write and each page read (default 100 ms): the load is there to
     * have requests in flight at every moment of a fault, not to spin on a machine whose two cores
     * three JVMs share.
     */
    thinkMs?: number;
  },
): LoadHandle {
  const ledger: Ledger = { acked: new Map(), unknown: new Map(), attempts: [], opsAcked: 0 };
  let stopping = false;
  let abandon = false;
  const record = (kind: Attempt['kind'], r: Reply) =>
    ledger.attempts.push({ kind, startedAt: r.startedAt, ms: r.ms, status: r.status });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const think = o.thinkMs ?? 100;

  const writer = async (w: number) => {
    const random = mulberry32(o.seed + w);
    const mine = a.owned[w] ?? [];
    let n = 0;
    while (!stopping) {
      const source = mine[Math.floor(random() * mine.length)] as bigint;
      const target = a.targets[Math.floor(random() * a.targets.length)] as bigint;
      const k = key(source, target);
      const next: PairState = (ledger.acked.get(k) ?? 'none') === 'following' ? 'none' : 'following';
      const idem = `w${w}-${n++}`;
      ledger.unknown.set(k, next);
      for (;;) {
        const r = await app.call(
          next === 'following' ? 'PUT' : 'DELETE',
          `/v1/users/${source}/following/${target}`,
          {
            as: source,
            key: idem,
          },
        );
        record('write', r);
        if (r.status === 200) {
          ledger.acked.set(k, next);
          ledger.unknown.delete(k);
          ledger.opsAcked++;
          break;
        }
        if (abandon) return;
        await sleep(o.retryDelayMs ?? 100);
      }
      await sleep(think);
    }
  };

  const reader = async (i: number) => {
    const random = mulberry32(o.seed + 1000 + i);
    const owners = [...a.sources, ...a.targets];
    while (!stopping) {
      const owner = owners[Math.floor(random() * owners.length)] as bigint;
      const list = a.sources.includes(owner) ? 'following' : 'followers';
      let cursor: string | null = null;
      do {
        const q: string = `limit=${o.pageSize ?? 5}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const r = await app.call('GET', `/v1/users/${owner}/${list}?${q}`, { as: owner });
        record('read', r);
        cursor = r.status === 200 ? ((r.json?.next_cursor as string | null) ?? null) : null;
        await sleep(think);
      } while (cursor && !stopping);
    }
  };

  const running = [
    ...a.owned.map((_, w) => writer(w)),
    ...Array.from({ length: o.readers }, (_, i) => reader(i)),
  ];
  return {
    ledger,
    stop: async (s = {}) => {
      stopping = true;
      abandon = s.abandon ?? false;
      await Promise.all(running);
    },
  };
}

/** Every page of a list, through the API; null when any page failed. */
export async function wholeList(
  app: ClusterApp,
  owner: bigint,
  list: 'following' | 'followers',
): Promise<string[] | null> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const q: string = `limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const r = await app.call('GET', `/v1/users/${owner}/${list}?${q}`, { as: owner });
    if (r.status !== 200) return null;
    for (const item of (r.json?.items as { id: string }[]) ?? []) ids.push(item.id);
    cursor = (r.json?.next_cursor as string | null) ?? null;
  } while (cursor);
  return ids.sort();
}

/** The edges the ledger implies, as "source>target" keys, sorted. */
export function expectedEdges(states: Map<string, PairState>): string[] {
  return [...states]
    .filter(([, s]) => s === 'following')
    .map(([k]) => k)
    .sort();
}

/** The edges the API shows, from both sides: following lists of sources, followers of targets. */
export async function observedEdges(app: ClusterApp, a: Accounts): Promise<{ out: string[]; in: string[] }> {
  const out: string[] = [];
  const inn: string[] = [];
  for (const s of a.sources) {
    const ids = await wholeList(app, s, 'following');
    if (!ids) throw new Error(`following of ${s} could not be read`);
    for (const t of ids) out.push(key(s, BigInt(t)));
  }
  for (const t of a.targets) {
    const ids = await wholeList(app, t, 'followers');
    if (!ids) throw new Error(`followers of ${t} could not be read`);
    for (const s of ids) inn.push(key(BigInt(s), t));
  }
  return { out: out.sort(), in: inn.sort() };
}

export interface Figures {
  writes: number;
  writesFailed: number;
  reads: number;
  readsFailed: number;
  longestMs: number;
  /** Start times of the first and last failed write, relative to `t0`. */
  failedWritesFrom: number | null;
  failedWritesTo: number | null;
  statuses: Record<string, number>;
}

export function figures(attempts: Attempt[], t0: number): Figures {
  const writes = attempts.filter((x) => x.kind === 'write');
  const reads = attempts.filter((x) => x.kind === 'read');
  const failed = writes.filter((x) => x.status !== 200);
  const statuses: Record<string, number> = {};
  for (const x of attempts)
    if (x.status !== 200) statuses[`${x.kind} ${x.status}`] = (statuses[`${x.kind} ${x.status}`] ?? 0) + 1;
  return {
    writes: writes.length,
    writesFailed: failed.length,
    reads: reads.length,
    readsFailed: reads.filter((x) => x.status !== 200).length,
    longestMs: Math.round(Math.max(0, ...attempts.map((x) => x.ms))),
    failedWritesFrom: failed.length ? Math.min(...failed.map((x) => x.startedAt - t0)) : null,
    failedWritesTo: failed.length ? Math.max(...failed.map((x) => x.startedAt - t0)) : null,
    statuses,
  };
}

/** The feed's cursor after everything settled now: pages through `GET /v1/events` to its end. */
export async function feedEnd(app: ClusterApp, after: string | null = null): Promise<string> {
  let cursor = after;
  for (;;) {
    const q = cursor === null ? '' : `&after=${encodeURIComponent(cursor)}`;
    const r = await app.call('GET', `/v1/events?limit=1000${q}`, { admin: true });
    if (r.status !== 200) throw new Error(`GET /v1/events: ${r.status}`);
    const items = (r.json?.items ?? []) as unknown[];
    cursor = r.json?.next_cursor as string;
    if (items.length === 0) return cursor;
  }
}

/** Every event after `after` (the API's shape: type, source, target, id), page by page. */
export async function feedAfter(
  app: ClusterApp,
  after: string,
): Promise<{ id: string; type: string; source: string; target: string }[]> {
  const out: { id: string; type: string; source: string; target: string }[] = [];
  let cursor = after;
  for (;;) {
    const r = await app.call('GET', `/v1/events?limit=1000&after=${encodeURIComponent(cursor)}`, {
      admin: true,
    });
    if (r.status !== 200) throw new Error(`GET /v1/events: ${r.status}`);
    const items = (r.json?.items ?? []) as { id: string; type: string; source: string; target: string }[];
    out.push(...items);
    cursor = r.json?.next_cursor as string;
    if (items.length === 0) return out;
  }
}

/**
 * The feed's promise over one run, from its follow events: each edge's events alternate
 * (`follow.created`, `follow.removed`, …, from none), no id twice, and replayed they give
 * `edges` (the edges as the lists show them). Returns what breaks it (empty: nothing).
 */
export function feedBreaks(
  events: readonly { id: string; type: string; source: string; target: string }[],
  edges: readonly string[],
): string[] {
  const breaks: string[] = [];
  const on = new Set<string>();
  const ids = new Set<string>();
  for (const e of events) {
    if (ids.has(e.id)) breaks.push(`event ${e.id} twice`);
    ids.add(e.id);
    if (e.type !== 'follow.created' && e.type !== 'follow.removed') continue;
    const k = `${e.source}>${e.target}`;
    const created = e.type === 'follow.created';
    if (created === on.has(k)) breaks.push(`${k}: ${e.type} when it was ${created ? 'on' : 'off'}`);
    if (created) on.add(k);
    else on.delete(k);
  }
  const want = new Set(edges);
  for (const k of on) if (!want.has(k)) breaks.push(`${k}: on in the feed, not in the lists`);
  for (const k of want) if (!on.has(k)) breaks.push(`${k}: in the lists, never created in the feed`);
  return breaks;
}
