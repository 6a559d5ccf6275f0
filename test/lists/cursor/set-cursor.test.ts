/**
 * The set cursor: round trip, the length bound with the longest inner cursor, binding to the
 * query kind, owner and time bounds, and tamper detection (every bit of a token flipped is refused).
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_CURSOR_LENGTH } from '../../../src/lists/cursor/cursor-codec.js';
import {
  MAX_SET_CURSOR_LENGTH,
  type SetCursor,
  SetCursorCodec,
} from '../../../src/lists/cursor/set-cursor.js';
import { InvalidCursorError } from '../../../src/model/errors.js';

const codec = new SetCursorCodec('set-cursor-secret-0123456789');

const cursorArb = fc.record(
  {
    kind: fc.constantFrom('mutuals' as const, 'not_followed_back' as const),
    owner: fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }),
    driving: fc.constantFrom('in' as const, 'out' as const),
    inner: fc.option(
      fc
        .uint8Array({ minLength: 1, maxLength: Math.floor((MAX_CURSOR_LENGTH * 3) / 4) })
        .map((b) => Buffer.from(b).toString('base64url')),
    ),
    boundary: fc.option(
      fc.record({
        createdAt: fc.bigInt({ min: 0n, max: 2n ** 62n }),
        otherId: fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }),
      }),
    ),
    bounds: fc
      .record({
        since: fc.option(fc.bigInt({ min: 0n, max: 2n ** 62n }), { nil: null }),
        until: fc.option(fc.bigInt({ min: 0n, max: 2n ** 62n }), { nil: null }),
      })
      .filter((b) => b.since !== null || b.until !== null),
  },
  { requiredKeys: ['kind', 'owner', 'driving', 'inner', 'boundary'] },
) satisfies fc.Arbitrary<SetCursor>;

describe('SetCursorCodec', () => {
  it('round-trips every cursor within MAX_SET_CURSOR_LENGTH', () => {
    const seed = Date.now() % 2_147_483_647;
    console.log(`set cursor round trip: seed ${seed}`);
    fc.assert(
      fc.property(cursorArb, (c) => {
        const token = codec.encode(c);
        expect(token.length).toBeLessThanOrEqual(MAX_SET_CURSOR_LENGTH);
        expect(codec.decode(token, c.kind, c.owner, c.bounds)).toEqual(c);
      }),
      { seed, numRuns: 300 },
    );
  });

  it('the longest inner cursor fits the bound', () => {
    const inner = randomBytes(Math.floor((MAX_CURSOR_LENGTH * 3) / 4)).toString('base64url');
    expect(inner.length).toBe(MAX_CURSOR_LENGTH);
    const token = codec.encode({
      kind: 'mutuals',
      owner: 1n,
      driving: 'out',
      inner,
      boundary: { createdAt: 1n, otherId: 2n },
      bounds: { since: 1n, until: 2n },
    });
    expect([token.length <= MAX_SET_CURSOR_LENGTH, MAX_SET_CURSOR_LENGTH]).toEqual([true, 1110]);
  });

  it('refuses another kind, another owner, any flipped bit, and junk', () => {
    const c: SetCursor = { kind: 'mutuals', owner: 7n, driving: 'in', inner: 'AAEC', boundary: null };
    const token = codec.encode(c);
    const reason = (f: () => unknown) => {
      try {
        f();
        return 'accepted';
      } catch (e) {
        return e instanceof InvalidCursorError ? e.message : 'other error';
      }
    };
    expect([
      reason(() => codec.decode(token, 'not_followed_back', 7n)),
      reason(() => codec.decode(token, 'mutuals', 8n)),
      reason(() => codec.decode('', 'mutuals', 7n)),
      reason(() => codec.decode('a+b', 'mutuals', 7n)),
      reason(() => codec.decode('x'.repeat(MAX_SET_CURSOR_LENGTH + 1), 'mutuals', 7n)),
    ]).toEqual([
      'invalid cursor: cursor belongs to another query',
      'invalid cursor: cursor belongs to another query',
      'invalid cursor: not a cursor',
      'invalid cursor: not a cursor',
      'invalid cursor: not a cursor',
    ]);
    const raw = Buffer.from(token, 'base64url');
    const accepted: number[] = [];
    for (let bit = 0; bit < raw.length * 8; bit++) {
      const flipped = Buffer.from(raw);
      flipped[bit >> 3]! ^= 1 << (bit & 7);
      if (reason(() => codec.decode(flipped.toString('base64url'), 'mutuals', 7n)) === 'accepted')
        accepted.push(bit);
    }
    expect(accepted).toEqual([]);
  });
});
