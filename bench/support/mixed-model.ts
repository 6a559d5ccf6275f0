/**
 * The model `bench:mixed` keeps of what took effect, and the locks that keep it exact.
 *
 * Design note. Every field the mix writes is held as the *set of states it may be in*: one state
 * after an acknowledged op (the response, or the op's defined effect, is the truth), the union of
 * the old and the new state after an op answered 503 or lost on the wire (it may have landed or
 * not; the contract lets either happen). A later acknowledged op on the same field collapses it
 * again: positions are the service's clock, so an op that landed late still loses to one
 * acknowledged after it. That holds only when the model sees each field's ops in the order the
 * service applied them, so ops are serialized where they meet: a pair op holds its pair's mutex and
 * a shared lock on both accounts; an account write (private, hide_lists, state, rename, activity)
 * holds the account's exclusive lock, because a flip to public accepts pending requests on every
 * pair of the account and a deactivation changes what every pair op may answer. Reads take no lock:
 * their statuses are counted by kind, not judged against the model (another client's write may be
 * in flight), and the end-of-run check reads everything once the mix has stopped.
 *
 * Lists and counts are derived, never stored: a member is *certain* when its edge is certainly
 * active and it is certainly an active account, *possible* when either may be; a list must hold
 * every certain member and nothing that is not possible, a count must lie in [certain, possible].
 *
 * Rejected: a model that replays the op log by positions (the bench does not see positions); locks
 * per account for pair ops (the celebrity would serialize its followers' follows, the very load a
 * power-law mix is about).
 */

/** The follow edge `source → target` as one field: a pending request is its own state. */
export type FollowState = 'none' | 'following' | 'requested';
/** Owner-private typed edges the mix toggles (`blocks` also clears follows both ways). */
export type TypedRelation = 'blocks' | 'mutes' | 'close_friends';
export const TYPED_SEGMENT: Record<TypedRelation, string> = {
  blocks: 'blocks',
  mutes: 'mutes',
  close_friends: 'close-friends',
};

/** What the model knows of one account (each field: the values it may hold). */
export interface UserModel {
  id: bigint;
  username: Set<string>;
  private: Set<boolean>;
  hideLists: Set<boolean>;
  active: Set<boolean>;
}

const one = <T>(v: T) => new Set([v]);
const pairKey = (source: bigint, target: bigint) => `${source}>${target}`;

/** The model of the accounts and edges the bench wrote or loaded. */
export class MixedModel {
  readonly users = new Map<bigint, UserModel>();
  private readonly follows = new Map<string, Set<FollowState>>();
  private readonly typed: Record<TypedRelation, Map<string, Set<boolean>>> = {
    blocks: new Map(),
    mutes: new Map(),
    close_friends: new Map(),
  };
  /** Every account an edge (any state ever possible) joins `id` to, by direction. */
  private readonly outOf = new Map<bigint, Set<bigint>>();
  private readonly inOf = new Map<bigint, Set<bigint>>();
  /** Accounts whose lists, counts or profile an acknowledged or ambiguous write may have changed. */
  readonly touched = new Set<bigint>();

  addUser(id: bigint, username: string): UserModel {
    const u: UserModel = {
      id,
      username: one(username),
      private: one(false),
      hideLists: one(false),
      active: one(true),
    };
    this.users.set(id, u);
    return u;
  }

  user(id: bigint): UserModel {
    const u = this.users.get(id);
    if (!u) throw new Error(`no account ${id} in the model`);
    return u;
  }

  private link(source: bigint, target: bigint) {
    const o = this.outOf.get(source) ?? new Set<bigint>();
    this.outOf.set(source, o);
    o.add(target);
    const i = this.inOf.get(target) ?? new Set<bigint>();
    this.inOf.set(target, i);
    i.add(source);
  }

  /** The follow field `source → target` (none when never written). */
  follow(source: bigint, target: bigint): ReadonlySet<FollowState> {
    return this.follows.get(pairKey(source, target)) ?? one<FollowState>('none');
  }

  /** Sets the follow field to exactly `states` (a loaded edge, an acknowledged op). */
  setFollow(source: bigint, target: bigint, states: Iterable<FollowState>) {
    this.follows.set(pairKey(source, target), new Set(states));
    this.link(source, target);
  }

  /** Widens the follow field by `states` (an op that may or may not have landed). */
  widenFollow(source: bigint, target: bigint, states: Iterable<FollowState>) {
    const s = new Set(this.follow(source, target));
    for (const x of states) s.add(x);
    this.setFollow(source, target, s);
  }

  typedEdge(relation: TypedRelation, source: bigint, target: bigint): ReadonlySet<boolean> {
    return this.typed[relation].get(pairKey(source, target)) ?? one(false);
  }

  setTyped(relation: TypedRelation, source: bigint, target: bigint, states: Iterable<boolean>) {
    this.typed[relation].set(pairKey(source, target), new Set(states));
    this.link(source, target);
  }

  /** A block may stand between the two (either direction). */
  mayBeBlocked(a: bigint, b: bigint): boolean {
    return this.typedEdge('blocks', a, b).has(true) || this.typedEdge('blocks', b, a).has(true);
  }

  /** A certainly-active follow `source → target` between two certainly-active accounts, or not. */
  certainFollow(source: bigint, target: bigint): boolean {
    const s = this.follow(source, target);
    return (
      s.size === 1 &&
      s.has('following') &&
      isOnly(this.users.get(source)?.active, true) &&
      isOnly(this.users.get(target)?.active, true)
    );
  }

  /** The accounts joined to `id` by any edge, either direction. */
  counterparts(id: bigint): Set<bigint> {
    return new Set([...(this.outOf.get(id) ?? []), ...(this.inOf.get(id) ?? [])]);
  }

  /**
   * Who lists `owner`'s followers (`in`) or following (`out`) must hold (`certain`) and may hold
   * (`possible`, a superset); `requests` lists the incoming pending requests instead.
   */
  expectedList(owner: bigint, kind: 'followers' | 'following' | 'requests'): Expected {
    const ids = (kind === 'following' ? this.outOf : this.inOf).get(owner) ?? new Set<bigint>();
    const want: FollowState = kind === 'requests' ? 'requested' : 'following';
    const certain = new Set<bigint>();
    const possible = new Set<bigint>();
    let hidden = 0;
    for (const other of ids) {
      const s = kind === 'following' ? this.follow(owner, other) : this.follow(other, owner);
      const active = this.users.get(other)?.active ?? one(true);
      if (s.has(want) && !active.has(true)) hidden++;
      if (!s.has(want) || !active.has(true)) continue;
      possible.add(other);
      if (s.size === 1 && active.size === 1) certain.add(other);
    }
    return { certain, possible, hidden };
  }

  /** The owner's typed list (`mutes`, `close-friends`, `blocks`), members hidden when deactivated. */
  expectedTyped(relation: TypedRelation, owner: bigint): Expected {
    const certain = new Set<bigint>();
    const possible = new Set<bigint>();
    for (const other of this.outOf.get(owner) ?? []) {
      const s = this.typedEdge(relation, owner, other);
      const active = this.users.get(other)?.active ?? one(true);
      if (!s.has(true) || !active.has(true)) continue;
      possible.add(other);
      if (s.size === 1 && active.size === 1) certain.add(other);
    }
    return { certain, possible, hidden: 0 };
  }

  /** Accepts every pending request to `owner` (a flip to public: `certain` when acknowledged). */
  acceptPending(owner: bigint, certain: boolean) {
    for (const source of this.inOf.get(owner) ?? []) {
      const s = this.follow(source, owner);
      if (!s.has('requested')) continue;
      const next = new Set(s);
      if (certain) next.delete('requested');
      next.add('following');
      this.setFollow(source, owner, next);
      this.touched.add(source);
    }
  }
}

/** What a list must hold and may hold (see `MixedModel.expectedList`). */
export interface Expected {
  certain: Set<bigint>;
  possible: Set<bigint>;
  /** Members whose edge stands but who are deactivated (hidden from the list and, in time, the count). */
  hidden: number;
}

export const isOnly = <T>(s: ReadonlySet<T> | undefined, v: T) => s !== undefined && s.size === 1 && s.has(v);

/**
 * A readers–writer lock per key (writers first: a waiting writer holds back new readers, so a flip
 * of the celebrity is not starved by its followers' follows) and a mutex per pair.
 */
export class KeyedLocks {
  private readonly state = new Map<string, { readers: number; writer: boolean; queue: Waiter[] }>();

  private entry(key: string) {
    const e = this.state.get(key) ?? { readers: 0, writer: false, queue: [] };
    this.state.set(key, e);
    return e;
  }

  private acquire(key: string, write: boolean): Promise<void> {
    const e = this.entry(key);
    const free = write ? !e.writer && e.readers === 0 : !e.writer && e.queue.length === 0;
    if (free && e.queue.length === 0) {
      if (write) e.writer = true;
      else e.readers++;
      return Promise.resolve();
    }
    return new Promise((resolve) => e.queue.push({ write, resolve }));
  }

  private release(key: string, write: boolean) {
    const e = this.entry(key);
    if (write) e.writer = false;
    else e.readers--;
    while (e.queue.length > 0 && !e.writer) {
      const next = e.queue[0] as Waiter;
      if (next.write) {
        if (e.readers > 0) break;
        e.queue.shift();
        e.writer = true;
        next.resolve();
        break;
      }
      e.queue.shift();
      e.readers++;
      next.resolve();
    }
    if (!e.writer && e.readers === 0 && e.queue.length === 0) this.state.delete(key);
  }

  /**
   * Runs `work` holding shared locks on `shared` accounts, exclusive ones on `exclusive`, and the
   * mutexes of `pairs` (taken in one global order, so two ops never wait on each other).
   */
  async with<T>(
    o: { shared?: bigint[]; exclusive?: bigint[]; pairs?: [bigint, bigint][] },
    work: () => Promise<T>,
  ): Promise<T> {
    const keys: { key: string; write: boolean }[] = [];
    for (const id of o.exclusive ?? []) keys.push({ key: `u${id}`, write: true });
    for (const id of o.shared ?? []) {
      if (!(o.exclusive ?? []).includes(id)) keys.push({ key: `u${id}`, write: false });
    }
    for (const [a, b] of o.pairs ?? []) keys.push({ key: a < b ? `p${a}:${b}` : `p${b}:${a}`, write: true });
    const unique = [...new Map(keys.map((k) => [k.key, k])).values()].sort((x, y) =>
      x.key < y.key ? -1 : x.key > y.key ? 1 : 0,
    );
    for (const k of unique) await this.acquire(k.key, k.write);
    try {
      return await work();
    } finally {
      for (const k of unique.reverse()) this.release(k.key, k.write);
    }
  }
}

interface Waiter {
  write: boolean;
  resolve: () => void;
}
