/**
 * Feed cursors: an event's id is its cursor, sealed.
 *
 * Design note. A cursor names a feed row's key and the index of an event in it, as text
 * (`slot.shard.low.high.opPosition.opSource.opKind.index`), followed by a tag: the first 16 bytes of
 * an HMAC-SHA-256 of that text under the feed's cursor secret, base64url. No nonce: an event's id
 * is the same on every read and on every instance that shares the secret, so consumers can
 * deduplicate by id. A forged or altered cursor, or one sealed under another secret, is refused
 * (`InvalidCursorError`, HTTP 400 `invalid_cursor`): without the seal a client could park a reader
 * anywhere, past events it never saw. During a rotation the previous secret is accepted too
 * (cursors are re-sealed under the current one as readers move on). The plain, unsealed form is
 * what the relay stored before cursors were sealed: accepted only where the caller says so (the
 * relay's own stored cursor, read once and rewritten sealed).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { InvalidCursorError } from '../model/errors.js';
import { EVENT_SHARDS, type EventKey } from '../model/events.js';
import type { Position } from '../model/types.js';

export interface FeedCursor {
  key: EventKey;
  /** The index of the last event taken from the row at `key` (-1: none of it). */
  index: number;
}

/** What signs cursors when the service is given no secret (tests, a single process). */
export const DEFAULT_FEED_CURSOR_SECRET = 'flocklist-feed-cursor-unconfigured';

const DOMAIN = 'flocklist.feed-cursor.v1\n';
const TAG_BYTES = 16;
const TAG = /^[A-Za-z0-9_-]{22}$/;
const KINDS = /^[a-z_]*$/;

export class FeedCursorSeal {
  private readonly keys: Buffer[];

  /** `secrets[0]` seals; every one of them opens (the current secret first, then the previous). */
  constructor(secrets: readonly string[]) {
    if (secrets.length === 0) throw new Error('a feed cursor seal needs a secret');
    this.keys = secrets.map((s) => Buffer.from(s, 'utf8'));
  }

  /** The sealed cursor (and id) of the `index`-th event of the row at `key`. */
  seal(key: EventKey, index: number): string {
    const plain = plainCursor(key, index);
    return `${plain}.${this.tag(this.keys[0] as Buffer, plain).toString('base64url')}`;
  }

  /**
   * The cursor `text` names. Throws `InvalidCursorError` unless it carries a valid seal, or, with
   * `acceptUnsealed`, is a well-formed plain cursor.
   */
  open(text: string, o: { acceptUnsealed?: boolean } = {}): FeedCursor {
    const cut = text.lastIndexOf('.');
    const tag = text.slice(cut + 1);
    if (cut > 0 && TAG.test(tag)) {
      const plain = text.slice(0, cut);
      const given = Buffer.from(tag, 'base64url');
      const sealed = this.keys.some((k) => timingSafeEqual(this.tag(k, plain), given));
      if (!sealed) throw new InvalidCursorError('the feed cursor is altered or not this service’s');
      return parsePlain(plain);
    }
    if (o.acceptUnsealed) return parsePlain(text);
    throw new InvalidCursorError('not a feed cursor');
  }

  private tag(key: Buffer, plain: string): Buffer {
    return createHmac('sha256', key).update(DOMAIN).update(plain).digest().subarray(0, TAG_BYTES);
  }
}

/** The slot (µs) a feed cursor, sealed or plain, stands at; null when `text` is not one. Unverified. */
export function cursorSlot(text: string): Position | null {
  const parts = text.split('.');
  const plain = parts.length === 9 ? parts.slice(0, 8).join('.') : text;
  try {
    return parsePlain(plain).key.slot;
  } catch {
    return null;
  }
}

/** The cursor after every row at or below `slot`. */
export const watermarkCursor = (slot: Position): FeedCursor => ({
  key: { slot, shard: EVENT_SHARDS, low: 0n, high: 0n, opPosition: 0n, opSource: 0n, opKind: '' },
  index: -1,
});

function plainCursor(key: EventKey, index: number): string {
  return [key.slot, key.shard, key.low, key.high, key.opPosition, key.opSource, key.opKind, index].join('.');
}

function parsePlain(text: string): FeedCursor {
  const parts = text.split('.');
  if (parts.length !== 8) throw new InvalidCursorError('not a feed cursor');
  const [slot, shard, low, high, opPosition, opSource, opKind, index] = parts as [
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  const big = (s: string) => {
    if (!/^-?\d{1,20}$/.test(s)) throw new InvalidCursorError('not a feed cursor');
    return BigInt(s);
  };
  const small = (s: string, max: number) => {
    const n = Number(s);
    if (!/^-?\d{1,4}$/.test(s) || n < -1 || n > max) throw new InvalidCursorError('not a feed cursor');
    return n;
  };
  if (!KINDS.test(opKind) || opKind.length > 32) throw new InvalidCursorError('not a feed cursor');
  return {
    key: {
      slot: big(slot),
      shard: small(shard, EVENT_SHARDS),
      low: big(low),
      high: big(high),
      opPosition: big(opPosition),
      opSource: big(opSource),
      opKind,
    },
    index: small(index, 64),
  };
}
