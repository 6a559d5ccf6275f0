/**
 * Two service processes (`src/main.ts`, both started here) on one keyspace of the real node, the
 * read caches on with their defaults: every change is written on A and read on B, whose caches
 * hold the old state (read just before). For follows, unfollows, blocks, deactivations and
 * private flips, the delay from A's answer to B's first read showing the new state is recorded
 * (printed as p50/p99/max) and must stay within the staleness bound; a block must show on every
 * read path of B that the blocked viewer can take (profile, both lists, counts, followed-by,
 * mutuals, the follow status, contains). And each row of the staleness table in
 * `docs/operations.md`, once: B asked again three times the row's bound after A answered, its
 * whole answer checked (the rows bounded by nothing at once).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mintToken } from '../../../src/jobs/token.js';
import { type TestKeyspace, testKeyspace } from '../../support/cassandra.js';

const { contactPoints, localDataCenter } = inject('cassandra');
let ks: TestKeyspace;
const SECRET = 'cross-instance-secret-0123456789';
/** The bound the caches promise (their TTL, `GRAPH_CACHE_TTL_MS`), plus a poll of slack. */
const TTL_MS = 1000;
const REPEATS = 6;
const PAGE_MIN_LIST = 5;
/** The registry's bound for deactivated members on pages (fed by the feed's tail). */
const REGISTRY_MS = 1000;

interface Service {
  proc: ChildProcess;
  url: string;
  log: () => string;
}

async function startService(name: string): Promise<Service> {
  const proc = spawn('node', ['--import', 'tsx', 'src/main.ts'], {
    env: {
      ...process.env,
      PORT: '0',
      CASSANDRA_CONTACT_POINTS: contactPoints.join(','),
      CASSANDRA_LOCAL_DC: localDataCenter,
      CASSANDRA_KEYSPACE: ks.keyspace,
      GRAPH_WORKER: 'off',
      GRAPH_JWT_SECRET: SECRET,
      CASSANDRA_REQUEST_TIMEOUT_MS: '30000',
      GRAPH_RATE_LIMIT_PER_MINUTE: '1000000',
      GRAPH_CACHE_TTL_MS: String(TTL_MS),
      // First pages cached from lists of 5 members (10,000 by default: a list that size costs
      // minutes to build through the API), so the first-page row of the bound is tested too.
      GRAPH_CACHE_PAGE_MIN_LIST: String(PAGE_MIN_LIST),
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not listen:\n${out}`)), 90_000);
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /"url":"(http:\/\/[^"]+)"/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    proc.stderr?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    proc.on('exit', (code) => reject(new Error(`${name} exited ${code}:\n${out}`)));
  });
  return { proc, url, log: () => out };
}

const token = (sub: bigint, admin = false) =>
  `Bearer ${mintToken({ sub: String(sub), admin, expiresInSeconds: 3600 }, SECRET)}`;

async function call(s: Service, method: string, path: string, as: bigint, body?: unknown, admin = false) {
  const r = await fetch(`${s.url}${path}`, {
    method,
    headers: {
      authorization: token(as, admin),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await r.text();
  return { status: r.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : null };
}

let a: Service;
let b: Service;
let nextId = 1000n;
const delays: Record<string, number[]> = {};

/** Polls `check` on B until it holds; returns ms since `since` (A's answer). */
async function until(kind: string, since: number, check: () => Promise<boolean>): Promise<number> {
  for (;;) {
    if (await check()) {
      const ms = performance.now() - since;
      delays[kind] = [...(delays[kind] ?? []), ms];
      return ms;
    }
    if (performance.now() - since > 5000) throw new Error(`${kind}: B still serves the old state after 5 s`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function users(n: number): Promise<bigint[]> {
  const ids = Array.from({ length: n }, () => nextId++);
  for (const id of ids) {
    const r = await call(a, 'PUT', `/v1/users/${id}`, 1n, { username: `u${id}` }, true);
    expect(r.status).toBe(201);
  }
  return ids;
}

const status = async (x: bigint, y: bigint) =>
  (await call(b, 'GET', `/v1/users/${x}/following/${y}`, x)).json?.state as string;

beforeAll(async () => {
  // The keyspace from the baseline (the services find every migration applied).
  ks = await testKeyspace('xcache');
  a = await startService('A');
  b = await startService('B');
}, 180_000);

afterAll(async () => {
  for (const s of [a, b]) s?.proc.kill('SIGTERM');
  const report = Object.entries(delays).map(([kind, ms]) => {
    const sorted = [...ms].sort((x, y) => x - y);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN;
    return `${kind}: n=${ms.length} p50=${at(0.5).toFixed(0)} ms p99=${at(0.99).toFixed(0)} ms max=${at(1).toFixed(0)} ms`;
  });
  console.log(`[cross-instance staleness, TTL ${TTL_MS} ms]\n${report.join('\n')}`);
  await ks?.drop().catch(() => undefined);
}, 60_000);

describe('two service processes, writes on A, reads on B (caches on)', () => {
  it('follows and unfollows reach B within the bound', async () => {
    for (let i = 0; i < REPEATS; i++) {
      const [x, y] = (await users(2)) as [bigint, bigint];
      expect(await status(x, y)).toBe('none');
      expect(await status(x, y)).toBe('none');
      expect((await call(a, 'PUT', `/v1/users/${x}/following/${y}`, x)).status).toBe(200);
      const since = performance.now();
      expect(await until('follow', since, async () => (await status(x, y)) === 'following')).toBeLessThan(
        2 * TTL_MS,
      );
      expect((await call(a, 'DELETE', `/v1/users/${x}/following/${y}`, x)).status).toBe(200);
      const since2 = performance.now();
      expect(await until('unfollow', since2, async () => (await status(x, y)) === 'none')).toBeLessThan(
        2 * TTL_MS,
      );
    }
  });

  it('a block is enforced on every read path of B within the bound', async () => {
    for (let i = 0; i < REPEATS; i++) {
      const [viewer, owner, third] = (await users(3)) as [bigint, bigint, bigint];
      await call(a, 'PUT', `/v1/users/${viewer}/following/${owner}`, viewer);
      await call(a, 'PUT', `/v1/users/${owner}/following/${third}`, owner);
      await call(a, 'PUT', `/v1/users/${viewer}/following/${third}`, viewer);
      const paths: [string, string, unknown?][] = [
        ['GET', `/v1/users/${owner}`],
        ['GET', `/v1/users/${owner}/followers?limit=10`],
        ['GET', `/v1/users/${owner}/following?limit=10`],
        ['GET', `/v1/users/${owner}/counts`],
        ['GET', `/v1/users/${owner}/mutuals?limit=10`],
        ['GET', `/v1/users/${owner}/followed-by?limit=10`],
      ];
      const blockedBy = async () =>
        (
          (await call(b, 'POST', `/v1/users/${viewer}/relationships`, viewer, { ids: [String(owner)] })).json
            ?.items as { blocked_by: boolean }[] | undefined
        )?.[0]?.blocked_by;
      // Warm B: every path answers the viewer before the block.
      for (const [m, p] of paths) expect([p, (await call(b, m, p, viewer)).status]).toEqual([p, 200]);
      expect(await status(viewer, owner)).toBe('following');
      expect(await blockedBy()).toBe(false);
      expect((await call(a, 'PUT', `/v1/users/${owner}/blocks/${viewer}`, owner)).status).toBe(200);
      const since = performance.now();
      // The owner's profile, lists, counts and set queries are hidden (404), the relationship says
      // blocked_by, and the block removed the viewer's follow (status and contains).
      for (const [m, p] of paths)
        await until('block', since, async () => (await call(b, m, p, viewer)).status === 404);
      await until('block', since, async () => (await blockedBy()) === true);
      await until('block', since, async () => (await status(viewer, owner)) === 'none');
      const contains = await call(b, 'POST', `/v1/users/${viewer}/following/contains`, viewer, {
        ids: [String(owner)],
      });
      expect(contains.json).toEqual({ ids: [] });
    }
    for (const ms of delays.block ?? []) expect(ms).toBeLessThan(2 * TTL_MS);
  });

  it('a deactivation and a private flip reach B within the bound', async () => {
    for (let i = 0; i < REPEATS; i++) {
      const [viewer, owner] = (await users(2)) as [bigint, bigint];
      expect((await call(b, 'GET', `/v1/users/${owner}/followers?limit=5`, viewer)).status).toBe(200);
      expect((await call(b, 'GET', `/v1/users/${owner}/followers?limit=5`, viewer)).status).toBe(200);
      await call(a, 'PUT', `/v1/users/${owner}`, 1n, { private: true }, true);
      const since = performance.now();
      expect(
        await until('private', since, async () => {
          const r = await call(b, 'GET', `/v1/users/${owner}/followers?limit=5`, viewer);
          return r.status === 403;
        }),
      ).toBeLessThan(2 * TTL_MS);
      expect((await call(b, 'GET', `/v1/users/${owner}`, viewer)).status).toBe(200);
      await call(a, 'PUT', `/v1/users/${owner}`, 1n, { state: 'deactivated' }, true);
      const since2 = performance.now();
      expect(
        await until(
          'deactivate',
          since2,
          async () => (await call(b, 'GET', `/v1/users/${owner}`, viewer)).status === 404,
        ),
      ).toBeLessThan(2 * TTL_MS);
    }
  });

  it('privacy on writes: a follow sent to B right after A acknowledged a private flip answers requested, every time; after a deactivation, 404', async () => {
    for (let i = 0; i < REPEATS; i++) {
      const [viewer, owner, other] = (await users(3)) as [bigint, bigint, bigint];
      // B holds the owner's row, public and active, in its user cache.
      expect((await call(b, 'GET', `/v1/users/${owner}`, viewer)).json?.private).toBe(false);
      expect((await call(a, 'PUT', `/v1/users/${owner}`, 1n, { private: true }, true)).status).toBe(200);
      expect((await call(b, 'PUT', `/v1/users/${viewer}/following/${owner}`, viewer)).json).toEqual({
        state: 'requested',
      });
      expect((await call(b, 'GET', `/v1/users/${other}`, viewer)).status).toBe(200);
      expect((await call(a, 'PUT', `/v1/users/${other}`, 1n, { state: 'deactivated' }, true)).status).toBe(
        200,
      );
      expect((await call(b, 'PUT', `/v1/users/${viewer}/following/${other}`, viewer)).status).toBe(404);
    }
  });

  it('every row of the staleness table holds on B three times its bound after A answered; the rows bounded by nothing hold at once', async () => {
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const ids = (page: { json: Record<string, unknown> | null }) =>
      ((page.json?.items ?? []) as { id: string }[]).map((m) => m.id);
    const [viewer, owner, ...members] = (await users(9)) as [bigint, bigint, ...bigint[]];
    const [m1, m2, m3, m4, m5, m6, late] = members as [
      bigint,
      bigint,
      bigint,
      bigint,
      bigint,
      bigint,
      bigint,
    ];
    for (const m of [m1, m2, m3, m4, m5, m6]) {
      expect((await call(a, 'PUT', `/v1/users/${m}/following/${owner}`, m)).status).toBe(200);
    }
    // The viewer follows the late follower, so followed-by of the owner (seen by the viewer) is
    // what the late follow changes.
    expect((await call(a, 'PUT', `/v1/users/${viewer}/following/${late}`, viewer)).status).toBe(200);
    const first = `/v1/users/${owner}/followers?limit=10`;
    const byViewer = `/v1/users/${owner}/followed-by?limit=3`;
    const second = async () => {
      const head = await call(b, 'GET', `/v1/users/${owner}/followers?limit=2`, viewer);
      const next = encodeURIComponent(head.json?.next_cursor as string);
      return `/v1/users/${owner}/followers?limit=2&cursor=${next}`;
    };
    // B warm: the owner's row, counts (which give the page cache its size hint), first page (read
    // twice: the second read is the cached one), followed-by.
    const before = {
      user: await call(b, 'GET', `/v1/users/${owner}`, viewer),
      counts: await call(b, 'GET', `/v1/users/${owner}/counts`, viewer),
      page: await call(b, 'GET', first, viewer),
      again: await call(b, 'GET', first, viewer),
      followedBy: await call(b, 'GET', byViewer, viewer),
    };
    const oldest = [m6, m5, m4, m3, m2, m1].map(String);
    const numbers = (c: { json: Record<string, unknown> | null }) => [c.json?.followers, c.json?.following];
    expect(numbers(before.counts)).toEqual([6, 0]);
    expect([ids(before.page), ids(before.again)]).toEqual([oldest, oldest]);
    expect(before.followedBy.json).toEqual({ sample: [], total: 0 });
    const secondPage = await second();
    expect(ids(await call(b, 'GET', secondPage, viewer))).toEqual([m4, m3].map(String));

    // On A: a rename of the owner, a late follower, an unfollow on the second page.
    expect((await call(a, 'PUT', `/v1/users/${owner}`, 1n, { username: `r${owner}` }, true)).status).toBe(
      200,
    );
    expect((await call(a, 'PUT', `/v1/users/${late}/following/${owner}`, late)).status).toBe(200);
    expect((await call(a, 'DELETE', `/v1/users/${m3}/following/${owner}`, m3)).status).toBe(200);
    // Bounded by nothing on B: a page past the first (at the cursor B was given before), and the
    // list's search (LOCAL_QUORUM, no cache).
    expect(ids(await call(b, 'GET', secondPage, viewer))).toEqual([m4, m2].map(String));
    expect(
      ids(await call(b, 'GET', `/v1/users/${owner}/followers/search?q=u${late}&limit=5`, viewer)),
    ).toEqual([String(late)]);
    await sleep(3 * TTL_MS);
    const after = {
      user: await call(b, 'GET', `/v1/users/${owner}`, viewer),
      counts: await call(b, 'GET', `/v1/users/${owner}/counts`, viewer),
      page: await call(b, 'GET', first, viewer),
      followedBy: await call(b, 'GET', byViewer, viewer),
    };
    // Whole bodies equal A's read just after, but for the counts' `as_of`: the in-service
    // reconciler may confirm the owner's lists between the two reads (B's is then the older).
    const sameAsA = (onB: Record<string, unknown> | null, onA: Record<string, unknown> | null) => {
      const counts = (x: Record<string, unknown> | null) => (x?.counts ?? x) as { as_of?: string | null };
      const [tb, ta] = [counts(onB).as_of, counts(onA).as_of];
      // Null: never reconciled yet. B's may be null where A's is set, never the other way round.
      expect(tb === null || (typeof tb === 'string' && typeof ta === 'string' && tb <= ta)).toBe(true);
      const strip = (x: Record<string, unknown> | null) =>
        JSON.parse(JSON.stringify(x), (k, v) => (k === 'as_of' ? undefined : v));
      expect(strip(onB)).toEqual(strip(onA));
    };
    sameAsA(after.user.json, (await call(a, 'GET', `/v1/users/${owner}`, viewer)).json);
    expect(after.user.json?.username).toBe(`r${owner}`);
    expect(numbers(after.counts)).toEqual([6, 0]);
    sameAsA(after.counts.json, (await call(a, 'GET', `/v1/users/${owner}/counts`, viewer)).json);
    expect(ids(after.page)).toEqual([late, m6, m5, m4, m2, m1].map(String));
    expect(after.page.json?.items).toEqual((await call(a, 'GET', first, viewer)).json?.items);
    expect(after.followedBy.json).toEqual({ sample: [{ id: String(late), username: `u${late}` }], total: 1 });

    // Deactivated members leave B's pages within the registry's bound: three times it, then the
    // page holds the others only (the first page is cached on B before).
    expect(ids(await call(b, 'GET', first, viewer))).toEqual([late, m6, m5, m4, m2, m1].map(String));
    expect((await call(a, 'PUT', `/v1/users/${m5}`, 1n, { state: 'deactivated' }, true)).status).toBe(200);
    await sleep(3 * REGISTRY_MS);
    expect(ids(await call(b, 'GET', first, viewer))).toEqual([late, m6, m4, m2, m1].map(String));
  });

  it('concurrent PUTs of different fields through A and B both hold, every time', async () => {
    for (let i = 0; i < REPEATS; i++) {
      const [owner] = (await users(1)) as [bigint];
      const [ra, rb] = await Promise.all([
        call(a, 'PUT', `/v1/users/${owner}`, 1n, { private: true }, true),
        call(b, 'PUT', `/v1/users/${owner}`, 1n, { state: 'deactivated' }, true),
      ]);
      expect([ra.status, ra.json?.private, rb.status, rb.json?.state]).toEqual([
        200,
        true,
        200,
        'deactivated',
      ]);
      for (const s of [a, b]) {
        const stored = (await call(s, 'GET', `/v1/users/${owner}`, 1n, undefined, true)).json;
        expect([stored?.private, stored?.state]).toEqual([true, 'deactivated']);
      }
    }
  });
});
