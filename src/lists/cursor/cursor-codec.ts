/**
 * The opaque cursor tokens of list pages and fan-out scans.
 *
 * Design note. A token is `base64url(payload ‖ tag)`, `tag` = the first 16 bytes of
 * HMAC-SHA256(secret, "flocklist-cursor" ‖ payload), checked with `timingSafeEqual` before a
 * single field is trusted. The payload starts with a version byte, the kind (page or scan) and
 * the list it is bound to (owner, relation, direction), so a token altered in any bit, or
 * presented for another list or kind, is an `InvalidCursorError` (HTTP 400).
 *
 * A page cursor records the layout it was made under (log2 N), the walk boundary (the last key
 * emitted), the list's µs-per-row estimate, and one 16-bit word per bucket: the distance from the
 * boundary down to the bucket's ceiling as a round-down mini-float (so the decoded ceiling is
 * never below the true one), 0 for "open", 0xFFFF for "exhausted". Bodies of 16+ buckets are
 * deflated when that helps; the tag covers the compressed bytes, so inflation happens only for
 * tokens this server made.
 *
 * Size is bounded by `MAX_CURSOR_LENGTH`, the one limit the HTTP schema also uses. Full per-bucket
 * words fit up to N = 256; at N = 1024 they took ~2,600 characters. When the full form would not
 * fit, the *sparse* form is written instead: an exhaustion bitmap (N bits), the K buckets nearest
 * the boundary with their exact words (index + word), and one shared word for all the others:
 * the smallest word among them. Decoded, every unlisted bucket gets the ceiling "boundary minus
 * that smallest distance", which is at or above its true ceiling (words round down and are
 * monotone), so the merge invariant holds; the buckets a next page needs first (those nearest the
 * boundary) keep exact state, the far ones only read a little early. K is as large as the budget
 * allows (about 140 at N = 1024), never below 0: with K = 0 the form degenerates to the global
 * boundary key plus "no bucket is nearer than d", still valid for every bucket at once.
 *
 * Direction and time bounds (`direction=newer`, `since` / `until`). Two flag bits of the kind
 * byte bind them: `FLAG_NEWER` marks a cursor that pages toward newer items (a `prev_cursor`), and
 * `FLAG_BOUNDED` says a 17-byte extension follows the header (a presence byte, then `since` and
 * `until` as µs). Both are under the tag, and `decodePage` refuses a token whose direction or
 * bounds differ from the request's, so a prev cursor cannot be replayed as a next cursor, nor a
 * cursor of one time range on another (each an `InvalidCursorError`). A newer cursor's words
 * measure *up* from the boundary to the bucket's floor (its states are what a merge in the
 * negated key space keeps, see `list-service.ts`); an older cursor's measure down, as above.
 * Cursors without either flag read exactly as before (older, unbounded).
 *
 * A scan cursor records the slice, the layout, the rank-order index of the next unstarted bucket
 * and the in-progress buckets with their positions (see `scan-slices.ts`). After a growth one
 * in-progress bucket becomes one entry per sub-bucket (up to 1,024 of them, 21 bytes each, all at
 * the same position), so `encodeScan` merges sibling buckets that share a position into their
 * parent (repeatedly: bucket `b` of 2N and `b + N` of 2N are exactly `b` of N) and the reader
 * expands a coarse code back into its sub-buckets. Read in rank order, the entries of one position
 * stay one contiguous rank range, which merges into at most 2·log2 N codes.
 *
 * A search cursor (`list-search.ts`) records the lowercased query it was issued for and the last
 * (lowercased name, id) key passed; `decodeSearch` refuses it for another query (or list).
 *
 * Rejected: JSON (3–4× larger at N = 1024); encryption (the content is not secret, integrity is
 * what matters); expiry (cursors must not expire while the list exists).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { InvalidCursorError } from '../../model/errors.js';
import type { SearchKey } from '../../model/search.js';
import type { ListEntry, ListKey, Relation } from '../../model/types.js';
import { RELATIONS } from '../../model/types.js';
import type { BucketState } from './merge.js';
import { decodeMiniFloat, encodeMiniFloat, MINI_FLOAT_RESERVED } from './mini-float.js';
import { indexOfBucket, log2 } from './scan-slices.js';

export const CURSOR_VERSION = 1;
/** The largest layout a cursor can describe. */
export const MAX_BUCKETS = 1024;
/**
 * The longest cursor accepted, in characters; the HTTP query schema uses exactly this limit.
 * `encodePage` never exceeds it at any N ≤ `MAX_BUCKETS`. A scan cursor is 39 + 21 bytes per
 * pending entry; merged, one scan position takes at most 2·log2 N entries and a new position
 * appears only when a growth splits a bucket in progress, so a scan across a growth from 1 to
 * 1,024 buckets carries about 11 entries (~360 characters). Only a scan held open across many
 * growths could exceed the limit.
 */
export const MAX_CURSOR_LENGTH = 1024;

const TAG_BYTES = 16;
const HEADER_BYTES = 13;
const KIND_PAGE = 1;
const KIND_SCAN = 2;
/** A scan slice of a time-bucketed list (`time-pages.ts`). */
const KIND_TIME_SCAN = 3;
/** A search page (`list-search.ts`): bound to the list and the query. */
const KIND_SEARCH = 4;
const FLAG_DEFLATED = 0x10;
const FLAG_SPARSE = 0x20;
/** A page cursor that pages toward newer items (a `prev_cursor`). */
const FLAG_NEWER = 0x40;
/** A page cursor bound to a time range: `BOUNDS_BYTES` follow the header. */
const FLAG_BOUNDED = 0x80;
/** Bytes of a non-empty `boundsBytes` extension. */
export const BOUNDS_BYTES = 17;
/** Bytes of a token of `MAX_CURSOR_LENGTH` base64url characters. */
const MAX_TOKEN_BYTES = Math.floor((MAX_CURSOR_LENGTH * 3) / 4);
/** Sparse body: after (16), gap (2), K (2), shared word (2), bitmap, then K × (index, word). */
const SPARSE_FIXED = 22;
const DOMAIN = Buffer.from('flocklist-cursor\0');
const MAX_BODY = 64 * 1024;

export interface PageCursor {
  list: ListKey;
  /** The layout (bucket count) the states describe. */
  buckets: number;
  after: ListEntry;
  /** µs between consecutive rows of the list, estimated; 0 when unknown. */
  gapUs: number;
  /**
   * Older-direction states: `ceiling` bounds the bucket from above. Newer-direction states
   * (`direction: 'newer'`): `ceiling` is a *floor*, no row of the bucket newer than the boundary
   * has `createdAt` below it.
   */
  states: BucketState[];
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

export interface ScanPosition {
  code: number;
  after: ListEntry | null;
}

export interface ScanCursor {
  list: ListKey;
  slice: number;
  slices: number;
  buckets: number;
  /** Rank-order index (in `buckets`) of the next bucket not yet started. */
  nextIndex: number;
  /** Buckets started and not finished, in order. */
  pending: ScanPosition[];
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

  /**
   * Seals a page cursor of at most `MAX_CURSOR_LENGTH` characters: full per-bucket state when it
   * fits, else the sparse form (see the module note), whose decoded ceilings are still upper bounds.
   */
  encodePage(c: PageCursor): string {
    const n = c.states.length;
    if (n !== c.buckets || !isLayout(n)) throw new RangeError(`bad layout ${n}`);
    const newer = c.direction === 'newer';
    const words = c.states.map((s) => stateWord(s, c.after.createdAt, newer));
    const body = Buffer.alloc(8 + 8 + 2 + 2 * n);
    writeBoundary(body, c);
    words.forEach((w, i) => {
      body.writeUInt16BE(w, 18 + 2 * i);
    });
    const ext = boundsBytes(c.bounds);
    const dirFlags = (newer ? FLAG_NEWER : 0) | (ext.length > 0 ? FLAG_BOUNDED : 0);
    const full = this.seal(KIND_PAGE, c.list, n, body, 0, dirFlags, ext);
    if (full.length <= MAX_CURSOR_LENGTH) return full;
    return this.seal(KIND_PAGE, c.list, n, sparseBody(c, words, ext.length), FLAG_SPARSE, dirFlags, ext);
  }

  /**
   * Throws `InvalidCursorError` unless the token was made here for this `list`, for the expected
   * direction (default older) and time bounds (default none).
   */
  decodePage(token: string, list: ListKey, expect: PageExpectation = {}): PageCursor {
    const { buckets, body, flags, ext } = this.open(token, KIND_PAGE, list);
    const newer = (flags & FLAG_NEWER) !== 0;
    if (newer !== (expect.direction === 'newer')) {
      throw invalid(
        newer ? 'a prev_cursor pages with direction=newer' : 'a next_cursor pages with direction=older',
      );
    }
    const bounds = ext.length > 0 ? readBounds(ext) : undefined;
    if (!sameTimeBounds(bounds, expect.bounds))
      throw invalid('cursor was issued for other since/until bounds');
    const words = flags & FLAG_SPARSE ? sparseWords(body, buckets) : fullWords(body, buckets);
    const createdAt = body.readBigInt64BE(0);
    const after = { createdAt, otherId: body.readBigInt64BE(8) };
    const gapUs = Number(decodeMiniFloat(body.readUInt16BE(16)));
    const states: BucketState[] = words.map((w) => {
      if (w === MINI_FLOAT_RESERVED) return { exhausted: true, ceiling: null };
      if (w === 0) return { exhausted: false, ceiling: null };
      const d = decodeMiniFloat(w);
      return { exhausted: false, ceiling: newer ? createdAt + d : createdAt - d };
    });
    return {
      list,
      buckets,
      after,
      gapUs,
      states,
      ...(newer ? { direction: 'newer' as const } : {}),
      ...(bounds ? { bounds } : {}),
    };
  }

  /**
   * Seals a scan cursor. Pending entries that share a position are merged into the coarsest
   * bucket codes that cover them (a code `L | b` with `L` ≤ `buckets`), ordered by rank, so
   * `decodeScan` may return codes of layouts below `buckets`: each stands for its sub-buckets.
   */
  encodeScan(c: ScanCursor): string {
    if (!isLayout(c.buckets)) throw new RangeError(`bad layout ${c.buckets}`);
    const pending = mergeSiblings(c.pending);
    const body = Buffer.alloc(10 + pending.length * 21);
    body.writeUInt16BE(c.slice, 0);
    body.writeUInt16BE(c.slices, 2);
    body.writeUInt32BE(c.nextIndex, 4);
    body.writeUInt16BE(pending.length, 8);
    pending.forEach((p, i) => {
      const o = 10 + 21 * i;
      body.writeUInt32BE(p.code, o);
      body.writeUInt8(p.after ? 1 : 0, o + 4);
      body.writeBigInt64BE(p.after?.createdAt ?? 0n, o + 5);
      body.writeBigInt64BE(p.after?.otherId ?? 0n, o + 13);
    });
    return this.seal(KIND_SCAN, c.list, c.buckets, body);
  }

  /** Throws `InvalidCursorError` unless the token was made here for this list and slice. */
  decodeScan(token: string, list: ListKey, slice: number, slices: number): ScanCursor {
    const { buckets, body } = this.open(token, KIND_SCAN, list);
    if (body.length < 10) throw invalid('malformed');
    if (body.readUInt16BE(0) !== slice || body.readUInt16BE(2) !== slices) {
      throw invalid('cursor belongs to another slice');
    }
    const nextIndex = body.readUInt32BE(4);
    const count = body.readUInt16BE(8);
    if (body.length !== 10 + 21 * count || nextIndex > buckets) throw invalid('malformed');
    const pending: ScanPosition[] = [];
    for (let i = 0; i < count; i++) {
      const o = 10 + 21 * i;
      const has = body.readUInt8(o + 4) === 1;
      const code = body.readUInt32BE(o);
      if (code < 1 || code >= 2 * buckets) throw invalid('malformed');
      pending.push({
        code,
        after: has ? { createdAt: body.readBigInt64BE(o + 5), otherId: body.readBigInt64BE(o + 13) } : null,
      });
    }
    return { list, slice, slices, buckets, nextIndex, pending };
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
    return this.seal(KIND_TIME_SCAN, c.list, 1, body);
  }

  /**
   * Throws `InvalidCursorError` unless the token is a time scan position made here for this list
   * and slice (a hash-bucket scan cursor issued before the list migrated is refused: restart).
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
    return this.seal(KIND_SEARCH, c.list, 1, body);
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
    buckets: number,
    body: Buffer,
    form = 0,
    dirFlags = 0,
    ext: Buffer = Buffer.alloc(0),
  ): string {
    let flags = form;
    let stored = body;
    if (body.length > 64 && form === 0) {
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
    header.writeUInt8(log2(buckets), 12);
    const payload = Buffer.concat([header, ext, stored]);
    return Buffer.concat([payload, this.tag(payload)]).toString('base64url');
  }

  private open(
    token: string,
    kind: number,
    list: ListKey,
  ): { buckets: number; body: Buffer; flags: number; ext: Buffer } {
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
    if (kindByte & FLAG_SPARSE && (kind !== KIND_PAGE || kindByte & FLAG_DEFLATED))
      throw invalid('malformed');
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
    const shift = payload.readUInt8(12);
    if (shift > log2(MAX_BUCKETS)) throw invalid('malformed');
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
    if (body.length < 18 && kind === KIND_PAGE) throw invalid('malformed');
    return { buckets: 1 << shift, body, flags: kindByte & 0xf0, ext };
  }
}

const positionKey = (p: ScanPosition) => (p.after ? `${p.after.createdAt}/${p.after.otherId}` : '-');

/** Where a code's rank range starts, on the scale of `MAX_BUCKETS`. */
function rankStart(code: number): number {
  const layout = 2 ** log2(code);
  return indexOfBucket(code - layout, layout) * (MAX_BUCKETS / layout);
}

/** Replaces every pair of sibling codes at the same position by their parent, until none is left; rank order. */
function mergeSiblings(pending: readonly ScanPosition[]): ScanPosition[] {
  const byPosition = new Map<string, { after: ListEntry | null; codes: Set<number> }>();
  for (const p of pending) {
    const key = positionKey(p);
    const group = byPosition.get(key) ?? { after: p.after, codes: new Set<number>() };
    group.codes.add(p.code);
    byPosition.set(key, group);
  }
  const out: ScanPosition[] = [];
  for (const { after, codes } of byPosition.values()) {
    for (let layout = MAX_BUCKETS; layout >= 2; layout /= 2) {
      const half = layout / 2;
      for (const code of [...codes]) {
        if (log2(code) !== log2(layout) || !codes.has(code) || !codes.has(code ^ half)) continue;
        codes.delete(code);
        codes.delete(code ^ half);
        codes.add(half | (code & (half - 1)));
      }
    }
    for (const code of codes) out.push({ code, after });
  }
  return out.sort((a, b) => rankStart(a.code) - rankStart(b.code));
}

function isLayout(n: number): boolean {
  return Number.isInteger(n) && n >= 1 && n <= MAX_BUCKETS && (n & (n - 1)) === 0;
}

function writeBoundary(body: Buffer, c: PageCursor): void {
  body.writeBigInt64BE(c.after.createdAt, 0);
  body.writeBigInt64BE(c.after.otherId, 8);
  body.writeUInt16BE(encodeMiniFloat(BigInt(Math.max(0, Math.round(c.gapUs)))), 16);
}

function fullWords(body: Buffer, buckets: number): number[] {
  if (body.length !== 18 + 2 * buckets) throw invalid('malformed');
  return Array.from({ length: buckets }, (_, i) => body.readUInt16BE(18 + 2 * i));
}

const bitmapBytes = (buckets: number) => Math.ceil(buckets / 8);

/** The sparse page body: exact words for the K buckets nearest the boundary, one floor for the rest. */
function sparseBody(c: PageCursor, words: readonly number[], extBytes: number): Buffer {
  const n = words.length;
  const bitmap = bitmapBytes(n);
  const room = MAX_TOKEN_BYTES - HEADER_BYTES - extBytes - TAG_BYTES - SPARSE_FIXED - bitmap;
  const live = words
    .map((w, i) => [i, w] as const)
    .filter(([, w]) => w !== MINI_FLOAT_RESERVED)
    .sort((a, b) => a[1] - b[1] || a[0] - b[0]);
  const k = Math.max(0, Math.min(live.length, Math.floor(room / 4)));
  const shared = live[k]?.[1] ?? 0;
  const body = Buffer.alloc(SPARSE_FIXED + bitmap + 4 * k);
  writeBoundary(body, c);
  body.writeUInt16BE(k, 18);
  body.writeUInt16BE(shared, 20);
  words.forEach((w, i) => {
    if (w === MINI_FLOAT_RESERVED) body[SPARSE_FIXED + (i >> 3)]! |= 1 << (i & 7);
  });
  live.slice(0, k).forEach(([i, w], j) => {
    body.writeUInt16BE(i, SPARSE_FIXED + bitmap + 4 * j);
    body.writeUInt16BE(w, SPARSE_FIXED + bitmap + 4 * j + 2);
  });
  return body;
}

function sparseWords(body: Buffer, buckets: number): number[] {
  const bitmap = bitmapBytes(buckets);
  if (body.length < SPARSE_FIXED + bitmap) throw invalid('malformed');
  const k = body.readUInt16BE(18);
  const shared = body.readUInt16BE(20);
  if (body.length !== SPARSE_FIXED + bitmap + 4 * k || shared === MINI_FLOAT_RESERVED)
    throw invalid('malformed');
  const words = Array.from({ length: buckets }, (_, i) =>
    (body[SPARSE_FIXED + (i >> 3)]! >> (i & 7)) & 1 ? MINI_FLOAT_RESERVED : shared,
  );
  for (let j = 0; j < k; j++) {
    const i = body.readUInt16BE(SPARSE_FIXED + bitmap + 4 * j);
    const w = body.readUInt16BE(SPARSE_FIXED + bitmap + 4 * j + 2);
    if (i >= buckets || w === MINI_FLOAT_RESERVED || words[i] === MINI_FLOAT_RESERVED)
      throw invalid('malformed');
    words[i] = w;
  }
  return words;
}

/** The distance from the boundary to the bucket's bound: down for older cursors, up for newer ones. */
function stateWord(s: BucketState, boundary: bigint, newer: boolean): number {
  if (s.exhausted) return MINI_FLOAT_RESERVED;
  if (s.ceiling === null) return 0;
  const d = newer ? s.ceiling - boundary : boundary - s.ceiling;
  return d <= 0n ? 0 : encodeMiniFloat(d);
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
