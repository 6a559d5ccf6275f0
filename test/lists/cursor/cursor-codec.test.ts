import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CursorCodec, MAX_CURSOR_LENGTH, type PageCursor } from '../../../src/lists/cursor/cursor-codec.js';
import { InvalidCursorError } from '../../../src/model/errors.js';
import type { ListKey } from '../../../src/model/types.js';

const SEED = Number(process.env.FC_SEED ?? (Date.now() ^ (Math.random() * 0x7fffffff)) | 0);
console.log(`[cursor-codec.test] fast-check seed ${SEED} (rerun with FC_SEED=${SEED})`);

const list: ListKey = {
  userId: 9_000_000_001n,
  relation: 'follows',
  direction: 'in',
};
const codec = new CursorCodec('cursor-test-secret-0123456789');

function pageCursor(): PageCursor {
  return {
    list,
    after: { createdAt: 1_780_000_000_000_000n, otherId: 123_456_789_012n },
  };
}

describe('CursorCodec', () => {
  it('round-trips a page cursor', () => {
    const c = pageCursor();
    expect(codec.decodePage(codec.encodePage(c), list)).toEqual(c);
  });

  it('the page cursor is the merge cursor of one bucket: its bytes are unchanged since the retired engine', () => {
    // Header (version 1, kind 1, owner, relation, direction, log2 N = 0), boundary, gap 0, state word 0.
    const raw = Buffer.from(codec.encodePage(pageCursor()), 'base64url');
    const payload = raw.subarray(0, raw.length - 16);
    expect(payload.toString('hex')).toBe(
      `0101${list.userId.toString(16).padStart(16, '0')}000100${1_780_000_000_000_000n.toString(16).padStart(16, '0')}${123_456_789_012n.toString(16).padStart(16, '0')}00000000`,
    );
  });

  it('rejects every single-bit flip of the token', () => {
    const token = codec.encodePage(pageCursor());
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
    const token = codec.encodePage(pageCursor());
    expect(() => codec.decodePage(token, { ...list, userId: 2n })).toThrow(InvalidCursorError);
    expect(() => codec.decodePage(token, { ...list, relation: 'blocks' })).toThrow(InvalidCursorError);
    expect(() => codec.decodePage(token, { ...list, direction: 'out' })).toThrow(InvalidCursorError);
    expect(() => codec.decodeTimeScan(token, list, 0, 1)).toThrow(InvalidCursorError);
    expect(() => new CursorCodec('another-secret-0123456789').decodePage(token, list)).toThrow(
      InvalidCursorError,
    );
    const scan = codec.encodeTimeScan({
      list,
      slice: 1,
      slices: 3,
      key: 7,
      after: null,
    });
    expect(codec.decodeTimeScan(scan, list, 1, 3)).toEqual({
      key: 7,
      after: null,
    });
    expect(() => codec.decodeTimeScan(scan, list, 2, 3)).toThrow(InvalidCursorError);
    expect(() => codec.decodePage(scan, list)).toThrow(InvalidCursorError);
    for (const junk of ['', 'x', '!!!!', 'AAAA', `${token}A`, token.slice(0, -2)]) {
      expect(() => codec.decodePage(junk, list)).toThrow(InvalidCursorError);
    }
  });

  it('direction and since/until: round-trip, stay within MAX_CURSOR_LENGTH, and are refused when they differ', () => {
    const bounds = { since: 1_779_000_000_000_000n, until: null };
    fc.assert(
      fc.property(
        fc.bigInt({ min: -(1n << 62n), max: 1n << 62n }),
        fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n }),
        fc.constantFrom('older' as const, 'newer' as const),
        fc.option(fc.constantFrom(1_779_000_000_000_000n, 0n, -5n), {
          nil: null,
        }),
        fc.option(fc.constantFrom(1_781_000_000_000_000n, 1n), { nil: null }),
        (createdAt, otherId, direction, since, until) => {
          const b = since === null && until === null ? undefined : { since, until };
          const c: PageCursor = {
            list,
            after: { createdAt, otherId },
            ...(direction === 'newer' ? { direction } : {}),
            ...(b ? { bounds: b } : {}),
          };
          const token = codec.encodePage(c);
          const back = codec.decodePage(token, list, {
            direction,
            ...(b ? { bounds: b } : {}),
          });
          expect({ fits: token.length <= MAX_CURSOR_LENGTH, back }).toEqual({
            fits: true,
            back: c,
          });
          const other = direction === 'newer' ? 'older' : 'newer';
          expect(() =>
            codec.decodePage(token, list, {
              direction: other,
              ...(b ? { bounds: b } : {}),
            }),
          ).toThrow(InvalidCursorError);
          const otherBounds = b ? undefined : bounds;
          expect(() =>
            codec.decodePage(token, list, {
              direction,
              ...(otherBounds ? { bounds: otherBounds } : {}),
            }),
          ).toThrow(InvalidCursorError);
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('a bounded newer cursor rejects every single-bit flip', () => {
    const c: PageCursor = {
      ...pageCursor(),
      direction: 'newer',
      bounds: { since: 5n, until: 1_790_000_000_000_000n },
    };
    const token = codec.encodePage(c);
    const expect_ = {
      direction: 'newer' as const,
      bounds: { since: 5n, until: 1_790_000_000_000_000n },
    };
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
});
