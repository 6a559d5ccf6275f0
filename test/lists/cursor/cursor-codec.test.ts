import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CursorCodec, MAX_CURSOR_LENGTH, type PageCursor } from '../../../src/lists/cursor/cursor-codec.js';
import { decodeMiniFloat, encodeMiniFloat } from '../../../src/lists/cursor/mini-float.js';
import { InvalidCursorError } from '../../../src/model/errors.js';
import type { ListKey } from '../../../src/model/types.js';

const SEED = Number(process.env.FC_SEED ?? (Date.now() ^ (Math.random() * 0x7fffffff)) | 0);
console.log(`[cursor-codec.test] fast-check seed ${SEED} (rerun with FC_SEED=${SEED})`);

const list: ListKey = { userId: 9_000_000_001n, relation: 'follows', direction: 'in' };
const codec = new CursorCodec('cursor-test-secret-0123456789');

function pageCursor(buckets: number, seed = 1): PageCursor {
  let x = seed;
  const rnd = () => {
    x = (Math.imul(x, 1103515245) + 12345) & 0x7fffffff;
    return x / 0x7fffffff;
  };
  const boundary = 1_780_000_000_000_000n;
  return {
    list,
    buckets,
    after: { createdAt: boundary, otherId: 123_456_789_012n },
    gapUs: 2_000,
    states: Array.from({ length: buckets }, (_, i) =>
      i % 17 === 0
        ? { exhausted: true, ceiling: null }
        : { exhausted: false, ceiling: boundary - BigInt(Math.floor(rnd() * buckets * 2_000 * 3)) },
    ),
  };
}

describe('mini-float', () => {
  it('rounds down, within 0.1%, monotonically', () => {
    fc.assert(
      fc.property(fc.bigInt(0n, (1n << 64n) - 1n), fc.bigInt(0n, (1n << 64n) - 1n), (a, b) => {
        const da = decodeMiniFloat(encodeMiniFloat(a));
        expect(da <= a).toBe(true);
        expect(a - da <= a / 1024n).toBe(true);
        if (a <= b) expect(encodeMiniFloat(a) <= encodeMiniFloat(b)).toBe(true);
        expect(encodeMiniFloat(a)).toBeLessThan(0xffff);
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });
});

describe('CursorCodec', () => {
  it('round-trips a page cursor; ceilings come back at or above the original', () => {
    const c = pageCursor(64);
    const back = codec.decodePage(codec.encodePage(c), list);
    expect(back.after).toEqual(c.after);
    expect(back.buckets).toBe(64);
    back.states.forEach((s, i) => {
      const orig = c.states[i]!;
      expect(s.exhausted).toBe(orig.exhausted);
      if (orig.ceiling !== null && !orig.exhausted) {
        expect(s.ceiling! >= orig.ceiling).toBe(true);
        expect(s.ceiling! - orig.ceiling <= (c.after.createdAt - orig.ceiling) / 1024n + 1n).toBe(true);
      }
    });
  });

  it('stays bounded: size at N = 1, 16, 64, 1024', () => {
    const sizes = [1, 16, 64, 1024].map((n) => [n, codec.encodePage(pageCursor(n)).length] as const);
    console.log(
      `[cursor-codec.test] page cursor chars by N: ${sizes.map(([n, l]) => `N=${n}: ${l}`).join(', ')}`,
    );
    expect(sizes.at(-1)![1]).toBeLessThanOrEqual(MAX_CURSOR_LENGTH);
  });

  it('a page cursor never exceeds MAX_CURSOR_LENGTH and never lowers a ceiling, at every N up to 1024', () => {
    const layouts = Array.from({ length: 11 }, (_, i) => 2 ** i);
    fc.assert(
      fc.property(fc.constantFrom(...layouts), fc.integer({ min: 1, max: 2 ** 30 }), (n, seed) => {
        const c = pageCursor(n, seed);
        const token = codec.encodePage(c);
        const back = codec.decodePage(token, list);
        const lowered = back.states.flatMap((s, i) => {
          const orig = c.states[i]!;
          if (s.exhausted !== orig.exhausted) return [`${i}: exhausted ${s.exhausted}`];
          if (orig.exhausted || s.ceiling === null) return [];
          return orig.ceiling === null || s.ceiling < orig.ceiling ? [`${i}: ceiling ${s.ceiling}`] : [];
        });
        expect({ fits: token.length <= MAX_CURSOR_LENGTH, after: back.after, lowered }).toEqual({
          fits: true,
          after: c.after,
          lowered: [],
        });
      }),
      { seed: SEED, numRuns: 200 },
    );
  });

  it('the sparse form keeps exact state for the buckets nearest the boundary', () => {
    const c = pageCursor(1024, 7);
    const boundary = c.after.createdAt;
    const back = codec.decodePage(codec.encodePage(c), list);
    const nearest = c.states
      .map((s, i) => [i, s] as const)
      .filter(([, s]) => !s.exhausted)
      .sort((a, b) => (a[1].ceiling! > b[1].ceiling! ? -1 : a[1].ceiling! < b[1].ceiling! ? 1 : a[0] - b[0]))
      .slice(0, 100);
    const asFullForm = (ceiling: bigint) =>
      ceiling >= boundary
        ? { exhausted: false, ceiling: null }
        : { exhausted: false, ceiling: boundary - decodeMiniFloat(encodeMiniFloat(boundary - ceiling)) };
    expect(nearest.map(([i]) => back.states[i])).toEqual(nearest.map(([, s]) => asFullForm(s.ceiling!)));
  });

  it('rejects every single-bit flip of the token', () => {
    const token = codec.encodePage(pageCursor(16));
    const raw = Buffer.from(token, 'base64url');
    for (let i = 0; i < raw.length; i++) {
      for (let bit = 0; bit < 8; bit += 3) {
        const bad = Buffer.from(raw);
        bad[i]! ^= 1 << bit;
        expect(() => codec.decodePage(bad.toString('base64url'), list)).toThrow(InvalidCursorError);
      }
    }
  });

  it('rejects a cursor for another owner, relation, direction, kind, slice, or secret', () => {
    const token = codec.encodePage(pageCursor(4));
    expect(() => codec.decodePage(token, { ...list, userId: 2n })).toThrow(InvalidCursorError);
    expect(() => codec.decodePage(token, { ...list, relation: 'blocks' })).toThrow(InvalidCursorError);
    expect(() => codec.decodePage(token, { ...list, direction: 'out' })).toThrow(InvalidCursorError);
    expect(() => codec.decodeScan(token, list, 0, 1)).toThrow(InvalidCursorError);
    expect(() => new CursorCodec('another-secret-0123456789').decodePage(token, list)).toThrow(
      InvalidCursorError,
    );
    const scan = codec.encodeScan({ list, slice: 1, slices: 3, buckets: 16, nextIndex: 7, pending: [] });
    expect(() => codec.decodeScan(scan, list, 2, 3)).toThrow(InvalidCursorError);
    expect(() => codec.decodePage(scan, list)).toThrow(InvalidCursorError);
    for (const junk of ['', 'x', '!!!!', 'AAAA', `${token}A`, token.slice(0, -2)]) {
      expect(() => codec.decodePage(junk, list)).toThrow(InvalidCursorError);
    }
  });

  it('direction and since/until: round-trip, stay within MAX_CURSOR_LENGTH at every N, and are refused when they differ', () => {
    const layouts = Array.from({ length: 11 }, (_, i) => 2 ** i);
    const bounds = { since: 1_779_000_000_000_000n, until: null };
    fc.assert(
      fc.property(
        fc.constantFrom(...layouts),
        fc.integer({ min: 1, max: 2 ** 30 }),
        fc.constantFrom('older' as const, 'newer' as const),
        fc.option(fc.constantFrom(1_779_000_000_000_000n, 0n, -5n), { nil: null }),
        fc.option(fc.constantFrom(1_781_000_000_000_000n, 1n), { nil: null }),
        (n, seed, direction, since, until) => {
          const base = pageCursor(n, seed);
          // A newer cursor's bounds are floors above the boundary: mirror the random ceilings.
          const states =
            direction === 'newer'
              ? base.states.map((s) => ({
                  exhausted: s.exhausted,
                  ceiling: s.ceiling === null ? null : 2n * base.after.createdAt - s.ceiling,
                }))
              : base.states;
          const b = since === null && until === null ? undefined : { since, until };
          const c: PageCursor = {
            ...base,
            states,
            ...(direction === 'newer' ? { direction } : {}),
            ...(b ? { bounds: b } : {}),
          };
          const token = codec.encodePage(c);
          const back = codec.decodePage(token, list, { direction, ...(b ? { bounds: b } : {}) });
          const moved = back.states.flatMap((st, i) => {
            const orig = states[i]!;
            if (st.exhausted !== orig.exhausted) return [`${i}: exhausted`];
            if (orig.exhausted || st.ceiling === null) return [];
            // Older: a ceiling may only rise; newer: a floor may only fall.
            const safe = direction === 'newer' ? st.ceiling <= orig.ceiling! : st.ceiling >= orig.ceiling!;
            return safe ? [] : [`${i}: ${st.ceiling} vs ${orig.ceiling}`];
          });
          expect({
            fits: token.length <= MAX_CURSOR_LENGTH,
            after: back.after,
            direction: back.direction,
            bounds: back.bounds,
            moved,
          }).toEqual({ fits: true, after: c.after, direction: c.direction, bounds: b, moved: [] });
          const other = direction === 'newer' ? 'older' : 'newer';
          expect(() =>
            codec.decodePage(token, list, { direction: other, ...(b ? { bounds: b } : {}) }),
          ).toThrow(InvalidCursorError);
          const otherBounds = b ? undefined : bounds;
          expect(() =>
            codec.decodePage(token, list, { direction, ...(otherBounds ? { bounds: otherBounds } : {}) }),
          ).toThrow(InvalidCursorError);
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('a bounded newer cursor rejects every single-bit flip', () => {
    const c: PageCursor = {
      ...pageCursor(16),
      states: pageCursor(16).states.map(() => ({ exhausted: false, ceiling: null })),
      direction: 'newer',
      bounds: { since: 5n, until: 1_790_000_000_000_000n },
    };
    const token = codec.encodePage(c);
    const expect_ = { direction: 'newer' as const, bounds: { since: 5n, until: 1_790_000_000_000_000n } };
    expect(codec.decodePage(token, list, expect_).after).toEqual(c.after);
    const raw = Buffer.from(token, 'base64url');
    for (let i = 0; i < raw.length; i++) {
      for (let bit = 0; bit < 8; bit++) {
        const bad = Buffer.from(raw);
        bad[i]! ^= 1 << bit;
        expect(() => codec.decodePage(bad.toString('base64url'), list, expect_)).toThrow(InvalidCursorError);
      }
    }
  });

  it('round-trips a scan cursor', () => {
    const c = {
      list,
      slice: 2,
      slices: 3,
      buckets: 32,
      nextIndex: 20,
      pending: [
        { code: 32 | 5, after: { createdAt: 77n, otherId: -5n } },
        { code: 32 | 9, after: null },
      ],
    };
    // Pending entries come back in rank order (bucket 9 of 32 has rank index 18, bucket 5 has 20).
    expect(codec.decodeScan(codec.encodeScan(c), list, 2, 3)).toEqual({
      ...c,
      pending: [c.pending[1], c.pending[0]],
    });
  });

  it('merges sibling buckets at the same position into their parent, and only those', () => {
    const at = { createdAt: 77n, otherId: 5n };
    const c = {
      list,
      slice: 0,
      slices: 1,
      buckets: 32,
      nextIndex: 32,
      pending: [
        { code: 32 | 5, after: at },
        { code: 32 | 21, after: at },
        { code: 32 | 13, after: at },
        { code: 32 | 29, after: { createdAt: 78n, otherId: 5n } },
      ],
    };
    expect(codec.decodeScan(codec.encodeScan(c), list, 0, 1).pending).toEqual([
      { code: 16 | 5, after: at },
      { code: 32 | 13, after: at },
      { code: 32 | 29, after: { createdAt: 78n, otherId: 5n } },
    ]);
  });
});
