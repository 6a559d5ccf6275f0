/**
 * The opaque cursor of a set query (mutuals, not-followed-back): a signed wrapper around the
 * driving list's own page cursor.
 *
 * Design note. A set page walks one list (the *driving* side) with `ListService.page` and keeps
 * the rows whose membership in the other side matches. A page may end in the middle of a
 * driving batch, so the position is two things: the driving list's page cursor *before* that
 * batch (null: the list's start) and the last row emitted (`boundary`); the next request re-reads
 * the batch from the inner cursor and skips every row at or above the boundary in list order
 * (created_at DESC, other_id DESC). Unlike an offset, the boundary survives rows that disappear
 * from the batch meanwhile. The cursor also records the query kind, the owner and which side
 * drives (chosen once, on the first page, from the two counts), so one walk keeps one order.
 *
 * Time bounds. The cursor carries the `[since, until)` it was issued for (the list codec's bounds
 * extension, behind a flag bit) and `decode` refuses it for any other range. The inner cursor is
 * bound too, but a page that ends inside the walk's first batch has no inner cursor (null: the
 * list's start), so without its own binding such a cursor answered 200 under other bounds.
 * A token sealed before the binding existed reads as unbounded: a bounded one is refused.
 *
 * Token: `base64url(payload ‖ tag)`, `tag` = the first 16 bytes of HMAC-SHA256(secret,
 * "flocklist-set-cursor" ‖ payload), compared with `timingSafeEqual` before any field is read.
 * The domain string differs from the list codec's, so a list cursor is never a set cursor (and
 * vice versa) even under one secret. The inner cursor is embedded as raw bytes (the list codec
 * verifies it again when it is used), so the token is at most ~60 characters longer than the
 * inner one: `MAX_SET_CURSOR_LENGTH`.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { InvalidCursorError } from '../../model/errors.js';
import type { ListEntry, UserId } from '../../model/types.js';
import {
  BOUNDS_BYTES,
  boundsBytes,
  MAX_CURSOR_LENGTH,
  readBounds,
  sameTimeBounds,
  type TimeBounds,
} from './cursor-codec.js';

/** The set queries a cursor can belong to. */
export type SetQueryKind = 'mutuals' | 'not_followed_back';
/** Which of the owner's follow lists drives the walk: `out` = following, `in` = followers. */
export type DrivingSide = 'out' | 'in';

export interface SetCursor {
  kind: SetQueryKind;
  owner: UserId;
  driving: DrivingSide;
  /** The driving list's page cursor before the batch to re-read; null = the list's start. */
  inner: string | null;
  /** The last row emitted from that batch; rows at or above it are skipped. Null: none yet. */
  boundary: ListEntry | null;
  /** The `[since, until)` the walk was issued for; absent: unbounded. */
  bounds?: TimeBounds;
}

const VERSION = 1;
const TAG_BYTES = 16;
/** version, kind, owner (8), driving, flags, boundary (16); then the bounds extension, if flagged. */
const HEADER_BYTES = 1 + 1 + 8 + 1 + 1 + 16;
const FLAG_BOUNDARY = 1;
const FLAG_BOUNDED = 2;
const KINDS: readonly SetQueryKind[] = ['mutuals', 'not_followed_back'];
const DOMAIN = Buffer.from('flocklist-set-cursor\0');

/** The longest set cursor accepted, in characters (the HTTP query schema uses exactly this). */
export const MAX_SET_CURSOR_LENGTH =
  Math.ceil(((Math.floor((MAX_CURSOR_LENGTH * 3) / 4) + HEADER_BYTES + BOUNDS_BYTES + TAG_BYTES) * 4) / 3) +
  4;

function invalid(reason: string): InvalidCursorError {
  return new InvalidCursorError(reason);
}

/**
 * Signs and opens set cursors. One instance per server secret.
 *
 * @example
 * const codec = new SetCursorCodec(secret);
 * const token = codec.encode({ kind: 'mutuals', owner: 1n, driving: 'out', inner: null, boundary: null });
 * codec.decode(token, 'mutuals', 1n); // the same fields; another kind, owner or since/until throws InvalidCursorError
 */
export class SetCursorCodec {
  private readonly key: Buffer;

  constructor(secret: string) {
    if (secret.length < 16) throw new RangeError('cursor secret must be at least 16 characters');
    this.key = Buffer.from(secret, 'utf8');
  }

  encode(c: SetCursor): string {
    const inner = c.inner === null ? Buffer.alloc(0) : Buffer.from(c.inner, 'base64url');
    const ext = boundsBytes(c.bounds);
    const header = Buffer.alloc(HEADER_BYTES);
    header.writeUInt8(VERSION, 0);
    header.writeUInt8(KINDS.indexOf(c.kind), 1);
    header.writeBigInt64BE(c.owner, 2);
    header.writeUInt8(c.driving === 'out' ? 0 : 1, 10);
    header.writeUInt8((c.boundary ? FLAG_BOUNDARY : 0) | (ext.length > 0 ? FLAG_BOUNDED : 0), 11);
    header.writeBigInt64BE(c.boundary?.createdAt ?? 0n, 12);
    header.writeBigInt64BE(c.boundary?.otherId ?? 0n, 20);
    const payload = Buffer.concat([header, ext, inner]);
    return Buffer.concat([payload, this.tag(payload)]).toString('base64url');
  }

  /**
   * Throws `InvalidCursorError` unless the token was made here for this query kind, owner and
   * time range (`bounds` absent or both sides null: unbounded).
   */
  decode(token: string, kind: SetQueryKind, owner: UserId, bounds?: TimeBounds): SetCursor {
    if (
      typeof token !== 'string' ||
      token.length === 0 ||
      token.length > MAX_SET_CURSOR_LENGTH ||
      !/^[A-Za-z0-9_-]+$/.test(token)
    ) {
      throw invalid('not a cursor');
    }
    const raw = Buffer.from(token, 'base64url');
    if (raw.length < HEADER_BYTES + TAG_BYTES || raw.toString('base64url') !== token) {
      throw invalid('not a cursor');
    }
    const payload = raw.subarray(0, raw.length - TAG_BYTES);
    if (!timingSafeEqual(raw.subarray(raw.length - TAG_BYTES), this.tag(payload))) {
      throw invalid('signature mismatch');
    }
    if (payload.readUInt8(0) !== VERSION) throw invalid('unsupported version');
    if (KINDS[payload.readUInt8(1)] !== kind || payload.readBigInt64BE(2) !== owner) {
      throw invalid('cursor belongs to another query');
    }
    const driving = payload.readUInt8(10);
    const flags = payload.readUInt8(11);
    if (driving > 1 || flags > (FLAG_BOUNDARY | FLAG_BOUNDED)) throw invalid('malformed');
    const extBytes = flags & FLAG_BOUNDED ? BOUNDS_BYTES : 0;
    if (payload.length < HEADER_BYTES + extBytes) throw invalid('malformed');
    const issued =
      extBytes > 0 ? readBounds(payload.subarray(HEADER_BYTES, HEADER_BYTES + extBytes)) : undefined;
    if (!sameTimeBounds(issued, bounds)) throw invalid('cursor was issued for other since/until bounds');
    const inner = payload.subarray(HEADER_BYTES + extBytes);
    return {
      kind,
      owner,
      driving: driving === 0 ? 'out' : 'in',
      inner: inner.length === 0 ? null : inner.toString('base64url'),
      boundary:
        flags & FLAG_BOUNDARY
          ? { createdAt: payload.readBigInt64BE(12), otherId: payload.readBigInt64BE(20) }
          : null,
      ...(issued ? { bounds: issued } : {}),
    };
  }

  private tag(payload: Buffer): Buffer {
    return createHmac('sha256', this.key).update(DOMAIN).update(payload).digest().subarray(0, TAG_BYTES);
  }
}
