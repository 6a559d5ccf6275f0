/**
 * The repair sweep's pages (`repair-sweep.ts`): the ring's slices it walks, the fixes a page
 * gathers before it applies them, how a finding names an edge, and the pacing between pages.
 */

import type { StrayRow } from '../graph/pair/pair-repair.js';
import { type ListKey, listId, type UserId } from '../model/types.js';
import { MAX_TOKEN, MIN_TOKEN, type TokenRange } from '../ports/records.js';

/** `n` equal slices of the ring, `(start, end]` each, covering every token. */
export function splitRing(n: number): TokenRange[] {
  const span = MAX_TOKEN - MIN_TOKEN;
  const out: TokenRange[] = [];
  for (let i = 0; i < n; i++) {
    const start = MIN_TOKEN + (span * BigInt(i)) / BigInt(n);
    const end = i === n - 1 ? MAX_TOKEN : MIN_TOKEN + (span * BigInt(i + 1)) / BigInt(n);
    out.push({ start, end });
  }
  return out;
}

export const edgeName = (e: { sourceId: UserId; relation: string; targetId: UserId }, createdAt: bigint) =>
  `${e.sourceId} ${e.relation} ${e.targetId} @${createdAt}`;

/**
 * The fixes a page needs: pairs to repair (with stray rows), lists to mark dirty, claims to release
 * and claims to make.
 */
export class PageFixes {
  readonly claims: { username: string; userId: UserId }[] = [];
  readonly missingClaims: { username: string; userId: UserId }[] = [];
  readonly pairs = new Map<string, { a: UserId; b: UserId; strays: StrayRow[] }>();
  /** Lists to mark dirty: the bucket of `otherId` in the read layout, or bucket `code` itself. */
  readonly dirty = new Map<string, { list: ListKey; otherId?: UserId; code?: number }>();
  pair(a: UserId, b: UserId, stray?: StrayRow) {
    const [lo, hi] = a < b ? [a, b] : [b, a];
    const k = `${lo}|${hi}`;
    const p = this.pairs.get(k) ?? { a: lo, b: hi, strays: [] };
    if (stray) p.strays.push(stray);
    this.pairs.set(k, p);
  }
  mark(list: ListKey, otherId: UserId) {
    this.dirty.set(`${listId(list)}|${otherId}`, { list, otherId });
  }
}

/** Sleeps so that `rows` over the elapsed time stays at or under `rate` per second. */
export async function throttle(rate: number | undefined, rows: number, startedMs: number) {
  if (!rate || rate <= 0) return;
  const due = startedMs + (rows / rate) * 1000;
  const wait = due - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
}
