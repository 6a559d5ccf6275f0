/**
 * The read caches' part of a whole-service schedule (`pair-sim.ts` with `service: true`): user
 * rows, edge states and counts read through the instances' caches, and how stale each may be.
 *
 * Design note — the bound (the operations guide's "Staleness per read path": a user row, an edge
 * state, counts ≤ TTL on another instance, nothing on the one that acknowledged), in the schedules
 * whose instances run their caches (`FeedKnobs.registries`, a third; TTL 1 s, the service's
 * default). There, a tenth to three tenths of a writer's calls, and a read every 0.1–0.4 s for
 * 3 s after its last call, are reads through the instance: a followers page half the time
 * (`account-sim.ts`, 5), else as often a user row (`getUser`), a follow status (`getFollowStatus`:
 * both users' rows and the edge), a relationship (`relationship`: the pair's edges) or `counts`,
 * of the schedule's accounts and pairs. And half the time, right after a call of its own, the
 * instance reads back what the call changed: the account's row after a PUT, the pair's
 * relationship or one account's counts after a mutation (where an entry it held before the
 * change must not be served).
 *
 * What the caches promise (`read-cache.ts`): an entry served at t was fetched by a read that began
 * at or after t − TTL (it expires one TTL after its read began) and after the instance's last
 * invalidation of its key (an invalidation drops it and refuses the stores of reads that began
 * before it). So a read that begins at t returns what the database held at some instant of
 * [W, e], where W = max(t − TTL, the instance's last invalidation of what it reads) and e is when
 * it answered.
 *
 * The check. When the read answers (at e), the same read is made uncached against the database at
 * that instant (a reference `GraphService` without caches, over a client without delay or fault),
 * and the simulated node names the partitions it read (`CqlEngine.watch`). When no write landed
 * on any of them in [W, e] (W less 10 µs: the caches' clocks are milliseconds as doubles), the
 * database held one value all through, and the read must return it (`stale-user`, `stale-edge`,
 * `stale-counts` otherwise). When a write landed in that window the answer is not determined (the
 * value before it or after it), and nothing is asserted. Hence a change acknowledged at least TTL
 * before a read began, on any instance, shows in it (its write landed before it was acknowledged),
 * or a later one does: what landed after it by then is in the value too, whether its call was
 * acknowledged, answered 503 or never answered (a write that has not landed by the read's end is
 * not in the database either); an overlapping write, acknowledged or not, leaves the read
 * unchecked. This is stronger than the table's row, which counts from the acknowledgement: the
 * caches bound the age of what they fetched, so a write is due in a read one TTL after it landed.
 * Counts are compared as followers, following and whether exact (their `asOf` is the reading
 * instance's clock when a list was never written).
 *
 * W on the instance that acknowledged ("nothing" in the table): a PUT acknowledged there that wrote
 * its cells dropped the account's row (`onUserWritten`) and, by its `user.updated` event, every
 * count, after its cells' write answered — W is at least when that answer came; a pair mutation
 * dropped its pair's edge states and both accounts' counts as it answered, whatever its outcome —
 * W is at least its answer. A follow status reads two rows and an edge, which no one mutation
 * drops all of: TTL only. (Drops the harness does not know of — the feed tail's, a task's — are
 * left out, which can only widen the window.)
 *
 * Reach: the reads asserted; among them those whose partitions took a write within a TTL before
 * W, where a cache that kept an older value would show, and those whose W is the instance's own
 * drop. The planted `user-cache-never-expires` keeps every user row an instance reads for good
 * and ignores every invalidation, which the user row reads must catch. (Checked by hand: user,
 * edge and counts caches that ignore invalidations but expire are each caught by the reads back
 * within 300 schedules; edge and counts caches that never expire, by the reads.)
 */
import type { GraphCaches } from '../../src/graph/caches/graph-caches.js';
import type { GraphService } from '../../src/graph/graph-service.js';
import { isDomainError, StoreUnavailableError } from '../../src/model/errors.js';
import type { UserId, UserRecord } from '../../src/model/types.js';
import type { CqlEngine } from './cql/engine.js';

/** What a read asks: a user row, a follow status, a relationship, counts. */
export type ReadKind = 'user' | 'status' | 'relationship' | 'counts';

/** The cache reads, a followers page as often as these together (`pair-sim.ts`). */
export const READ_KINDS: readonly ReadKind[] = ['user', 'status', 'relationship', 'counts'];

/** How far below W a write still counts as in the window (µs): the caches' ms clocks are doubles. */
const CLOCK_SLACK_MICROS = 10;

/** One read through an instance, with the reference read made as it answered. */
export interface ReadRecord {
  id: number;
  writer: number;
  kind: ReadKind;
  /** The account (user, counts) or the two (status: source, target; relationship: viewer, other). */
  args: readonly UserId[];
  startAt: number;
  endAt: number;
  /** W of the note, less the slack. */
  from: number;
  /** Whether W is the instance's own drop (a read less than a TTL after a change it acknowledged). */
  local: boolean;
  /** What it answered (null: the database was unavailable, nothing to check). */
  got: string | null;
  /** What the reference read answered at `endAt`. */
  want: string;
  /** The partitions the reference read named. */
  partitions: readonly string[];
  /** When a write last landed on any of them (−∞: never). */
  lastWrite: number;
}

/**
 * The node's partitions as the staleness check watches them: when a write last landed on each
 * (and on each table, for scans), and which partitions a read names.
 */
export class PartitionWatch {
  private readonly last = new Map<string, number>();
  private readonly capturing = new Set<Set<string>>();

  constructor(engine: CqlEngine) {
    engine.watch = {
      read: (partition) => {
        for (const c of this.capturing) c.add(partition);
      },
      write: (partition, now) => {
        this.last.set(partition, now);
        this.last.set(`${partition.slice(0, partition.indexOf('|'))}|*`, now);
      },
    };
  }

  /** `read`'s value, the partitions it named, and when a write last landed on one of them. */
  async reading<T>(read: () => Promise<T>): Promise<{ value: T; partitions: string[]; lastWrite: number }> {
    const named = new Set<string>();
    this.capturing.add(named);
    try {
      const value = await read();
      let lastWrite = Number.NEGATIVE_INFINITY;
      for (const p of named) lastWrite = Math.max(lastWrite, this.last.get(p) ?? Number.NEGATIVE_INFINITY);
      return { value, partitions: [...named].sort(), lastWrite };
    } finally {
      this.capturing.delete(named);
    }
  }
}

/** W of the note for a read that began at `startAt` (the slack taken off), and whether the drop set it. */
export function windowStart(
  startAt: number,
  ttlMicros: number,
  localDrop: number,
): { from: number; local: boolean } {
  return {
    from: Math.max(startAt - ttlMicros, localDrop) - CLOCK_SLACK_MICROS,
    local: localDrop > startAt - ttlMicros,
  };
}

const json = (v: unknown) => JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? String(x) : x));

/**
 * The read's answer as a string to compare; null when the database was unavailable. A refusal
 * (not found: a deactivated account's status) is an answer; anything else thrown is rethrown.
 */
export async function readAnswer(
  graph: GraphService,
  kind: ReadKind,
  args: readonly UserId[],
): Promise<string | null> {
  const [a, b] = args as [UserId, UserId];
  try {
    switch (kind) {
      case 'user': {
        const u = await graph.getUser(a);
        return json({ username: u.username, private: u.private, state: u.state, hideLists: u.hideLists });
      }
      case 'status':
        return json(await graph.getFollowStatus(a, b));
      case 'relationship':
        return json(await graph.relationship(a, b));
      case 'counts': {
        const c = await graph.counts(a);
        return json({ followers: c.followers, following: c.following, exact: c.exact });
      }
    }
  } catch (e) {
    if (e instanceof StoreUnavailableError) return null;
    if (isDomainError(e)) return `refused: ${e.name}`;
    throw e;
  }
}

export interface ReadViolation {
  kind: 'stale-user' | 'stale-edge' | 'stale-counts';
  detail: string;
}

/** How much of the note a schedule exercised. */
export interface ReadReach {
  /** Reads whose answer was determined (no write in their window), and so checked. */
  checked: number;
  /** Of those, the ones whose partitions took a write within a TTL before their window. */
  afterChange: number;
  /** Of those, the ones whose window began at the instance's own drop (held to "at once"). */
  local: number;
}

const KIND_OF: Record<ReadKind, ReadViolation['kind']> = {
  user: 'stale-user',
  status: 'stale-edge',
  relationship: 'stale-edge',
  counts: 'stale-counts',
};

/** The check of the note over a schedule's reads. */
export function checkReads(
  reads: readonly ReadRecord[],
  ttlMicros: number,
): { violations: ReadViolation[]; reach: ReadReach } {
  const out: ReadViolation[] = [];
  const reach: ReadReach = { checked: 0, afterChange: 0, local: 0 };
  for (const r of reads) {
    if (r.got === null || r.lastWrite >= r.from) continue;
    reach.checked++;
    if (r.lastWrite >= r.from - ttlMicros) reach.afterChange++;
    if (r.local) reach.local++;
    if (r.got === r.want) continue;
    out.push({
      kind: KIND_OF[r.kind],
      detail:
        `${r.kind}(${r.args.join(', ')}) #${r.id} on instance ${r.writer} from ${r.startAt} to ${r.endAt} answered ${r.got}; ` +
        `the database held ${r.want} from before ${r.from} (last write ${r.lastWrite} on ${r.partitions.join(' ')})`,
    });
  }
  return { violations: out, reach };
}

/**
 * The planted `user-cache-never-expires`: the instance's user cache keeps every row it stores for
 * good and ignores every invalidation (its own writes' drops and the feed tail's).
 */
export function plantNeverExpiringUsers(caches: GraphCaches): void {
  const held = new Map<UserId, UserRecord>();
  Object.assign(caches.users, {
    get: (id: UserId) => held.get(id),
    peek: (id: UserId) => held.get(id),
    store: (id: UserId, row: UserRecord) => {
      held.set(id, row);
      return true;
    },
    invalidate: () => undefined,
    patch: () => undefined,
    clear: () => undefined,
  });
}
