/**
 * `PairHistoryStore` on Cassandra: one `pair_ops` partition per unordered pair, its checkpoint and
 * compaction steps in static cells (the protocol is in `src/graph/pair/pair-history.ts`).
 *
 * Design note — the horizon hint. A read starts at the last checkpoint horizon seen for the pair,
 * so it steps over neither the folded rows nor their range tombstone. The hint is per process and
 * only a read hint: an LRU (`lru-cache`) forgetting its least recently written pair first
 * (`HORIZON_HINTS`), and a read from a hint that meets nothing reads the pair from its start.
 */
import cassandra from 'cassandra-driver';
import { nowPosition } from '../../model/clock.js';
import { boundedLru } from '../../model/lru.js';
import { plainUsername } from '../../model/row-username.js';
import type { Position, UserId } from '../../model/types.js';
import type { PairHistoryStore } from '../../ports/pair-history-store.js';
import type { PairAppend, PairHistory, StoredPairOp } from '../../ports/records.js';
import { PAIR_READ_ROWS, PAIR_STEP_TIME } from '../../ports/records.js';
import { encodeCheckpoint } from '../checkpoint-codec.js';
import type { Bound, CqlExecutor } from './executor.js';
import { toCheckpoint, toPairOp, toPending } from './rows.js';
import { S } from './statements.js';

/** Pairs whose last seen horizon is remembered (a read hint only; bounded, oldest forgotten first). */
const HORIZON_HINTS = 10_000;

const ordered = (a: UserId, b: UserId): [UserId, UserId] => (a < b ? [a, b] : [b, a]);

export class CassandraPairHistoryStore implements PairHistoryStore {
  private readonly horizonHints = boundedLru<string, bigint>(HORIZON_HINTS);

  constructor(private readonly cql: CqlExecutor) {}

  async readPairHistory(a: UserId, b: UserId): Promise<PairHistory> {
    const [low, high] = ordered(a, b);
    const pair = `${low}|${high}`;
    // One statement: its first page is one snapshot of the statics (checkpoint, announcement,
    // observation) and the rows. Start at the last horizon seen for this pair, so the read steps
    // over neither the folded rows nor their range tombstone; the rows at a committed horizon stay,
    // so a read from it always meets a row and the statics come back with it.
    const from = this.horizonHints.peek(pair);
    const read = (start: bigint | undefined) =>
      this.cql.pages(
        'readPairHistory',
        start === undefined ? S.pairRead : S.pairReadFrom,
        start === undefined ? [low, high] : [low, high, start],
        PAIR_READ_ROWS,
      );
    let pages = read(from);
    let first = (await pages.next()).value ?? [];
    if (first.length === 0 && from !== undefined) {
      // Nothing from the hint on cannot happen while rows at a committed horizon stay; should it,
      // read the pair from its start rather than take it for empty.
      this.horizonHints.delete(pair);
      pages = read(undefined);
      first = (await pages.next()).value ?? [];
    }
    const head = first[0];
    const checkpoint = toCheckpoint(head);
    const floor = checkpoint?.horizon ?? 0n;
    // A history over one page: the later pages are other statements, not the same snapshot.
    const rows = [...first];
    let snapshotThrough: bigint | null = null;
    for await (const page of pages) {
      snapshotThrough ??= (first.at(-1)?.position as bigint | null | undefined) ?? 0n;
      rows.push(...page);
    }
    // Remember the horizon only once a row at it was seen (a checkpoint committed before the
    // horizon's rows were kept has none, and a read from it would meet nothing).
    if (checkpoint && rows.some((r) => r.position === checkpoint.horizon)) {
      this.horizonHints.set(pair, checkpoint.horizon);
    }
    const indexedNames = new Map<UserId, string>();
    if (typeof head?.indexed_low === 'string') indexedNames.set(low, plainUsername(head.indexed_low));
    if (typeof head?.indexed_high === 'string') indexedNames.set(high, plainUsername(head.indexed_high));
    return {
      checkpoint,
      pending: toPending(head),
      ...(indexedNames.size > 0 ? { indexedNames } : {}),
      ops: rows
        .filter((r) => r.position !== null && (r.position as bigint) > floor)
        .map((r) => toPairOp(low, high, r)),
      snapshotThrough,
    };
  }

  async appendPair(append: PairAppend, timeoutMs?: number): Promise<void> {
    const [low, high] = ordered(...append.pair);
    const queries: Bound[] = [];
    const { op } = append;
    if (op) {
      queries.push({
        statement: S.appendOp,
        params: [
          low,
          high,
          op.position,
          op.sourceId,
          op.kind,
          BigInt(op.base),
          op.slot ?? cassandra.types.unset,
          op.slot ?? nowPosition(),
        ],
      });
    }
    if (append.announce) {
      const { horizon, announcedAt } = append.announce;
      queries.push({
        statement: S.announce,
        params: [PAIR_STEP_TIME.announce(horizon), horizon, announcedAt, low, high],
      });
    }
    if (append.observe) {
      const { horizon, seenAt } = append.observe;
      queries.push({
        statement: S.observe,
        params: [PAIR_STEP_TIME.observe(horizon), seenAt, horizon, low, high],
      });
    }
    if (append.commit) {
      const { checkpoint: cp, folded } = append.commit;
      queries.push(
        {
          statement: S.commitCheckpoint,
          params: [PAIR_STEP_TIME.commit(cp.horizon, folded), cp.horizon, encodeCheckpoint(cp), low, high],
        },
        { statement: S.dropFolded, params: [low, high, cp.horizon] },
      );
    }
    // One partition: an unlogged batch is atomic and isolated on each replica.
    await this.cql.write(
      'appendPair',
      queries,
      timeoutMs === undefined
        ? { logged: false }
        : { logged: false, readTimeout: Math.max(1, Math.round(timeoutMs)) },
    );
  }

  async fenceOp(
    op: Pick<StoredPairOp, 'sourceId' | 'targetId' | 'position' | 'kind'>,
    slot: Position,
  ): Promise<void> {
    const [low, high] = ordered(op.sourceId, op.targetId);
    await this.cql.write(
      'fenceOp',
      [{ statement: S.fenceOp, params: [slot + 1n, low, high, op.position, op.sourceId, op.kind] }],
      {
        logged: false,
      },
    );
  }
}
