/**
 * The opaque cursor tokens of list pages, fan-out scans and search pages.
 *
 * Design note. A token is `base64url(payload ‖ tag)`, `tag` = the first 16 bytes of
 * HMAC-SHA256(secret, "flocklist-cursor" ‖ payload), checked with `timingSafeEqual` before a
 * single field is trusted. The payload starts with a version byte, the kind (page, time scan or
 * search) and the list it is bound to (owner, relation, direction), so a token altered in any
 * bit, or presented for another list or kind, is an `InvalidCursorError` (HTTP 400).
 *
 * The page cursor is the product card's merge cursor in its one-bucket case. A merge cursor holds
 * the walk boundary (the last key emitted) and, per bucket of the layout, what is known of it
 * past the boundary. A time-bucketed list is read without a merge (its buckets cover disjoint
 * time ranges, `time-pages.ts`), so the list is one ordered sequence and the boundary alone says
 * where the next page starts: the cursor is that boundary and one bucket state, always "open".
 * Its bytes keep the merge cursor's layout (log2 N = 0 in the header; after 16, µs-per-row
 * estimate 2, one state word 2), so nothing about the token format changed when the hash-bucket
 * engine (N > 1 buckets, a k-way merge) was retired; a token of a layout above one bucket is
 * refused as malformed.
 *
 * Size is bounded by `MAX_CURSOR_LENGTH`, the one limit the HTTP schema also uses.
 *
 * Direction and time bounds (`direction=newer`, `since` / `until`). Two flag bits of the kind
 * byte bind them: `FLAG_NEWER` marks a cursor that pages toward newer items (a `prev_cursor`), and
 * `FLAG_BOUNDED` says a 17-byte extension follows the header (a presence byte, then `since` and
 * `until` as µs). Both are under the tag, and `decodePage` refuses a token whose direction or
 * bounds differ from the request's, so a prev cursor cannot be replayed as a next cursor, nor a
 * cursor of one time range on another (each an `InvalidCursorError`). Cursors without either flag
 * read as older, unbounded.
 *
 * A time scan cursor records the slice, the owner key of the bucket group in progress and the
 * last row read (`time-pages.ts`). A search cursor (`list-search.ts`) records the lowercased
 * query it was issued for and the last (lowercased name, id) key passed; `decodeSearch` refuses
 * it for another query (or list). Bodies over 64 bytes are deflated when that helps; the tag
 * covers the compressed bytes, so inflation happens only for tokens this server made.
 *
 * Rejected: JSON (larger, and a second parser at the edge); encryption (the content is not
 * secret, integrity is what matters); expiry (cursors must not expire while the list exists).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { InvalidCursorError } from '../../model/errors.js';
import type { SearchKey } from '../../model/search.js';
import type { ListEntry, ListKey, Relation } from '../../model/types.js';
import { RELATIONS } from '../../model/types.js';

export const CURSOR_VERSION = 1;
/**
 * The longest cursor accepted, in characters; the HTTP query schema uses exactly this limit. A
 * page cursor takes 66 characters (88 with time bounds), a time scan cursor 72; only a search
 * cursor grows with its query and the name it stopped at, to a few hundred at most.
 */
export const MAX_CURSOR_LENGTH = 1024;

const TAG_BYTES = 16;
const HEADER_BYTES = 13;
const KIND_PAGE = 1;
// Kind 2, the hash-bucket engine's scan cursor, is retired: such a token is the wrong kind.
/** A scan slice of a time-bucketed list (`time-pages.ts`). */
const KIND_TIME_SCAN = 3;
/** A search page (`list-search.ts`): bound to the list and the query. */
const KIND_SEARCH = 4;
const FLAG_DEFLATED = 0x10;
/** The hash-bucket engine's sparse page form (retired): refused as malformed. */
const FLAG_SPARSE = 0x20;
/** A page cursor that pages toward newer items (a `prev_cursor`). */
const FLAG_NEWER = 0x40;
/** A page cursor bound to a time range: `BOUNDS_BYTES` follow the header. */
const FLAG_BOUNDED = 0x80;
/** Bytes of a non-empty `boundsBytes` extension. */
export const BOUNDS_BYTES = 17;
/** A page body: after (16), the µs-per-row estimate (2, unused: 0), one bucket state word (2, open: 0). */
const PAGE_BODY_BYTES = 20;
const DOMAIN = Buffer.from('flocklist-cursor\0');
const MAX_BODY = 64 * 1024;

/** Where a list walk stands: the last key emitted, the direction and the time range. */
export interface PageCursor {
  list: ListKey;
  /** The walk boundary: the next page starts strictly past it in `direction`. */
  after: ListEntry;
  /** Absent: `older`. */
  direction?: PageDirection;
  /** The time range the cursor was issued for; absent: unbounded. */
  bounds?: TimeBounds;
}

export type PageDirection = 'older' | 'newer';

/** `[since, until)` in µs; null: unbounded on that side. */
export interface TimeBounds {
  since: bigint | null;
  until: bigint | null;
}

/** What a request expects of a page cursor; a token issued otherwise is refused. */
export interface PageExpectation {
  direction?: PageDirection;
  bounds?: TimeBounds;
}

function invalid(reason: string, cause?: unknown): InvalidCursorError {
  return new InvalidCursorError(reason, cause === undefined ? undefined : { cause });
}

/** Signs, verifies and (de)serializes cursors. One instance per server secret. */
export class CursorCodec {
  private readonly key: Buffer;

  constructor(secret: string) {
    if (secret.length < 16) throw new RangeError('cursor secret must be at least 16 characters');
    this.key = Buffer.from(secret, 'utf8');
  }

  /** Seals a page cursor (see the module note: a one-bucket merge cursor, its state open). */
  encodePage(c: PageCursor): string {
    const body = Buffer.alloc(PAGE_BODY_BYTES);
    body.writeBigInt64BE(c.after.createdAt, 0);
    body.writeBigInt64BE(c.after.otherId, 8);
    const ext = boundsBytes(c.bounds);
    const dirFlags = (c.direction === 'newer' ? FLAG_NEWER : 0) | (ext.length > 0 ? FLAG_BOUNDED : 0);
    return this.seal(KIND_PAGE, c.list, body, dirFlags, ext);
  }

  /**
   * Throws `InvalidCursorError` unless the token was made here for this `list`, for the expected
   * direction (default older) and time bounds (default none).
   */
  decodePage(token: string, list: ListKey, expect: PageExpectation = {}): PageCursor {
    const { body, flags, ext } = this.open(token, KIND_PAGE, list);
    if (body.length !== PAGE_BODY_BYTES) throw invalid('malformed');
    const newer = (flags & FLAG_NEWER) !== 0;
    if (newer !== (expect.direction === 'newer')) {
      throw invalid(
        newer ? 'a prev_cursor pages with direction=newer' : 'a next_cursor pages with direction=older',
      );
    }
    const bounds = ext.length > 0 ? readBounds(ext) : undefined;
    if (!sameTimeBounds(bounds, expect.bounds))
      throw invalid('cursor was issued for other since/until bounds');
    return {
      list,
      after: { createdAt: body.readBigInt64BE(0), otherId: body.readBigInt64BE(8) },
      ...(newer ? { direction: 'newer' as const } : {}),
      ...(bounds ? { bounds } : {}),
    };
  }

  /** Seals a time-bucketed list's scan position (`time-pages.ts`): the bucket's owner key and the last row read. */
  encodeTimeScan(c: {
    list: ListKey;
    slice: number;
    slices: number;
    key: number;
    after: ListEntry | null;
  }): string {
    const body = Buffer.alloc(25);
    body.writeUInt16BE(c.slice, 0);
    body.writeUInt16BE(c.slices, 2);
    body.writeUInt32BE(c.key, 4);
    body.writeUInt8(c.after ? 1 : 0, 8);
    body.writeBigInt64BE(c.after?.createdAt ?? 0n, 9);
    body.writeBigInt64BE(c.after?.otherId ?? 0n, 17);
    return this.seal(KIND_TIME_SCAN, c.list, body);
  }

  /**
   * Throws `InvalidCursorError` unless the token is a time scan position made here for this list
   * and slice.
   */
  decodeTimeScan(
    token: string,
    list: ListKey,
    slice: number,
    slices: number,
  ): { key: number; after: ListEntry | null } {
    const { body } = this.open(token, KIND_TIME_SCAN, list);
    if (body.length !== 25) throw invalid('malformed');
    if (body.readUInt16BE(0) !== slice || body.readUInt16BE(2) !== slices) {
      throw invalid('cursor belongs to another slice');
    }
    const has = body.readUInt8(8) === 1;
    return {
      key: body.readUInt32BE(4),
      after: has ? { createdAt: body.readBigInt64BE(9), otherId: body.readBigInt64BE(17) } : null,
    };
  }

  /** Seals a search position: the lowercased query and the last key passed. */
  encodeSearch(c: { list: ListKey; q: string; after: SearchKey }): string {
    const q = Buffer.from(c.q, 'utf8');
    const lower = Buffer.from(c.after.lower, 'utf8');
    const body = Buffer.alloc(2 + q.length + lower.length + 8);
    body.writeUInt8(q.length, 0);
    q.copy(body, 1);
    body.writeUInt8(lower.length, 1 + q.length);
    lower.copy(body, 2 + q.length);
    body.writeBigInt64BE(c.after.otherId, 2 + q.length + lower.length);
    return this.seal(KIND_SEARCH, c.list, body);
  }

  /** Throws `InvalidCursorError` unless the token is a search position made here for this list and query. */
  decodeSearch(token: string, list: ListKey, q: string): SearchKey {
    const { body } = this.open(token, KIND_SEARCH, list);
    const qLength = body.length > 0 ? body.readUInt8(0) : 0;
    if (body.length < 2 + qLength + 8) throw invalid('malformed');
    const lowerLength = body.readUInt8(1 + qLength);
    if (body.length !== 2 + qLength + lowerLength + 8) throw invalid('malformed');
    if (body.subarray(1, 1 + qLength).toString('utf8') !== q)
      throw invalid('cursor belongs to another query');
    return {
      lower: body.subarray(2 + qLength, 2 + qLength + lowerLength).toString('utf8'),
      otherId: body.readBigInt64BE(2 + qLength + lowerLength),
    };
  }

  private tag(payload: Buffer): Buffer {
    return createHmac('sha256', this.key).update(DOMAIN).update(payload).digest().subarray(0, TAG_BYTES);
  }

  private seal(
    kind: number,
    list: ListKey,
    body: Buffer,
    dirFlags = 0,
    ext: Buffer = Buffer.alloc(0),
  ): string {
    let flags = 0;
    let stored = body;
    if (body.length > 64) {
      const packed = deflateRawSync(body, { level: 9 });
      if (packed.length < body.length) {
        stored = packed;
        flags = FLAG_DEFLATED;
      }
    }
    const header = Buffer.alloc(HEADER_BYTES);
    header.writeUInt8(CURSOR_VERSION, 0);
    header.writeUInt8(kind | flags | dirFlags, 1);
    header.writeBigInt64BE(list.userId, 2);
    header.writeUInt8(RELATIONS.indexOf(list.relation), 10);
    header.writeUInt8(list.direction === 'out' ? 0 : 1, 11);
    // The layout of a merge cursor (log2 N): always one bucket (see the module note).
    header.writeUInt8(0, 12);
    const payload = Buffer.concat([header, ext, stored]);
    return Buffer.concat([payload, this.tag(payload)]).toString('base64url');
  }

  private open(token: string, kind: number, list: ListKey): { body: Buffer; flags: number; ext: Buffer } {
    if (typeof token !== 'string' || token.length === 0 || !/^[A-Za-z0-9_-]+$/.test(token)) {
      throw invalid('not a cursor');
    }
    const raw = Buffer.from(token, 'base64url');
    if (raw.length < HEADER_BYTES + TAG_BYTES || raw.toString('base64url') !== token) {
      throw invalid('not a cursor');
    }
    const payload = raw.subarray(0, raw.length - TAG_BYTES);
    const tag = raw.subarray(raw.length - TAG_BYTES);
    if (!timingSafeEqual(tag, this.tag(payload))) throw invalid('signature mismatch');
    if (payload.readUInt8(0) !== CURSOR_VERSION) throw invalid('unsupported version');
    const kindByte = payload.readUInt8(1);
    if ((kindByte & 0x0f) !== kind) throw invalid('wrong kind of cursor');
    if (kindByte & FLAG_SPARSE) throw invalid('malformed');
    if (kindByte & (FLAG_NEWER | FLAG_BOUNDED) && kind !== KIND_PAGE) throw invalid('malformed');
    const relation = RELATIONS[payload.readUInt8(10)] as Relation | undefined;
    const direction = payload.readUInt8(11) === 0 ? 'out' : 'in';
    if (
      payload.readBigInt64BE(2) !== list.userId ||
      relation !== list.relation ||
      direction !== list.direction
    ) {
      throw invalid('cursor belongs to another list');
    }
    if (payload.readUInt8(12) !== 0) throw invalid('malformed');
    const extBytes = kindByte & FLAG_BOUNDED ? BOUNDS_BYTES : 0;
    if (payload.length < HEADER_BYTES + extBytes) throw invalid('malformed');
    const ext = payload.subarray(HEADER_BYTES, HEADER_BYTES + extBytes);
    let body = payload.subarray(HEADER_BYTES + extBytes);
    if (kindByte & FLAG_DEFLATED) {
      try {
        body = inflateRawSync(body, { maxOutputLength: MAX_BODY });
      } catch (e) {
        throw invalid('malformed', e);
      }
    }
    return { body, flags: kindByte & 0xf0, ext };
  }
}

/** Whether two time ranges are the same (absent, or both sides null, is unbounded). */
export function sameTimeBounds(a: TimeBounds | undefined, b: TimeBounds | undefined): boolean {
  return (a?.since ?? null) === (b?.since ?? null) && (a?.until ?? null) === (b?.until ?? null);
}

/**
 * The bounds extension: a presence byte (bit 0 since, bit 1 until), then both as int64 µs;
 * empty for an unbounded range. The set cursor embeds the same bytes.
 */
export function boundsBytes(b: TimeBounds | undefined): Buffer {
  if (!b || (b.since === null && b.until === null)) return Buffer.alloc(0);
  const out = Buffer.alloc(BOUNDS_BYTES);
  out.writeUInt8((b.since !== null ? 1 : 0) | (b.until !== null ? 2 : 0), 0);
  out.writeBigInt64BE(b.since ?? 0n, 1);
  out.writeBigInt64BE(b.until ?? 0n, 9);
  return out;
}

/** Reads `boundsBytes`' output; throws `InvalidCursorError` when no side is present. */
export function readBounds(ext: Buffer): TimeBounds {
  const present = ext.readUInt8(0);
  if (present === 0 || present > 3) throw invalid('malformed');
  return {
    since: present & 1 ? ext.readBigInt64BE(1) : null,
    until: present & 2 ? ext.readBigInt64BE(9) : null,
  };
}
