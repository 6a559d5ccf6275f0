/**
 * ACCEPTANCE (suggestions) on the real node: `runSuggestions` over a ten-account graph
 * built through the service, against Adamic–Adar scores computed by hand, every exclusion kind
 * exercised; then `GET /v1/users/{id}/suggestions` (read-time filtering, limit, errors, security).
 *
 * The graph (→ = follows; deg = following size):
 *   1 → 2, 3, 4                       1 also requested 7 (private), blocks 8, is blocked by 10
 *   2 → 5, 6, 1          deg(2) = 3   w2 = 1/ln(1+3) = 1/ln 4 = 0.7213475204
 *   3 → 5, 7             deg(3) = 2   w3 = 1/ln(1+2) = 1/ln 3 = 0.9102392266
 *   4 → 5, 6, 8, 9, 10, 3  deg(4) = 6 w4 = 1/ln(1+6) = 1/ln 7 = 0.5138983424
 *   9 is deactivated after 4 followed it; 5, 6, 7, 8, 9, 10 follow nobody.
 *
 * u = 1: candidates are the followees of 2, 3, 4 minus 1 itself and 2, 3, 4 (followed):
 *   5 ← 3, 2, 4: w3 + w2 + w4 = 0.9102392266 + 0.7213475204 + 0.5138983424 = 2.1454850894 → 2.145485
 *   6 ← 2, 4:    w2 + w4      = 0.7213475204 + 0.5138983424               = 1.2352458628 → 1.235246
 *   7 (requested), 8 (blocked), 9 (deactivated), 10 (blocks 1): excluded.
 *   via is ordered by contribution: 3 (w3) before 2 (w2) before 4 (w4).
 * u = 2: 5 and 6 follow nobody; 1 (deg 3) leads to 3 and 4, each w1 = 1/ln 4 = 0.721348; tie → smaller id.
 * u = 3: 5 and 7 follow nobody → nothing.
 * u = 4: via 3 (w3): 5 is followed already, 7 → 0.910239. 8, 10 follow nobody; 9 is deactivated.
 * With --limit-fanout 5, 4 (deg 6 > 5) is skipped as an intermediary, so for u = 1:
 *   5 ← 3, 2: w3 + w2 = 1.6315867471 → 1.631587;  6 ← 2: w2 = 0.721348.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSuggestions } from '../../src/jobs/suggest.js';
import { type RealApp, realApp } from '../http/support/real-app.js';
import { admin, as, FORBIDDEN, notFound, scenario } from '../http/support/scenario.js';

let r: RealApp;
const { req, expectRes } = scenario(() => r);
const s = (id: number, score: number, via: number[]) => ({
  id: String(id),
  username: `u${id}`,
  score,
  via: via.map(String),
});
const get = (id: number, query = '', auth = as(id)) =>
  req('GET', `/v1/users/${id}/suggestions${query}`, { auth });

beforeAll(async () => {
  r = await realApp('suggest');
  const { graph, store } = r;
  for (let id = 1n; id <= 10n; id++) await graph.putUser({ id, username: `u${id}` });
  const follows: [bigint, bigint][] = [
    [1n, 2n],
    [1n, 3n],
    [1n, 4n],
    [2n, 5n],
    [2n, 6n],
    [2n, 1n],
    [3n, 5n],
    [3n, 7n],
    [4n, 5n],
    [4n, 6n],
    [4n, 8n],
    [4n, 9n],
    [4n, 10n],
    [4n, 3n],
  ];
  for (const [a, b] of follows) await graph.follow(a, b);
  await graph.putUser({ id: 7n, username: 'u7', private: true });
  expect(await graph.follow(1n, 7n)).toMatchObject({ state: 'requested' });
  await graph.block(1n, 8n);
  await graph.block(10n, 1n);
  const nine = await store.getUser(9n);
  await store.putUser({ ...(nine as NonNullable<typeof nine>), state: 'deactivated' });
});

afterAll(async () => {
  await r?.close();
});

describe('jobs suggest', () => {
  it('with a fan-out limit below deg(4), 4 is skipped as an intermediary', async () => {
    const run = await runSuggestions(r.store, { top: 100, limitFanout: 5 });
    expect({ users: run.users, edges: run.edges, written: run.written, hubs: run.skippedHubs }).toEqual({
      // users: 1..10 appear in follow rows; 14 follows (3 → 7 kept, 1 → 7 is a request);
      // written: 1, 2, 3, 4 follow someone and are active; hubs: 4.
      users: 10,
      edges: 14,
      written: 4,
      hubs: 1,
    });
    await expectRes(get(1), 200, { items: [s(5, 1.631587, [3, 2]), s(6, 0.721348, [2])] });
  });

  it('scores every user by hand-computed Adamic–Adar, leaving out every excluded kind', async () => {
    await runSuggestions(r.store, { top: 100, limitFanout: 5000 });
    await expectRes(get(1), 200, { items: [s(5, 2.145485, [3, 2, 4]), s(6, 1.235246, [2, 4])] });
    await expectRes(get(2), 200, { items: [s(3, 0.721348, [1]), s(4, 0.721348, [1])] });
    await expectRes(get(3), 200, { items: [] });
    await expectRes(get(4), 200, { items: [s(7, 0.910239, [3])] });
    // 10 follows nobody: no run has covered it.
    await expectRes(get(10), 200, { items: [] });
    expect((await r.store.getSuggestions(1n))?.items.map((i) => i.id)).toEqual([5n, 6n]);
  });

  it('limit: default 20, at most 100', async () => {
    await expectRes(get(2, '?limit=1'), 200, { items: [s(3, 0.721348, [1])] });
    await expectRes(get(2, '?limit=100'), 200, { items: [s(3, 0.721348, [1]), s(4, 0.721348, [1])] });
  });

  it('filters at read time whatever changed since the run: follows, requests, blocks both ways, deactivation', async () => {
    await r.graph.follow(1n, 6n);
    await expectRes(get(1), 200, { items: [s(5, 2.145485, [3, 2, 4])] });
    await r.graph.block(4n, 2n); // 4 now blocks 2
    await expectRes(get(2), 200, { items: [s(3, 0.721348, [1])] });
    await r.graph.block(2n, 3n); // 2 now blocks 3
    await expectRes(get(2), 200, { items: [] });
    await r.graph.putUser({ id: 7n, username: 'u7', private: true });
    await r.graph.follow(4n, 7n); // a request now
    await expectRes(get(4), 200, { items: [] });
    await r.graph.putUser({ id: 5n, state: 'deactivated' });
    await expectRes(get(1), 200, { items: [] });
  });

  it('security and errors: 401 without a token, 403 for another subject, 404 unknown, 400 bad input', async () => {
    const anon = await req('GET', '/v1/users/1/suggestions');
    expect([anon.status, anon.json.code]).toEqual([401, 'unauthorized']);
    await expectRes(get(1, '', as(2)), 403, FORBIDDEN);
    // graph:admin service callers act for any subject, as on every `sub == id` route.
    await expectRes(get(4, '', admin), 200, { items: [] });
    await expectRes(get(404_405), 404, notFound(404_405));
    for (const q of ['?limit=0', '?limit=101', '?limit=abc', '?limit=1.5', '?cursor=x']) {
      const bad = await get(1, q);
      expect([q, bad.status, bad.headers.get('content-type'), bad.json.code]).toEqual([
        q,
        400,
        'application/problem+json; charset=utf-8',
        'validation_failed',
      ]);
    }
    const badId = await req('GET', '/v1/users/abc/suggestions', { auth: as(1) });
    expect([badId.status, badId.json.code]).toEqual([400, 'validation_failed']);
  });

  it('a deactivated or hide_lists intermediary is neither in via nor in the score (via would reveal its follows)', async () => {
    // Apart from the graph above: 21 → 22, 23, 24; 22 → 25; 23 (hide_lists) → 25, 26;
    // 24 (deactivated) → 25, 27. Only 22 may be seen through: 25 ← 22 alone, w = 1/ln 2.
    const { graph } = r;
    for (let id = 21n; id <= 27n; id++) await graph.putUser({ id, username: `u${id}` });
    for (const [a, b] of [
      [21n, 22n],
      [21n, 23n],
      [21n, 24n],
      [22n, 25n],
      [23n, 25n],
      [23n, 26n],
      [24n, 25n],
      [24n, 27n],
    ] as const)
      await graph.follow(a, b);
    await graph.putUser({ id: 23n, hideLists: true });
    await graph.putUser({ id: 24n, state: 'deactivated' });
    await graph.settleAccountTasks();
    await runSuggestions(r.store, { top: 100, limitFanout: 5000 });
    // 1/ln 2 = log2(e), to 6 decimals: 1.442695.
    await expectRes(get(21), 200, { items: [s(25, Math.round(Math.LOG2E * 1e6) / 1e6, [22])] });
    // Read time: 22 hides its lists after the run; 25 has no intermediary left to name.
    await graph.putUser({ id: 22n, hideLists: true });
    await expectRes(get(21), 200, { items: [] });
  });
});
