/**
 * The Part 2 list reads on the real node: outgoing requests, `prev_cursor` / `direction`, and
 * `since` / `until`, with whole pages compared.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RealApp, realApp } from './support/real-app.js';
import { admin, as, FORBIDDEN, item, notFound, scenario } from './support/scenario.js';

let r: RealApp;
const { req, expectRes, users, adminOp } = scenario(() => r);

beforeAll(async () => {
  r = await realApp('http_lists_part2');
});
afterAll(async () => {
  await r?.close();
});

describe('GET /v1/users/{id}/requests/outgoing', () => {
  it('lists pending requests newest first; an accepted or cancelled one leaves the list', async () => {
    await users([200], [201, true], [202, true], [203, true], [204]);
    await adminOp('PUT', 200, 'following', 201, 1);
    await adminOp('PUT', 200, 'following', 202, 2);
    await adminOp('PUT', 200, 'following', 203, 3);
    await adminOp('PUT', 200, 'following', 204, 4); // public: a follow, not a request
    await expectRes(req('GET', '/v1/users/200/requests/outgoing', { auth: as(200) }), 200, {
      items: [item(203, 3), item(202, 2), item(201, 1)],
      next_cursor: null,
      prev_cursor: null,
    });
    const accepted = await req('POST', '/v1/users/202/requests/200/accept', { auth: as(202) });
    expect(accepted.status).toBe(200);
    await adminOp('DELETE', 200, 'following', 201, 5);
    await expectRes(req('GET', '/v1/users/200/requests/outgoing?limit=1', { auth: as(200) }), 200, {
      items: [item(203, 3)],
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('GET', '/v1/users/200/requests/outgoing', { auth: admin }), 200, {
      items: [item(203, 3)],
      next_cursor: null,
      prev_cursor: null,
    });
  });

  it('security: no token 401, another subject 403, unknown id 404', async () => {
    await users([210], [211]);
    const anon = await req('GET', '/v1/users/210/requests/outgoing');
    expect([anon.status, anon.json.code]).toEqual([401, 'unauthorized']);
    await expectRes(req('GET', '/v1/users/210/requests/outgoing', { auth: as(211) }), 403, FORBIDDEN);
    await expectRes(
      req('GET', '/v1/users/404405/requests/outgoing', { auth: as(404405) }),
      404,
      notFound(404405),
    );
    const bad = await req('GET', '/v1/users/210/requests/outgoing?limit=0', { auth: as(210) });
    expect([bad.status, bad.json.code]).toEqual([400, 'validation_failed']);
  });
});
