/**
 * Deactivation / reactivation and `hide_lists` through HTTP on the real node: the hidden/visible
 * matrix over every read endpoint, mutations naming a deactivated account, and counts that
 * converge to exclude it (in-service reconciler) and come back exactly on reactivation.
 *
 * The cast: D (deactivated later) follows A and is followed by A and B; V follows A and D. A also
 * has followers F1..F3 so pages around D's place stay full; D also follows F1 (who does not
 * follow back), has a pending request to the private P and is muted by V. H (hide_lists) and HF follow each other.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DirtyReconcilerHandle, startDirtyReconciler } from '../../src/jobs/reconcile-dirty.js';
import { type RealApp, realApp } from './support/real-app.js';
import {
  admin,
  as,
  item,
  NO_RELATIONSHIP,
  NOT_VISIBLE,
  notFound,
  problem,
  scenario,
  time,
} from './support/scenario.js';

let r: RealApp;
let reconciler: DirtyReconcilerHandle;
const { req, expectRes, users, adminOp } = scenario(() => r);

const A = 300;
const B = 301;
const D = 302;
const V = 303;
const F = [304, 305, 306];
const H = 310; // hide_lists
const HF = 311; // follows H
const P = 320; // private: D's follow of P is a pending request

beforeAll(async () => {
  r = await realApp('http_account_state');
  reconciler = startDirtyReconciler(r.store, {
    intervalMs: 200,
    onError: (e) => console.error('[account-state] reconcile pass failed', e),
  });
  await users([A], [B], [D], [V], [F[0]!], [F[1]!], [F[2]!], [H], [HF], [P, true]);
  await adminOp('PUT', F[0]!, 'following', A, 1);
  await adminOp('PUT', D, 'following', A, 2);
  await adminOp('PUT', F[1]!, 'following', A, 3);
  await adminOp('PUT', V, 'following', A, 4);
  await adminOp('PUT', F[2]!, 'following', A, 5);
  await adminOp('PUT', A, 'following', D, 6);
  await adminOp('PUT', B, 'following', D, 7);
  await adminOp('PUT', V, 'following', D, 8);
  await adminOp('PUT', A, 'following', B, 9);
  await adminOp('PUT', HF, 'following', H, 10);
  await adminOp('PUT', H, 'following', HF, 11);
  await adminOp('PUT', D, 'following', F[0]!, 12);
  await adminOp('PUT', D, 'following', P, 13); // a request: P is private
  await adminOp('PUT', V, 'mutes', D, 14);
});
afterAll(async () => {
  await reconciler?.stop();
  await r?.close();
});

const setState = (id: number, state: 'active' | 'deactivated') =>
  expectRes(req('PUT', `/v1/users/${id}`, { auth: admin, body: { state } }), 200, {
    id: String(id),
    username: `u${id}`,
    private: false,
    state,
    hide_lists: false,
    last_active_at: null,
  });

/** Polls `/counts` (as admin) until it is exact and equals `want`, for at most 10 s. */
async function countsConverge(id: number, want: { followers: number; following: number }) {
  const started = Date.now();
  for (;;) {
    const res = await req('GET', `/v1/users/${id}/counts`, { auth: admin });
    const j = res.json as { followers: number; following: number; exact: boolean };
    const got = { followers: j.followers, following: j.following, exact: j.exact };
    if (got.exact && got.followers === want.followers && got.following === want.following) {
      return Date.now() - started;
    }
    if (Date.now() - started > 10_000) {
      expect(got).toEqual({ ...want, exact: true });
    }
    await new Promise((res) => setTimeout(res, 100));
  }
}

const followersOfA = [item(F[2]!, 5), item(V, 4), item(F[1]!, 3), item(D, 2), item(F[0]!, 1)];
const hidden = (list: ReturnType<typeof item>[]) => list.filter((i) => i.id !== String(D));

/** P's incoming requests and V's mutes, each holding D or not. */
async function ownerListsHoldD(holds: boolean) {
  for (const [owner, path, k] of [
    [P, 'requests', 13],
    [V, 'mutes', 14],
  ] as const) {
    await expectRes(req('GET', `/v1/users/${owner}/${path}`, { auth: as(owner) }), 200, {
      items: holds ? [item(D, k)] : [],
      next_cursor: null,
      prev_cursor: null,
    });
  }
}

describe('deactivation and reactivation', () => {
  it('before: D is visible everywhere (the reference the matrix compares with)', async () => {
    await expectRes(req('GET', `/v1/users/${A}/followers?limit=5`, { auth: as(V) }), 200, {
      items: followersOfA,
      next_cursor: null,
      prev_cursor: null,
    });
    await ownerListsHoldD(true);
    await expectRes(req('GET', `/v1/users/${A}/mutuals`, { auth: as(V) }), 200, {
      items: [item(D, 6)],
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('GET', `/v1/users/${F[0]}/followers/not-followed-back`, { auth: as(F[0]!) }), 200, {
      items: [item(D, 12)],
      next_cursor: null,
      prev_cursor: null,
    });
    expect((await req('GET', `/v1/users/${V}/following/export`, { auth: as(V) })).text).toBe(
      `${JSON.stringify(item(D, 8))}\n${JSON.stringify(item(A, 4))}\n`,
    );
    const ms = await countsConverge(A, { followers: 5, following: 2 });
    console.log(`[account-state] counts of A exact after ${ms} ms`);
  });

  it('deactivated: hidden from every read path at once, pages stay full, profile 404', async () => {
    await setState(D, 'deactivated');
    // D itself, as the subject: 404 for everyone (its own token included).
    for (const viewer of [as(V), as(D)]) {
      await expectRes(req('GET', `/v1/users/${D}`, { auth: viewer }), 404, notFound(D));
      await expectRes(req('GET', `/v1/users/${D}/followers`, { auth: viewer }), 404, notFound(D));
      await expectRes(req('GET', `/v1/users/${D}/following`, { auth: viewer }), 404, notFound(D));
      await expectRes(req('GET', `/v1/users/${D}/counts`, { auth: viewer }), 404, notFound(D));
    }
    // D as a member of other lists: skipped, and a page of 4 is still full.
    await expectRes(req('GET', `/v1/users/${A}/followers?limit=4`, { auth: as(V) }), 200, {
      items: hidden(followersOfA),
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('GET', `/v1/users/${A}/following`, { auth: as(V) }), 200, {
      items: [item(B, 9)],
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('GET', `/v1/users/${V}/following`, { auth: as(V) }), 200, {
      items: [item(A, 4)],
      next_cursor: null,
      prev_cursor: null,
    });
    await ownerListsHoldD(false);
    // Set queries and export skip D too.
    await expectRes(req('GET', `/v1/users/${A}/mutuals`, { auth: as(V) }), 200, {
      items: [],
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('GET', `/v1/users/${F[0]}/followers/not-followed-back`, { auth: as(F[0]!) }), 200, {
      items: [],
      next_cursor: null,
      prev_cursor: null,
    });
    expect((await req('GET', `/v1/users/${V}/following/export`, { auth: as(V) })).text).toBe(
      `${JSON.stringify(item(A, 4))}\n`,
    );
    // contains, relationships, follow status, followed-by, scan.
    await expectRes(
      req('POST', `/v1/users/${A}/following/contains`, {
        auth: as(A),
        body: { ids: [String(D), String(B)] },
      }),
      200,
      { ids: [String(B)] },
    );
    await expectRes(
      req('POST', `/v1/users/${A}/followers/contains`, {
        auth: as(A),
        body: { ids: [String(D), String(V)] },
      }),
      200,
      { ids: [String(V)] },
    );
    await expectRes(
      req('POST', `/v1/users/${A}/relationships`, { auth: as(A), body: { ids: [String(D), String(B)] } }),
      200,
      {
        items: [
          { ...NO_RELATIONSHIP, id: String(D) },
          { ...NO_RELATIONSHIP, id: String(B), following: true },
        ],
      },
    );
    await expectRes(req('GET', `/v1/users/${A}/following/${D}`, { auth: as(A) }), 404, notFound(D));
    // V follows A and D; D followed A: "followed by" on A for V... V follows D, D follows A.
    await expectRes(req('GET', `/v1/users/${A}/followed-by`, { auth: as(V) }), 200, { sample: [], total: 0 });
    const scan = await req('GET', `/v1/users/${A}/followers/scan?slices=1&limit=100`, { auth: admin });
    const body = scan.json as { ids: string[]; next_cursor: string | null };
    expect([scan.status, [...body.ids].sort(), body.next_cursor]).toEqual([
      200,
      [String(F[0]), String(F[1]), String(F[2]), String(V)].sort(),
      null,
    ]);
    // Mutations naming D, either way: 404 like an unknown account.
    await expectRes(req('PUT', `/v1/users/${F[0]}/following/${D}`, { auth: as(F[0]!) }), 404, notFound(D));
    await expectRes(req('PUT', `/v1/users/${D}/following/${B}`, { auth: as(D) }), 404, notFound(D));
    // Counts of everyone D touched converge to exclude it.
    await countsConverge(A, { followers: 4, following: 1 });
    await countsConverge(B, { followers: 1, following: 0 });
    await countsConverge(F[0]!, { followers: 0, following: 1 });
    const ms = await countsConverge(V, { followers: 0, following: 1 });
    console.log(`[account-state] counterparts' counts exclude D ${ms} ms after the last check`);
  });

  it('reactivated: every edge is back exactly, counts included', async () => {
    await setState(D, 'active');
    await ownerListsHoldD(true);
    await expectRes(req('GET', `/v1/users/${A}/followers?limit=5`, { auth: as(V) }), 200, {
      items: followersOfA,
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('GET', `/v1/users/${D}/following`, { auth: as(V) }), 200, {
      items: [item(F[0]!, 12), item(A, 2)],
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('GET', `/v1/users/${D}/followers`, { auth: as(V) }), 200, {
      items: [item(V, 8), item(B, 7), item(A, 6)],
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('GET', `/v1/users/${A}/following/${D}`, { auth: as(A) }), 200, {
      state: 'following',
      followed_at: time(6),
    });
    await expectRes(
      req('POST', `/v1/users/${A}/relationships`, { auth: as(A), body: { ids: [String(D)] } }),
      200,
      { items: [{ ...NO_RELATIONSHIP, id: String(D), following: true, followed_by: true }] },
    );
    await countsConverge(A, { followers: 5, following: 2 });
    await countsConverge(B, { followers: 1, following: 1 });
    await countsConverge(V, { followers: 0, following: 2 });
    await countsConverge(D, { followers: 3, following: 2 });
    await countsConverge(F[0]!, { followers: 1, following: 1 });
  });
});

describe('hide_lists', () => {
  it("the account's lists, counts and followed-by are visible only to itself (others get 403)", async () => {
    await expectRes(req('PUT', `/v1/users/${H}`, { auth: admin, body: { hide_lists: true } }), 200, {
      id: String(H),
      username: `u${H}`,
      private: false,
      state: 'active',
      hide_lists: true,
      last_active_at: null,
    });
    for (const path of ['followers', 'following', 'counts', 'mutuals']) {
      await expectRes(req('GET', `/v1/users/${H}/${path}`, { auth: as(HF) }), 403, NOT_VISIBLE);
    }
    await expectRes(req('GET', `/v1/users/${H}/followers`, { auth: as(H) }), 200, {
      items: [item(HF, 10)],
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('GET', `/v1/users/${H}/following`, { auth: as(H) }), 200, {
      items: [item(HF, 11)],
      next_cursor: null,
      prev_cursor: null,
    });
    const profile = await req('GET', `/v1/users/${H}`, { auth: as(HF) });
    expect([profile.status, (profile.json as { counts: unknown }).counts]).toEqual([200, null]);
    await expectRes(req('GET', `/v1/users/${H}/followed-by`, { auth: as(A) }), 403, NOT_VISIBLE);
    // H still appears in other accounts' lists: hide_lists hides H's own lists only.
    await expectRes(req('GET', `/v1/users/${HF}/following`, { auth: as(A) }), 200, {
      items: [item(H, 10)],
      next_cursor: null,
      prev_cursor: null,
    });
    await expectRes(req('PUT', `/v1/users/${H}`, { auth: admin, body: { hide_lists: false } }), 200, {
      id: String(H),
      username: `u${H}`,
      private: false,
      state: 'active',
      hide_lists: false,
      last_active_at: null,
    });
    await expectRes(req('GET', `/v1/users/${H}/followers`, { auth: as(HF) }), 200, {
      items: [item(HF, 10)],
      next_cursor: null,
      prev_cursor: null,
    });
  });

  it('only graph:admin may set state or hide_lists; bad values are a 400', async () => {
    await expectRes(
      req('PUT', `/v1/users/${H}`, { auth: as(H), body: { hide_lists: true } }),
      403,
      problem(403, 'forbidden', 'this call needs the graph:admin scope'),
    );
    await expectRes(
      req('PUT', `/v1/users/${H}`, { auth: admin, body: { state: 'archived' } }),
      400,
      problem(400, 'validation_failed', 'invalid body', {
        errors: [{ path: 'body.state', message: 'Invalid option: expected one of "active"|"deactivated"' }],
      }),
    );
  });
});
