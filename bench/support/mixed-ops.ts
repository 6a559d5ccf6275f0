/**
 * `bench:mixed`'s operations: the LinkBench-shaped mix over the HTTP API, one closed-loop client
 * at a time, each op recording its latency and status and (for writes) updating the model
 * (`mixed-model.ts`) from what the service answered.
 *
 * The mix (fractions of all ops; LinkBench's production mix with its names mapped onto the API):
 * 50.7 % list pages (followers or following, a page after a cursor of the client's previous page
 * about a third of the time), 12.9 % profiles, 9 % follows, 8 % typed-edge toggles (mute, close
 * friend), 7.4 % account writes (private, hide_lists, last_active_at, renames 0.2 % of all ops),
 * 4.9 % counts, 3 % unfollows and block toggles, 2.6 % new accounts, 1 % deactivations (and
 * reactivations), 0.5 % relationship batches. Targets and list owners are Zipf-ish over popularity
 * ranks (the celebrity first, then the background users in the loader's Zipf order, then new
 * accounts): P(rank ≤ k) = ln(k + 2) / ln(n + 1), which needs no table as accounts are added.
 *
 * Statuses: 2xx is success; 503 and a lost connection are allowed and leave the written fields
 * ambiguous; every other status is either one the contract expects for that op (403/404 of
 * visibility, blocks and deactivations; judged against the model for writes, which hold their
 * locks) or an error.
 */
import { mulberry32 } from '../../test/support/random.js';
import type { MixedModel } from './mixed-model.js';
import { isOnly, type KeyedLocks, TYPED_SEGMENT, type TypedRelation } from './mixed-model.js';

/** A base URL serving the `/v1` routes (one service instance, or another target). */
export interface HttpAnswer {
  status: number;
  body: unknown;
  ms: number;
}

/** One HTTP call; status 0 when the connection failed or timed out (outcome unknown). */
export async function call(
  base: string,
  method: string,
  path: string,
  token: string,
  body?: unknown,
  timeoutMs = 60_000,
): Promise<HttpAnswer> {
  const t0 = performance.now();
  try {
    const r = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await r.text();
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = text;
    }
    return { status: r.status, body: parsed, ms: performance.now() - t0 };
  } catch (e) {
    return { status: 0, body: String(e), ms: performance.now() - t0 };
  }
}

/** The op kinds of the mix and their weights (percent of all ops). */
export const MIX = [
  ['list', 50.7],
  ['profile', 12.9],
  ['follow', 9],
  ['typed_toggle', 8],
  ['account_update', 7.2],
  ['rename', 0.2],
  ['counts', 4.9],
  ['unfollow', 2.4],
  ['block_toggle', 0.6],
  ['new_account', 2.6],
  ['deactivation', 1],
  ['relationships', 0.5],
] as const;
export type MixKind = (typeof MIX)[number][0];
/** Kinds as reported: a list page is `list_first` or `list_next` (after a cursor). */
export type ReportKind = Exclude<MixKind, 'list'> | 'list_first' | 'list_next';

/** Latencies and statuses of one report kind. */
export interface KindStats {
  ms: number[];
  statuses: Record<string, number>;
  /** By status: answers the contract does not expect for this op (or the model says cannot be). */
  errors: Record<string, number>;
}

/** What every client shares: the model, the locks, the targets, tokens, the stats. */
export interface MixContext {
  model: MixedModel;
  locks: KeyedLocks;
  /** Base URLs; client c talks to `urls[c % urls.length]`. */
  urls: string[];
  token: (id: bigint) => string;
  adminToken: string;
  /** Accounts by popularity rank (rank 0: the celebrity); new accounts are appended. */
  ranked: bigint[];
  celebrity: bigint;
  /** The next id for a new account. */
  nextId: () => bigint;
  stats: Map<ReportKind, KindStats>;
  /** Ops that end before this (performance.now() ms) count in `warmup` instead of `stats`. */
  measureFrom: number;
  warmup: Map<ReportKind, KindStats>;
  /** The first unexpected answers, for the report. */
  errorSamples: string[];
  /** Follows acknowledged as `following` during the mix (the planted lost write picks one). */
  acknowledgedFollows: [bigint, bigint][];
  deactivated: Set<bigint>;
}

/** One closed-loop client's own state. */
interface ClientState {
  c: number;
  rand: () => number;
  base: string;
  /** The client's previous list page, to continue after its cursor. */
  last: { owner: bigint; segment: 'followers' | 'following'; viewer: bigint; cursor: string } | null;
}

const CUMULATIVE = (() => {
  let sum = 0;
  return MIX.map(([kind, w]) => {
    sum += w;
    return [kind, sum] as const;
  });
})();
const TOTAL_WEIGHT = CUMULATIVE.at(-1)?.[1] ?? 100;

function pickKind(rand: () => number): MixKind {
  const x = rand() * TOTAL_WEIGHT;
  for (const [kind, upTo] of CUMULATIVE) if (x < upTo) return kind;
  return 'list';
}

/** A Zipf-ish rank in [0, n): P(rank ≤ k) = ln(k + 2) / ln(n + 1). */
function zipfRank(rand: () => number, n: number): number {
  return Math.min(n - 1, Math.max(0, Math.floor(Math.exp(rand() * Math.log(n + 1))) - 1));
}

/**
 * Counts one answer: success, 503 or lost, a status the contract expects here (`expected`), or an
 * error; `contradiction` names a success the model says cannot be (an error too).
 */
function record(
  ctx: MixContext,
  kind: ReportKind,
  a: HttpAnswer,
  expected: boolean,
  what: string,
  contradiction?: string,
) {
  const into = performance.now() < ctx.measureFrom ? ctx.warmup : ctx.stats;
  const s = into.get(kind) ?? { ms: [], statuses: {}, errors: {} };
  into.set(kind, s);
  s.ms.push(a.ms);
  const key = a.status === 0 ? 'network' : String(a.status);
  s.statuses[key] = (s.statuses[key] ?? 0) + 1;
  const fine = ((a.status >= 200 && a.status < 300) || a.status === 503 || expected) && !contradiction;
  if (!fine) {
    const why = contradiction ? `${key} contradicting the model` : key;
    s.errors[why] = (s.errors[why] ?? 0) + 1;
    if (ctx.errorSamples.length < 30) {
      ctx.errorSamples.push(
        `${kind} ${what}: ${a.status}${contradiction ? ` (${contradiction})` : ''} ${JSON.stringify(a.body).slice(0, 200)}`,
      );
    }
  }
}

/** 503 or a lost connection: the write may have landed or not. */
const ambiguous = (a: HttpAnswer) => a.status === 503 || a.status === 0;
const ok = (a: HttpAnswer) => a.status >= 200 && a.status < 300;

/** Runs ops on one client until `until` (performance.now() ms). */
export async function runClient(ctx: MixContext, c: number, seed: number, until: number, onOp: () => void) {
  const st: ClientState = {
    c,
    rand: mulberry32((seed + Math.imul(c + 1, 0x9e3779b1)) >>> 0),
    base: ctx.urls[c % ctx.urls.length] as string,
    last: null,
  };
  while (performance.now() < until) {
    await runOp(ctx, st, pickKind(st.rand));
    onOp();
  }
}

const pickRanked = (ctx: MixContext, st: ClientState) =>
  ctx.ranked[zipfRank(st.rand, ctx.ranked.length)] as bigint;

/** A uniformly chosen account the model holds certainly active (the acting side of an op). */
function pickActor(ctx: MixContext, st: ClientState): bigint {
  for (let k = 0; ; k++) {
    const id = ctx.ranked[Math.floor(st.rand() * ctx.ranked.length)] as bigint;
    if (k > 20 || isOnly(ctx.model.users.get(id)?.active, true)) return id;
  }
}

function pickTarget(ctx: MixContext, st: ClientState, actor: bigint): bigint {
  for (;;) {
    const t = pickRanked(ctx, st);
    if (t !== actor) return t;
  }
}

const mayBeInactive = (ctx: MixContext, ...ids: bigint[]) =>
  ids.some((id) => !isOnly(ctx.model.users.get(id)?.active, true));

async function runOp(ctx: MixContext, st: ClientState, kind: MixKind): Promise<void> {
  const m = ctx.model;
  switch (kind) {
    case 'list': {
      const next = st.last !== null && st.rand() < 0.35 ? st.last : null;
      const owner = next?.owner ?? pickRanked(ctx, st);
      const segment = next?.segment ?? (st.rand() < 0.5 ? 'followers' : 'following');
      const viewer = next?.viewer ?? (st.rand() < 0.5 ? owner : pickActor(ctx, st));
      const query = next ? `?limit=50&cursor=${encodeURIComponent(next.cursor)}` : '?limit=50';
      const a = await call(st.base, 'GET', `/v1/users/${owner}/${segment}${query}`, ctx.token(viewer));
      record(
        ctx,
        next ? 'list_next' : 'list_first',
        a,
        a.status === 403 || a.status === 404,
        `${owner}/${segment}`,
      );
      const cursor = ok(a) ? (a.body as { next_cursor: string | null }).next_cursor : null;
      st.last = cursor ? { owner, segment, viewer, cursor } : null;
      return;
    }
    case 'profile': {
      const owner = pickRanked(ctx, st);
      const a = await call(st.base, 'GET', `/v1/users/${owner}`, ctx.token(pickActor(ctx, st)));
      record(ctx, 'profile', a, a.status === 404, String(owner));
      return;
    }
    case 'counts': {
      const owner = pickRanked(ctx, st);
      const a = await call(st.base, 'GET', `/v1/users/${owner}/counts`, ctx.token(pickActor(ctx, st)));
      record(ctx, 'counts', a, a.status === 403 || a.status === 404, String(owner));
      return;
    }
    case 'relationships': {
      const actor = pickActor(ctx, st);
      const ids = new Set<string>();
      for (let k = 0; k < 20; k++) ids.add(String(pickTarget(ctx, st, actor)));
      const a = await call(st.base, 'POST', `/v1/users/${actor}/relationships`, ctx.token(actor), {
        ids: [...ids],
      });
      record(ctx, 'relationships', a, a.status === 404 && mayBeInactive(ctx, actor), String(actor));
      return;
    }
    case 'follow': {
      const actor = pickActor(ctx, st);
      const target = pickTarget(ctx, st, actor);
      await follow(ctx, st, actor, target);
      return;
    }
    case 'unfollow': {
      const actor = pickActor(ctx, st);
      // Someone the actor may follow or have asked, else a popular account (an idempotent no-op).
      const out = [...m.counterparts(actor)].filter((t) => !isOnly(m.follow(actor, t), 'none'));
      const target =
        out.length > 0 ? (out[Math.floor(st.rand() * out.length)] as bigint) : pickTarget(ctx, st, actor);
      await ctx.locks.with({ shared: [actor, target], pairs: [[actor, target]] }, async () => {
        const a = await call(st.base, 'DELETE', `/v1/users/${actor}/following/${target}`, ctx.token(actor));
        record(
          ctx,
          'unfollow',
          a,
          a.status === 404 && mayBeInactive(ctx, actor, target),
          `${actor}→${target}`,
        );
        if (ok(a)) m.setFollow(actor, target, ['none']);
        else if (ambiguous(a)) m.widenFollow(actor, target, ['none']);
        if (ok(a) || ambiguous(a)) markPair(ctx, actor, target);
      });
      return;
    }
    case 'block_toggle':
      await toggleTyped(ctx, st, 'blocks', 'block_toggle');
      return;
    case 'typed_toggle':
      await toggleTyped(ctx, st, st.rand() < 0.5 ? 'mutes' : 'close_friends', 'typed_toggle');
      return;
    case 'account_update': {
      const id = pickRanked(ctx, st);
      const u = m.user(id);
      const x = st.rand();
      // Private and hide_lists stay the exception: a true is written a third of the time.
      const body =
        x < 0.28
          ? { private: !u.private.has(true) && st.rand() < 0.35 }
          : x < 0.45
            ? { hide_lists: !u.hideLists.has(true) && st.rand() < 0.25 }
            : { last_active_at: new Date().toISOString() };
      await accountWrite(ctx, st, 'account_update', id, body);
      return;
    }
    case 'rename': {
      const id = pickRanked(ctx, st);
      await accountWrite(ctx, st, 'rename', id, { username: `r${id}_${Math.floor(st.rand() * 1e9)}` });
      return;
    }
    case 'deactivation': {
      const back = ctx.deactivated.size > 0 && st.rand() < 0.4;
      const id = back
        ? ([...ctx.deactivated][Math.floor(st.rand() * ctx.deactivated.size)] as bigint)
        : pickActor(ctx, st);
      if (id === ctx.celebrity) return; // the celebrity's list stays readable: it is checked whole
      await accountWrite(ctx, st, 'deactivation', id, { state: back ? 'active' : 'deactivated' });
      return;
    }
    case 'new_account': {
      const id = ctx.nextId();
      const a = await call(st.base, 'PUT', `/v1/users/${id}`, ctx.adminToken, { username: `n${id}` });
      record(ctx, 'new_account', a, false, String(id));
      if (ok(a)) {
        m.addUser(id, `n${id}`);
        ctx.ranked.push(id);
      }
      return;
    }
  }
}

function markPair(ctx: MixContext, a: bigint, b: bigint) {
  ctx.model.touched.add(a);
  ctx.model.touched.add(b);
}

async function follow(ctx: MixContext, st: ClientState, actor: bigint, target: bigint) {
  const m = ctx.model;
  await ctx.locks.with({ shared: [actor, target], pairs: [[actor, target]] }, async () => {
    const a = await call(st.base, 'PUT', `/v1/users/${actor}/following/${target}`, ctx.token(actor));
    const blocked = m.mayBeBlocked(actor, target);
    const inactive = mayBeInactive(ctx, actor, target);
    const what = `${actor}→${target}`;
    if (ok(a)) {
      const state = (a.body as { state: 'following' | 'requested' }).state;
      const certainlyBlocked =
        isOnly(m.typedEdge('blocks', actor, target), true) ||
        isOnly(m.typedEdge('blocks', target, actor), true);
      record(ctx, 'follow', a, false, what, certainlyBlocked ? `${state} while a block stands` : undefined);
      m.setFollow(actor, target, [state]);
      if (state === 'following') ctx.acknowledgedFollows.push([actor, target]);
    } else {
      record(ctx, 'follow', a, (a.status === 403 && blocked) || (a.status === 404 && inactive), what);
      if (ambiguous(a)) {
        const prior = m.follow(actor, target);
        const landed = new Set(prior);
        if (!isOnly(prior, 'following')) {
          const priv = m.user(target).private;
          if (priv.has(false)) landed.add('following');
          if (priv.has(true)) landed.add('requested');
        }
        m.setFollow(actor, target, landed);
      }
    }
    if (ok(a) || ambiguous(a)) markPair(ctx, actor, target);
  });
}

async function toggleTyped(ctx: MixContext, st: ClientState, relation: TypedRelation, kind: ReportKind) {
  const m = ctx.model;
  const actor = pickActor(ctx, st);
  const target = pickTarget(ctx, st, actor);
  await ctx.locks.with({ shared: [actor, target], pairs: [[actor, target]] }, async () => {
    const on = !m.typedEdge(relation, actor, target).has(true);
    const a = await call(
      st.base,
      on ? 'PUT' : 'DELETE',
      `/v1/users/${actor}/${TYPED_SEGMENT[relation]}/${target}`,
      ctx.token(actor),
    );
    record(
      ctx,
      kind,
      a,
      a.status === 404 && mayBeInactive(ctx, actor, target),
      `${relation} ${actor}→${target}`,
    );
    if (ok(a)) {
      m.setTyped(relation, actor, target, [on]);
      if (relation === 'blocks' && on) {
        m.setFollow(actor, target, ['none']);
        m.setFollow(target, actor, ['none']);
      }
    } else if (ambiguous(a)) {
      m.setTyped(relation, actor, target, [...m.typedEdge(relation, actor, target), on]);
      if (relation === 'blocks' && on) {
        m.widenFollow(actor, target, ['none']);
        m.widenFollow(target, actor, ['none']);
      }
    }
    if (ok(a) || ambiguous(a)) markPair(ctx, actor, target);
  });
}

/** `PUT /v1/users/{id}` as the admin, holding the account's exclusive lock. */
async function accountWrite(
  ctx: MixContext,
  st: ClientState,
  kind: ReportKind,
  id: bigint,
  body: Record<string, unknown>,
) {
  const m = ctx.model;
  await ctx.locks.with({ exclusive: [id] }, async () => {
    const u = m.user(id);
    const a = await call(st.base, 'PUT', `/v1/users/${id}`, ctx.adminToken, body);
    const onlyActivity = Object.keys(body).length === 1 && 'last_active_at' in body;
    record(
      ctx,
      kind,
      a,
      a.status === 404 && onlyActivity && !u.active.has(true),
      `${id} ${JSON.stringify(body)}`,
    );
    if (ok(a)) {
      const r = a.body as { username: string; private: boolean; hide_lists: boolean; state: string };
      const wasPrivate = u.private.has(true);
      u.username = new Set([r.username]);
      u.private = new Set([r.private]);
      u.hideLists = new Set([r.hide_lists]);
      u.active = new Set([r.state === 'active']);
      if (wasPrivate && !r.private) m.acceptPending(id, true);
    } else if (ambiguous(a)) {
      if (typeof body.username === 'string') u.username.add(body.username);
      if (typeof body.private === 'boolean') {
        u.private.add(body.private);
        if (!body.private) m.acceptPending(id, false);
      }
      if (typeof body.hide_lists === 'boolean') u.hideLists.add(body.hide_lists);
      if (typeof body.state === 'string') u.active.add(body.state === 'active');
    }
    if (typeof body.state === 'string' && (ok(a) || ambiguous(a))) {
      if (isOnly(u.active, false)) ctx.deactivated.add(id);
      else ctx.deactivated.delete(id);
      // Every counterpart's lists and counts change with the account's state.
      for (const other of m.counterparts(id)) m.touched.add(other);
    }
    if (ok(a) || ambiguous(a)) m.touched.add(id);
  });
}
