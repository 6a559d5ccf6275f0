/** `POST /v1/users/{id}/relationships` on the real node: happy, error and security cases. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ID_MESSAGE } from '../../src/http/schemas.js';
import { type RealApp, realApp } from './support/real-app.js';
import { admin, as, FORBIDDEN, NO_RELATIONSHIP, notFound, problem, scenario } from './support/scenario.js';

let r: RealApp;
const { req, expectRes, users, adminOp } = scenario(() => r);

beforeAll(async () => {
  r = await realApp('http_relationships');
});
afterAll(async () => {
  await r?.close();
});

describe('POST /v1/users/{id}/relationships', () => {
  it('answers every flag in request order, repeats included, unknown ids all false', async () => {
    await users([100], [101], [102, true], [103], [104, true], [105]);
    await adminOp('PUT', 100, 'following', 101, 1); // following
    await adminOp('PUT', 101, 'following', 100, 2); // followed_by
    await adminOp('PUT', 100, 'following', 102, 3); // private: requested
    await adminOp('PUT', 100, 'mutes', 101, 4);
    await adminOp('PUT', 100, 'close-friends', 101, 5);
    await adminOp('PUT', 103, 'blocks', 100, 6); // blocked_by
    await adminOp('PUT', 100, 'blocks', 105, 7); // blocking
    await adminOp('PUT', 100, 'restricts', 101, 9); // restricting
    await adminOp('PUT', 104, 'restricts', 100, 10); // hidden from 100: no flag says 104 restricts it
    await r.graph.putUser({ id: 100n, username: 'u100', private: true });
    await adminOp('PUT', 104, 'following', 100, 8); // requested_by
    await expectRes(
      req('POST', '/v1/users/100/relationships', {
        auth: as(100),
        body: { ids: ['101', '102', '103', '104', '105', '999', '101'] },
      }),
      200,
      {
        items: [
          {
            ...NO_RELATIONSHIP,
            id: '101',
            following: true,
            followed_by: true,
            muting: true,
            close_friend: true,
            restricting: true,
          },
          { ...NO_RELATIONSHIP, id: '102', requested: true },
          { ...NO_RELATIONSHIP, id: '103', blocked_by: true },
          { ...NO_RELATIONSHIP, id: '104', requested_by: true },
          { ...NO_RELATIONSHIP, id: '105', blocking: true },
          { ...NO_RELATIONSHIP, id: '999' },
          {
            ...NO_RELATIONSHIP,
            id: '101',
            following: true,
            followed_by: true,
            muting: true,
            close_friend: true,
            restricting: true,
          },
        ],
      },
    );
    await expectRes(req('POST', '/v1/users/100/relationships', { auth: as(100), body: { ids: [] } }), 200, {
      items: [],
    });
    await expectRes(
      req('POST', '/v1/users/101/relationships', { auth: admin, body: { ids: ['100'] } }),
      200,
      {
        items: [{ ...NO_RELATIONSHIP, id: '100', following: true, followed_by: true }],
      },
    );
  });

  it('validates the body: more than 100 ids, bad ids, unknown keys are 400', async () => {
    await users([110]);
    const ids = Array.from({ length: 101 }, (_, i) => String(i + 1));
    const tooMany = await req('POST', '/v1/users/110/relationships', { auth: as(110), body: { ids } });
    expect([tooMany.status, tooMany.json.code]).toEqual([400, 'validation_failed']);
    await expectRes(
      req('POST', '/v1/users/110/relationships', { auth: as(110), body: { ids: ['01'] } }),
      400,
      problem(400, 'validation_failed', 'invalid body', {
        errors: [{ path: 'body.ids.0', message: ID_MESSAGE }],
      }),
    );
    const extra = await req('POST', '/v1/users/110/relationships', {
      auth: as(110),
      body: { ids: [], x: 1 },
    });
    expect([extra.status, extra.json.code]).toEqual([400, 'validation_failed']);
  });

  it('security: no token 401, another subject 403, unknown id 404', async () => {
    await users([120], [121]);
    const anon = await req('POST', '/v1/users/120/relationships', { body: { ids: ['121'] } });
    expect([anon.status, anon.json.code]).toEqual([401, 'unauthorized']);
    await expectRes(
      req('POST', '/v1/users/120/relationships', { auth: as(121), body: { ids: ['121'] } }),
      403,
      FORBIDDEN,
    );
    await expectRes(
      req('POST', '/v1/users/404404/relationships', { auth: as(404404), body: { ids: ['121'] } }),
      404,
      notFound(404404),
    );
  });
});
