/**
 * `Idempotency-Key` on mutating calls.
 *
 * Design note. A receipt `{ requestHash, status, body }` is stored per (acting user, key) for
 * `ttlSeconds` once a call with that key has been *accepted* (a 2xx). A retry with the same key:
 * same request hash → the stored status and body, `Idempotent-Replayed: true`, no domain call;
 * another hash → 409 `idempotency_key_reused`. The hash covers method, path with query,
 * `Graph-Position` and the raw body bytes (SHA-256), so "the same request" is byte-exact.
 * Refusals (4xx) and failures (5xx) leave no receipt: the client may fix the cause and retry
 * with the same key. Two concurrent calls with one key in this process are serialized (the
 * second waits and then replays); across instances both may run, which is harmless because
 * every mutation is idempotent in effect, and the store keeps the first receipt written.
 */
import { createHash } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import type { ReceiptStore } from '../ports/receipt-store.js';
import { principalOf } from './auth.js';
import { ApiError } from './errors.js';

const KEY_PATTERN = /^[\x20-\x7E]{1,128}$/;
export const REPLAYED_HEADER = 'Idempotent-Replayed';

export interface IdempotencyOptions {
  receipts: ReceiptStore;
  ttlSeconds: number;
  /** Called when a receipt cannot be stored (the response still goes out). */
  onStoreError?: (err: unknown) => void;
}

export function idempotency(o: IdempotencyOptions): MiddlewareHandler {
  const inFlight = new Map<string, Promise<void>>();
  return async (c, next) => {
    const key = c.req.header('Idempotency-Key');
    if (key === undefined) return next();
    if (!KEY_PATTERN.test(key)) {
      throw new ApiError('validation_failed', 'invalid Idempotency-Key header', {
        errors: [{ path: 'header.idempotency-key', message: '1–128 printable ASCII characters' }],
      });
    }
    const actor = principalOf(c).sub;
    const url = new URL(c.req.url);
    const body = new Uint8Array(await c.req.arrayBuffer());
    const requestHash = createHash('sha256')
      .update(`${c.req.method}\n${url.pathname}${url.search}\n${c.req.header('Graph-Position') ?? ''}\n`)
      .update(body)
      .digest('base64url');

    const slot = `${actor}\u0000${key}`;
    for (let pending = inFlight.get(slot); pending; pending = inFlight.get(slot)) {
      await pending.catch(() => {});
    }

    const existing = await o.receipts.getReceipt(actor, key);
    if (existing) {
      if (existing.requestHash !== requestHash) {
        throw new ApiError('idempotency_key_reused', 'this Idempotency-Key was used for a different request');
      }
      return c.body(existing.body, existing.status as 200, {
        'Content-Type': 'application/json; charset=utf-8',
        [REPLAYED_HEADER]: 'true',
      });
    }

    const run = (async () => {
      await next();
      const res = c.res;
      if (res.status >= 200 && res.status < 300) {
        const text = await res.clone().text();
        await o.receipts
          .putReceipt(actor, key, { requestHash, status: res.status, body: text }, o.ttlSeconds)
          .catch((err: unknown) => o.onStoreError?.(err));
      }
    })();
    inFlight.set(slot, run);
    try {
      await run;
    } finally {
      if (inFlight.get(slot) === run) inFlight.delete(slot);
    }
  };
}
