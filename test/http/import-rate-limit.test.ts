/**
 * Review finding 10: one rate-limit token bought a whole import (a 1 MiB body of 11-byte lines is
 * ~95,000 follows), and every line that was already active still appended a pair op and rewrote
 * rows: 2,000 copies of one id grew that pair's history by 2,000 ops and outran compaction. The
 * API contract (Part 3): import charges the mutation rate limit for each line that writes; a
 * line that changes nothing is reported as such and writes nothing; lines past the limit are
 * `rate_limited`, with `Retry-After`, and re-posting the file finishes the import. Memory store,
 * through HTTP, with the clock of the rate limiter injected.
 */
import { describe, expect, it } from 'vitest';
import { GraphService } from '../../src/graph/graph-service.js';
import { BucketedListService } from '../../src/lists/list-service.js';
import type { PairAppend } from '../../src/ports/records.js';
import { MemoryGraphStore } from '../support/memory/graph-store.js';
import { bearer, buildTestApp } from './support/app.js';
import { readNdjson } from './support/ndjson.js';

const OWNER = 1n;

async function setup(o: { rateLimitPerMinute: number; users: bigint[] }) {
  const store = new MemoryGraphStore();
  const appends: PairAppend[] = [];
  const append = store.appendPair.bind(store);
  store.appendPair = async (a: PairAppend) => {
    appends.push(a);
    return append(a);
  };
  const lists = new BucketedListService({
    store,
    cursorSecret: 'import-rate-secret-0123456789',
    bucketThresholds: [1e9],
  });
  const graph = new GraphService({ store, lists, maxFollowing: 7500 });
  for (const id of [OWNER, ...o.users]) await graph.putUser({ id, username: `u${id}` });
  const clock = { ms: 1_800_000_000_000 };
  const { app } = buildTestApp({
    graph,
    receipts: store,
    rateLimitPerMinute: o.rateLimitPerMinute,
    now: () => clock.ms,
  });
  const post = async (lines: string[], auth = bearer(OWNER)) => {
    const res = await app.request(`/v1/users/${OWNER}/following/import`, {
      method: 'POST',
      headers: {
        Authorization: auth,
        'Content-Type': 'application/x-ndjson',
        'X-Request-Id': 'req-1',
      },
      body: `${lines.join('\n')}\n`,
    });
    return {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      lines: readNdjson(await res.text()) as { line: number; id?: string; result: string }[],
    };
  };
  const following = async () =>
    (await graph.listPage({ userId: OWNER, relation: 'follows', direction: 'out' }, 200, null)).items.map(
      (i) => String(i.id),
    );
  return { store, graph, appends, clock, post, following };
}

const line = (id: number | string) => JSON.stringify({ id: String(id) });

describe('import charges the rate limit per line that writes', () => {
  it("2,000 copies of one id: one write, the pair's history grows by one op", async () => {
    const { store, appends, post, following } = await setup({ rateLimitPerMinute: 100, users: [2n] });
    const before = (await store.readPairHistory(OWNER, 2n)).ops.length;
    const res = await post(Array.from({ length: 2000 }, () => line(2)));
    expect([res.status, res.retryAfter, res.lines.length]).toEqual([200, null, 2000]);
    expect(res.lines[0]).toEqual({ line: 1, id: '2', result: 'following' });
    expect(res.lines.slice(1)).toEqual(
      Array.from({ length: 1999 }, (_, i) => ({ line: i + 2, id: '2', result: 'already_following' })),
    );
    expect([(await store.readPairHistory(OWNER, 2n)).ops.length - before, appends.length]).toEqual([1, 1]);
    expect(await following()).toEqual(['2']);
    // Re-posting the same file writes nothing at all.
    const again = await post(Array.from({ length: 2000 }, () => line(2)));
    expect([
      again.status,
      again.lines.every((l) => l.result === 'already_following'),
      appends.length,
    ]).toEqual([200, true, 1]);
  });

  it('a file larger than the rate limit: exactly `limit` lines written, the rest rate_limited with Retry-After; a re-post after the refill finishes it', async () => {
    // 5 mutations a minute. 2 is followed already; 999 is unknown; ids 10–17 are new.
    const { graph, post, clock, following } = await setup({
      rateLimitPerMinute: 5,
      users: [2n, 10n, 11n, 12n, 13n, 14n, 15n, 16n, 17n],
    });
    await graph.follow(OWNER, 2n);
    const file = [
      line(2),
      line(10),
      line(999),
      line(11),
      line(10),
      'x',
      line(12),
      line(13),
      line(14),
      line(15),
      line(16),
      line(10),
      line(17),
    ];
    const first = await post(file);
    expect(first).toEqual({
      status: 200,
      // The 3 lines left need 3 tokens: 36 s at 5 a minute.
      retryAfter: '36',
      lines: [
        { line: 1, id: '2', result: 'already_following' },
        { line: 2, id: '10', result: 'following' },
        { line: 3, id: '999', result: 'unknown_user' },
        { line: 4, id: '11', result: 'following' },
        { line: 5, id: '10', result: 'already_following' },
        { line: 6, result: 'invalid', error: 'not JSON' },
        { line: 7, id: '12', result: 'following' },
        { line: 8, id: '13', result: 'following' },
        { line: 9, id: '14', result: 'following' },
        { line: 10, id: '15', result: 'rate_limited' },
        { line: 11, id: '16', result: 'rate_limited' },
        { line: 12, id: '10', result: 'already_following' },
        { line: 13, id: '17', result: 'rate_limited' },
      ],
    });
    expect((await following()).sort()).toEqual(['10', '11', '12', '13', '14', '2']);
    // Before the refill: every line that would write is rate_limited again (999 too: only a follow
    // learns that it is unknown), the lines that change nothing say so, nothing is written.
    const early = await post(file);
    expect([early.retryAfter, early.lines.map((l) => l.result)]).toEqual([
      '48',
      [
        'already_following',
        'already_following',
        'rate_limited',
        'already_following',
        'already_following',
        'invalid',
        'already_following',
        'already_following',
        'already_following',
        'rate_limited',
        'rate_limited',
        'already_following',
        'rate_limited',
      ],
    ]);
    clock.ms += 36_000;
    const rest = await post(file);
    expect(rest).toEqual({
      status: 200,
      retryAfter: null,
      lines: [
        { line: 1, id: '2', result: 'already_following' },
        { line: 2, id: '10', result: 'already_following' },
        { line: 3, id: '999', result: 'unknown_user' },
        { line: 4, id: '11', result: 'already_following' },
        { line: 5, id: '10', result: 'already_following' },
        { line: 6, result: 'invalid', error: 'not JSON' },
        { line: 7, id: '12', result: 'already_following' },
        { line: 8, id: '13', result: 'already_following' },
        { line: 9, id: '14', result: 'already_following' },
        { line: 10, id: '15', result: 'following' },
        { line: 11, id: '16', result: 'following' },
        { line: 12, id: '10', result: 'already_following' },
        { line: 13, id: '17', result: 'following' },
      ],
    });
    expect((await following()).sort()).toEqual(['10', '11', '12', '13', '14', '15', '16', '17', '2']);
  });

  it('the owner at 1 a minute writes one line; an admin import for the owner is not rate limited', async () => {
    const { post } = await setup({ rateLimitPerMinute: 1, users: [10n, 11n, 12n, 13n] });
    const own = await post([line(10), line(11), line(12)]);
    // Two lines left, but the bucket holds one token at most: Retry-After is a full refill.
    expect([own.retryAfter, own.lines.map((l) => l.result)]).toEqual([
      '60',
      ['following', 'rate_limited', 'rate_limited'],
    ]);
    const admin = await post([line(10), line(11), line(12), line(13)], bearer(99, { admin: true }));
    expect([admin.retryAfter, admin.lines.map((l) => l.result)]).toEqual([
      null,
      ['already_following', 'following', 'following', 'following'],
    ]);
  });
});
