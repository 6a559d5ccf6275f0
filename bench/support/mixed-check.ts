/**
 * `bench:mixed`'s end-of-run model check: once the mix has stopped, every account a write touched
 * (and the celebrity) is read back over HTTP with its own token — its followers, following,
 * incoming requests, mutes, close friends and blocks, every page of each, and its counts — and its
 * profile with the admin's, and each is compared with the model (`mixed-model.ts`): a list as a
 * whole set of ids (every certain member, nothing impossible, no id twice), a count within
 * [certain, possible], a deactivated account answering 404 on its own routes.
 *
 * Some of it converges after the writes (counts are exact a lease plus a reconcile interval after
 * the last write, `docs/design/counts.md`; a flip to public accepts requests in the background;
 * other instances see a change within their bound), so a failed item is read again every
 * `retryMs` until `boundMs` after the first pass over everything ended, and only what still differs
 * then is a mismatch (each failed item gets at least the bound after its first read).
 * A count that is in range but still `exact: false` at the end is reported, not failed.
 */

import { type Expected, isOnly, type MixedModel, TYPED_SEGMENT, type TypedRelation } from './mixed-model.js';
import { call } from './mixed-ops.js';

/** One thing read back and compared. */
interface Item {
  owner: bigint;
  what: string;
  /** Reads and compares; returns a mismatch description or null. */
  run: () => Promise<string | null>;
}

export interface CheckResult {
  accounts: number;
  items: number;
  requests: number;
  seconds: number;
  /** Items that still differed at the bound (the first `maxShown` described). */
  mismatches: string[];
  mismatchCount: number;
  /** Items that differed on the first read and agreed later, by what they read. */
  convergedLate: Record<string, number>;
  /** How the first of those differed on their first read (bounded like `mismatches`). */
  convergedLateFirstRead: string[];
  inexactCounts: number;
  /** Accounts whose count was out of range while it said `exact: true` (on any read; reported). */
  exactButWrong: string[];
}

const LISTS = ['followers', 'following', 'requests'] as const;
const TYPED: TypedRelation[] = ['mutes', 'close_friends', 'blocks'];

/** Compares an id set with what the model allows. */
function compareSet(got: bigint[], want: Expected): string | null {
  const seen = new Set<bigint>();
  const twice: bigint[] = [];
  for (const id of got) {
    if (seen.has(id)) twice.push(id);
    seen.add(id);
  }
  const missing = [...want.certain].filter((id) => !seen.has(id));
  const extra = [...seen].filter((id) => !want.possible.has(id));
  if (missing.length === 0 && extra.length === 0 && twice.length === 0) return null;
  const few = (xs: bigint[]) =>
    `${xs.length}${xs.length ? ` [${xs.slice(0, 5).join(', ')}${xs.length > 5 ? ', …' : ''}]` : ''}`;
  return `got ${seen.size} ids (model: ${want.certain.size} certain, ${want.possible.size} possible); missing ${few(missing)}, unexpected ${few(extra)}, repeated ${few(twice)}`;
}

export async function checkModel(o: {
  model: MixedModel;
  urls: string[];
  token: (id: bigint) => string;
  adminToken: string;
  accounts: Iterable<bigint>;
  boundMs: number;
  retryMs?: number;
  concurrency?: number;
  maxShown?: number;
  progress: (line: string, final?: boolean) => void;
}): Promise<CheckResult> {
  const { model } = o;
  const started = performance.now();
  let requests = 0;
  let inexact = 0;
  const exactButWrong = new Set<bigint>();
  const accounts = [...new Set(o.accounts)].filter((id) => model.users.has(id));
  const base = (owner: bigint) => o.urls[Number(owner % BigInt(o.urls.length))] as string;
  const get = async (owner: bigint, path: string, token: string) => {
    requests++;
    return call(base(owner), 'GET', path, token);
  };

  /** Every page of a list (limit 200); `null` with the status when the first answer is not 200. */
  const readAll = async (owner: bigint, segment: string): Promise<bigint[] | number> => {
    const ids: bigint[] = [];
    let cursor: string | null = null;
    for (let page = 0; ; page++) {
      const q: string = cursor ? `?limit=200&cursor=${encodeURIComponent(cursor)}` : '?limit=200';
      const a = await get(owner, `/v1/users/${owner}/${segment}${q}`, o.token(owner));
      if (a.status !== 200) return a.status;
      const body = a.body as { items: { id: string }[]; next_cursor: string | null };
      for (const it of body.items) ids.push(BigInt(it.id));
      cursor = body.next_cursor;
      if (!cursor) return ids;
      if (page > 100_000) throw new Error(`${segment} of ${owner}: no end after 100,000 pages`);
    }
  };

  /** 404 when the owner is certainly deactivated; either when it may be; else `check` the body. */
  const gated = async (
    owner: bigint,
    read: () => Promise<unknown[] | number | object>,
    check: (v: never) => string | null,
  ) => {
    const active = model.user(owner).active;
    const v = await read();
    if (typeof v === 'number') {
      if (v === 404 && active.has(false)) return null;
      return `answered ${v}${isOnly(active, false) ? '' : ' (the account is active)'}`;
    }
    if (!active.has(true)) return 'answered 200 for a deactivated account (404 expected)';
    return check(v as never);
  };

  const items: Item[] = [];
  for (const owner of accounts) {
    for (const list of LISTS) {
      items.push({
        owner,
        what: list,
        run: () =>
          gated(
            owner,
            () => readAll(owner, list),
            (ids: bigint[]) => compareSet(ids, model.expectedList(owner, list)),
          ),
      });
    }
    for (const relation of TYPED) {
      items.push({
        owner,
        what: TYPED_SEGMENT[relation],
        run: () =>
          gated(
            owner,
            () => readAll(owner, TYPED_SEGMENT[relation]),
            (ids: bigint[]) => compareSet(ids, model.expectedTyped(relation, owner)),
          ),
      });
    }
    items.push({
      owner,
      what: 'counts',
      run: () =>
        gated(
          owner,
          async () => {
            const a = await get(owner, `/v1/users/${owner}/counts`, o.token(owner));
            return a.status === 200 ? (a.body as object) : a.status;
          },
          (c: { followers: number; following: number; exact?: boolean }) => {
            const f = model.expectedList(owner, 'followers');
            const g = model.expectedList(owner, 'following');
            const bad: string[] = [];
            if (c.followers < f.certain.size || c.followers > f.possible.size)
              bad.push(
                `followers ${c.followers} not in [${f.certain.size}, ${f.possible.size}] (${f.hidden} deactivated followers)`,
              );
            if (c.following < g.certain.size || c.following > g.possible.size)
              bad.push(
                `following ${c.following} not in [${g.certain.size}, ${g.possible.size}] (${g.hidden} deactivated followees)`,
              );
            if (bad.length > 0 && c.exact === true) exactButWrong.add(owner);
            if (bad.length > 0)
              return `${bad.join('; ')}${c.exact === false ? ' (exact: false)' : ' (exact: true)'}`;
            if (c.exact === false) inexact++;
            return null;
          },
        ),
    });
    items.push({
      owner,
      what: 'profile',
      run: async () => {
        const a = await get(owner, `/v1/users/${owner}`, o.adminToken);
        if (a.status !== 200) return `admin GET answered ${a.status}`;
        const p = a.body as { username: string; private: boolean; state: string };
        const u = model.user(owner);
        const bad: string[] = [];
        if (!u.username.has(p.username))
          bad.push(`username ${p.username} not in {${[...u.username].join(', ')}}`);
        if (!u.private.has(p.private)) bad.push(`private ${p.private}`);
        if (!u.active.has(p.state === 'active')) bad.push(`state ${p.state}`);
        return bad.length ? bad.join('; ') : null;
      },
    });
  }

  const runAll = async (batch: Item[]) => {
    const failed: { item: Item; why: string }[] = [];
    let next = 0;
    let done = 0;
    await Promise.all(
      Array.from({ length: o.concurrency ?? 8 }, async () => {
        while (next < batch.length) {
          const item = batch[next++] as Item;
          const why = await item.run();
          if (why) failed.push({ item, why });
          done++;
          o.progress(`check: ${done}/${batch.length} items, ${failed.length} differ, ${requests} requests`);
        }
      }),
    );
    return failed;
  };
  let failed = await runAll(items);
  const firstFailed = failed;
  const retryMs = o.retryMs ?? 1000;
  // The bound runs from the end of the first pass: a long first pass (thousands of reads on a busy
  // machine) must not eat the time an item read late in it is given to converge.
  const deadline = performance.now() + o.boundMs;
  while (failed.length > 0 && performance.now() < deadline) {
    o.progress(`check: ${failed.length} items differ; reading them again in ${retryMs} ms`, true);
    await new Promise((r) => setTimeout(r, retryMs));
    failed = await runAll(failed.map((f) => f.item));
  }
  o.progress(`check: ${items.length} items of ${accounts.length} accounts, ${failed.length} differ`, true);
  const maxShown = o.maxShown ?? 20;
  const late = firstFailed.filter((f) => !failed.some((g) => g.item === f.item));
  const convergedLate: Record<string, number> = {};
  for (const f of late) convergedLate[f.item.what] = (convergedLate[f.item.what] ?? 0) + 1;
  return {
    accounts: accounts.length,
    items: items.length,
    requests,
    seconds: +((performance.now() - started) / 1000).toFixed(1),
    mismatches: failed.slice(0, maxShown).map((f) => `${f.item.what} of ${f.item.owner}: ${f.why}`),
    mismatchCount: failed.length,
    convergedLate,
    convergedLateFirstRead: late.slice(0, maxShown).map((f) => `${f.item.what} of ${f.item.owner}: ${f.why}`),
    inexactCounts: inexact,
    exactButWrong: [...exactButWrong].slice(0, maxShown).map(String),
  };
}
